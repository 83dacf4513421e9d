package pipeline

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/release-controller/release-controller/api/v1alpha1"
)

func soak(d time.Duration) *metav1.Duration { return &metav1.Duration{Duration: d} }

func mt(t time.Time) *metav1.Time { m := metav1.NewTime(t); return &m }

func TestMinSoak(t *testing.T) {
	p := threeEnvs(false)
	if got := MinSoak(p, 0); got != 0 {
		t.Errorf("no minSoak anywhere: %s", got)
	}
	p.Spec.Promotion = &v1alpha1.Promotion{MinSoak: soak(2 * time.Hour)}
	p.Spec.Environments[1].Promotion = &v1alpha1.Promotion{Strategy: v1alpha1.StrategyPatch}
	p.Spec.Environments[0].Promotion = &v1alpha1.Promotion{MinSoak: soak(10 * time.Minute)}
	for i, want := range []time.Duration{10 * time.Minute, 2 * time.Hour, 0} {
		if got := MinSoak(p, i); got != want {
			t.Errorf("MinSoak of %s = %s, want %s", p.Spec.Environments[i].Name, got, want)
		}
	}
}

func TestSetSoak(t *testing.T) {
	const hour = time.Hour
	ready := func(rev string, since *metav1.Time) *v1alpha1.EnvironmentStatus {
		return &v1alpha1.EnvironmentStatus{Name: "staging", Revision: rev, Ready: true, ReadySince: since}
	}
	tests := []struct {
		name     string
		prev     *v1alpha1.EnvironmentStatus
		cur      v1alpha1.EnvironmentStatus
		observed bool
		soak     time.Duration
		since    *metav1.Time
		until    *metav1.Time
	}{
		{name: "no soak: neither",
			cur: *ready("2", nil), observed: true},
		{name: "ready for the first time: the soak starts now",
			cur: *ready("2", nil), observed: true, soak: hour,
			since: mt(t0), until: mt(t0.Add(hour))},
		{name: "ready at a new revision: it starts again",
			prev: ready("1", mt(t0.Add(-5*hour))), cur: *ready("2", nil), observed: true, soak: hour,
			since: mt(t0), until: mt(t0.Add(hour))},
		{name: "still ready at the same revision: kept",
			prev: ready("2", mt(t0.Add(-10*time.Minute))), cur: *ready("2", nil), observed: true, soak: hour,
			since: mt(t0.Add(-10 * time.Minute)), until: mt(t0.Add(50 * time.Minute))},
		{name: "soaked long enough: kept, no soakUntil",
			prev: ready("2", mt(t0.Add(-2*hour))), cur: *ready("2", nil), observed: true, soak: hour,
			since: mt(t0.Add(-2 * hour))},
		{name: "a target not ready: reset",
			prev: ready("2", mt(t0.Add(-10*time.Minute))), cur: v1alpha1.EnvironmentStatus{Revision: "2"}, observed: true, soak: hour},
		{name: "ready again after that: from now",
			prev: &v1alpha1.EnvironmentStatus{Revision: "2"}, cur: *ready("2", nil), observed: true, soak: hour,
			since: mt(t0), until: mt(t0.Add(hour))},
		{name: "not observed (a cluster unreachable, a restart): kept as it was",
			prev: ready("2", mt(t0.Add(-10*time.Minute))), cur: v1alpha1.EnvironmentStatus{}, soak: hour,
			since: mt(t0.Add(-10 * time.Minute)), until: mt(t0.Add(50 * time.Minute))},
		{name: "observed again, ready: the soak goes on",
			prev: &v1alpha1.EnvironmentStatus{ReadySince: mt(t0.Add(-10 * time.Minute))}, cur: *ready("2", nil), observed: true, soak: hour,
			since: mt(t0.Add(-10 * time.Minute)), until: mt(t0.Add(50 * time.Minute))},
		{name: "minSoak shortened: over at once",
			prev: ready("2", mt(t0.Add(-10*time.Minute))), cur: *ready("2", nil), observed: true, soak: 5 * time.Minute,
			since: mt(t0.Add(-10 * time.Minute))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := tt.cur
			SetSoak(&s, tt.prev, tt.observed, tt.soak, t0)
			if diff := cmp.Diff([]*metav1.Time{tt.since, tt.until}, []*metav1.Time{s.ReadySince, s.SoakUntil}); diff != "" {
				t.Errorf("readySince, soakUntil (-want +got):\n%s", diff)
			}
		})
	}
}

// The soak left at several moments of one revision's stay: soakUntil until minSoak has
// passed since readySince, then none.
func TestSoakRemaining(t *testing.T) {
	since := mt(t0)
	for _, tt := range []struct {
		after time.Duration
		left  time.Duration // 0: over
	}{{0, time.Hour}, {30 * time.Minute, 30 * time.Minute}, {time.Hour - time.Second, time.Second}, {time.Hour, 0}, {26 * time.Hour, 0}} {
		s := v1alpha1.EnvironmentStatus{Revision: "2", Ready: true}
		now := t0.Add(tt.after)
		SetSoak(&s, &v1alpha1.EnvironmentStatus{Revision: "2", Ready: true, ReadySince: since}, true, time.Hour, now)
		left := time.Duration(0)
		if s.SoakUntil != nil {
			left = s.SoakUntil.Sub(now)
		}
		if left != tt.left || !s.ReadySince.Equal(since) || Soaked(s) != (tt.left == 0) {
			t.Errorf("%s after: %s left (soaked %v), readySince %v; want %s left", tt.after, left, Soaked(s), s.ReadySince, tt.left)
		}
	}
}

func TestSoakWakeAndRetryAfter(t *testing.T) {
	envs := []v1alpha1.EnvironmentStatus{{Name: "dev", SoakUntil: mt(t0.Add(time.Hour))}, {Name: "staging", SoakUntil: mt(t0.Add(time.Minute))}, {Name: "prod"}}
	if got := SoakWake(envs); !got.Equal(t0.Add(time.Minute)) {
		t.Errorf("SoakWake = %v, want the first soak's end", got)
	}
	if got := SoakWake(envs[2:]); !got.IsZero() {
		t.Errorf("SoakWake without a soak = %v", got)
	}
	for _, tt := range []struct {
		name  string
		retry time.Duration
		wakes []time.Time
		want  time.Duration
	}{
		{"nothing", 0, nil, 0},
		{"a wake alone", 0, []time.Time{t0.Add(time.Hour)}, time.Hour},
		{"the sooner of a retry and a wake", 30 * time.Second, []time.Time{t0.Add(time.Hour)}, 30 * time.Second},
		{"the first wake", time.Hour, []time.Time{{}, t0.Add(2 * time.Minute), t0.Add(time.Minute)}, time.Minute},
		{"a wake passed: at once", 0, []time.Time{t0.Add(-time.Second)}, time.Millisecond},
	} {
		if got := RetryAfter(tt.retry, t0, tt.wakes...); got != tt.want {
			t.Errorf("%s: RetryAfter = %s, want %s", tt.name, got, tt.want)
		}
	}
}

// Plan holds a revision in an environment until it soaked there, then the next takes it.
func TestPlanSoak(t *testing.T) {
	observed := [][]TargetObservation{{at("2", true)}, {at("1", true), at("1", true)}, {at("1", true)}}
	for _, tt := range []struct {
		name   string
		dev    *v1alpha1.EnvironmentStatus // dev's previous status
		now    time.Time
		want   []Action
		soakTo *metav1.Time
	}{
		{name: "dev just ready at 2: staging waits an hour",
			dev: &v1alpha1.EnvironmentStatus{Name: "dev", Revision: "1", Ready: true, ReadySince: mt(t0.Add(-48 * time.Hour))},
			now: t0, soakTo: mt(t0.Add(time.Hour))},
		{name: "half an hour later: still",
			dev: &v1alpha1.EnvironmentStatus{Name: "dev", Revision: "2", Ready: true, ReadySince: mt(t0)},
			now: t0.Add(30 * time.Minute), soakTo: mt(t0.Add(time.Hour))},
		{name: "an hour later: staging takes it",
			dev: &v1alpha1.EnvironmentStatus{Name: "dev", Revision: "2", Ready: true, ReadySince: mt(t0)},
			now: t0.Add(time.Hour), want: []Action{{Env: 1, Revision: "2"}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := threeEnvs(false)
			p.Spec.Promotion = &v1alpha1.Promotion{MinSoak: soak(time.Hour)}
			p.Status.Environments = []v1alpha1.EnvironmentStatus{*tt.dev}
			envs, actions := Plan(p, observed, "", tt.now)
			if diff := cmp.Diff(tt.want, actions); diff != "" {
				t.Errorf("actions (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.soakTo, envs[0].SoakUntil); diff != "" {
				t.Errorf("dev's soakUntil (-want +got):\n%s", diff)
			}
			if envs[2].ReadySince != nil {
				t.Errorf("prod, the last environment, soaks for nothing: %v", envs[2].ReadySince)
			}
		})
	}
}

// ExactSoakTimes: the API server keeps times to the second; the controller's exact readySince
// and soakUntil are put back where they are the same soak's, and a stored time that is not
// its own counts from the end of its second, so that no soak ends early.
func TestExactSoakTimes(t *testing.T) {
	const last = time.Second - time.Nanosecond
	exact := t0.Add(700 * time.Millisecond)
	env := func(name, rev string, since, until *metav1.Time) v1alpha1.EnvironmentStatus {
		return v1alpha1.EnvironmentStatus{Name: name, Revision: rev, Ready: true, ReadySince: since, SoakUntil: until}
	}
	tests := []struct {
		name         string
		stored, held []v1alpha1.EnvironmentStatus
		want         []v1alpha1.EnvironmentStatus
	}{
		{name: "held: its exact times, which the stored ones are the seconds of",
			stored: []v1alpha1.EnvironmentStatus{env("dev", "2", mt(t0), mt(t0.Add(10*time.Second)))},
			held:   []v1alpha1.EnvironmentStatus{env("dev", "2", mt(exact), mt(exact.Add(10*time.Second)))},
			want:   []v1alpha1.EnvironmentStatus{env("dev", "2", mt(exact), mt(exact.Add(10*time.Second)))}},
		{name: "held and read back exact (the controller's own write, the cache behind): kept",
			stored: []v1alpha1.EnvironmentStatus{env("dev", "2", mt(exact), nil)},
			held:   []v1alpha1.EnvironmentStatus{env("dev", "2", mt(exact), nil)},
			want:   []v1alpha1.EnvironmentStatus{env("dev", "2", mt(exact), nil)}},
		{name: "nothing held (a restart): the end of the stored second",
			stored: []v1alpha1.EnvironmentStatus{env("dev", "2", mt(t0), mt(t0.Add(10*time.Second)))},
			want:   []v1alpha1.EnvironmentStatus{env("dev", "2", mt(t0.Add(last)), mt(t0.Add(10*time.Second+last)))}},
		{name: "held at another revision: not the same soak",
			stored: []v1alpha1.EnvironmentStatus{env("dev", "3", mt(t0), nil)},
			held:   []v1alpha1.EnvironmentStatus{env("dev", "2", mt(exact), nil)},
			want:   []v1alpha1.EnvironmentStatus{env("dev", "3", mt(t0.Add(last)), nil)}},
		{name: "held in another second: not the same soak",
			stored: []v1alpha1.EnvironmentStatus{env("dev", "2", mt(t0.Add(time.Second)), nil)},
			held:   []v1alpha1.EnvironmentStatus{env("dev", "2", mt(exact), nil)},
			want:   []v1alpha1.EnvironmentStatus{env("dev", "2", mt(t0.Add(time.Second+last)), nil)}},
		{name: "another environment's held times are not this one's",
			stored: []v1alpha1.EnvironmentStatus{env("dev", "2", mt(t0), nil), env("staging", "2", nil, nil)},
			held:   []v1alpha1.EnvironmentStatus{env("staging", "2", mt(exact), nil)},
			want:   []v1alpha1.EnvironmentStatus{env("dev", "2", mt(t0.Add(last)), nil), env("staging", "2", nil, nil)}},
		{name: "no soak stored: none put in",
			stored: []v1alpha1.EnvironmentStatus{env("dev", "2", nil, nil)},
			held:   []v1alpha1.EnvironmentStatus{env("dev", "2", mt(exact), nil)},
			want:   []v1alpha1.EnvironmentStatus{env("dev", "2", nil, nil)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status := &v1alpha1.PipelineStatus{Environments: tt.stored}
			var held *v1alpha1.PipelineStatus
			if tt.held != nil {
				held = &v1alpha1.PipelineStatus{Environments: tt.held}
			}
			ExactSoakTimes(status, held)
			if diff := cmp.Diff(tt.want, status.Environments); diff != "" {
				t.Errorf("environments (-want +got):\n%s", diff)
			}
		})
	}
}

// A soak read back after a restart, from a readySince stored to the second, never ends before
// minSoak has passed since the real moment, which the stored second holds.
func TestSoakFromStoredSecondNeverEarly(t *testing.T) {
	for _, frac := range []time.Duration{0, time.Millisecond, 500 * time.Millisecond, time.Second - time.Nanosecond} {
		readyAt := t0.Add(frac)
		status := &v1alpha1.PipelineStatus{Environments: []v1alpha1.EnvironmentStatus{{Name: "dev", Revision: "2", Ready: true, ReadySince: mt(readyAt.Truncate(time.Second))}}}
		ExactSoakTimes(status, nil)
		s := v1alpha1.EnvironmentStatus{Name: "dev", Revision: "2", Ready: true}
		now := readyAt.Add(time.Hour - time.Nanosecond)
		SetSoak(&s, &status.Environments[0], true, time.Hour, now)
		if Soaked(s) {
			t.Errorf("ready at %s: soaked at %s, before an hour passed", readyAt, now)
		}
	}
}

func TestRequeueFrom(t *testing.T) {
	for _, tt := range []struct {
		name    string
		d, took time.Duration
		want    time.Duration
	}{
		{"nothing to come back for", 0, time.Second, 0},
		{"a quick reconcile: the wait as computed", 10 * time.Second, 0, 10 * time.Second},
		{"a slow status write: the wait less its time", 10 * time.Second, 700 * time.Millisecond, 9300 * time.Millisecond},
		{"the moment passed during the reconcile: at once", time.Second, 2 * time.Second, time.Millisecond},
	} {
		if got := RequeueFrom(tt.d, t0, t0.Add(tt.took)); got != tt.want {
			t.Errorf("%s: RequeueFrom = %s, want %s", tt.name, got, tt.want)
		}
	}
}
