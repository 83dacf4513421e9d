package verdict

import (
	"strings"

	"github.com/release-controller/release-controller/api/v1alpha1"
)

// Aggregate is the state a set of verifications adds up to, by the rules a payload's verdict
// follows once its image is built and without an override (ComputeConditions): Failure when a
// blocking verification failed, Success when every blocking one succeeded (or was skipped)
// or, with none blocking, when every one ended, else Pending (a blocking one still running, or
// whose results were lost). The message names the verifications that decided it. A pipeline's
// verification after rollout is judged by it.
func Aggregate(verifications []v1alpha1.VerificationStatus) (v1alpha1.JobState, string) {
	var tally verificationTally
	for _, v := range verifications {
		tally.add(v.Type, v.State)
	}
	switch decide(nil, v1alpha1.CreationJobSuccess, tally) {
	case outcomeBlockingFailed:
		return v1alpha1.JobFailure, "blocking verifications failed: " + names(verifications, blockingIn(v1alpha1.JobFailure))
	case outcomeBlockingSucceeded:
		return v1alpha1.JobSuccess, "every blocking verification passed"
	case outcomeNoBlockingEnded:
		return v1alpha1.JobSuccess, "no blocking verifications; every one ended"
	}
	var parts []string
	if tally.pendingBlocking > 0 {
		parts = append(parts, "waiting for "+names(verifications, blockingIn(v1alpha1.JobPending, "")))
	}
	if tally.unknownBlocking > 0 {
		parts = append(parts, "results lost of "+names(verifications, blockingIn(v1alpha1.JobUnknown)))
	}
	if tally.blocking == 0 {
		parts = append(parts, "waiting for "+names(verifications, func(v v1alpha1.VerificationStatus) bool {
			return v.Type == v1alpha1.Informing && !v.State.IsTerminal()
		}))
	}
	return v1alpha1.JobPending, strings.Join(parts, "; ")
}
