//go:build !unit

package assemble_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"go.uber.org/zap/zapcore"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/release-controller/release-controller/internal/manager"
	"github.com/release-controller/release-controller/internal/releaselog"
	"github.com/release-controller/release-controller/internal/releaselog/logcontroller"
	"github.com/release-controller/release-controller/internal/server"
	"github.com/release-controller/release-controller/internal/server/assemble"
	"github.com/release-controller/release-controller/internal/server/servertest"
	"github.com/release-controller/release-controller/internal/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(zapcore.ErrorLevel)))
	testenv.Main(m, &env, nil)
}

// startServer serves the api's server built by assemble.New with opts (its release log in a
// namespace of its own) on a loopback port until the test ends, and returns its address.
func startServer(t *testing.T, opts assemble.Options) string {
	t.Helper()
	ns := env.Namespace(t)
	opts.Log = releaselog.Options{Namespace: ns, Types: releaselog.DefaultTypes(), Store: releaselog.NewStore()}.WithDefaults("")
	mgr, err := manager.New(env.Config, manager.Options{MetricsAddr: "0", ProbeAddr: "0", ReleaseLog: opts.Log, SkipControllerNameValidation: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := logcontroller.SetupStoreWithManager(mgr, opts.Log); err != nil {
		t.Fatal(err)
	}
	srv, err := assemble.New(mgr, opts)
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	managerDone, serverDone := make(chan error, 1), make(chan error, 1)
	go func() { managerDone <- mgr.Start(ctx) }()
	go func() { serverDone <- srv.Serve(ctx, l, time.Second) }()
	t.Cleanup(func() {
		cancel()
		if err := <-serverDone; err != nil {
			t.Errorf("server: %v", err)
		}
		if err := <-managerDone; err != nil {
			t.Errorf("manager: %v", err)
		}
	})
	return l.Addr().String()
}

// serviceAccountToken creates a service account and returns a token of it (TokenRequest).
func serviceAccountToken(t *testing.T, ns, name string) string {
	t.Helper()
	ctx := context.Background()
	if err := env.Client.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}); err != nil {
		t.Fatal(err)
	}
	cs := kubernetes.NewForConfigOrDie(env.Config)
	tr, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return tr.Status.Token
}

// With --metrics-auth and a certificate, the api serves HTTPS, and /metrics only to a token
// whose user RBAC allows to get the non-resource URL /metrics: 401 without a token or with
// one the API server does not know, 403 for a user without the permission. Everything else
// stays open.
func TestMetricsBehindAuthenticationAndAuthorizationOverTLS(t *testing.T) {
	dir := t.TempDir()
	cert := servertest.WriteCert(t, dir, "release-controller api")
	addr := startServer(t, assemble.Options{
		MetricsAuth: true,
		Server:      server.Options{TLSCertFile: filepath.Join(dir, servertest.CertFile), TLSKeyFile: filepath.Join(dir, servertest.KeyFile)},
	})
	ns := env.Namespace(t)
	scraper, nobody := serviceAccountToken(t, ns, "scraper"), serviceAccountToken(t, ns, "nobody")
	ctx := context.Background()
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "metrics-reader-" + ns},
		Rules:      []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}},
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "metrics-reader-" + ns},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: "scraper"}},
	}
	for _, obj := range []client.Object{role, binding} {
		if err := env.Client.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = env.Client.Delete(context.Background(), obj) })
	}

	c := servertest.TrustingClient(t, cert, true)
	get := func(path, token string) (int, string) {
		req, _ := http.NewRequest(http.MethodGet, "https://"+addr+path, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.TLS == nil {
			t.Errorf("GET %s was not served over TLS", path)
		}
		return resp.StatusCode, string(body)
	}

	g := NewWithT(t)
	// The pages and health stay open.
	for _, path := range []string{"/healthz", "/releases"} {
		code, _ := get(path, "")
		g.Expect(code).To(Equal(http.StatusOK), path)
	}
	code, body := get("/metrics", "")
	g.Expect(code).To(Equal(http.StatusUnauthorized), "without a token")
	g.Expect(body).To(ContainSubstring("/metrics needs an Authorization: Bearer <token> header"))
	code, _ = get("/metrics", "not-a-token-the-api-server-issued")
	g.Expect(code).To(Equal(http.StatusUnauthorized), "with an unknown token")
	code, _ = get("/metrics", nobody)
	g.Expect(code).To(Equal(http.StatusForbidden), "with a token of a user without the permission")
	// The API server's RBAC learns of the new binding from its own informers: wait until it
	// applies it, so that the server's first question gets the settled answer.
	g.Eventually(func(g Gomega) {
		sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User:                  "system:serviceaccount:" + ns + ":scraper",
			Groups:                []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"},
			NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: "/metrics", Verb: "get"},
		}}
		g.Expect(env.Client.Create(ctx, sar)).To(Succeed())
		g.Expect(sar.Status.Allowed).To(BeTrue())
	}).WithTimeout(time.Minute).Should(Succeed())
	code, body = get("/metrics", scraper)
	g.Expect(code).To(Equal(http.StatusOK), body)
	g.Expect(body).To(ContainSubstring(`release_controller_http_requests_total{code="200",route="GET /healthz"}`))
	code, body = get("/metrics", nobody)
	g.Expect(code).To(Equal(http.StatusForbidden), "still, for the user without the permission")
	g.Expect(body).To(ContainSubstring(`user "system:serviceaccount:` + ns + `:nobody" may not get /metrics`))
	g.Expect(strings.Contains(body, "release_controller_http_requests_total")).To(BeFalse())
}
