package payload

import (
	"errors"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/devenv/jobstatus"
	"github.com/release-controller/release-controller/internal/eventlog"
)

// TestComputeStatusReadiness: Ready, Reconciling and Stalled of a payload at each phase, beside
// the phase and verdict conditions they add to.
func TestComputeStatusReadiness(t *testing.T) {
	now := metav1.NewTime(time.Date(2026, 11, 22, 9, 30, 0, 0, time.UTC))
	creation := func(finish func(*batchv1.Job, metav1.Time)) []batchv1.Job {
		j := batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "p1-create"}}
		if finish != nil {
			finish(&j, now)
		}
		return []batchv1.Job{j}
	}
	e2e := func(state v1alpha1.JobState) []ObservedRun {
		return []ObservedRun{{Verification: "e2e", Run: v1alpha1.JobRun{Kind: v1alpha1.RunKindJob, Namespace: "ns", Name: "p1-e2e-1", Attempt: 1, State: state}}}
	}
	type cond struct {
		status          metav1.ConditionStatus
		reason, message string
	}
	tests := []struct {
		name                        string
		override                    *v1alpha1.PayloadOverride
		obs                         Observations
		phase                       v1alpha1.PayloadPhase
		ready, reconciling, stalled cond
	}{
		{
			name: "no creation job yet", phase: v1alpha1.PhasePending,
			ready:       cond{metav1.ConditionFalse, v1alpha1.ReasonPayloadNotCreated, "waiting for the payload image to be built"},
			reconciling: cond{metav1.ConditionTrue, v1alpha1.ReasonProgressing, "waiting for the payload image to be built"},
		},
		{
			name: "being built", obs: Observations{CreationJobs: creation(nil)}, phase: v1alpha1.PhasePending,
			ready:       cond{metav1.ConditionFalse, v1alpha1.ReasonPayloadNotCreated, "waiting for the payload image to be built"},
			reconciling: cond{metav1.ConditionTrue, v1alpha1.ReasonProgressing, "waiting for the payload image to be built by the creation job p1-create"},
		},
		{
			name: "verifying", obs: Observations{CreationJobs: creation(jobstatus.Succeeded), Runs: e2e(v1alpha1.JobPending)}, phase: v1alpha1.PhaseReady,
			ready:       cond{metav1.ConditionFalse, v1alpha1.ReasonBlockingJobsPending, "waiting for blocking jobs: e2e"},
			reconciling: cond{metav1.ConditionTrue, v1alpha1.ReasonProgressing, "waiting for the verifications: waiting for blocking jobs: e2e"},
		},
		{
			name: "accepted", obs: Observations{CreationJobs: creation(jobstatus.Succeeded), Runs: e2e(v1alpha1.JobSuccess)}, phase: v1alpha1.PhaseAccepted,
			ready: cond{metav1.ConditionTrue, v1alpha1.ReasonBlockingJobsSucceeded, "all 1 blocking jobs succeeded"},
		},
		{
			name: "accepted by hand", override: &v1alpha1.PayloadOverride{Override: v1alpha1.OverrideAccepted, Reason: "known flake"},
			obs: Observations{CreationJobs: creation(jobstatus.Succeeded), Runs: e2e(v1alpha1.JobFailure)}, phase: v1alpha1.PhaseAccepted,
			ready: cond{metav1.ConditionTrue, v1alpha1.ReasonManualOverride, "manually accepted: known flake"},
		},
		{
			name: "rejected: a terminal verdict", obs: Observations{CreationJobs: creation(jobstatus.Succeeded), Runs: e2e(v1alpha1.JobFailure)}, phase: v1alpha1.PhaseRejected,
			ready:   cond{metav1.ConditionFalse, v1alpha1.ReasonPayloadRejected, "blocking jobs failed: e2e"},
			stalled: cond{metav1.ConditionTrue, v1alpha1.ReasonPayloadRejected, "blocking jobs failed: e2e"},
		},
		{
			name: "failed: a terminal verdict", obs: Observations{CreationJobs: creation(func(j *batchv1.Job, now metav1.Time) {
				jobstatus.Failed(j, now, 1, "BackoffLimitExceeded", "the build failed")
			})}, phase: v1alpha1.PhaseFailed,
			ready:   cond{metav1.ConditionFalse, v1alpha1.ReasonPayloadFailed, "BackoffLimitExceeded: the build failed"},
			stalled: cond{metav1.ConditionTrue, v1alpha1.ReasonPayloadFailed, "BackoffLimitExceeded: the build failed"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &v1alpha1.ReleasePayload{ObjectMeta: metav1.ObjectMeta{Name: "p1", Generation: 2}}
			p.Spec.PayloadOverride = tt.override
			p.Spec.PayloadVerificationConfig.Verifications = []v1alpha1.Verification{{Name: "e2e"}}
			status := ComputeStatus(p, tt.obs, now)
			if status.Phase != tt.phase {
				t.Errorf("phase %s, want %s", status.Phase, tt.phase)
			}
			checkCondition(t, status.Conditions, v1alpha1.ConditionReady, tt.ready.status, tt.ready.reason, tt.ready.message)
			checkCondition(t, status.Conditions, v1alpha1.ConditionReconciling, tt.reconciling.status, tt.reconciling.reason, tt.reconciling.message)
			checkCondition(t, status.Conditions, v1alpha1.ConditionStalled, tt.stalled.status, tt.stalled.reason, tt.stalled.message)
			// Computing again later from the status gives the same status: nothing to write.
			p.Status = status
			again := ComputeStatus(p, tt.obs, metav1.NewTime(now.Add(time.Hour)))
			if !equality.Semantic.DeepEqual(again, status) {
				t.Errorf("a second computation changed the status:\n%+v\n%+v", status.Conditions, again.Conditions)
			}
		})
	}
}

// TestFailedStatus: a reconcile that failed before judging the jobs keeps the verdict and
// says what failed in Ready, with Reconciling ProgressingWithRetry (or Stalled for a stall).
func TestFailedStatus(t *testing.T) {
	now := metav1.NewTime(time.Date(2026, 11, 22, 9, 30, 0, 0, time.UTC))
	accepted := &v1alpha1.ReleasePayload{ObjectMeta: metav1.ObjectMeta{Name: "p1", Generation: 1}}
	accepted.Status = ComputeStatus(accepted, Observations{CreationJobs: []batchv1.Job{func() batchv1.Job {
		j := batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "p1-create"}}
		jobstatus.Succeeded(&j, now)
		return j
	}()}}, now)
	tests := []struct {
		name                 string
		err                  error
		reason, message      string
		reconciling, stalled bool
	}{
		{"reading the jobs failed", eventlog.Step(v1alpha1.ReasonReconcileFailed, "Observe", "reading the payload's jobs", errors.New("cache stopped")),
			v1alpha1.ReasonReconcileFailed, "reading the payload's jobs: cache stopped", true, false},
		{"a stall", eventlog.Stall(v1alpha1.ReasonReconcileFailed, "Observe", "reading the payload's jobs", errors.New("never")),
			v1alpha1.ReasonReconcileFailed, "reading the payload's jobs: never", false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status := FailedStatus(accepted, tt.err, now)
			if status.Phase != v1alpha1.PhaseAccepted || !meta.IsStatusConditionTrue(status.Conditions, v1alpha1.ConditionPayloadAccepted) {
				t.Errorf("the verdict moved: phase %s", status.Phase)
			}
			checkCondition(t, status.Conditions, v1alpha1.ConditionReady, metav1.ConditionFalse, tt.reason, tt.message)
			want := func(on bool, reason string) (metav1.ConditionStatus, string, string) {
				if !on {
					return "", "", ""
				}
				return metav1.ConditionTrue, reason, tt.message
			}
			s, r, m := want(tt.reconciling, v1alpha1.ReasonProgressingWithRetry)
			checkCondition(t, status.Conditions, v1alpha1.ConditionReconciling, s, r, m)
			s, r, m = want(tt.stalled, tt.reason)
			checkCondition(t, status.Conditions, v1alpha1.ConditionStalled, s, r, m)
		})
	}
	if got := FailedStatus(accepted, nil, now); !meta.IsStatusConditionTrue(got.Conditions, v1alpha1.ConditionReady) {
		t.Error("FailedStatus without a failure changed Ready")
	}
	// A payload whose status was never written: a valid status, Pending, creation Unknown.
	fresh := FailedStatus(&v1alpha1.ReleasePayload{}, tests[0].err, now)
	if fresh.Phase != v1alpha1.PhasePending || fresh.ReleaseCreationJobResult.Status != v1alpha1.CreationJobUnknown {
		t.Errorf("a fresh payload's failed status: phase %q, creation %q", fresh.Phase, fresh.ReleaseCreationJobResult.Status)
	}
	checkCondition(t, fresh.Conditions, v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonReconcileFailed, "reading the payload's jobs")
}

// checkCondition checks that conditions hold typ with status, reason and a message that
// starts with message; an empty status: that they hold none.
func checkCondition(t *testing.T, conds []metav1.Condition, typ string, status metav1.ConditionStatus, reason, message string) {
	t.Helper()
	c := meta.FindStatusCondition(conds, typ)
	if status == "" {
		if c != nil {
			t.Errorf("%s = %s/%s %q, want none", typ, c.Status, c.Reason, c.Message)
		}
		return
	}
	if c == nil {
		t.Errorf("no %s, want %s/%s", typ, status, reason)
		return
	}
	if c.Status != status || c.Reason != reason || len(c.Message) < len(message) || c.Message[:len(message)] != message {
		t.Errorf("%s = %s/%s %q, want %s/%s %q…", typ, c.Status, c.Reason, c.Message, status, reason, message)
	}
}
