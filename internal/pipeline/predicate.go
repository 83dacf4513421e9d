package pipeline

import (
	"maps"

	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/release-controller/release-controller/api/v1alpha1"
)

// NeedsReconcile reports whether an update of a pipeline is one the controller must act on:
// its spec (generation), labels or annotations changed, or an approval or a rejection
// arrived. The controller's own status writes are not: reconciling after each of them would
// double the work of every promotion, and nothing in them asks for more.
func NeedsReconcile(oldP, newP *v1alpha1.Pipeline) bool {
	if oldP.Generation != newP.Generation || !newP.DeletionTimestamp.Equal(oldP.DeletionTimestamp) ||
		!maps.Equal(oldP.Labels, newP.Labels) || !maps.Equal(oldP.Annotations, newP.Annotations) {
		return true
	}
	// What the approval route writes: approvals and rejections.
	type decisions struct {
		Approval   *v1alpha1.ApprovalRecord
		Rejections []v1alpha1.RejectionRecord
	}
	approvals := func(p *v1alpha1.Pipeline) map[string]decisions {
		m := make(map[string]decisions, len(p.Status.Environments))
		for i := range p.Status.Environments {
			if e := &p.Status.Environments[i]; e.Approval != nil || len(e.Rejections) > 0 {
				m[e.Name] = decisions{e.Approval, e.Rejections}
			}
		}
		return m
	}
	return !equality.Semantic.DeepEqual(approvals(oldP), approvals(newP))
}

// ignoreOwnStatusWrites passes a pipeline's updates that NeedsReconcile, and every other event.
type ignoreOwnStatusWrites struct {
	predicate.Funcs
}

func (ignoreOwnStatusWrites) Update(e event.UpdateEvent) bool {
	oldP, okOld := e.ObjectOld.(*v1alpha1.Pipeline)
	newP, okNew := e.ObjectNew.(*v1alpha1.Pipeline)
	if !okOld || !okNew {
		return true
	}
	return NeedsReconcile(oldP, newP)
}
