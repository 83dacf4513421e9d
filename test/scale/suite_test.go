//go:build !unit

// Package scale runs the shipped `release-controller controller` binary as users do — a
// subprocess given nothing but --kubeconfig and ordinary flags — against a real API server and
// the embedded registry, with a hundred streams at once, and with two replicas of which the
// leader is killed mid-flight.
//
// The test process plays the cluster: it runs the API server (internal/testenv), the registry
// (internal/registry) and the local job runner (internal/devenv/jobrunner), which runs the
// controller's creation jobs (`release-controller payload build`, the real binary) and the
// verification scripts as local processes. The controllers themselves run only in the
// subprocesses, so this package cannot share test/e2e's TestMain, which runs them in-process.
package scale

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"go.uber.org/zap/zapcore"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/release-controller/release-controller/internal/devenv/jobrunner"
	"github.com/release-controller/release-controller/internal/devenv/registry"
	"github.com/release-controller/release-controller/internal/manager"
	"github.com/release-controller/release-controller/internal/testbinary"
	"github.com/release-controller/release-controller/internal/testenv"
)

var (
	env        *testenv.Env
	reg        *registry.Server
	workDir    string // the binary, the kubeconfig, controller and job logs, the scripts' markers
	binary     string
	kubeconfig string
)

// runnerParallel is how many job processes run at once: a few more than the gated
// verifications of TestLeaderKilledMidFlight hold, so builds keep flowing while they wait.
const runnerParallel = 8

func TestMain(m *testing.M) {
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(zapcore.ErrorLevel)))
	var err error
	if workDir, err = os.MkdirTemp("", "scale-"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	// The API server audits the requests of the fault tests' controller user (faults.go): what
	// reached it, and how it answered, whatever the controller process went through.
	policy := filepath.Join(workDir, "audit-policy.yaml")
	if err := os.WriteFile(policy, []byte(auditPolicy), 0o600); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	auditLog = filepath.Join(workDir, "audit.log")
	opts := testenv.Options{APIServerFlags: map[string][]string{"audit-policy-file": {policy}, "audit-log-path": {auditLog}}}
	testenv.MainWith(m, opts, &env, func(e *testenv.Env) (func(), error) {
		var err error
		binary = filepath.Join(workDir, "bin", "release-controller")
		if err := testbinary.Build(binary); err != nil {
			return nil, err
		}
		kubeconfig = filepath.Join(workDir, "kubeconfig")
		if err := e.WriteKubeconfig(kubeconfig); err != nil {
			return nil, err
		}
		ctx, cancel := context.WithCancel(context.Background())
		if reg, err = registry.Start(ctx, registry.Options{Dir: filepath.Join(workDir, "registry")}); err != nil {
			cancel()
			return nil, err
		}
		stopRunner, err := startJobRunner(e)
		if err != nil {
			cancel()
			return nil, err
		}
		return func() {
			stopRunner()
			cancel()
			_ = reg.Close()
			if os.Getenv("SCALE_KEEP_WORKDIR") == "" {
				_ = os.RemoveAll(workDir)
			} else {
				fmt.Fprintln(os.Stderr, "scale: work directory kept in", workDir)
			}
		}, nil
	})
}

// startJobRunner runs the job runner alone (no controllers) in this process, as the
// cluster's kubelet and job controller: the controllers are the subprocesses'.
func startJobRunner(e *testenv.Env) (stop func(), err error) {
	mgr, err := manager.New(e.Config, manager.Options{MetricsAddr: "0", ProbeAddr: "0"})
	if err != nil {
		return nil, err
	}
	runner, err := jobrunner.New(jobrunner.Options{
		Executable:  binary,
		LogDir:      filepath.Join(workDir, "logs"),
		Env:         []string{"KUBECONFIG=" + kubeconfig, "PATH=" + filepath.Dir(binary) + ":" + os.Getenv("PATH"), "SCRATCH=" + workDir},
		MaxParallel: runnerParallel,
	})
	if err != nil {
		return nil, err
	}
	if err := runner.SetupWithManager(mgr); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	return func() {
		cancel()
		if err := <-done; err != nil {
			fmt.Fprintln(os.Stderr, "job runner stopped with:", err)
		}
	}, nil
}
