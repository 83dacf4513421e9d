package pipeline

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
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
		{"a soak starts: readySince and soakUntil", func(s *v1alpha1.PipelineStatus) {
			s.Environments[0].ReadySince, s.Environments[0].SoakUntil = mt(t0), mt(t0.Add(time.Hour))
		}, true},
		{"a soak ends: soakUntil gone", func(s *v1alpha1.PipelineStatus) {
			s.Environments[0].SoakUntil = nil
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

// StartFrom: a status held back of the version read is where the reconcile starts, and the
// cached one (with the exact soak times) what the write is compared with; a held status of
// another version gives its exact times only.
func TestStartFrom(t *testing.T) {
	exact := t0.Add(300 * time.Millisecond)
	stored := func(rev string, since *metav1.Time) *v1alpha1.PipelineStatus {
		return &v1alpha1.PipelineStatus{Environments: []v1alpha1.EnvironmentStatus{{Name: "dev", Revision: rev, Ready: true, ReadySince: since}}}
	}
	tests := []struct {
		name        string
		cached      *v1alpha1.PipelineStatus
		version     string
		held        heldStatus
		start, bfor *v1alpha1.PipelineStatus
	}{
		{name: "nothing held: the cached status, a stored time taken at the end of its second",
			cached: stored("1", mt(t0)), version: "5",
			start: stored("1", mt(t0.Add(time.Second-time.Nanosecond))), bfor: stored("1", mt(t0.Add(time.Second-time.Nanosecond)))},
		{name: "written: the cached status with the exact time written",
			cached: stored("2", mt(t0)), version: "5", held: heldStatus{Version: "5", Status: stored("2", mt(exact))},
			start: stored("2", mt(exact)), bfor: stored("2", mt(exact))},
		{name: "held back at this version: start from it, compare with the cached one",
			cached: stored("1", nil), version: "5", held: heldStatus{Version: "5", Status: stored("2", mt(exact)), Deferred: true},
			start: stored("2", mt(exact)), bfor: stored("1", nil)},
		{name: "held back at an older version: another writer came since, the cached status wins",
			cached: stored("1", nil), version: "6", held: heldStatus{Version: "5", Status: stored("2", mt(exact)), Deferred: true},
			start: stored("1", nil), bfor: stored("1", nil)},
		{name: "written, then another writer: the exact time of the same soak is kept",
			cached: stored("2", mt(t0)), version: "7", held: heldStatus{Version: "6", Status: stored("2", mt(exact))},
			start: stored("2", mt(exact)), bfor: stored("2", mt(exact))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cached := tt.cached.DeepCopy()
			start, before := StartFrom(cached, tt.version, tt.held)
			if diff := cmp.Diff(tt.start, start); diff != "" {
				t.Errorf("start (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.bfor, before); diff != "" {
				t.Errorf("before (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.cached, cached); diff != "" {
				t.Errorf("the cached status changed (-want +got):\n%s", diff)
			}
			start.Environments[0].Revision = "changed"
			if before.Environments[0].Revision == "changed" || (tt.held.Status != nil && tt.held.Status.Environments[0].Revision == "changed") {
				t.Error("start shares its environments with before or the held status")
			}
		})
	}
}
