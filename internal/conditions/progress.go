package conditions

import (
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/release-controller/release-controller/api/v1alpha1"
)

// Progress is where one reconcile left its object, in kstatus's terms: still working toward
// the spec (Reconciling), unable to go on until something changes (Stalled), or neither
// (done: Ready alone tells how it went).
type Progress struct {
	Reconciling bool
	Stalled     bool
	// Reason and Message are the True condition's.
	Reason  string
	Message string
}

// Done is the progress of a reconcile that finished its work.
var Done = Progress{}

// SetProgress sets Reconciling and Stalled from p with generation as their observed
// generation; a condition that appears takes now as its transition time. Both are abnormal-true: each is removed when not True, as kstatus and Flux expect,
// and they never hold together (Stalled wins: a stalled object is not being worked on).
func SetProgress(conds *[]metav1.Condition, generation int64, p Progress, now time.Time) {
	set := func(typ string) {
		Set(conds, metav1.Condition{Type: typ, Status: metav1.ConditionTrue, Reason: p.Reason,
			Message: p.Message, ObservedGeneration: generation, LastTransitionTime: metav1.NewTime(now)})
	}
	switch {
	case p.Stalled:
		set(v1alpha1.ConditionStalled)
		meta.RemoveStatusCondition(conds, v1alpha1.ConditionReconciling)
	case p.Reconciling:
		set(v1alpha1.ConditionReconciling)
		meta.RemoveStatusCondition(conds, v1alpha1.ConditionStalled)
	default:
		meta.RemoveStatusCondition(conds, v1alpha1.ConditionReconciling)
		meta.RemoveStatusCondition(conds, v1alpha1.ConditionStalled)
	}
}
