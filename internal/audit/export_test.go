package audit

import ctrl "sigs.k8s.io/controller-runtime"

// Setup fills in the reconciler's defaults without registering the controller, so that a
// test calls Reconcile itself and sees what it returns.
func (r *Reconciler) Setup(mgr ctrl.Manager) { r.setup(mgr) }
