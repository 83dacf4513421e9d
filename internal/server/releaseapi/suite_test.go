//go:build !unit

package releaseapi_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"testing"
	"time"

	"connectrpc.com/connect"
	. "github.com/onsi/gomega"
	"go.uber.org/zap/zapcore"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/release-controller/release-controller/internal/gen/releasecontroller/v1/releasecontrollerv1connect"
	"github.com/release-controller/release-controller/internal/manager"
	"github.com/release-controller/release-controller/internal/releaselog"
	"github.com/release-controller/release-controller/internal/releaselog/logcontroller"
	"github.com/release-controller/release-controller/internal/server"
	"github.com/release-controller/release-controller/internal/server/releaseapi"
	"github.com/release-controller/release-controller/internal/testenv"
)

// env is the API server shared by the package's tests and benchmarks: it answers the
// TokenReviews and SubjectAccessReviews of writes and holds the ReleaseLog objects.
var env *testenv.Env

// waitTimeout bounds every wait; it is a deadline for a broken test, not a performance assertion.
const waitTimeout = 60 * time.Second

func TestMain(m *testing.M) {
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(zapcore.ErrorLevel)))
	testenv.Main(m, &env, nil)
}

// testKey is the release log key of the tests' writers and store.
var testKey = []byte("0123456789abcdef0123456789abcdef")

// logParts are the release log's real parts in one namespace: the store its controllers keep
// and a writer.
type logParts struct {
	Namespace string
	Options   releaselog.Options
	Store     *releaselog.Store
	Writer    *releaselog.Writer
}

// startLog runs the release log's controllers (only they) for ns until the test ends, so that
// what the API writes shows up in the store it reads.
func startLog(t testing.TB, ns string, opts releaselog.Options) *logParts {
	t.Helper()
	opts.Namespace = ns
	opts.Store = releaselog.NewStore()
	if opts.SealKey == nil {
		opts.SealKey = testKey
	}
	opts = opts.WithDefaults(ns)
	mgrOpts := manager.Options{MetricsAddr: "0", ProbeAddr: "0", Namespace: ns, ReleaseLog: opts, SkipControllerNameValidation: true}
	mgr, err := manager.New(env.Config, mgrOpts)
	if err != nil {
		t.Fatal(err)
	}
	if err := logcontroller.SetupWithManager(mgr, opts); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager stopped with: %v", err)
		}
	})
	return &logParts{
		Namespace: ns, Options: opts, Store: opts.Store,
		Writer: releaselog.NewWriter(mgr.GetClient(), mgr.GetAPIReader(), opts),
	}
}

// storeOnly gives read tests a store they fill with Set, and a real writer and authorizer in
// a namespace of their own (reads never use them).
func storeOnly(t testing.TB, opts releaselog.Options) *logParts {
	t.Helper()
	ns := env.Namespace(t)
	opts.Namespace = ns
	opts = opts.WithDefaults(ns)
	return &logParts{Namespace: ns, Options: opts, Store: releaselog.NewStore(), Writer: releaselog.NewWriter(env.Client, env.Client, opts)}
}

// serve runs the HTTP server with the service on a loopback port until the test ends, and
// returns its base URL.
func serve(t testing.TB, parts *logParts) string {
	t.Helper()
	return serveWith(t, parts, releaseapi.NewAuthorizer(env.Client, parts.Namespace))
}

// serveWith is serve with the authorizer auth.
func serveWith(t testing.TB, parts *logParts, auth *releaseapi.Authorizer) string {
	t.Helper()
	svc := releaseapi.NewService(parts.Store, parts.Writer, parts.Options, auth)
	s := server.New()
	releaseapi.Register(s, svc)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, l, 5*time.Second) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("server stopped with: %v", err)
		}
	})
	return "http://" + l.Addr().String()
}

// protocol is one way a client talks to the service.
type protocol struct {
	name string
	// http2 says the protocol needs HTTP/2 (gRPC's trailers); the server speaks it in clear
	// text to clients that know it does.
	http2 bool
	opts  []connect.ClientOption
}

var protocols = []protocol{
	{name: "connect-proto"},
	{name: "connect-json", opts: []connect.ClientOption{connect.WithProtoJSON()}},
	{name: "grpc", http2: true, opts: []connect.ClientOption{connect.WithGRPC()}},
	{name: "grpc-web", opts: []connect.ClientOption{connect.WithGRPCWeb()}},
}

// httpClient returns an HTTP client of its own, closed when the test ends.
func httpClient(t testing.TB, http2 bool) *http.Client {
	p := new(http.Protocols)
	if http2 {
		p.SetUnencryptedHTTP2(true)
	} else {
		p.SetHTTP1(true)
	}
	tr := &http.Transport{Protocols: p}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

// newClient returns a client of the service at baseURL speaking p.
func newClient(t testing.TB, baseURL string, p protocol) releasecontrollerv1connect.ReleaseServiceClient {
	return releasecontrollerv1connect.NewReleaseServiceClient(httpClient(t, p.http2), baseURL, p.opts...)
}

// withBearer sets the request's Authorization header to a bearer token.
func withBearer[T any](req *connect.Request[T], token string) *connect.Request[T] {
	req.Header().Set("Authorization", "Bearer "+token)
	return req
}

// expectCode checks that err is a Connect error with code, and returns its message.
func expectCode(t testing.TB, err error, code connect.Code) string {
	t.Helper()
	var cerr *connect.Error
	if !errors.As(err, &cerr) {
		t.Fatalf("expected a %s error, got %v", code, err)
	}
	if cerr.Code() != code {
		t.Fatalf("expected code %s, got %s: %s", code, cerr.Code(), cerr.Message())
	}
	return cerr.Message()
}

// eventually waits until check passes.
func eventually(t *testing.T, check func(g Gomega)) {
	t.Helper()
	NewWithT(t).Eventually(check).WithTimeout(waitTimeout).WithPolling(50 * time.Millisecond).Should(Succeed())
}
