package stream

import (
	"context"

	ctrl "sigs.k8s.io/controller-runtime"
)

// SetupWithoutController sets r up as SetupWithManager does but registers no controller: a
// test calls Reconcile itself, and nothing else does.
func (r *Reconciler) SetupWithoutController(ctx context.Context, mgr ctrl.Manager) error {
	return r.setup(ctx, mgr)
}
