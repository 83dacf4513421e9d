package jira

import (
	"context"

	ctrl "sigs.k8s.io/controller-runtime"
)

// CommentBody is the comment the controller leaves, for the tests of package jira_test.
var CommentBody = commentBody

// Setup fills in the reconciler's defaults and registers its index without registering the
// controller, so that a test calls Reconcile itself and sees what it returns.
func (r *Reconciler) Setup(ctx context.Context, mgr ctrl.Manager) error { return r.setup(ctx, mgr) }
