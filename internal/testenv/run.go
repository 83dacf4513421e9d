package testenv

import (
	"context"
	"testing"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/release-controller/release-controller/internal/freeze"
	"github.com/release-controller/release-controller/internal/manager"
	"github.com/release-controller/release-controller/internal/releaselog"
)

// Run starts mgr until the test ends, and fails the test if it stops with an error.
func Run(t testing.TB, mgr ctrl.Manager) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager stopped with: %v", err)
		}
	})
}

// StartFreezes runs the freeze controllers against e, writing the release log into logNS,
// until the test ends.
func (e *Env) StartFreezes(t testing.TB, logNS string) {
	t.Helper()
	log := releaselog.Options{Namespace: logNS}
	mgr, err := manager.New(e.Config, manager.Options{MetricsAddr: "0", ProbeAddr: "0", SkipControllerNameValidation: true, ReleaseLog: log})
	if err != nil {
		t.Fatal(err)
	}
	r := &freeze.Reconciler{Log: releaselog.NewWriter(mgr.GetClient(), mgr.GetAPIReader(), log)}
	if err := r.SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	Run(t, mgr)
}
