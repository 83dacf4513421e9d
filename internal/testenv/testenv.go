// Package testenv starts a real API server (kube-apiserver and etcd through envtest) with the
// project's CRDs installed, for tests and benchmarks.
//
// The binaries are built from Go modules by `make control-plane` into the folder that
// KUBEBUILDER_ASSETS names; when the variable is unset, the Makefile's pinned folder is used.
package testenv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/release-controller/release-controller/config/crd"
	"github.com/release-controller/release-controller/internal/manager"
)

// KubeVersion is the version `make control-plane` builds; it names the pinned folder.
const KubeVersion = "1.37.1"

// Env is a running API server.
type Env struct {
	Config *rest.Config
	Client client.Client
	env    *envtest.Environment
	logs   []*os.File
	// components are the control-plane processes fault tests killed or started again.
	components map[string]*component
}

// Options change how the API server starts.
type Options struct {
	// APIServerFlags are set on kube-apiserver's command line, flag name (without dashes) to
	// values, e.g. "audit-log-path": {"/tmp/audit.log"}.
	APIServerFlags map[string][]string
	// LogDir, when set, receives the output of kube-apiserver (kube-apiserver.log) and etcd
	// (etcd.log); otherwise it is discarded.
	LogDir string
	// SkipPolicies names admission policies of config/crd/policies not to install, e.g.
	// crd.ReleaseLogPolicy for tests whose release log runs on a fake clock.
	SkipPolicies []string
}

// Start starts the API server and installs the CRDs under config/crd.
func Start() (*Env, error) {
	return StartWith(Options{})
}

// StartWith is Start with opts.
func StartWith(opts Options) (*Env, error) {
	if startsUnderUnit {
		return nil, errors.New("a test built with -tags unit (make unit) starts an API server: its file needs //go:build !unit")
	}
	root, err := ModuleRoot()
	if err != nil {
		return nil, err
	}
	assets, err := AssetsDir(root)
	if err != nil {
		return nil, err
	}
	env := &envtest.Environment{
		BinaryAssetsDirectory: assets,
		CRDDirectoryPaths: []string{
			filepath.Join(root, "config", "crd", "bases"),
			filepath.Join(root, "config", "crd", "test"),
		},
		ErrorIfCRDPathMissing: true,
	}
	for flag, values := range opts.APIServerFlags {
		env.ControlPlane.GetAPIServer().Configure().Set(flag, values...)
	}
	var logs []*os.File
	closeLogs := func() {
		for _, f := range logs {
			_ = f.Close()
		}
	}
	if opts.LogDir != "" {
		for _, name := range []string{"kube-apiserver.log", "etcd.log"} {
			f, err := os.Create(filepath.Join(opts.LogDir, name))
			if err != nil {
				closeLogs()
				return nil, err
			}
			logs = append(logs, f)
		}
		apiServer := env.ControlPlane.GetAPIServer()
		apiServer.Out, apiServer.Err = logs[0], logs[0]
		env.ControlPlane.Etcd = &envtest.Etcd{Out: logs[1], Err: logs[1]}
	}
	cfg, err := env.Start()
	if err != nil {
		closeLogs()
		return nil, fmt.Errorf("starting the test API server from %s: %w", assets, err)
	}
	// Tests and benchmarks write a lot; the client-side rate limit would measure itself.
	cfg.QPS, cfg.Burst = 5000, 10000
	c, err := client.New(cfg, client.Options{Scheme: manager.NewScheme()})
	if err == nil {
		err = crd.InstallPoliciesExcept(context.Background(), c, opts.SkipPolicies...)
	}
	if err != nil {
		_ = env.Stop()
		closeLogs()
		return nil, err
	}
	return &Env{Config: cfg, Client: c, env: env, logs: logs}, nil
}

// WriteKubeconfig writes a kubeconfig for a cluster administrator of the API server to path.
func (e *Env) WriteKubeconfig(path string) error {
	return e.WriteKubeconfigFor(path, "admin", "system:masters")
}

// WriteKubeconfigFor writes a kubeconfig for the user name, member of groups, to path. What
// the user may do is up to RBAC (system:masters may do anything).
func (e *Env) WriteKubeconfigFor(path, name string, groups ...string) error {
	user, err := e.env.AddUser(envtest.User{Name: name, Groups: groups}, nil)
	if err != nil {
		return fmt.Errorf("adding a user to the test API server: %w", err)
	}
	data, err := user.KubeConfig()
	if err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o600)
}

// Stop stops the API server.
func (e *Env) Stop() error {
	err := errors.Join(e.stopRestarted(), e.env.Stop())
	for _, f := range e.logs {
		_ = f.Close()
	}
	return err
}

// Main runs a package's tests against one API server shared by all of them: it starts the
// server, sets *env, calls setup (when not nil) to start what the tests need, runs the tests,
// then stops what setup started and the server.
func Main(m *testing.M, env **Env, setup func(*Env) (stop func(), err error)) {
	MainWith(m, Options{}, env, setup)
}

// MainWith is Main with the API server started with opts.
func MainWith(m *testing.M, opts Options, env **Env, setup func(*Env) (stop func(), err error)) {
	e, err := StartWith(opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	*env = e
	stop := func() {}
	if setup != nil {
		if stop, err = setup(e); err != nil {
			fmt.Fprintln(os.Stderr, "setting up the tests:", err)
			_ = e.Stop()
			os.Exit(1)
		}
	}
	code := m.Run()
	stop()
	if err := e.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "stopping the test API server:", err)
	}
	os.Exit(code)
}

// Namespace creates a namespace of its own for one test.
func (e *Env) Namespace(t testing.TB) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "test-"}}
	if err := e.Client.Create(context.Background(), ns); err != nil {
		t.Fatalf("creating namespace: %v", err)
	}
	return ns.Name
}

// AssetsDir finds kube-apiserver and etcd, or says which make target builds them.
func AssetsDir(root string) (string, error) {
	dir := os.Getenv("KUBEBUILDER_ASSETS")
	if dir == "" {
		dir = filepath.Join(root, "bin", "k8s", KubeVersion+"-"+runtime.GOOS+"-"+runtime.GOARCH)
	}
	for _, bin := range []string{"kube-apiserver", "etcd"} {
		if _, err := os.Stat(filepath.Join(dir, bin)); err != nil {
			return "", fmt.Errorf("the test API server needs %s in %s, which is missing: run `make control-plane` (or `make test`, which builds it first)", bin, dir)
		}
	}
	return dir, nil
}

// ModuleRoot walks up from the working directory to the folder holding go.mod.
func ModuleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod above the working directory")
		}
		dir = parent
	}
}

// StartControllers runs a manager with every controller against the API server, plus whatever
// setup adds to it (the job runner, say), until the returned stop is called.
func (e *Env) StartControllers(opts manager.Options, setup ...func(ctrl.Manager) error) (stop func(), err error) {
	ctx, cancel := context.WithCancel(context.Background())
	mgr, err := manager.New(e.Config, opts)
	if err == nil {
		err = manager.AddControllers(ctx, mgr, opts)
	}
	for _, s := range setup {
		if err == nil {
			err = s(mgr)
		}
	}
	if err != nil {
		cancel()
		return nil, err
	}
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	return func() {
		cancel()
		if err := <-done; err != nil {
			fmt.Fprintln(os.Stderr, "manager stopped with:", err)
		}
	}, nil
}
