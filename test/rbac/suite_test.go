//go:build !unit

// Package rbac runs the release flow with every component as its own ServiceAccount, bound to
// the roles `make generate` writes into config/rbac — the built binary's `controller` and
// `api` as subprocesses with a token from the TokenRequest API, the creation jobs' `payload
// build` with a token of the build account — against an API server that keeps an audit log.
// It fails on any request the API server refused, on "forbidden" in any component's output,
// and on any verb a role grants that its account never used: the roles are exactly what the
// components need.
package rbac

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"go.uber.org/zap/zapcore"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/release-controller/release-controller/internal/devenv/registry"
	"github.com/release-controller/release-controller/internal/testbinary"
	"github.com/release-controller/release-controller/internal/testenv"
)

var (
	env *testenv.Env
	// workDir holds the binary, the audit log, kubeconfigs, tokens, logs and scratch files.
	workDir string
	binary  string
	// auditLog is the API server's audit log (JSON lines, Metadata level).
	auditLog string
	reg      *registry.Server
)

// auditPolicy records every request at Metadata level (who, verb, resource, answer), once it
// was answered (or, for a watch, once it started).
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: Metadata
`

func TestMain(m *testing.M) {
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(zapcore.ErrorLevel)))
	code, err := run(m)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(code)
}

func run(m *testing.M) (int, error) {
	var err error
	if workDir, err = os.MkdirTemp("", "rbac-"); err != nil {
		return 0, err
	}
	defer os.RemoveAll(workDir)
	policy := filepath.Join(workDir, "audit-policy.yaml")
	if err := os.WriteFile(policy, []byte(auditPolicy), 0o644); err != nil {
		return 0, err
	}
	auditLog = filepath.Join(workDir, "audit.log")
	env, err = testenv.StartWith(testenv.Options{APIServerFlags: map[string][]string{
		"audit-policy-file": {policy},
		"audit-log-path":    {auditLog},
	}})
	if err != nil {
		return 0, err
	}
	defer func() {
		if err := env.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stopping the test API server:", err)
		}
	}()
	binary = filepath.Join(workDir, "bin", "release-controller")
	if err := testbinary.Build(binary); err != nil {
		return 0, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if reg, err = registry.Start(ctx, registry.Options{Dir: filepath.Join(workDir, "registry")}); err != nil {
		return 0, err
	}
	defer reg.Close()
	return m.Run(), nil
}
