package pipeline

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/release-controller/release-controller/api/v1alpha1"
)

func TestNeedsReconcile(t *testing.T) {
	base := func() *v1alpha1.Pipeline {
		p := &v1alpha1.Pipeline{}
		p.Generation = 3
		p.Labels = map[string]string{"team": "a"}
		p.Status.Environments = []v1alpha1.EnvironmentStatus{{Name: "dev", Revision: "1.0.0"}, {Name: "prod"}}
		return p
	}
	approved := &v1alpha1.ApprovalRecord{Revision: "1.0.0", Approver: "hmac:prod", Time: metav1.NewTime(time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC))}
	for _, tc := range []struct {
		name   string
		change func(*v1alpha1.Pipeline)
		want   bool
	}{
		{"nothing", func(*v1alpha1.Pipeline) {}, false},
		{"the controller's own status write", func(p *v1alpha1.Pipeline) {
			p.Status.Environments[0].Revision = "1.0.1"
			p.Status.Environments[1].WaitingApproval = &v1alpha1.WaitingApproval{Revision: "1.0.1"}
			p.Status.ObservedGeneration = 3
		}, false},
		{"spec", func(p *v1alpha1.Pipeline) { p.Generation = 4 }, true},
		{"labels", func(p *v1alpha1.Pipeline) { p.Labels["team"] = "b" }, true},
		{"annotations", func(p *v1alpha1.Pipeline) { p.Annotations = map[string]string{"x": "y"} }, true},
		{"a reconcile requested", func(p *v1alpha1.Pipeline) {
			p.Annotations = map[string]string{v1alpha1.AnnotationReconcileRequestedAt: "2026-11-28T12:00:00Z"}
		}, true},
		{"deletion", func(p *v1alpha1.Pipeline) { now := metav1.Now(); p.DeletionTimestamp = &now }, true},
		{"an approval", func(p *v1alpha1.Pipeline) { p.Status.Environments[1].Approval = approved }, true},
		{"a rejection", func(p *v1alpha1.Pipeline) {
			p.Status.Environments[1].Rejections = []v1alpha1.RejectionRecord{{Revision: "1.0.0", By: "alice", Reason: "breaks checkout", Time: approved.Time}}
		}, true},
		{"the controller's soak and freeze", func(p *v1alpha1.Pipeline) {
			p.Status.Environments[0].ReadySince, p.Status.Environments[0].SoakUntil = &approved.Time, &approved.Time
			p.Status.Environments[1].Frozen = &v1alpha1.FreezeRecord{Freeze: "ns/holidays", Reason: "holidays"}
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			oldP, newP := base(), base()
			tc.change(newP)
			if got := NeedsReconcile(oldP, newP); got != tc.want {
				t.Errorf("NeedsReconcile = %v, want %v", got, tc.want)
			}
		})
	}
}
