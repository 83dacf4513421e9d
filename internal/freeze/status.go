package freeze

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/conditions"
)

// Transition is a window of a freeze that began or ended: a release-log entry and an Event.
type Transition struct {
	// Started: the window began at At; else it ended at At.
	Started bool
	At      time.Time
	// Until is when a window that began ends (zero: until it is ended).
	Until time.Time
}

// Decide is the status a freeze whose status was prev gets from where its window stands at
// now (st; invalid: its spec cannot be read, so it holds nothing), and the windows that began
// or ended since prev: an end before a start when one window followed another unseen. The
// Active condition, activeSince, activeUntil and nextStart are set; Ready, Reconciling and
// Stalled are the reconcile's to set. It is pure.
func Decide(prev *v1alpha1.ReleaseFreezeStatus, generation int64, st State, invalid bool, now time.Time) (*v1alpha1.ReleaseFreezeStatus, []Transition) {
	status := prev.DeepCopy()
	wasActive := meta.IsStatusConditionTrue(prev.Conditions, v1alpha1.ConditionFreezeActive)
	active := st.Active && !invalid
	prevUntil := timeOf(prev.ActiveUntil)

	var transitions []Transition
	ended := wasActive && (!active || (!prevUntil.IsZero() && !now.Before(prevUntil)))
	if ended {
		at := now
		switch {
		case active:
			// A new window is open: the one the status showed ended at its end.
			at = prevUntil
		case !st.Until.IsZero() && !st.Until.After(now):
			at = st.Until
		case !prevUntil.IsZero() && !prevUntil.After(now):
			at = prevUntil
		}
		transitions = append(transitions, Transition{At: at})
		status.ActiveUntil = timePtr(at)
	}
	if active && (!wasActive || ended) {
		transitions = append(transitions, Transition{Started: true, At: st.Since, Until: st.Until})
	}

	if active {
		if len(transitions) > 0 || status.ActiveSince == nil {
			status.ActiveSince = timePtr(st.Since)
		}
		// Kept while the window stays open: overlapping windows move st.Since, not the freeze.
		status.ActiveUntil = timePtr(st.Until)
	} else {
		if !st.Since.IsZero() {
			status.ActiveSince = timePtr(st.Since)
		}
		if !st.Until.IsZero() {
			status.ActiveUntil = timePtr(st.Until)
		}
	}
	status.NextStart = timePtr(st.Next)
	if invalid {
		status.NextStart = nil
	}

	c := metav1.Condition{Type: v1alpha1.ConditionFreezeActive, ObservedGeneration: generation, LastTransitionTime: metav1.NewTime(now)}
	switch {
	case invalid:
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, v1alpha1.ReasonInvalidFreeze, "the freeze holds nothing until its spec can be read (Ready says why)"
	case active && st.Until.IsZero():
		c.Status, c.Reason, c.Message = metav1.ConditionTrue, v1alpha1.ReasonInWindow, fmt.Sprintf("frozen since %s until the freeze is ended", stamp(status.ActiveSince.Time))
	case active:
		c.Status, c.Reason, c.Message = metav1.ConditionTrue, v1alpha1.ReasonInWindow, fmt.Sprintf("frozen since %s until %s", stamp(status.ActiveSince.Time), stamp(st.Until))
	case !st.Next.IsZero():
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, v1alpha1.ReasonOutsideWindow, "the next window starts at "+stamp(st.Next)
	case status.ActiveUntil != nil:
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, v1alpha1.ReasonFreezeEnded, "ended at "+stamp(status.ActiveUntil.Time)+"; no window is to come"
	default:
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, v1alpha1.ReasonFreezeEnded, "no window is to come"
	}
	conditions.Set(&status.Conditions, c)
	status.ObservedGeneration = generation
	return status, transitions
}

// Wake is when the window's next boundary comes after now, the moment to look again: the end
// of the open window, else the next start (zero: none).
func Wake(st State) time.Time {
	if st.Active {
		return st.Until
	}
	return st.Next
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }

func timeOf(t *metav1.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.Time
}

func timePtr(t time.Time) *metav1.Time {
	if t.IsZero() {
		return nil
	}
	m := metav1.NewTime(t)
	return &m
}
