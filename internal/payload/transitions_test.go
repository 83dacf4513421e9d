package payload

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/release-controller/release-controller/api/v1alpha1"
)

func statusWith(phase v1alpha1.PayloadPhase, trueConditions []string, runs ...v1alpha1.JobRun) v1alpha1.ReleasePayloadStatus {
	s := v1alpha1.ReleasePayloadStatus{Phase: phase, ReleaseCreationJobResult: v1alpha1.ReleaseCreationJobResult{Name: "p-build"}}
	for _, typ := range []string{v1alpha1.ConditionPayloadCreated, v1alpha1.ConditionPayloadFailed, v1alpha1.ConditionPayloadAccepted, v1alpha1.ConditionPayloadRejected} {
		c := metav1.Condition{Type: typ, Status: metav1.ConditionFalse, Reason: "R", Message: typ + " message"}
		for _, t := range trueConditions {
			if t == typ {
				c.Status = metav1.ConditionTrue
			}
		}
		s.Conditions = append(s.Conditions, c)
	}
	if len(runs) > 0 {
		s.Verifications = []v1alpha1.VerificationStatus{{Name: "e2e", Runs: runs}}
	}
	return s
}

func jobRun(name string, attempt int32, state v1alpha1.JobState) v1alpha1.JobRun {
	start := metav1.NewTime(time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC))
	r := v1alpha1.JobRun{Kind: v1alpha1.RunKindJob, Namespace: "ns", Name: name, Attempt: attempt, State: state, StartTime: &start, Message: "exit 1"}
	if state.IsTerminal() {
		end := metav1.NewTime(start.Add(90 * time.Second))
		r.CompletionTime = &end
	}
	return r
}

// TestTransitions: what changes of a payload's status are reported as Events.
func TestTransitions(t *testing.T) {
	created := []string{v1alpha1.ConditionPayloadCreated}
	tests := []struct {
		name     string
		old, cur v1alpha1.ReleasePayloadStatus
		want     []Transition
		verdict  v1alpha1.PayloadPhase
	}{
		{name: "nothing changed", old: statusWith(v1alpha1.PhaseReady, created), cur: statusWith(v1alpha1.PhaseReady, created)},
		{
			name: "built",
			old:  statusWith(v1alpha1.PhasePending, nil), cur: statusWith(v1alpha1.PhaseReady, created),
			want: []Transition{{"Normal", v1alpha1.EventBuildSucceeded, "Build", "the payload image was built by p-build: PayloadCreated message"}},
		},
		{
			name: "built, the condition without a message (a creation Job that succeeded has none)",
			old:  statusWith(v1alpha1.PhasePending, nil),
			cur: func() v1alpha1.ReleasePayloadStatus {
				s := statusWith(v1alpha1.PhaseReady, created)
				meta.FindStatusCondition(s.Conditions, v1alpha1.ConditionPayloadCreated).Message = ""
				return s
			}(),
			want: []Transition{{"Normal", v1alpha1.EventBuildSucceeded, "Build", "the payload image was built by p-build"}},
		},
		{
			name: "build failed",
			old:  statusWith(v1alpha1.PhasePending, nil), cur: statusWith(v1alpha1.PhaseFailed, []string{v1alpha1.ConditionPayloadFailed}),
			want:    []Transition{{"Warning", v1alpha1.EventBuildFailed, "Build", "the payload failed: PayloadFailed message"}},
			verdict: v1alpha1.PhaseFailed,
		},
		{
			name: "a run failed, another started",
			old:  statusWith(v1alpha1.PhaseReady, created, jobRun("e2e-1", 1, v1alpha1.JobPending)),
			cur:  statusWith(v1alpha1.PhaseReady, created, jobRun("e2e-1", 1, v1alpha1.JobFailure), jobRun("e2e-2", 2, v1alpha1.JobPending)),
			want: []Transition{{"Warning", v1alpha1.EventVerificationFailed, "Verify", "Job e2e-1 of verification e2e failed (attempt 1): exit 1"}},
		},
		{
			name: "a run lost; one that failed earlier is not reported again",
			old:  statusWith(v1alpha1.PhaseReady, created, jobRun("e2e-1", 1, v1alpha1.JobFailure), jobRun("e2e-2", 2, v1alpha1.JobPending)),
			cur:  statusWith(v1alpha1.PhaseReady, created, jobRun("e2e-1", 1, v1alpha1.JobFailure), jobRun("e2e-2", 2, v1alpha1.JobUnknown)),
			want: []Transition{{"Warning", v1alpha1.EventVerificationLost, "Verify", "Job e2e-2 of verification e2e (attempt 2) was lost: exit 1"}},
		},
		{
			name:    "accepted after the last run passed (no Event for a passing run)",
			old:     statusWith(v1alpha1.PhaseReady, created, jobRun("e2e-1", 1, v1alpha1.JobPending)),
			cur:     statusWith(v1alpha1.PhaseAccepted, []string{v1alpha1.ConditionPayloadCreated, v1alpha1.ConditionPayloadAccepted}, jobRun("e2e-1", 1, v1alpha1.JobSuccess)),
			want:    []Transition{{"Normal", v1alpha1.EventAccepted, "Decide", "accepted: PayloadAccepted message"}},
			verdict: v1alpha1.PhaseAccepted,
		},
		{
			name: "built, failed and rejected in one write",
			old:  statusWith(v1alpha1.PhasePending, nil, jobRun("e2e-1", 1, v1alpha1.JobPending)),
			cur:  statusWith(v1alpha1.PhaseRejected, []string{v1alpha1.ConditionPayloadCreated, v1alpha1.ConditionPayloadRejected}, jobRun("e2e-1", 1, v1alpha1.JobFailure)),
			want: []Transition{
				{"Normal", v1alpha1.EventBuildSucceeded, "Build", "the payload image was built by p-build: PayloadCreated message"},
				{"Warning", v1alpha1.EventVerificationFailed, "Verify", "Job e2e-1 of verification e2e failed (attempt 1): exit 1"},
				{"Warning", v1alpha1.EventRejected, "Decide", "rejected: PayloadRejected message"},
			},
			verdict: v1alpha1.PhaseRejected,
		},
		{
			name:    "an override turns a rejection into an acceptance",
			old:     statusWith(v1alpha1.PhaseRejected, []string{v1alpha1.ConditionPayloadCreated, v1alpha1.ConditionPayloadRejected}),
			cur:     statusWith(v1alpha1.PhaseAccepted, []string{v1alpha1.ConditionPayloadCreated, v1alpha1.ConditionPayloadAccepted}),
			want:    []Transition{{"Normal", v1alpha1.EventAccepted, "Decide", "accepted: PayloadAccepted message"}},
			verdict: v1alpha1.PhaseAccepted,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, Transitions(&tt.old, &tt.cur)); diff != "" {
				t.Errorf("Transitions (-want +got):\n%s", diff)
			}
			verdict, ok := Verdict(&tt.old, &tt.cur)
			if verdict != tt.verdict || ok != (tt.verdict != "") {
				t.Errorf("Verdict() = %q, %v; want %q", verdict, ok, tt.verdict)
			}
		})
	}
}

func TestEndedRuns(t *testing.T) {
	old := statusWith(v1alpha1.PhaseReady, nil, jobRun("e2e-1", 1, v1alpha1.JobFailure), jobRun("e2e-2", 2, v1alpha1.JobPending))
	cur := statusWith(v1alpha1.PhaseReady, nil, jobRun("e2e-1", 1, v1alpha1.JobFailure), jobRun("e2e-2", 2, v1alpha1.JobSuccess), jobRun("e2e-3", 3, v1alpha1.JobPending))
	ended := EndedRuns(&old, &cur)
	if len(ended) != 1 || ended[0].Run.Name != "e2e-2" || ended[0].Verification != "e2e" {
		t.Fatalf("EndedRuns() = %+v", ended)
	}
	if d, ok := ended[0].Duration(); !ok || d != 90*time.Second {
		t.Errorf("Duration() = %s, %v", d, ok)
	}
	lost := EndedRun{Run: v1alpha1.JobRun{State: v1alpha1.JobUnknown}}
	if _, ok := lost.Duration(); ok {
		t.Error("a run without times has a duration")
	}
}
