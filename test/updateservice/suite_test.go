//go:build !unit

// Package updateservice proves issue 35's update service end to end, with the shipped binary
// run as a user runs it: `release-controller controller` and `release-controller api` as
// subprocesses given a kubeconfig and ordinary flags, against a real API server and the
// embedded registry. The test process plays the cluster's kubelet and job controller with the
// local job runner (payload builds are the real binary, verifications shell scripts), declares
// risks with kubectl, tombstones with the CLI, and reads /graph with a plain HTTP client as a
// Cincinnati client does.
package updateservice

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/zap/zapcore"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/release-controller/release-controller/internal/devenv/jobrunner"
	"github.com/release-controller/release-controller/internal/devenv/registry"
	"github.com/release-controller/release-controller/internal/manager"
	"github.com/release-controller/release-controller/internal/testbinary"
	"github.com/release-controller/release-controller/internal/testenv"
)

var (
	env *testenv.Env
	reg *registry.Server
	// workDir holds the binary, the kubeconfig, the processes' and the jobs' logs.
	workDir    string
	binary     string
	kubeconfig string
	// kubectl is envtest's kubectl, beside its kube-apiserver.
	kubectl string
	// server is the api's base URL, which it also serves as its --public-url.
	server string
	// controller and api are the running processes.
	controller, api *testbinary.Process
)

// waitTimeout bounds every wait: a deadline for a broken test, not a performance assertion.
const waitTimeout = 3 * time.Minute

const logNamespace = "release-log"

func TestMain(m *testing.M) {
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(zapcore.ErrorLevel)))
	testenv.Main(m, &env, setup)
}

// setup builds the binary and starts the registry, the job runner, the controller and the api.
func setup(e *testenv.Env) (stop func(), err error) {
	if workDir, err = os.MkdirTemp("", "updateservice-"); err != nil {
		return nil, err
	}
	var stops []func() error
	stop = func() {
		for i := len(stops) - 1; i >= 0; i-- {
			if err := stops[i](); err != nil {
				fmt.Fprintln(os.Stderr, "stopping:", err)
			}
		}
		if os.Getenv("UPDATESERVICE_KEEP_WORKDIR") == "" {
			_ = os.RemoveAll(workDir)
		} else {
			fmt.Fprintln(os.Stderr, "updateservice: work directory kept in", workDir)
		}
	}
	defer func() {
		if err != nil {
			stop()
		}
	}()
	root, err := testenv.ModuleRoot()
	if err != nil {
		return nil, err
	}
	assets, err := testenv.AssetsDir(root)
	if err != nil {
		return nil, err
	}
	kubectl = filepath.Join(assets, "kubectl")
	if _, err := os.Stat(kubectl); err != nil {
		return nil, fmt.Errorf("kubectl beside the test API server: %w", err)
	}
	binary = filepath.Join(workDir, "bin", "release-controller")
	if err := testbinary.Build(binary); err != nil {
		return nil, err
	}
	kubeconfig = filepath.Join(workDir, "kubeconfig")
	if err := e.WriteKubeconfig(kubeconfig); err != nil {
		return nil, err
	}
	if err := e.Client.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: logNamespace}}); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	stops = append(stops, func() error { cancel(); return nil })
	if reg, err = registry.Start(ctx, registry.Options{Dir: filepath.Join(workDir, "registry")}); err != nil {
		return nil, err
	}
	stops = append(stops, reg.Close)
	stopRunner, err := jobrunner.Start(e.Config, manager.NewScheme(), jobrunner.Options{
		Executable: binary,
		LogDir:     filepath.Join(workDir, "jobs"),
		Env:        []string{"KUBECONFIG=" + kubeconfig, "PATH=" + filepath.Dir(binary) + ":" + os.Getenv("PATH")},
	})
	if err != nil {
		return nil, err
	}
	stops = append(stops, stopRunner)

	probe, listen := "", ""
	for _, addr := range []*string{&probe, &listen} {
		if *addr, err = testbinary.FreeAddr(); err != nil {
			return nil, err
		}
	}
	server = "http://" + listen
	if controller, err = start("controller", "controller", "--kubeconfig", kubeconfig,
		"--import-interval", "1s", "--retry-backoff", "500ms", "--retry-backoff-max", "2s",
		"--metrics-bind-address", "0", "--health-probe-bind-address", probe,
		"--leader-election-namespace", metav1.NamespaceDefault, "--log-namespace", logNamespace,
		// The job runner runs the creation jobs' command, not their image; outside a pod the
		// flag is required.
		"--build-image", "release-controller:updateservice-test"); err != nil {
		return nil, err
	}
	stops = append(stops, stopProcess(controller))
	if api, err = start("api", "api", "--kubeconfig", kubeconfig, "--listen", listen, "--public-url", server,
		"--log-namespace", logNamespace, "--changelog-cache-dir", filepath.Join(workDir, "changelog-cache")); err != nil {
		return nil, err
	}
	stops = append(stops, stopProcess(api))
	if err := waitServing(controller, "http://"+probe+"/readyz"); err != nil {
		return nil, err
	}
	if err := waitServing(api, server+"/healthz"); err != nil {
		return nil, err
	}
	return stop, nil
}

// start starts the binary with args, its output in workDir/<name>.log.
func start(name string, args ...string) (*testbinary.Process, error) {
	p, err := testbinary.Start(binary, filepath.Join(workDir, name+".log"), args...)
	if err != nil {
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	return p, nil
}

// stopProcess stops p and, when it had ended before, says how, with the end of its log.
func stopProcess(p *testbinary.Process) func() error {
	return func() error {
		if !p.Running() {
			return fmt.Errorf("%s had ended (%s):\n%s", p.LogPath, p.ExitStatus(), p.Tail(40))
		}
		p.Stop(30 * time.Second)
		return nil
	}
}

// waitServing waits until url answers 200, failing early when p ends.
func waitServing(p *testbinary.Process, url string) error {
	deadline := time.Now().Add(time.Minute)
	for {
		_, err := testbinary.Get(context.Background(), url)
		switch {
		case err == nil:
			return nil
		case !p.Running():
			return fmt.Errorf("%s ended (%s) before %s answered:\n%s", p.LogPath, p.ExitStatus(), url, p.Tail(40))
		case time.Now().After(deadline):
			return errors.Join(fmt.Errorf("%s does not answer after a minute; the log:\n%s", url, p.Tail(40)), err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
