package conditions

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/release-controller/release-controller/api/v1alpha1"
)

func TestSetProgress(t *testing.T) {
	earlier := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	now := earlier.Add(time.Hour)
	reconciling := metav1.Condition{Type: v1alpha1.ConditionReconciling, Status: metav1.ConditionTrue,
		Reason: v1alpha1.ReasonProgressing, LastTransitionTime: metav1.NewTime(earlier)}
	stalled := metav1.Condition{Type: v1alpha1.ConditionStalled, Status: metav1.ConditionTrue,
		Reason: "InvalidSpec", LastTransitionTime: metav1.NewTime(earlier)}
	for _, tt := range []struct {
		name            string
		before          []metav1.Condition
		progress        Progress
		wantReconciling string // the reason, "" when absent
		wantStalled     string
		wantSince       time.Time // the True condition's transition time
	}{
		{name: "done removes both", before: []metav1.Condition{reconciling, stalled}, progress: Done},
		{name: "reconciling appears now", progress: Progress{Reconciling: true, Reason: v1alpha1.ReasonProgressing},
			wantReconciling: v1alpha1.ReasonProgressing, wantSince: now},
		{name: "still reconciling keeps its time, takes the new reason", before: []metav1.Condition{reconciling},
			progress:        Progress{Reconciling: true, Reason: v1alpha1.ReasonProgressingWithRetry, Message: "listing payloads: EOF"},
			wantReconciling: v1alpha1.ReasonProgressingWithRetry, wantSince: earlier},
		{name: "stalled replaces reconciling", before: []metav1.Condition{reconciling},
			progress: Progress{Stalled: true, Reason: "InvalidSpec"}, wantStalled: "InvalidSpec", wantSince: now},
		{name: "stalled wins over reconciling", progress: Progress{Stalled: true, Reconciling: true, Reason: "InvalidSpec"},
			wantStalled: "InvalidSpec", wantSince: now},
		{name: "reconciling replaces stalled", before: []metav1.Condition{stalled},
			progress: Progress{Reconciling: true, Reason: v1alpha1.ReasonProgressing}, wantReconciling: v1alpha1.ReasonProgressing, wantSince: now},
	} {
		t.Run(tt.name, func(t *testing.T) {
			conds := append([]metav1.Condition(nil), tt.before...)
			SetProgress(&conds, 3, tt.progress, now)
			for typ, want := range map[string]string{v1alpha1.ConditionReconciling: tt.wantReconciling, v1alpha1.ConditionStalled: tt.wantStalled} {
				c := meta.FindStatusCondition(conds, typ)
				switch {
				case want == "" && c != nil:
					t.Errorf("%s is present: %+v", typ, *c)
				case want == "":
				case c == nil:
					t.Errorf("%s is absent, want reason %s", typ, want)
				case c.Status != metav1.ConditionTrue || c.Reason != want || c.ObservedGeneration != 3 || !c.LastTransitionTime.Time.Equal(tt.wantSince):
					t.Errorf("%s = %+v, want True/%s since %s at generation 3", typ, *c, want, tt.wantSince)
				}
			}
		})
	}
}
