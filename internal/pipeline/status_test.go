package pipeline

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/release-controller/release-controller/api/v1alpha1"
)

func TestObservationsOnly(t *testing.T) {
	base := func() *v1alpha1.PipelineStatus {
		return &v1alpha1.PipelineStatus{
			ObservedGeneration: 1,
			Environments: []v1alpha1.EnvironmentStatus{{
				Name: "dev", Revision: "1", Ready: true,
				Targets: []v1alpha1.TargetStatus{{Namespace: "a", Revision: "1", Ready: true}, {Namespace: "b", Revision: "1", Ready: true}},
			}},
			Conditions: []metav1.Condition{{Type: v1alpha1.ConditionPipelineReady, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonTargetsObserved}},
		}
	}
	tests := []struct {
		name   string
		change func(*v1alpha1.PipelineStatus)
		want   bool
	}{
		{"nothing", func(*v1alpha1.PipelineStatus) {}, true},
		{"a target rolls out a new revision", func(s *v1alpha1.PipelineStatus) {
			s.Environments[0].Targets[0] = v1alpha1.TargetStatus{Namespace: "a", Revision: "2", Message: "0 of 1 replicas updated"}
			s.Environments[0].Revision, s.Environments[0].Ready = "", false
		}, true},
		{"a target no longer ready", func(s *v1alpha1.PipelineStatus) {
			s.Environments[0].Targets[1].Ready, s.Environments[0].Targets[1].Message = false, "0 of 1 updated replicas available"
			s.Environments[0].Ready = false
		}, true},
		{"a promotion recorded", func(s *v1alpha1.PipelineStatus) {
			s.Environments[0].LastPromotion = &v1alpha1.PromotionRecord{ID: "uid/dev/2", Revision: "2"}
		}, false},
		{"waiting for an approval", func(s *v1alpha1.PipelineStatus) {
			s.Environments[0].WaitingApproval = &v1alpha1.WaitingApproval{Revision: "2"}
		}, false},
		{"a condition changed", func(s *v1alpha1.PipelineStatus) {
			s.Conditions[0].Status, s.Conditions[0].Reason = metav1.ConditionFalse, v1alpha1.ReasonTargetsNotObserved
		}, false},
		{"a new generation observed", func(s *v1alpha1.PipelineStatus) { s.ObservedGeneration = 2 }, false},
		{"a target added", func(s *v1alpha1.PipelineStatus) {
			s.Environments[0].Targets = append(s.Environments[0].Targets, v1alpha1.TargetStatus{Namespace: "c"})
		}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			old, changed := base(), base()
			tt.change(changed)
			if got := ObservationsOnly(old, changed); got != tt.want {
				t.Errorf("ObservationsOnly = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestObservationWait(t *testing.T) {
	start := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		at   time.Duration // after the first change
		want time.Duration
	}{
		{name: "the first change waits the whole delay", at: 0, want: ObservationDelay},
		{name: "a change within the delay waits what is left", at: 300 * time.Millisecond, want: ObservationDelay - 300*time.Millisecond},
		{name: "once the delay is over it is written", at: ObservationDelay, want: 0},
		{name: "late reconciles write at once", at: 5 * time.Second, want: 0},
	} {
		if got := ObservationWait(start, start.Add(tc.at)); got != tc.want {
			t.Errorf("%s: ObservationWait = %v, want %v", tc.name, got, tc.want)
		}
	}
}
