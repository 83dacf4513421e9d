package freeze

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/release-controller/release-controller/api/v1alpha1"
)

func TestDecide(t *testing.T) {
	s1, u1 := utc("2026-03-06T18:00:00Z"), utc("2026-03-09T09:00:00Z")
	s2, u2 := utc("2026-03-13T18:00:00Z"), utc("2026-03-16T09:00:00Z")
	n2 := utc("2026-03-20T18:00:00Z")
	tp := func(t time.Time) *metav1.Time { return timePtr(t) }
	active := func(since time.Time, until *metav1.Time) v1alpha1.ReleaseFreezeStatus {
		return v1alpha1.ReleaseFreezeStatus{ActiveSince: tp(since), ActiveUntil: until,
			Conditions: []metav1.Condition{{Type: v1alpha1.ConditionFreezeActive, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonInWindow}}}
	}
	tests := []struct {
		name    string
		prev    v1alpha1.ReleaseFreezeStatus
		st      State
		invalid bool
		now     time.Time

		want        []Transition
		reason      string // of Active
		since       *metav1.Time
		until, next *metav1.Time
	}{
		{name: "a stop-the-line seen first: started at its creation, no end",
			st: State{Active: true, Since: s1}, now: s1.Add(time.Second),
			want: []Transition{{Started: true, At: s1}}, reason: v1alpha1.ReasonInWindow, since: tp(s1)},
		{name: "seen again: nothing new",
			prev: active(s1, nil), st: State{Active: true, Since: s1}, now: s1.Add(time.Hour),
			reason: v1alpha1.ReasonInWindow, since: tp(s1)},
		{name: "not started yet: the next start",
			st: State{Next: s1}, now: s1.Add(-time.Hour),
			reason: v1alpha1.ReasonOutsideWindow, next: tp(s1)},
		{name: "a window of a schedule began: its end and the one after",
			st: State{Active: true, Since: s1, Until: u1, Next: s2}, now: s1,
			want: []Transition{{Started: true, At: s1, Until: u1}}, reason: v1alpha1.ReasonInWindow, since: tp(s1), until: tp(u1), next: tp(s2)},
		{name: "the window ended: at its end, the next one ahead",
			prev: active(s1, tp(u1)), st: State{Next: s2}, now: u1.Add(time.Second),
			want: []Transition{{At: u1}}, reason: v1alpha1.ReasonOutsideWindow, since: tp(s1), until: tp(u1), next: tp(s2)},
		{name: "a window ended and the next began unseen: both, in order",
			prev: active(s1, tp(u1)), st: State{Active: true, Since: s2, Until: u2, Next: n2}, now: s2.Add(time.Hour),
			want: []Transition{{At: u1}, {Started: true, At: s2, Until: u2}}, reason: v1alpha1.ReasonInWindow, since: tp(s2), until: tp(u2), next: tp(n2)},
		{name: "windows overlapping: the freeze's start stays",
			prev: active(s1, tp(u2)), st: State{Active: true, Since: s1.Add(24 * time.Hour), Until: u2}, now: s1.Add(30 * time.Hour),
			reason: v1alpha1.ReasonInWindow, since: tp(s1), until: tp(u2)},
		{name: "a stop-the-line ended (its end set to now): ended then, for the record",
			prev: active(s1, nil), st: State{Since: s1, Until: u1}, now: u1,
			want: []Transition{{At: u1}}, reason: v1alpha1.ReasonFreezeEnded, since: tp(s1), until: tp(u1)},
		{name: "its end moved later: still the same window",
			prev: active(s1, tp(u1)), st: State{Active: true, Since: s1, Until: u2}, now: s1.Add(time.Hour),
			reason: v1alpha1.ReasonInWindow, since: tp(s1), until: tp(u2)},
		{name: "its spec broke while active: it holds nothing from now",
			prev: active(s1, nil), invalid: true, now: u1,
			want: []Transition{{At: u1}}, reason: v1alpha1.ReasonInvalidFreeze, since: tp(s1), until: tp(u1)},
		{name: "invalid from the start: nothing happened",
			invalid: true, now: u1, reason: v1alpha1.ReasonInvalidFreeze},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, transitions := Decide(&tt.prev, 3, tt.st, tt.invalid, tt.now)
			if diff := cmp.Diff(tt.want, transitions); diff != "" {
				t.Errorf("transitions (-want +got):\n%s", diff)
			}
			c := meta.FindStatusCondition(got.Conditions, v1alpha1.ConditionFreezeActive)
			if c == nil || c.Reason != tt.reason || (c.Status == metav1.ConditionTrue) != (tt.reason == v1alpha1.ReasonInWindow) || c.ObservedGeneration != 3 {
				t.Errorf("Active %+v, want reason %s", c, tt.reason)
			}
			for _, f := range []struct {
				name      string
				got, want *metav1.Time
			}{{"activeSince", got.ActiveSince, tt.since}, {"activeUntil", got.ActiveUntil, tt.until}, {"nextStart", got.NextStart, tt.next}} {
				if !timeOf(f.got).Equal(timeOf(f.want)) {
					t.Errorf("%s %v, want %v", f.name, f.got, f.want)
				}
			}
			if got.ObservedGeneration != 3 {
				t.Errorf("observedGeneration %d", got.ObservedGeneration)
			}
		})
	}
}

func TestWake(t *testing.T) {
	s1, u1, n := utc("2026-03-06T18:00:00Z"), utc("2026-03-09T09:00:00Z"), utc("2026-03-13T18:00:00Z")
	for _, tt := range []struct {
		st   State
		want time.Time
	}{
		{State{Active: true, Since: s1, Until: u1, Next: n}, u1},
		{State{Active: true, Since: s1}, time.Time{}},
		{State{Next: n}, n},
		{State{Since: s1, Until: u1}, time.Time{}},
	} {
		if got := Wake(tt.st); !got.Equal(tt.want) {
			t.Errorf("Wake(%s) = %v, want %v", show(tt.st), got, tt.want)
		}
	}
}
