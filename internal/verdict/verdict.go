package verdict

import (
	"fmt"
	"math"
	"slices"
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
	t := tallyRuns(v, runs)
	return t.state, t.message()
}

// StateOf is VerificationState without the message, for readers that judge many
// verifications at once (the stream health report) and show none of the messages.
func StateOf(v v1alpha1.Verification, runs []v1alpha1.JobRun) v1alpha1.JobState {
	return tallyRuns(v, runs).state
}

// runRule names the rule that gave a verification its state; runTally.message explains it.
type runRule int

const (
	ruleOnlyRunPassed runRule = iota
	ruleRetryPassed
	ruleAttemptsFailed
	ruleGaveUp
	ruleNotStarted
	ruleRunning
	ruleRetryRunning
	ruleRetryPending
	ruleAggregatedPassed
	ruleAggregatedFailed
	ruleAggregatedPending
)

// runTally is what a verification's runs add up to. It holds numbers only, so that judging
// (Recorded) costs no formatting; message explains it.
type runTally struct {
	state v1alpha1.JobState
	rule  runRule
	// A verification with retries: the attempt that passed, the runs, and their outcomes.
	passedAttempt, runs, attempts, failed, unknown int32
	// An aggregated verification: runs passed, ended and needed of total.
	passed, ended, need, total int32
}

func tallyRuns(v v1alpha1.Verification, runs []v1alpha1.JobRun) runTally {
	if v.Aggregation != nil {
		return tallyAggregated(*v.Aggregation, runs)
	}
	t := runTally{runs: int32(len(runs)), attempts: v.MaxRetries + 1}
	var running int32
	for _, r := range runs {
		switch r.State {
		case v1alpha1.JobSuccess:
			t.state, t.rule, t.passedAttempt = v1alpha1.JobSuccess, ruleRetryPassed, r.Attempt
			if len(runs) == 1 {
				t.rule = ruleOnlyRunPassed
			}
			return t
		case v1alpha1.JobFailure:
			t.failed++
		case v1alpha1.JobUnknown:
			t.unknown++
		default:
			running++
		}
	}
	t.state = v1alpha1.JobPending
	switch {
	case t.failed >= t.attempts:
		t.state, t.rule = v1alpha1.JobFailure, ruleAttemptsFailed
	case running == 0 && t.runs >= jobcontract.MaxRuns(v):
		t.state, t.rule = v1alpha1.JobUnknown, ruleGaveUp
	case t.runs == 0:
		t.rule = ruleNotStarted
	case t.failed+t.unknown == 0:
		t.rule = ruleRunning
	case running > 0:
		t.rule = ruleRetryRunning
	default:
		t.rule = ruleRetryPending
	}
	return t
}

func (t runTally) message() string {
	lost := ""
	if t.unknown > 0 {
		lost = fmt.Sprintf(", %d lost", t.unknown)
	}
	summary := fmt.Sprintf("%d of %d runs passed, %d needed", t.passed, t.total, t.need)
	switch t.rule {
	case ruleOnlyRunPassed:
		return "" // the state says it; every byte of status costs each status write
	case ruleRetryPassed:
		return fmt.Sprintf("passed on attempt %d", t.passedAttempt)
	case ruleAttemptsFailed:
		return fmt.Sprintf("failed %d of %d attempts%s", t.failed, t.attempts, lost)
	case ruleGaveUp:
		return fmt.Sprintf("gave up after %d runs: the results of %d were lost (their objects were deleted before they finished)", t.runs, t.unknown)
	case ruleNotStarted:
		return "not started"
	case ruleRunning:
		return "running"
	case ruleRetryRunning:
		return fmt.Sprintf("%d of %d attempts failed%s; retry running", t.failed, t.attempts, lost)
	case ruleRetryPending:
		return fmt.Sprintf("%d of %d attempts failed%s; retry pending", t.failed, t.attempts, lost)
	case ruleAggregatedPending:
		return fmt.Sprintf("%s; %d of %d runs finished", summary, t.ended, t.total)
	}
	return summary // ruleAggregatedPassed, ruleAggregatedFailed
}

// RequiredPasses is how many of an aggregated verification's runs must pass.
func RequiredPasses(a v1alpha1.Aggregation) int32 {
	// The small epsilon keeps e.g. 0.7*10 from rounding up to 8.
	return max(1, int32(math.Ceil(a.PassRatio*float64(a.Runs)-1e-9)))
}

func tallyAggregated(a v1alpha1.Aggregation, runs []v1alpha1.JobRun) runTally {
	t := runTally{need: RequiredPasses(a), total: a.Runs}
	for _, r := range runs {
		if r.Attempt > a.Runs {
			continue // not one of the configured runs
		}
		if r.State == v1alpha1.JobSuccess {
			t.passed++
		}
		if r.State.IsTerminal() {
			t.ended++
		}
	}
	switch {
	case t.passed >= t.need:
		t.state, t.rule = v1alpha1.JobSuccess, ruleAggregatedPassed
	case t.passed+(a.Runs-t.ended) < t.need:
		t.state, t.rule = v1alpha1.JobFailure, ruleAggregatedFailed
	default:
		t.state, t.rule = v1alpha1.JobPending, ruleAggregatedPending
	}
	return t
}

// verificationTally counts a payload's verifications by type and state.
type verificationTally struct {
	blocking, failedBlocking, pendingBlocking, unknownBlocking, skippedBlocking, unfinishedInforming int
}

func (t *verificationTally) add(typ v1alpha1.VerificationType, state v1alpha1.JobState) {
	if typ == v1alpha1.Informing {
		if !state.IsTerminal() {
			t.unfinishedInforming++
		}
		return
	}
	t.blocking++
	switch state {
	case v1alpha1.JobFailure:
		t.failedBlocking++
	case v1alpha1.JobUnknown:
		t.unknownBlocking++
	case v1alpha1.JobPending, "":
		t.pendingBlocking++
	case v1alpha1.JobSkipped:
		t.skippedBlocking++
	}
}

// outcome names the rule that decides a payload's verdict; ComputeConditions explains it in
// the conditions, Recorded needs only its phase.
type outcome int

const (
	outcomeCreationFailed outcome = iota
	outcomeNotCreated
	outcomeOverrideAccepted
	outcomeOverrideRejected
	outcomeBlockingFailed
	outcomeBlockingSucceeded
	outcomeNoBlockingEnded
	outcomeWaiting
)

// decide applies the verdict rules in order (see ComputeConditions). creation is the creation
// job's status after an abort is taken into account.
func decide(override *v1alpha1.PayloadOverride, creation v1alpha1.CreationJobStatus, t verificationTally) outcome {
	switch {
	case creation == v1alpha1.CreationJobFailed:
		return outcomeCreationFailed
	case creation != v1alpha1.CreationJobSuccess:
		return outcomeNotCreated
	case override != nil && override.Override == v1alpha1.OverrideAccepted:
		return outcomeOverrideAccepted
	case override != nil && override.Override == v1alpha1.OverrideRejected:
		return outcomeOverrideRejected
	case t.failedBlocking > 0:
		return outcomeBlockingFailed
	case t.blocking > 0 && t.pendingBlocking == 0 && t.unknownBlocking == 0:
		return outcomeBlockingSucceeded
	case t.blocking == 0 && t.unfinishedInforming == 0:
		return outcomeNoBlockingEnded
	}
	return outcomeWaiting
}

// phase is the phase of an outcome, as Phase reads it from the conditions ComputeConditions
// writes for it.
func (o outcome) phase() v1alpha1.PayloadPhase {
	switch o {
	case outcomeCreationFailed:
		return v1alpha1.PhaseFailed
	case outcomeNotCreated:
		return v1alpha1.PhasePending
	case outcomeOverrideAccepted, outcomeBlockingSucceeded, outcomeNoBlockingEnded:
		return v1alpha1.PhaseAccepted
	case outcomeOverrideRejected, outcomeBlockingFailed:
		return v1alpha1.PhaseRejected
	}
	return v1alpha1.PhaseReady
}

// afterAbort is the creation result once an abort (aborted holds its reason) is taken into
// account: a payload superseded before its image was built has failed.
func afterAbort(creation v1alpha1.ReleaseCreationJobResult, aborted string) v1alpha1.ReleaseCreationJobResult {
	if aborted != "" && creation.Status != v1alpha1.CreationJobSuccess {
		return v1alpha1.ReleaseCreationJobResult{Name: creation.Name, Status: v1alpha1.CreationJobFailed, Message: "aborted: " + aborted}
	}
	return creation
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
	creation = afterAbort(creation, aborted)
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

	var tally verificationTally
	for _, v := range verifications {
		tally.add(v.Type, v.State)
	}
	accepted := metav1.Condition{Type: v1alpha1.ConditionPayloadAccepted, Status: metav1.ConditionFalse}
	rejected := metav1.Condition{Type: v1alpha1.ConditionPayloadRejected, Status: metav1.ConditionFalse}
	both := func(reason, message string) {
		accepted.Reason, accepted.Message = reason, message
		rejected.Reason, rejected.Message = reason, message
	}
	switch o := decide(override, creation.Status, tally); o {
	case outcomeCreationFailed:
		both(v1alpha1.ReasonPayloadFailed, "the payload failed: "+creation.Message)
	case outcomeNotCreated:
		both(v1alpha1.ReasonPayloadNotCreated, "waiting for the payload image to be built")
	case outcomeOverrideAccepted:
		both(v1alpha1.ReasonManualOverride, "manually accepted: "+override.Reason)
		accepted.Status = metav1.ConditionTrue
	case outcomeOverrideRejected:
		both(v1alpha1.ReasonManualOverride, "manually rejected: "+override.Reason)
		rejected.Status = metav1.ConditionTrue
	case outcomeBlockingFailed:
		message := "blocking jobs failed: " + names(verifications, blockingIn(v1alpha1.JobFailure))
		accepted.Reason, accepted.Message = v1alpha1.ReasonPayloadRejected, message
		rejected.Status, rejected.Reason, rejected.Message = metav1.ConditionTrue, v1alpha1.ReasonBlockingJobFailed, message
	case outcomeBlockingSucceeded, outcomeNoBlockingEnded:
		reason, message := v1alpha1.ReasonBlockingJobsSucceeded, fmt.Sprintf("all %d blocking jobs succeeded", tally.blocking)
		switch {
		case o == outcomeNoBlockingEnded:
			reason, message = v1alpha1.ReasonVerificationsCompleted, "no blocking jobs; every job has ended"
		case tally.skippedBlocking > 0:
			message = fmt.Sprintf("%d of %d blocking jobs succeeded; skipped: %s",
				tally.blocking-tally.skippedBlocking, tally.blocking, names(verifications, blockingIn(v1alpha1.JobSkipped)))
		}
		accepted.Status, accepted.Reason, accepted.Message = metav1.ConditionTrue, reason, message
		rejected.Reason, rejected.Message = v1alpha1.ReasonPayloadAccepted, message
	default:
		var parts []string
		if tally.pendingBlocking > 0 {
			parts = append(parts, "waiting for blocking jobs: "+names(verifications, blockingIn(v1alpha1.JobPending, "")))
		}
		if tally.unknownBlocking > 0 {
			parts = append(parts, "blocking jobs with unknown results: "+names(verifications, blockingIn(v1alpha1.JobUnknown)))
		}
		if tally.blocking == 0 {
			parts = append(parts, "no blocking jobs; waiting for: "+names(verifications, func(v v1alpha1.VerificationStatus) bool {
				return v.Type == v1alpha1.Informing && !v.State.IsTerminal()
			}))
		}
		both(v1alpha1.ReasonBlockingJobsPending, strings.Join(parts, "; "))
	}
	return []metav1.Condition{created, failed, accepted, rejected}
}

// blockingIn selects the blocking verifications in one of the states.
func blockingIn(states ...v1alpha1.JobState) func(v1alpha1.VerificationStatus) bool {
	return func(v v1alpha1.VerificationStatus) bool {
		return v.Type != v1alpha1.Informing && slices.Contains(states, v.State)
	}
}

// names joins the names of the verifications selected.
func names(verifications []v1alpha1.VerificationStatus, selected func(v1alpha1.VerificationStatus) bool) string {
	var out []string
	for _, v := range verifications {
		if selected(v) {
			out = append(out, v.Name)
		}
	}
	return strings.Join(out, ", ")
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
