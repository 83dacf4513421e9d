package verdict

import (
	"fmt"
	"math"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/jobcontract"
)

// SkippedUpgradeMessage explains a Skipped verification.
const SkippedUpgradeMessage = "skipped: there was no earlier accepted payload to upgrade from"

// SkippedMessage explains why the upgrade verification v was skipped, naming the stream it
// starts from when that is another one.
func SkippedMessage(v v1alpha1.Verification) string {
	if v.From != nil {
		return fmt.Sprintf("skipped: stream %s had no accepted payload to upgrade from", v.From.Stream)
	}
	return SkippedUpgradeMessage
}

// VerificationState judges a verification by its runs, with a message that explains it.
func VerificationState(v v1alpha1.Verification, runs []v1alpha1.JobRun) (v1alpha1.JobState, string) {
	if v.Aggregation != nil {
		return aggregatedState(*v.Aggregation, runs)
	}
	attempts := v.MaxRetries + 1
	var failed, unknown, running int32
	for _, r := range runs {
		switch r.State {
		case v1alpha1.JobSuccess:
			if len(runs) == 1 {
				return v1alpha1.JobSuccess, "passed"
			}
			return v1alpha1.JobSuccess, fmt.Sprintf("passed on attempt %d", r.Attempt)
		case v1alpha1.JobFailure:
			failed++
		case v1alpha1.JobUnknown:
			unknown++
		default:
			running++
		}
	}
	lost := ""
	if unknown > 0 {
		lost = fmt.Sprintf(", %d lost", unknown)
	}
	switch {
	case failed >= attempts:
		return v1alpha1.JobFailure, fmt.Sprintf("failed %d of %d attempts%s", failed, attempts, lost)
	case running == 0 && int32(len(runs)) >= jobcontract.MaxRuns(v):
		return v1alpha1.JobUnknown, fmt.Sprintf("gave up after %d runs: the results of %d were lost (their objects were deleted before they finished)", len(runs), unknown)
	case len(runs) == 0:
		return v1alpha1.JobPending, "not started"
	case failed+unknown == 0:
		return v1alpha1.JobPending, "running"
	case running > 0:
		return v1alpha1.JobPending, fmt.Sprintf("%d of %d attempts failed%s; retry running", failed, attempts, lost)
	}
	return v1alpha1.JobPending, fmt.Sprintf("%d of %d attempts failed%s; retry pending", failed, attempts, lost)
}

// RequiredPasses is how many of an aggregated verification's runs must pass.
func RequiredPasses(a v1alpha1.Aggregation) int32 {
	// The small epsilon keeps e.g. 0.7*10 from rounding up to 8.
	return max(1, int32(math.Ceil(a.PassRatio*float64(a.Runs)-1e-9)))
}

func aggregatedState(a v1alpha1.Aggregation, runs []v1alpha1.JobRun) (v1alpha1.JobState, string) {
	need := RequiredPasses(a)
	var passed, ended int32
	for _, r := range runs {
		if r.Attempt > a.Runs {
			continue // not one of the configured runs
		}
		if r.State == v1alpha1.JobSuccess {
			passed++
		}
		if r.State.IsTerminal() {
			ended++
		}
	}
	summary := fmt.Sprintf("%d of %d runs passed, %d needed", passed, a.Runs, need)
	switch {
	case passed >= need:
		return v1alpha1.JobSuccess, summary
	case passed+(a.Runs-ended) < need:
		return v1alpha1.JobFailure, summary
	}
	return v1alpha1.JobPending, fmt.Sprintf("%s; %d of %d runs finished", summary, ended, a.Runs)
}

// ComputeConditions decides PayloadCreated, PayloadFailed, PayloadAccepted and PayloadRejected.
//
// A failed creation job wins over everything, the override included; so does an abort (a
// newer payload superseded this one before its image was built: aborted holds the reason).
// Nothing is accepted or rejected before the creation job succeeded; then the override wins;
// then any failed blocking job rejects, and all blocking jobs succeeding accepts. Without
// blocking jobs a payload is accepted once every other job has ended. A Skipped verification
// (an upgrade with nothing to upgrade from) has ended and holds nothing back; the message
// names it. Accepted and Rejected are never both True.
func ComputeConditions(override *v1alpha1.PayloadOverride, creation v1alpha1.ReleaseCreationJobResult, aborted string, verifications []v1alpha1.VerificationStatus) []metav1.Condition {
	if aborted != "" && creation.Status != v1alpha1.CreationJobSuccess {
		creation = v1alpha1.ReleaseCreationJobResult{Name: creation.Name, Status: v1alpha1.CreationJobFailed, Message: "aborted: " + aborted}
	}
	created := metav1.Condition{Type: v1alpha1.ConditionPayloadCreated, Message: creation.Message}
	failed := metav1.Condition{
		Type: v1alpha1.ConditionPayloadFailed, Status: metav1.ConditionFalse,
		Reason: v1alpha1.ReasonCreationJobNotFailed, Message: "the creation job has not failed",
	}
	switch creation.Status {
	case v1alpha1.CreationJobSuccess:
		created.Status, created.Reason = metav1.ConditionTrue, v1alpha1.ReasonCreationJobSucceeded
	case v1alpha1.CreationJobFailed:
		reason := v1alpha1.ReasonCreationJobFailed
		if aborted != "" {
			reason = v1alpha1.ReasonAborted
		}
		created.Status, created.Reason = metav1.ConditionFalse, reason
		failed.Status, failed.Reason, failed.Message = metav1.ConditionTrue, reason, creation.Message
	default:
		created.Status, created.Reason = metav1.ConditionUnknown, v1alpha1.ReasonCreationJobPending
		if creation.Name == "" {
			created.Reason = v1alpha1.ReasonCreationJobNotFound
		}
	}

	accepted := metav1.Condition{Type: v1alpha1.ConditionPayloadAccepted, Status: metav1.ConditionFalse}
	rejected := metav1.Condition{Type: v1alpha1.ConditionPayloadRejected, Status: metav1.ConditionFalse}
	verdict := func(acceptedStatus metav1.ConditionStatus, reason, message string) {
		accepted.Reason, accepted.Message = reason, message
		rejected.Reason, rejected.Message = reason, message
		if acceptedStatus == metav1.ConditionTrue {
			accepted.Status = metav1.ConditionTrue
		}
	}
	switch {
	case creation.Status == v1alpha1.CreationJobFailed:
		verdict(metav1.ConditionFalse, v1alpha1.ReasonPayloadFailed, "the payload failed: "+creation.Message)
	case creation.Status != v1alpha1.CreationJobSuccess:
		verdict(metav1.ConditionFalse, v1alpha1.ReasonPayloadNotCreated, "waiting for the payload image to be built")
	case override != nil && override.Override == v1alpha1.OverrideAccepted:
		verdict(metav1.ConditionTrue, v1alpha1.ReasonManualOverride, "manually accepted: "+override.Reason)
	case override != nil && override.Override == v1alpha1.OverrideRejected:
		verdict(metav1.ConditionFalse, v1alpha1.ReasonManualOverride, "manually rejected: "+override.Reason)
		rejected.Status = metav1.ConditionTrue
	default:
		judgeVerifications(verifications, &accepted, &rejected)
	}
	return []metav1.Condition{created, failed, accepted, rejected}
}

// judgeVerifications sets Accepted and Rejected from the verification states.
func judgeVerifications(verifications []v1alpha1.VerificationStatus, accepted, rejected *metav1.Condition) {
	var blocking, failedBlocking, pendingBlocking, unknownBlocking, skippedBlocking, unfinished []string
	for _, v := range verifications {
		if v.Type == v1alpha1.Informing {
			if !v.State.IsTerminal() {
				unfinished = append(unfinished, v.Name)
			}
			continue
		}
		blocking = append(blocking, v.Name)
		switch v.State {
		case v1alpha1.JobFailure:
			failedBlocking = append(failedBlocking, v.Name)
		case v1alpha1.JobUnknown:
			unknownBlocking = append(unknownBlocking, v.Name)
		case v1alpha1.JobPending, "":
			pendingBlocking = append(pendingBlocking, v.Name)
		case v1alpha1.JobSkipped:
			skippedBlocking = append(skippedBlocking, v.Name)
		}
	}
	switch {
	case len(failedBlocking) > 0:
		message := "blocking jobs failed: " + strings.Join(failedBlocking, ", ")
		accepted.Reason, accepted.Message = v1alpha1.ReasonPayloadRejected, message
		rejected.Status, rejected.Reason, rejected.Message = metav1.ConditionTrue, v1alpha1.ReasonBlockingJobFailed, message
	case len(blocking) > 0 && len(pendingBlocking) == 0 && len(unknownBlocking) == 0:
		message := fmt.Sprintf("all %d blocking jobs succeeded", len(blocking))
		if len(skippedBlocking) > 0 {
			message = fmt.Sprintf("%d of %d blocking jobs succeeded; skipped: %s",
				len(blocking)-len(skippedBlocking), len(blocking), strings.Join(skippedBlocking, ", "))
		}
		accepted.Status, accepted.Reason, accepted.Message = metav1.ConditionTrue, v1alpha1.ReasonBlockingJobsSucceeded, message
		rejected.Reason, rejected.Message = v1alpha1.ReasonPayloadAccepted, message
	case len(blocking) == 0 && len(unfinished) == 0:
		message := "no blocking jobs; every job has ended"
		accepted.Status, accepted.Reason, accepted.Message = metav1.ConditionTrue, v1alpha1.ReasonVerificationsCompleted, message
		rejected.Reason, rejected.Message = v1alpha1.ReasonPayloadAccepted, message
	default:
		var parts []string
		if len(pendingBlocking) > 0 {
			parts = append(parts, "waiting for blocking jobs: "+strings.Join(pendingBlocking, ", "))
		}
		if len(unknownBlocking) > 0 {
			parts = append(parts, "blocking jobs with unknown results: "+strings.Join(unknownBlocking, ", "))
		}
		if len(blocking) == 0 {
			parts = append(parts, "no blocking jobs; waiting for: "+strings.Join(unfinished, ", "))
		}
		message := strings.Join(parts, "; ")
		accepted.Reason, accepted.Message = v1alpha1.ReasonBlockingJobsPending, message
		rejected.Reason, rejected.Message = v1alpha1.ReasonBlockingJobsPending, message
	}
}

// Phase derives the phase from the conditions.
func Phase(conditions []metav1.Condition) v1alpha1.PayloadPhase {
	switch {
	case meta.IsStatusConditionTrue(conditions, v1alpha1.ConditionPayloadFailed):
		return v1alpha1.PhaseFailed
	case meta.IsStatusConditionTrue(conditions, v1alpha1.ConditionPayloadAccepted):
		return v1alpha1.PhaseAccepted
	case meta.IsStatusConditionTrue(conditions, v1alpha1.ConditionPayloadRejected):
		return v1alpha1.PhaseRejected
	case meta.IsStatusConditionTrue(conditions, v1alpha1.ConditionPayloadCreated):
		return v1alpha1.PhaseReady
	}
	return v1alpha1.PhasePending
}
