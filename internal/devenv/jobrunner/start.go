package jobrunner

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// Start runs a Runner alone on the cluster of cfg, in a manager of its own (no metrics, no
// probes), as the kubelet and job controller of an API server that has none: the tests that
// run the controllers as separate processes need their Jobs run beside them. scheme must hold
// batch/v1 and prow.k8s.io/v1 (manager.NewScheme does). stop ends the runner and its
// processes and returns how its manager ended.
func Start(cfg *rest.Config, scheme *runtime.Scheme, opts Options) (stop func() error, err error) {
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Scheme: scheme, Metrics: metricsserver.Options{BindAddress: "0"}})
	if err != nil {
		return nil, fmt.Errorf("creating the job runner's manager: %w", err)
	}
	runner, err := New(opts)
	if err != nil {
		return nil, err
	}
	if err := runner.SetupWithManager(mgr); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	return func() error {
		cancel()
		return <-done
	}, nil
}
