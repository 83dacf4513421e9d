//go:build !unit

// Package hostile sends hostile requests to the HTTP surface of the release-controller binary
// that ships, started as a user starts it (`release-controller api --kubeconfig FILE
// --signature-store file:///DIR ...`) against a real API server seeded with streams, payloads,
// pipelines and a signature store: REST query strings and paths, Connect, gRPC and gRPC-Web
// bodies, approval requests and headers, and /signatures/ paths. Whatever it is sent, the
// server answers without a 5xx, does not panic, keeps answering, and never serves the canary
// files planted next to and above its signature store. The approvals are also checked end to
// end with real signed requests: a signature is good for its own pipeline, environment,
// revision and namespace only, once, within the window, and a body over the limit is refused
// before its signature is checked.
//
// In `go test` the package is deterministic and bounded: TestHostileRequests sends a few
// thousand requests from a seeded generator (HOSTILE_SEED reproduces a run, HOSTILE_REQUESTS
// changes how many) and each Fuzz target runs its seed corpus. The Fuzz targets also run for
// longer, one at a time, each fuzz worker starting its own API server and binary:
//
//	go test -tags containers_image_openpgp -run '^$' -fuzz '^FuzzSignaturesPath$' -fuzztime 2m -parallel 1 ./test/hostile/
package hostile

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap/zapcore"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/release-controller/release-controller/internal/testbinary"
	"github.com/release-controller/release-controller/internal/testenv"
)

var (
	env *testenv.Env
	// api is the running `release-controller api`; base is its URL.
	api  *testbinary.Process
	base string
	// workDir holds the binary, the kubeconfig, the signature store, the canaries and logs.
	workDir string
	// seeded is what the API server was seeded with.
	seeded *seed
)

func TestMain(m *testing.M) {
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(zapcore.ErrorLevel)))
	code, err := run(m)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(code)
}

func run(m *testing.M) (code int, err error) {
	if workDir, err = os.MkdirTemp("", "hostile-"); err != nil {
		return 0, err
	}
	defer os.RemoveAll(workDir)
	if env, err = testenv.Start(); err != nil {
		return 0, err
	}
	defer func() {
		if err := env.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stopping the test API server:", err)
		}
	}()
	binary := filepath.Join(workDir, "bin", "release-controller")
	if err := testbinary.Build(binary); err != nil {
		return 0, err
	}
	kubeconfig := filepath.Join(workDir, "kubeconfig")
	if err := env.WriteKubeconfig(kubeconfig); err != nil {
		return 0, err
	}
	ctx := context.Background()
	if seeded, err = seedAll(ctx, env, workDir); err != nil {
		return 0, fmt.Errorf("seeding the API server: %w", err)
	}
	listen, err := testbinary.FreeAddr()
	if err != nil {
		return 0, err
	}
	base = "http://" + listen
	api, err = testbinary.Start(binary, filepath.Join(workDir, "api.log"), "api",
		"--kubeconfig", kubeconfig, "--listen", listen,
		"--log-namespace", seeded.logNamespace,
		"--signature-store", "file://"+seeded.storeDir,
		"--changelog-cache-dir", filepath.Join(workDir, "changelog-cache"),
		"--artifacts-url", "https://artifacts.example.com/releases")
	if err != nil {
		return 0, err
	}
	defer api.Stop(20 * time.Second)
	if err := waitSeeded(ctx); err != nil {
		return 0, fmt.Errorf("%w; the end of the api's log:\n%s", err, api.Tail(40))
	}
	code = m.Run()
	// Whatever the tests did, the server must have survived it without a panic.
	if err := checkHealthy(); err != nil {
		fmt.Fprintln(os.Stderr, "FAIL:", err)
		code = 1
	}
	return code, nil
}

// waitSeeded waits until the api serves every seeded payload (its informers have synced).
// A bound for a broken start, not a performance assertion.
func waitSeeded(ctx context.Context) error {
	limit := time.Now().Add(2 * time.Minute)
	url := base + "/api/v1/namespaces/" + seeded.namespace + "/releasestream/" + seeded.stream + "/tags"
	var last error
	for time.Now().Before(limit) {
		if !api.Running() {
			return fmt.Errorf("release-controller api exited: %s", api.ExitStatus())
		}
		body, err := testbinary.Get(ctx, url)
		if err == nil && strings.Contains(body, seeded.tags[len(seeded.tags)-1]) {
			return nil
		}
		last = err
		time.Sleep(200 * time.Millisecond)
	}
	return fmt.Errorf("the api did not serve the seeded payloads within 2 minutes (last: %w)", last)
}

// checkHealthy says what is wrong when the api has exited, does not answer /healthz, or
// logged a panic.
func checkHealthy() error {
	if !api.Running() {
		return fmt.Errorf("release-controller api (pid %d) exited: %s; the end of its log:\n%s", api.Pid(), api.ExitStatus(), api.Tail(40))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := testbinary.Get(ctx, base+"/healthz"); err != nil {
		return fmt.Errorf("release-controller api does not answer /healthz: %w", err)
	}
	if log := api.Log(); strings.Contains(strings.ToLower(log), "panic") {
		return errors.New("release-controller api logged a panic:\n" + excerpt(log, "panic"))
	}
	return nil
}

// requireHealthy fails t when the api is unwell (see checkHealthy).
func requireHealthy(t testing.TB) {
	t.Helper()
	if err := checkHealthy(); err != nil {
		t.Fatal(err)
	}
}

// excerpt returns the lines of log around the first line holding word (any case).
func excerpt(log, word string) string {
	lines := strings.Split(log, "\n")
	for i, l := range lines {
		if strings.Contains(strings.ToLower(l), word) {
			return strings.Join(lines[max(0, i-5):min(len(lines), i+30)], "\n")
		}
	}
	return ""
}

// httpClient is the HTTP client of every hostile request: it does not follow redirects (a
// redirect is an answer of its own, checked like any other), and its timeout bounds a broken
// server, not a performance assertion.
var httpClient = &http.Client{
	Timeout:       time.Minute,
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
}

// readBody reads at most 8 MiB of a response, enough for every answer of the seeded server.
func readBody(resp *http.Response) ([]byte, error) {
	defer resp.Body.Close()
	return io.ReadAll(io.LimitReader(resp.Body, 8<<20))
}
