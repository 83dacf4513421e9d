package pipeline

import (
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/release-controller/release-controller/api/v1alpha1"
)

func TestFrozen(t *testing.T) {
	p := threeEnvs(false)
	p.Namespace, p.Labels = "team-a", map[string]string{"tier": "web"}
	end := func(d time.Duration) *metav1.Time { return mt(t0.Add(d)) }
	local := func(name string, spec v1alpha1.ReleaseFreezeSpec) Freeze {
		return FreezeOf("team-a", name, metav1.NewTime(t0.Add(-time.Hour)), spec)
	}
	cluster := func(name string, spec v1alpha1.ReleaseFreezeSpec) Freeze {
		return FreezeOf("", name, metav1.NewTime(t0.Add(-time.Hour)), spec)
	}
	web := &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "web"}}
	db := &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "db"}}
	rec := func(freeze, reason string, until *metav1.Time) *v1alpha1.FreezeRecord {
		return &v1alpha1.FreezeRecord{Freeze: freeze, Reason: reason, Until: until}
	}
	tests := []struct {
		name    string
		freezes []Freeze
		want    []*v1alpha1.FreezeRecord
		wake    time.Time
	}{
		{name: "none", want: []*v1alpha1.FreezeRecord{nil, nil, nil}},
		{name: "a stop-the-line of the namespace: every environment, no end, nothing to wake for",
			freezes: []Freeze{local("incident", v1alpha1.ReleaseFreezeSpec{Reason: "incident 42"})},
			want:    []*v1alpha1.FreezeRecord{rec("team-a/incident", "incident 42", nil), rec("team-a/incident", "incident 42", nil), rec("team-a/incident", "incident 42", nil)}},
		{name: "a freeze of another namespace: nothing",
			freezes: []Freeze{FreezeOf("team-b", "incident", metav1.NewTime(t0.Add(-time.Hour)), v1alpha1.ReleaseFreezeSpec{Reason: "x"})},
			want:    []*v1alpha1.FreezeRecord{nil, nil, nil}},
		{name: "a cluster freeze of prod for web pipelines, until tomorrow",
			freezes: []Freeze{cluster("holidays", v1alpha1.ReleaseFreezeSpec{Reason: "holidays", End: end(24 * time.Hour), Pipelines: web, Environments: []string{"prod"}})},
			want:    []*v1alpha1.FreezeRecord{nil, nil, rec("holidays", "holidays", end(24*time.Hour))}, wake: t0.Add(24 * time.Hour)},
		{name: "a cluster freeze of db pipelines: nothing",
			freezes: []Freeze{cluster("db", v1alpha1.ReleaseFreezeSpec{Reason: "migration", Pipelines: db})},
			want:    []*v1alpha1.FreezeRecord{nil, nil, nil}},
		{name: "a freeze to come: nothing yet, wake at its start",
			freezes: []Freeze{local("later", v1alpha1.ReleaseFreezeSpec{Reason: "release day", Start: end(2 * time.Hour), End: end(3 * time.Hour)})},
			want:    []*v1alpha1.FreezeRecord{nil, nil, nil}, wake: t0.Add(2 * time.Hour)},
		{name: "a weekly freeze in its window (Wednesday noon in UTC, from Wednesday 10:00 for 4h)",
			freezes: []Freeze{local("midweek", v1alpha1.ReleaseFreezeSpec{Reason: "standup", Environments: []string{"staging"},
				Schedule: &v1alpha1.FreezeSchedule{Cron: "0 10 * * 3", Duration: metav1.Duration{Duration: 4 * time.Hour}}})},
			want: []*v1alpha1.FreezeRecord{nil, rec("team-a/midweek", "standup", end(2*time.Hour)), nil}, wake: t0.Add(2 * time.Hour)},
		{name: "a freeze whose zone is unknown holds nothing",
			freezes: []Freeze{local("mars", v1alpha1.ReleaseFreezeSpec{Reason: "x",
				Schedule: &v1alpha1.FreezeSchedule{Cron: "0 10 * * 3", TimeZone: "Mars/Olympus_Mons", Duration: metav1.Duration{Duration: 4 * time.Hour}}})},
			want: []*v1alpha1.FreezeRecord{nil, nil, nil}},
		{name: "two on prod: the one that ends last is shown, the first end still wakes",
			freezes: []Freeze{
				local("short", v1alpha1.ReleaseFreezeSpec{Reason: "short", End: end(time.Hour), Environments: []string{"prod"}}),
				local("long", v1alpha1.ReleaseFreezeSpec{Reason: "long", End: end(5 * time.Hour), Environments: []string{"prod"}}),
			},
			want: []*v1alpha1.FreezeRecord{nil, nil, rec("team-a/long", "long", end(5*time.Hour))}, wake: t0.Add(time.Hour)},
		{name: "one without an end holds longest",
			freezes: []Freeze{
				cluster("line", v1alpha1.ReleaseFreezeSpec{Reason: "stop the line", Environments: []string{"prod"}}),
				local("long", v1alpha1.ReleaseFreezeSpec{Reason: "long", End: end(5 * time.Hour), Environments: []string{"prod"}}),
			},
			want: []*v1alpha1.FreezeRecord{nil, nil, rec("line", "stop the line", nil)}, wake: t0.Add(5 * time.Hour)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reversed := slices.Clone(tt.freezes)
			slices.Reverse(reversed)
			for _, order := range [][]Freeze{tt.freezes, reversed} {
				frozen, wake := Frozen(p, order, t0)
				if diff := cmp.Diff(tt.want, frozen); diff != "" {
					t.Errorf("frozen (-want +got):\n%s", diff)
				}
				if !wake.Equal(tt.wake) {
					t.Errorf("wake %v, want %v", wake, tt.wake)
				}
			}
		})
	}
}

func TestHoldFrozen(t *testing.T) {
	envs := []v1alpha1.EnvironmentStatus{{Name: "dev"}, {Name: "staging", Frozen: &v1alpha1.FreezeRecord{Freeze: "old"}}, {Name: "prod"}}
	frozen := []*v1alpha1.FreezeRecord{nil, nil, {Freeze: "holidays", Reason: "holidays"}}
	actions := HoldFrozen(envs, []Action{{Env: 0, Revision: "3"}, {Env: 1, Revision: "2"}, {Env: 2, Revision: "1"}}, frozen)
	if diff := cmp.Diff([]Action{{Env: 0, Revision: "3"}, {Env: 1, Revision: "2"}}, actions); diff != "" {
		t.Errorf("actions (-want +got):\n%s", diff)
	}
	if envs[1].Frozen != nil || envs[2].Frozen == nil || envs[2].Frozen.Freeze != "holidays" {
		t.Errorf("frozen: %+v", envs)
	}
}

func TestSetFrozenCondition(t *testing.T) {
	var conds []metav1.Condition
	envs := []v1alpha1.EnvironmentStatus{{Name: "dev"},
		{Name: "staging", Frozen: &v1alpha1.FreezeRecord{Freeze: "team-a/incident", Reason: "incident 42"}},
		{Name: "prod", Frozen: &v1alpha1.FreezeRecord{Freeze: "holidays", Reason: "holidays", Until: mt(t0.Add(24 * time.Hour))}}}
	SetFrozenCondition(&conds, 2, envs, t0)
	c := meta.FindStatusCondition(conds, v1alpha1.ConditionFrozen)
	want := "staging frozen by team-a/incident until it is ended: incident 42; prod frozen by holidays until 2026-03-26T12:00:00Z: holidays"
	if c == nil || c.Status != metav1.ConditionTrue || c.Reason != v1alpha1.ReasonFreezeActive || c.Message != want || c.ObservedGeneration != 2 {
		t.Errorf("Frozen %+v, want True %s %q", c, v1alpha1.ReasonFreezeActive, want)
	}
	envs[1].Frozen, envs[2].Frozen = nil, nil
	SetFrozenCondition(&conds, 2, envs, t0)
	if c := meta.FindStatusCondition(conds, v1alpha1.ConditionFrozen); c != nil {
		t.Errorf("Frozen %+v once no freeze holds", c)
	}
}
