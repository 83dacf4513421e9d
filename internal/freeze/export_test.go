package freeze

import ctrl "sigs.k8s.io/controller-runtime"

// SetupWithoutController sets r up as SetupWithManager does but registers no controller: a
// test calls Reconcile itself, and nothing else does.
func (r *Reconciler) SetupWithoutController(mgr ctrl.Manager) error {
	r.setup(mgr)
	return nil
}
