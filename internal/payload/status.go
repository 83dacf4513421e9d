// Package payload holds the ReleasePayload controller: it collects the results of a payload's
// creation and verification jobs and decides its conditions and phase.
//
// Every decision is a pure function of the payload and the observed job objects (this file;
// the verdict itself is package verdict's); the reconciler only reads the cache, calls
// ComputeStatus and writes the status once, then reports what changed (transitions.go:
// Events, metrics).
//
// The payload's status has one other writer: the stream controller records status.payloadImage,
// once, after the creation job succeeded (it reads the digest from the registry, which this
// controller never calls; see stream's recordImage). ComputeStatus carries the field over
// untouched, and both writes are optimistically locked, so neither overwrites the other.
package payload

import (
	"cmp"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/conditions"
	"github.com/release-controller/release-controller/internal/eventlog"
	"github.com/release-controller/release-controller/internal/verdict"
)

// ComputeStatus returns the payload's status as the observations show it. It does not modify
// the payload. Condition transition times are now only for conditions whose status changes,
// so computing twice from the same inputs gives the same status.
func ComputeStatus(p *v1alpha1.ReleasePayload, obs Observations, now metav1.Time) v1alpha1.ReleasePayloadStatus {
	status := *p.Status.DeepCopy()
	status.ReleaseCreationJobResult = CreationResult(obs.CreationJobs)
	if len(obs.CreationJobs) == 0 && isFinal(p.Status.ReleaseCreationJobResult.Status) {
		// The finished creation job was collected: its recorded result stands.
		status.ReleaseCreationJobResult = p.Status.ReleaseCreationJobResult
	}
	if c, ok := obs.Clusters[CreationJobCluster]; ok && c.Problem != "" && !isFinal(status.ReleaseCreationJobResult.Status) {
		status.ReleaseCreationJobResult = UnreadableCreation(p.Status.ReleaseCreationJobResult, c.Problem)
	}
	if result := &status.ReleaseCreationJobResult; result.Status == v1alpha1.CreationJobFailed {
		if reason := FailureReason(result.Name, obs.CreationPods); reason != "" {
			result.Message += "; the build said: " + reason
		}
	}
	status.Verifications = SeedVerifications(p.Spec.PayloadVerificationConfig.Verifications, status.Verifications)
	// A verification whose cluster cannot be read keeps its recorded runs: unseen, they are
	// not lost.
	away := unreadable(obs.Clusters)
	kept := map[string][]v1alpha1.JobRun{}
	for _, v := range status.Verifications {
		if _, ok := away[v.Name]; ok {
			kept[v.Name] = v.Runs
		}
	}
	status.Verifications = MergeRuns(status.Verifications, obs.Runs)
	for i := range status.Verifications {
		if runs, ok := kept[status.Verifications[i].Name]; ok {
			status.Verifications[i].Runs = runs
		}
	}
	skipped := p.SkippedUpgrades()
	for i := range status.Verifications {
		v := &status.Verifications[i]
		if skipped[v.Name] && len(v.Runs) == 0 {
			v.State, v.Message = v1alpha1.JobSkipped, verdict.SkippedMessage(verificationSpec(p, v.Name))
			continue
		}
		v.State, v.Message = verdict.VerificationState(verificationSpec(p, v.Name), v.Runs)
	}
	aborted := p.Annotations[v1alpha1.AnnotationAborted]
	for _, c := range verdict.ComputeConditions(p.Spec.PayloadOverride, status.ReleaseCreationJobResult, aborted, status.Verifications) {
		c.ObservedGeneration = p.Generation
		c.LastTransitionTime = now
		conditions.Set(&status.Conditions, c) // bounds the message
	}
	// After the verdict, which judges the runs: Unknown here says the runs cannot be read.
	markUnreadable(status.Verifications, away)
	if c := ClusterCondition(obs.Clusters); c != nil {
		c.ObservedGeneration = p.Generation
		c.LastTransitionTime = now
		conditions.Set(&status.Conditions, *c)
	}
	status.Phase = verdict.Phase(status.Conditions)
	ready, progress := Readiness(&status)
	ready.ObservedGeneration, ready.LastTransitionTime = p.Generation, now
	conditions.Set(&status.Conditions, ready)
	conditions.SetProgress(&status.Conditions, p.Generation, progress, now.Time)
	SetTombstone(&status.Conditions, p, now)
	return status
}

// noTombstoneReason is PayloadTombstoned's message for a tombstone annotation left empty.
const noTombstoneReason = "tombstoned; the annotation gives no reason"

// SetTombstone sets PayloadTombstoned from the payload's tombstone annotation: True (reason
// Tombstoned, the annotation's value as its bounded message) while the payload carries it,
// removed once it does not. The transition time stays while the annotation does, whatever its
// value becomes: it is when the update service withdrew the payload, which decides what the
// feeders promoted before then.
func SetTombstone(conds *[]metav1.Condition, p *v1alpha1.ReleasePayload, now metav1.Time) {
	reason, tombstoned := p.Annotations[v1alpha1.AnnotationTombstone]
	if !tombstoned {
		meta.RemoveStatusCondition(conds, v1alpha1.ConditionPayloadTombstoned)
		return
	}
	if reason == "" {
		reason = noTombstoneReason
	}
	conditions.Set(conds, metav1.Condition{Type: v1alpha1.ConditionPayloadTombstoned, Status: metav1.ConditionTrue,
		Reason: v1alpha1.ReasonTombstoned, Message: reason, ObservedGeneration: p.Generation, LastTransitionTime: now})
}

// Readiness is the payload's Ready condition and kstatus progress, from its phase and the
// verdict conditions ComputeConditions set (whose contract they add to, not change):
//   - Accepted: Ready=True with PayloadAccepted's reason and message; done.
//   - Rejected and Failed are terminal verdicts: Ready=False (reason PayloadRejected or
//     PayloadFailed, with the verdict condition's message) and Stalled=True: nothing more
//     happens to the payload unless its spec changes (an override).
//   - Pending (the image is being built) and Ready (the verifications run): Ready=False with
//     PayloadAccepted's reason and message (what it waits for), and Reconciling=True
//     Progressing, its message saying the same.
//
// So `kubectl wait --for=condition=Ready` returns once a payload is accepted.
func Readiness(status *v1alpha1.ReleasePayloadStatus) (metav1.Condition, conditions.Progress) {
	ready := metav1.Condition{Type: v1alpha1.ConditionReady, Status: metav1.ConditionFalse}
	accepted := meta.FindStatusCondition(status.Conditions, v1alpha1.ConditionPayloadAccepted)
	if accepted == nil {
		accepted = &metav1.Condition{Reason: v1alpha1.ReasonPayloadNotCreated}
	}
	switch status.Phase {
	case v1alpha1.PhaseAccepted:
		ready.Status, ready.Reason, ready.Message = metav1.ConditionTrue, accepted.Reason, accepted.Message
		return ready, conditions.Done
	case v1alpha1.PhaseRejected, v1alpha1.PhaseFailed:
		ready.Reason, ready.Message = v1alpha1.ReasonPayloadRejected, conditionMessage(status.Conditions, v1alpha1.ConditionPayloadRejected)
		if status.Phase == v1alpha1.PhaseFailed {
			ready.Reason, ready.Message = v1alpha1.ReasonPayloadFailed, conditionMessage(status.Conditions, v1alpha1.ConditionPayloadFailed)
		}
		return ready, conditions.Progress{Stalled: true, Reason: ready.Reason, Message: ready.Message}
	}
	ready.Reason, ready.Message = accepted.Reason, accepted.Message
	waiting := "waiting for the verifications: " + accepted.Message
	if status.Phase == v1alpha1.PhasePending {
		waiting = "waiting for the payload image to be built"
		if job := status.ReleaseCreationJobResult.Name; job != "" {
			waiting += " by the creation job " + job
		}
	}
	return ready, conditions.Progress{Reconciling: true, Reason: v1alpha1.ReasonProgressing, Message: waiting}
}

func conditionMessage(conds []metav1.Condition, typ string) string {
	if c := meta.FindStatusCondition(conds, typ); c != nil {
		return c.Message
	}
	return ""
}

// FailedStatus is the payload's status after a reconcile that failed (err, eventlog
// Failures) before it could judge the jobs: the recorded runs and verdict stay as they are
// (Pending for a payload whose status was never written);
// Ready=False says what failed (eventlog.Summarize), with Reconciling=True
// ProgressingWithRetry (the reconcile is retried with backoff), or Stalled=True when every
// failure is a stall.
func FailedStatus(p *v1alpha1.ReleasePayload, err error, now metav1.Time) v1alpha1.ReleasePayloadStatus {
	status := *p.Status.DeepCopy()
	summary, failed := eventlog.Summarize(err)
	if !failed {
		return status
	}
	// A payload whose status was never written gets what a valid one holds: nothing is
	// known of its creation job, and the phase its (absent) conditions give, Pending.
	if status.ReleaseCreationJobResult.Status == "" {
		status.ReleaseCreationJobResult.Status = v1alpha1.CreationJobUnknown
	}
	if status.Phase == "" {
		status.Phase = verdict.Phase(status.Conditions)
	}
	conditions.Set(&status.Conditions, metav1.Condition{Type: v1alpha1.ConditionReady, Status: metav1.ConditionFalse,
		Reason: summary.Reason, Message: summary.Message, ObservedGeneration: p.Generation, LastTransitionTime: now})
	progress := conditions.Progress{Reconciling: true, Reason: v1alpha1.ReasonProgressingWithRetry, Message: summary.Message}
	if summary.Stalled {
		progress = conditions.Progress{Stalled: true, Reason: summary.Reason, Message: summary.Message}
	}
	conditions.SetProgress(&status.Conditions, p.Generation, progress, now.Time)
	SetTombstone(&status.Conditions, p, now)
	return status
}

func isFinal(s v1alpha1.CreationJobStatus) bool {
	return s == v1alpha1.CreationJobSuccess || s == v1alpha1.CreationJobFailed
}

func verificationSpec(p *v1alpha1.ReleasePayload, name string) v1alpha1.Verification {
	for _, v := range p.Spec.PayloadVerificationConfig.Verifications {
		if v.Name == name {
			return v
		}
	}
	return v1alpha1.Verification{Name: name}
}

// SeedVerifications returns one status entry per configured verification, in configuration
// order, keeping the runs already recorded for each.
func SeedVerifications(config []v1alpha1.Verification, existing []v1alpha1.VerificationStatus) []v1alpha1.VerificationStatus {
	if len(config) == 0 {
		return nil
	}
	seeded := make([]v1alpha1.VerificationStatus, 0, len(config))
	for _, v := range config {
		entry := v1alpha1.VerificationStatus{Name: v.Name, State: v1alpha1.JobPending}
		if i := slices.IndexFunc(existing, func(s v1alpha1.VerificationStatus) bool { return s.Name == v.Name }); i >= 0 {
			entry = *existing[i].DeepCopy()
		}
		entry.Type = v1alpha1.Blocking
		if !v.IsBlocking() {
			entry.Type = v1alpha1.Informing
		}
		entry.UpgradeFrom = v.UpgradeFrom
		seeded = append(seeded, entry)
	}
	return seeded
}

// MergeRuns records the observed runs in their verifications' entries. Terminal runs are left
// as they are; a recorded run that is not terminal and whose object is gone becomes Unknown.
// Runs of verifications the payload does not have are ignored.
func MergeRuns(verifications []v1alpha1.VerificationStatus, observed []ObservedRun) []v1alpha1.VerificationStatus {
	byVerification := map[string][]v1alpha1.JobRun{}
	for _, o := range observed {
		byVerification[o.Verification] = append(byVerification[o.Verification], o.Run)
	}
	for i := range verifications {
		v := &verifications[i]
		v.Runs = mergeVerificationRuns(v.Runs, byVerification[v.Name])
	}
	return verifications
}

func mergeVerificationRuns(recorded, observed []v1alpha1.JobRun) []v1alpha1.JobRun {
	type key struct {
		kind            v1alpha1.RunKind
		namespace, name string
	}
	keyOf := func(r v1alpha1.JobRun) key { return key{r.Kind, r.Namespace, r.Name} }
	seen := make(map[key]v1alpha1.JobRun, len(observed))
	for _, r := range observed {
		seen[keyOf(r)] = r
	}
	merged := make([]v1alpha1.JobRun, 0, max(len(recorded), len(observed)))
	for _, r := range recorded {
		k := keyOf(r)
		now, exists := seen[k]
		delete(seen, k)
		switch {
		case r.State.IsTerminal():
			merged = append(merged, r)
		case exists:
			merged = append(merged, now)
		default:
			r.State = v1alpha1.JobUnknown
			r.Message = fmt.Sprintf("the %s was deleted before it finished", r.Kind)
			merged = append(merged, r)
		}
	}
	for _, r := range observed {
		if _, fresh := seen[keyOf(r)]; fresh {
			merged = append(merged, r)
		}
	}
	slices.SortStableFunc(merged, func(a, b v1alpha1.JobRun) int {
		return cmp.Or(cmp.Compare(a.Attempt, b.Attempt), cmp.Compare(a.Name, b.Name))
	})
	if len(merged) == 0 {
		return nil
	}
	return merged
}
