package verdict

import (
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/release-controller/release-controller/api/v1alpha1"
)

func run(attempt int32, state v1alpha1.JobState) v1alpha1.JobRun {
	return v1alpha1.JobRun{Kind: v1alpha1.RunKindJob, Namespace: "ns", Name: fmt.Sprint("run-", attempt), Attempt: attempt, State: state}
}

func TestVerificationState(t *testing.T) {
	const (
		P = v1alpha1.JobPending
		S = v1alpha1.JobSuccess
		F = v1alpha1.JobFailure
		U = v1alpha1.JobUnknown
	)
	aggregated := func(runs int32, ratio float64) v1alpha1.Verification {
		return v1alpha1.Verification{Name: "agg", Aggregation: &v1alpha1.Aggregation{Runs: runs, PassRatio: ratio}}
	}
	tests := []struct {
		name        string
		v           v1alpha1.Verification
		runs        []v1alpha1.JobRun
		want        v1alpha1.JobState
		wantMessage string
	}{
		{"no runs", v1alpha1.Verification{}, nil, P, "not started"},
		{"running", v1alpha1.Verification{}, []v1alpha1.JobRun{run(1, P)}, P, "running"},
		{"passed", v1alpha1.Verification{}, []v1alpha1.JobRun{run(1, S)}, S, ""},
		{"failed without retries", v1alpha1.Verification{}, []v1alpha1.JobRun{run(1, F)}, F, "failed 1 of 1 attempts"},
		{"failed, retry pending", v1alpha1.Verification{MaxRetries: 2}, []v1alpha1.JobRun{run(1, F)}, P, "1 of 3 attempts failed; retry pending"},
		{"failed, retry running", v1alpha1.Verification{MaxRetries: 2}, []v1alpha1.JobRun{run(1, F), run(2, P)}, P, "1 of 3 attempts failed; retry running"},
		{"failed then passed", v1alpha1.Verification{MaxRetries: 2}, []v1alpha1.JobRun{run(1, F), run(2, S)}, S, "passed on attempt 2"},
		{"retries used up", v1alpha1.Verification{MaxRetries: 2}, []v1alpha1.JobRun{run(1, F), run(2, F), run(3, F)}, F, "failed 3 of 3 attempts"},
		{"a lost run is retried", v1alpha1.Verification{MaxRetries: 1}, []v1alpha1.JobRun{run(1, U)}, P, "0 of 2 attempts failed, 1 lost; retry pending"},
		{"a lost run does not use up an attempt", v1alpha1.Verification{MaxRetries: 1}, []v1alpha1.JobRun{run(1, U), run(2, F)}, P, "1 of 2 attempts failed, 1 lost; retry pending"},
		{"only failed runs fail", v1alpha1.Verification{MaxRetries: 1}, []v1alpha1.JobRun{run(1, F), run(2, U), run(3, F)}, F, "failed 2 of 2 attempts, 1 lost"},
		{"a lost run without retries is run again", v1alpha1.Verification{}, []v1alpha1.JobRun{run(1, U)}, P, "0 of 1 attempts failed, 1 lost; retry pending"},
		{"lost runs are not retried forever", v1alpha1.Verification{}, []v1alpha1.JobRun{run(1, U), run(2, U)}, U, "gave up after 2 runs: the results of 2 were lost (their objects were deleted before they finished)"},
		{"aggregated, none ended", aggregated(5, 0.6), []v1alpha1.JobRun{run(1, P), run(2, P)}, P, "0 of 5 runs passed, 3 needed; 0 of 5 runs finished"},
		{"aggregated reaches ratio early", aggregated(5, 0.6), []v1alpha1.JobRun{run(1, S), run(2, S), run(3, S), run(4, P), run(5, P)}, S, "3 of 5 runs passed, 3 needed"},
		{"aggregated above ratio", aggregated(5, 0.6), []v1alpha1.JobRun{run(1, S), run(2, F), run(3, S), run(4, S), run(5, S)}, S, "4 of 5 runs passed, 3 needed"},
		{"aggregated below ratio", aggregated(5, 0.6), []v1alpha1.JobRun{run(1, S), run(2, F), run(3, F), run(4, S), run(5, F)}, F, "2 of 5 runs passed, 3 needed"},
		{"aggregated cannot reach ratio any more", aggregated(5, 0.6), []v1alpha1.JobRun{run(1, F), run(2, F), run(3, F), run(4, P), run(5, P)}, F, "0 of 5 runs passed, 3 needed"},
		{"aggregated still can reach ratio", aggregated(5, 0.6), []v1alpha1.JobRun{run(1, F), run(2, F), run(3, P), run(4, P), run(5, P)}, P, "0 of 5 runs passed, 3 needed; 2 of 5 runs finished"},
		{"aggregated ratio 1 needs every run", aggregated(3, 1), []v1alpha1.JobRun{run(1, S), run(2, S), run(3, U)}, F, "2 of 3 runs passed, 3 needed"},
		{"aggregated 0.7 of 10 needs 7", aggregated(10, 0.7), []v1alpha1.JobRun{run(1, S), run(2, S), run(3, S), run(4, S), run(5, S), run(6, S), run(7, S)}, S, "7 of 10 runs passed, 7 needed"},
		{"aggregated ignores extra runs", aggregated(2, 1), []v1alpha1.JobRun{run(1, S), run(2, F), run(3, S)}, F, "1 of 2 runs passed, 2 needed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, message := VerificationState(tt.v, tt.runs)
			if got != tt.want || message != tt.wantMessage {
				t.Errorf("VerificationState() = %s %q, want %s %q", got, message, tt.want, tt.wantMessage)
			}
			if got := StateOf(tt.v, tt.runs); got != tt.want {
				t.Errorf("StateOf() = %s, want %s", got, tt.want)
			}
		})
	}
}

func TestRequiredPasses(t *testing.T) {
	for _, tt := range []struct {
		runs  int32
		ratio float64
		want  int32
	}{{10, 0.7, 7}, {10, 0.71, 8}, {3, 0.5, 2}, {1, 0.01, 1}, {5, 1, 5}, {10, 0.1, 1}} {
		if got := RequiredPasses(v1alpha1.Aggregation{Runs: tt.runs, PassRatio: tt.ratio}); got != tt.want {
			t.Errorf("RequiredPasses(%d, %v) = %d, want %d", tt.runs, tt.ratio, got, tt.want)
		}
	}
}

func TestComputeConditions(t *testing.T) {
	created := v1alpha1.ReleaseCreationJobResult{Name: "create", Status: v1alpha1.CreationJobSuccess, Message: "built"}
	creationFailed := v1alpha1.ReleaseCreationJobResult{Name: "create", Status: v1alpha1.CreationJobFailed, Message: "BackoffLimitExceeded: push failed"}
	creationRunning := v1alpha1.ReleaseCreationJobResult{Name: "create", Status: v1alpha1.CreationJobUnknown, Message: "creation job create is running"}
	noCreationJob := v1alpha1.ReleaseCreationJobResult{Status: v1alpha1.CreationJobUnknown, Message: "no creation job found"}
	accept := &v1alpha1.PayloadOverride{Override: v1alpha1.OverrideAccepted, Reason: "known flake"}
	reject := &v1alpha1.PayloadOverride{Override: v1alpha1.OverrideRejected, Reason: "bad commit"}
	v := func(name string, typ v1alpha1.VerificationType, state v1alpha1.JobState) v1alpha1.VerificationStatus {
		return v1alpha1.VerificationStatus{Name: name, Type: typ, State: state}
	}
	const B, I = v1alpha1.Blocking, v1alpha1.Informing
	type want struct {
		created, failed, accepted, rejected metav1.ConditionStatus
		acceptedReason, message             string
		phase                               v1alpha1.PayloadPhase
	}
	const T, F, U = metav1.ConditionTrue, metav1.ConditionFalse, metav1.ConditionUnknown
	tests := []struct {
		name          string
		override      *v1alpha1.PayloadOverride
		creation      v1alpha1.ReleaseCreationJobResult
		aborted       string
		verifications []v1alpha1.VerificationStatus
		want          want
	}{
		{"no creation job yet", nil, noCreationJob, "", nil,
			want{U, F, F, F, v1alpha1.ReasonPayloadNotCreated, "waiting for the payload image to be built", v1alpha1.PhasePending}},
		{"creation running", nil, creationRunning, "", []v1alpha1.VerificationStatus{v("e2e", B, v1alpha1.JobSuccess)},
			want{U, F, F, F, v1alpha1.ReasonPayloadNotCreated, "waiting for the payload image to be built", v1alpha1.PhasePending}},
		{"created, jobs pending", nil, created, "", []v1alpha1.VerificationStatus{v("e2e", B, v1alpha1.JobPending), v("upgrade", B, v1alpha1.JobSuccess), v("lint", I, v1alpha1.JobPending)},
			want{T, F, F, F, v1alpha1.ReasonBlockingJobsPending, "waiting for blocking jobs: e2e", v1alpha1.PhaseReady}},
		{"all blocking passed, informing still running", nil, created, "", []v1alpha1.VerificationStatus{v("e2e", B, v1alpha1.JobSuccess), v("upgrade", B, v1alpha1.JobSuccess), v("lint", I, v1alpha1.JobPending)},
			want{T, F, T, F, v1alpha1.ReasonBlockingJobsSucceeded, "all 2 blocking jobs succeeded", v1alpha1.PhaseAccepted}},
		{"informing failure does not reject", nil, created, "", []v1alpha1.VerificationStatus{v("e2e", B, v1alpha1.JobSuccess), v("lint", I, v1alpha1.JobFailure)},
			want{T, F, T, F, v1alpha1.ReasonBlockingJobsSucceeded, "all 1 blocking jobs succeeded", v1alpha1.PhaseAccepted}},
		{"one blocking failed", nil, created, "", []v1alpha1.VerificationStatus{v("e2e", B, v1alpha1.JobFailure), v("upgrade", B, v1alpha1.JobPending), v("gcp", B, v1alpha1.JobFailure)},
			want{T, F, F, T, v1alpha1.ReasonPayloadRejected, "blocking jobs failed: e2e, gcp", v1alpha1.PhaseRejected}},
		{"blocking unknown neither accepts nor rejects", nil, created, "", []v1alpha1.VerificationStatus{v("e2e", B, v1alpha1.JobUnknown), v("upgrade", B, v1alpha1.JobSuccess)},
			want{T, F, F, F, v1alpha1.ReasonBlockingJobsPending, "blocking jobs with unknown results: e2e", v1alpha1.PhaseReady}},
		{"no jobs at all", nil, created, "", nil,
			want{T, F, T, F, v1alpha1.ReasonVerificationsCompleted, "no blocking jobs; every job has ended", v1alpha1.PhaseAccepted}},
		{"no blocking jobs, informing running", nil, created, "", []v1alpha1.VerificationStatus{v("lint", I, v1alpha1.JobPending)},
			want{T, F, F, F, v1alpha1.ReasonBlockingJobsPending, "no blocking jobs; waiting for: lint", v1alpha1.PhaseReady}},
		{"no blocking jobs, informing ended", nil, created, "", []v1alpha1.VerificationStatus{v("lint", I, v1alpha1.JobFailure)},
			want{T, F, T, F, v1alpha1.ReasonVerificationsCompleted, "no blocking jobs; every job has ended", v1alpha1.PhaseAccepted}},
		{"override accepts a rejected payload", accept, created, "", []v1alpha1.VerificationStatus{v("e2e", B, v1alpha1.JobFailure)},
			want{T, F, T, F, v1alpha1.ReasonManualOverride, "manually accepted: known flake", v1alpha1.PhaseAccepted}},
		{"override rejects an accepted payload", reject, created, "", []v1alpha1.VerificationStatus{v("e2e", B, v1alpha1.JobSuccess)},
			want{T, F, F, T, v1alpha1.ReasonManualOverride, "manually rejected: bad commit", v1alpha1.PhaseRejected}},
		{"override accept waits for creation", accept, creationRunning, "", nil,
			want{U, F, F, F, v1alpha1.ReasonPayloadNotCreated, "waiting for the payload image to be built", v1alpha1.PhasePending}},
		{"failed creation wins over override", accept, creationFailed, "", []v1alpha1.VerificationStatus{v("e2e", B, v1alpha1.JobSuccess)},
			want{F, T, F, F, v1alpha1.ReasonPayloadFailed, "the payload failed: BackoffLimitExceeded: push failed", v1alpha1.PhaseFailed}},
		{"failed creation wins over reject override", reject, creationFailed, "", nil,
			want{F, T, F, F, v1alpha1.ReasonPayloadFailed, "the payload failed: BackoffLimitExceeded: push failed", v1alpha1.PhaseFailed}},
		{"aborted before it was built", accept, creationRunning, "superseded by 4.15.0-2", nil,
			want{F, T, F, F, v1alpha1.ReasonPayloadFailed, "the payload failed: aborted: superseded by 4.15.0-2", v1alpha1.PhaseFailed}},
		{"abort comes too late once built", nil, created, "superseded by 4.15.0-2", []v1alpha1.VerificationStatus{v("e2e", B, v1alpha1.JobSuccess)},
			want{T, F, T, F, v1alpha1.ReasonBlockingJobsSucceeded, "all 1 blocking jobs succeeded", v1alpha1.PhaseAccepted}},
		{"a skipped upgrade does not hold back acceptance", nil, created, "", []v1alpha1.VerificationStatus{v("e2e", B, v1alpha1.JobSuccess), v("upgrade", B, v1alpha1.JobSkipped), v("lint", I, v1alpha1.JobPending)},
			want{T, F, T, F, v1alpha1.ReasonBlockingJobsSucceeded, "1 of 2 blocking jobs succeeded; skipped: upgrade", v1alpha1.PhaseAccepted}},
		{"only a skipped upgrade", nil, created, "", []v1alpha1.VerificationStatus{v("upgrade", B, v1alpha1.JobSkipped)},
			want{T, F, T, F, v1alpha1.ReasonBlockingJobsSucceeded, "0 of 1 blocking jobs succeeded; skipped: upgrade", v1alpha1.PhaseAccepted}},
		{"a skipped upgrade waits for the other blocking jobs", nil, created, "", []v1alpha1.VerificationStatus{v("e2e", B, v1alpha1.JobPending), v("upgrade", B, v1alpha1.JobSkipped)},
			want{T, F, F, F, v1alpha1.ReasonBlockingJobsPending, "waiting for blocking jobs: e2e", v1alpha1.PhaseReady}},
		{"a skipped upgrade does not save a failed payload", nil, created, "", []v1alpha1.VerificationStatus{v("e2e", B, v1alpha1.JobFailure), v("upgrade", B, v1alpha1.JobSkipped)},
			want{T, F, F, T, v1alpha1.ReasonPayloadRejected, "blocking jobs failed: e2e", v1alpha1.PhaseRejected}},
		{"a skipped informing upgrade has ended", nil, created, "", []v1alpha1.VerificationStatus{v("upgrade", I, v1alpha1.JobSkipped)},
			want{T, F, T, F, v1alpha1.ReasonVerificationsCompleted, "no blocking jobs; every job has ended", v1alpha1.PhaseAccepted}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			conditions := ComputeConditions(tt.override, tt.creation, tt.aborted, tt.verifications)
			get := func(typ string) metav1.Condition { return *meta.FindStatusCondition(conditions, typ) }
			accepted, rejected := get(v1alpha1.ConditionPayloadAccepted), get(v1alpha1.ConditionPayloadRejected)
			got := want{
				get(v1alpha1.ConditionPayloadCreated).Status, get(v1alpha1.ConditionPayloadFailed).Status,
				accepted.Status, rejected.Status, accepted.Reason, accepted.Message, Phase(conditions),
			}
			if got != tt.want {
				t.Errorf("got  %+v\nwant %+v", got, tt.want)
			}
			if accepted.Status == metav1.ConditionTrue && rejected.Status == metav1.ConditionTrue {
				t.Errorf("Accepted and Rejected are both True")
			}
			for _, c := range conditions {
				if c.Reason == "" || c.Message == "" {
					t.Errorf("condition %s has no reason or message: %+v", c.Type, c)
				}
			}
		})
	}
}
