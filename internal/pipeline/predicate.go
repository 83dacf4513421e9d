package pipeline

import (
	"maps"

	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/release-controller/release-controller/api/v1alpha1"
)

// NeedsReconcile reports whether an update of a pipeline is one the controller must act on:
// its spec (generation), labels or annotations changed, or an approval arrived. The
// controller's own status writes are not: reconciling after each of them would double the
// work of every promotion, and nothing in them asks for more.
func NeedsReconcile(oldP, newP *v1alpha1.Pipeline) bool {
	if oldP.Generation != newP.Generation || !newP.DeletionTimestamp.Equal(oldP.DeletionTimestamp) ||
		!maps.Equal(oldP.Labels, newP.Labels) || !maps.Equal(oldP.Annotations, newP.Annotations) {
		return true
	}
	approvals := func(p *v1alpha1.Pipeline) map[string]*v1alpha1.ApprovalRecord {
		m := make(map[string]*v1alpha1.ApprovalRecord, len(p.Status.Environments))
		for i := range p.Status.Environments {
			if a := p.Status.Environments[i].Approval; a != nil {
				m[p.Status.Environments[i].Name] = a
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
