package payload

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/release-controller/release-controller/api/v1alpha1"
)

// Transition is a change of a payload's status worth an Event.
type Transition struct {
	// Type is corev1.EventTypeNormal or corev1.EventTypeWarning.
	Type string
	// Reason is one of the v1alpha1.Event* reasons; Action is what the controller was doing:
	// Build, Verify or Decide.
	Reason, Action string
	Message        string
}

// Transitions are the changes from the status old to the status cur that the payload's
// Events report, in this order: its image built (PayloadCreated turning True), the payload
// failed (PayloadFailed: the build failed or it was aborted), a verification cluster that
// cannot be read (ClusterUnreachable turning True), verification runs that failed or were
// lost, and the verdict (PayloadAccepted or PayloadRejected turning True). Verification
// runs that start are reported by the stream controller, which launches them.
func Transitions(old, cur *v1alpha1.ReleasePayloadStatus) []Transition {
	var ts []Transition
	turned := func(conditionType string) (message string, ok bool) {
		c := meta.FindStatusCondition(cur.Conditions, conditionType)
		if c == nil || c.Status != metav1.ConditionTrue || meta.IsStatusConditionTrue(old.Conditions, conditionType) {
			return "", false
		}
		return c.Message, true
	}
	if message, ok := turned(v1alpha1.ConditionPayloadCreated); ok {
		built := "the payload image was built by " + cur.ReleaseCreationJobResult.Name
		if message != "" {
			built += ": " + message
		}
		ts = append(ts, Transition{corev1.EventTypeNormal, v1alpha1.EventBuildSucceeded, "Build", built})
	}
	if message, ok := turned(v1alpha1.ConditionPayloadFailed); ok {
		ts = append(ts, Transition{corev1.EventTypeWarning, v1alpha1.EventBuildFailed, "Build", "the payload failed: " + message})
	}
	if message, ok := turned(v1alpha1.ConditionClusterUnreachable); ok {
		ts = append(ts, Transition{corev1.EventTypeWarning, v1alpha1.EventClusterUnreachable, "Verify",
			"the jobs of a verification cluster cannot be read; its runs are kept: " + message})
	}
	for _, run := range EndedRuns(old, cur) {
		switch run.Run.State {
		case v1alpha1.JobFailure:
			ts = append(ts, Transition{corev1.EventTypeWarning, v1alpha1.EventVerificationFailed, "Verify",
				fmt.Sprintf("%s %s of verification %s failed (attempt %d): %s", run.Run.Kind, run.Run.Name, run.Verification, run.Run.Attempt, run.Run.Message)})
		case v1alpha1.JobUnknown:
			ts = append(ts, Transition{corev1.EventTypeWarning, v1alpha1.EventVerificationLost, "Verify",
				fmt.Sprintf("%s %s of verification %s (attempt %d) was lost: %s", run.Run.Kind, run.Run.Name, run.Verification, run.Run.Attempt, run.Run.Message)})
		}
	}
	if message, ok := turned(v1alpha1.ConditionPayloadAccepted); ok {
		ts = append(ts, Transition{corev1.EventTypeNormal, v1alpha1.EventAccepted, "Decide", "accepted: " + message})
	}
	if message, ok := turned(v1alpha1.ConditionPayloadRejected); ok {
		ts = append(ts, Transition{corev1.EventTypeWarning, v1alpha1.EventRejected, "Decide", "rejected: " + message})
	}
	return ts
}

// EndedRun is a verification run that ended.
type EndedRun struct {
	Verification string
	Run          v1alpha1.JobRun
}

// Duration is how long the run ran; ok is false when its start or end is unknown.
func (r EndedRun) Duration() (d time.Duration, ok bool) {
	if r.Run.StartTime == nil || r.Run.CompletionTime == nil {
		return 0, false
	}
	return max(0, r.Run.CompletionTime.Sub(r.Run.StartTime.Time)), true
}

// EndedRuns are the runs that are terminal in cur but were not in old (or were not there).
func EndedRuns(old, cur *v1alpha1.ReleasePayloadStatus) []EndedRun {
	type key struct {
		kind            v1alpha1.RunKind
		namespace, name string
	}
	ended := map[key]bool{}
	for _, v := range old.Verifications {
		for _, r := range v.Runs {
			if r.State.IsTerminal() {
				ended[key{r.Kind, r.Namespace, r.Name}] = true
			}
		}
	}
	var runs []EndedRun
	for _, v := range cur.Verifications {
		for _, r := range v.Runs {
			if r.State.IsTerminal() && !ended[key{r.Kind, r.Namespace, r.Name}] {
				runs = append(runs, EndedRun{Verification: v.Name, Run: r})
			}
		}
	}
	return runs
}

// Verdict is the phase that decides the payload when status old becomes cur: Accepted,
// Rejected or Failed when the phase just turned to one of them; ok is false otherwise.
func Verdict(old, cur *v1alpha1.ReleasePayloadStatus) (v1alpha1.PayloadPhase, bool) {
	if old.Phase == cur.Phase {
		return "", false
	}
	switch cur.Phase {
	case v1alpha1.PhaseAccepted, v1alpha1.PhaseRejected, v1alpha1.PhaseFailed:
		return cur.Phase, true
	}
	return "", false
}
