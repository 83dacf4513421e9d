package statuswrite

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
)

func TestIsBehind(t *testing.T) {
	at := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name     string
		cached   string
		replaced string
		now      time.Time
		want     bool
	}{
		{"the cache shows the version the write replaced", "10", "10", at.Add(time.Second), true},
		{"the cache shows the write", "11", "10", at.Add(time.Second), false},
		{"the cache shows a later write of someone else", "12", "10", at.Add(time.Second), false},
		{"a write the cache never showed is given up after the lag", "10", "10", at.Add(10 * time.Second), false},
		{"no write", "10", "", at, false},
	} {
		if got := IsBehind(tc.cached, tc.replaced, at, tc.now, 10*time.Second); got != tc.want {
			t.Errorf("%s: IsBehind = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestTracker(t *testing.T) {
	clock := clocktesting.NewFakeClock(time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC))
	tr := &Tracker[string]{Clock: clock, MaxLag: 5 * time.Second, Keep: 20 * time.Second}
	a, b := types.NamespacedName{Namespace: "ns", Name: "a"}, types.NamespacedName{Namespace: "ns", Name: "b"}

	if _, behind := tr.Behind(a, "1"); behind {
		t.Error("behind with no write")
	}
	tr.Wrote(a, "1", "2", "written")
	w, behind := tr.Behind(a, "1")
	if !behind || w.Value != "written" || w.After != "2" {
		t.Errorf("Behind(a, 1) = %+v, %v: want the write, behind", w, behind)
	}
	if _, behind := tr.Behind(a, "2"); behind {
		t.Error("behind although the cache shows the write")
	}
	if last := tr.Last(a); !last.Equal(clock.Now()) {
		t.Errorf("Last = %v, want the write's time", last)
	}
	// A write whose resourceVersion did not move (nothing changed) is never waited for.
	tr.Wrote(b, "7", "7", "same")
	if _, behind := tr.Behind(b, "7"); behind {
		t.Error("behind a write that changed nothing")
	}

	clock.Step(6 * time.Second)
	if _, behind := tr.Behind(a, "1"); behind {
		t.Error("still behind after MaxLag")
	}
	if tr.Last(a).IsZero() {
		t.Error("Last forgot the write before Keep")
	}
	clock.Step(20 * time.Second)
	if !tr.Last(a).IsZero() {
		t.Error("Last remembers the write after Keep")
	}
	tr.Wrote(b, "8", "9", "new") // sweeps a
	if len(tr.writes) != 1 {
		t.Errorf("%d writes remembered, want only b's: old ones are swept", len(tr.writes))
	}
	tr.Forget(b)
	if _, behind := tr.Behind(b, "8"); behind {
		t.Error("behind a forgotten write")
	}
}

func TestWindow(t *testing.T) {
	start := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	clock := clocktesting.NewFakeClock(start)
	w := &Window{Clock: clock}
	key := types.NamespacedName{Namespace: "ns", Name: "p"}
	if _, ok := w.Get(key); ok {
		t.Error("a span before any event")
	}
	w.Mark(key)
	clock.Step(time.Second)
	if s := w.Mark(key); !s.First.Equal(start) || !s.Last.Equal(start.Add(time.Second)) {
		t.Errorf("span = %+v, want it to run from the first event to the second", s)
	}
	if s := w.Open(key); !s.First.Equal(start) {
		t.Errorf("Open moved the open span: %+v", s)
	}
	w.Close(key)
	clock.Step(time.Second)
	if s := w.Open(key); !s.First.Equal(start.Add(2*time.Second)) || !s.Last.Equal(s.First) {
		t.Errorf("Open after Close = %+v, want a new span now", s)
	}
}
