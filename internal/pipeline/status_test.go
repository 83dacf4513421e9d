package pipeline

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/release-controller/release-controller/api/v1alpha1"
)

func TestStatusWritesCatchUp(t *testing.T) {
	key := types.NamespacedName{Namespace: "ns", Name: "p"}
	cachedStatus := v1alpha1.PipelineStatus{ObservedGeneration: 1}
	writtenStatus := &v1alpha1.PipelineStatus{ObservedGeneration: 2}
	tests := []struct {
		name          string
		before, after string // the write remembered; empty: none
		cachedRV      string
		wantRV        string
		wantWritten   bool // p carries the written status
		wantForgotten bool
	}{
		{name: "nothing written", cachedRV: "10", wantRV: "10", wantForgotten: true},
		{name: "cache still at the version the write replaced", before: "10", after: "11", cachedRV: "10", wantRV: "11", wantWritten: true},
		{name: "cache has the write", before: "10", after: "11", cachedRV: "11", wantRV: "11", wantForgotten: true},
		{name: "cache has a later write", before: "10", after: "11", cachedRV: "12", wantRV: "12", wantForgotten: true},
		{name: "the write changed nothing", before: "10", after: "10", cachedRV: "10", wantRV: "10", wantForgotten: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var w statusWrites
			if tt.before != "" {
				w.remember(key, tt.before, tt.after, writtenStatus)
			}
			p := &v1alpha1.Pipeline{Status: *cachedStatus.DeepCopy()}
			p.ResourceVersion = tt.cachedRV
			w.catchUp(key, p)
			if p.ResourceVersion != tt.wantRV {
				t.Errorf("resourceVersion = %s, want %s", p.ResourceVersion, tt.wantRV)
			}
			if got := p.Status.ObservedGeneration == writtenStatus.ObservedGeneration; got != tt.wantWritten {
				t.Errorf("status = %+v, want the written one: %v", p.Status, tt.wantWritten)
			}
			if _, kept := w.writes[key]; kept == tt.wantForgotten {
				t.Errorf("write remembered: %v, want forgotten: %v", kept, tt.wantForgotten)
			}
		})
	}
}

func TestStatusWritesCatchUpCopies(t *testing.T) {
	key := types.NamespacedName{Namespace: "ns", Name: "p"}
	var w statusWrites
	written := &v1alpha1.PipelineStatus{Environments: []v1alpha1.EnvironmentStatus{{Name: "dev", Revision: "2"}}}
	w.remember(key, "1", "2", written)
	written.Environments[0].Revision = "changed after the write"
	p := &v1alpha1.Pipeline{}
	p.ResourceVersion = "1"
	w.catchUp(key, p)
	if p.Status.Environments[0].Revision != "2" {
		t.Fatalf("remembered status changed with the caller's copy: %+v", p.Status)
	}
	p.Status.Environments[0].Revision = "changed by the reconcile"
	q := &v1alpha1.Pipeline{}
	q.ResourceVersion = "1"
	w.catchUp(key, q)
	if q.Status.Environments[0].Revision != "2" {
		t.Errorf("a reconcile's change reached the remembered status: %+v", q.Status)
	}
}

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

func TestDeferredWritesWait(t *testing.T) {
	key := types.NamespacedName{Namespace: "ns", Name: "p"}
	start := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	var d deferredWrites
	steps := []struct {
		name   string
		forget bool
		at     time.Duration // after start
		want   time.Duration
	}{
		{name: "the first change waits the whole delay", at: 0, want: time.Second},
		{name: "a change within the delay waits what is left", at: 300 * time.Millisecond, want: 700 * time.Millisecond},
		{name: "once the delay is over it is written", at: time.Second, want: 0},
		{name: "late reconciles write at once", at: 5 * time.Second, want: 0},
		{name: "after the write, the next change waits again", forget: true, at: 6 * time.Second, want: time.Second},
	}
	for _, s := range steps {
		if s.forget {
			d.forget(key)
		}
		if got := d.wait(key, start.Add(s.at), time.Second); got != s.want {
			t.Errorf("%s: wait = %v, want %v", s.name, got, s.want)
		}
	}
	if got := d.wait(types.NamespacedName{Namespace: "ns", Name: "other"}, start.Add(6500*time.Millisecond), time.Second); got != time.Second {
		t.Errorf("another pipeline's change waits %v, want its own full delay", got)
	}
}
