package testenv

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/release-controller/release-controller/api/v1alpha1"
)

// CheckFailed checks the conditions a pass that failed at step left, for the failure-point
// tests: Ready False with reason, its message naming step; Stalled True naming it when stalled
// (the spec can never work), else Reconciling True ProgressingWithRetry naming it; not both.
func CheckFailed(t testing.TB, conds []metav1.Condition, reason, step string, stalled bool) {
	t.Helper()
	ready := meta.FindStatusCondition(conds, v1alpha1.ConditionReady)
	if ready == nil || ready.Status != metav1.ConditionFalse || ready.Reason != reason || !strings.Contains(ready.Message, step) {
		t.Errorf("Ready %+v, want False %s saying %q", ready, reason, step)
	}
	progress, other := v1alpha1.ConditionReconciling, v1alpha1.ConditionStalled
	if stalled {
		progress, other = other, progress
	}
	if c := meta.FindStatusCondition(conds, progress); c == nil || c.Status != metav1.ConditionTrue || !strings.Contains(c.Message, step) ||
		(!stalled && c.Reason != v1alpha1.ReasonProgressingWithRetry) {
		t.Errorf("%s %+v, want True saying %q", progress, c, step)
	}
	if c := meta.FindStatusCondition(conds, other); c != nil {
		t.Errorf("%s present: %+v", other, c)
	}
}
