//go:build !unit

// Package tenancy checks issue 33's rule end to end: whatever the controller does because of an
// object, it does with no more rights than that object's namespace has been granted.
//
// The built binary's `controller` and `api` run as their own ServiceAccounts, bound to the
// shipped RBAC (config/rbac), against an API server with RBAC on and an audit log. Two tenants,
// A and B, are each granted config/samples/tenant's Roles in their own namespaces, for a
// ServiceAccount of their own whose token is the tenant's credential. Tenant A then tries,
// with its own token, each attack of the issue: each must be refused with its message, and
// the audit log must show nothing written outside A's namespaces on A's behalf. A's own
// stream → payload → pipeline must still work end to end.
package tenancy

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

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
	// rc is the running install and its two tenants.
	rc *install
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

func run(m *testing.M) (code int, err error) {
	if workDir, err = os.MkdirTemp("", "tenancy-"); err != nil {
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
	rc, err = startInstall(ctx)
	if err != nil {
		return 0, errors.Join(err, rc.stop())
	}
	code = m.Run()
	if code != 0 {
		fmt.Fprintf(os.Stderr, "the controller's last lines:\n%s\nthe api's last lines:\n%s\n", rc.controller.Tail(40), rc.api.Tail(40))
		if dir := os.Getenv("TENANCY_LOGS"); dir != "" {
			// Where to keep the components' logs of a failed run (CI artifacts).
			fmt.Fprintln(os.Stderr, "logs kept in", dir, exec.Command("cp", "-r", workDir, dir).Run())
		}
	}
	return code, rc.stop()
}

// waitTimeout bounds every wait: a deadline for a broken test, not a performance assertion.
const waitTimeout = 3 * time.Minute
