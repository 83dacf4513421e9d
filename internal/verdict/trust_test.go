package verdict

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/release-controller/release-controller/api/v1alpha1"
)

// TestOf: a verdict counts only when the evidence recorded in the payload gives it; a verdict
// written by hand is read as "still waiting". (That every status the payload controller
// writes is trusted is payload's TestComputedVerdictsAreTrusted.)
func TestOf(t *testing.T) {
	const (
		accepted = v1alpha1.PhaseAccepted
		rejected = v1alpha1.PhaseRejected
		failed   = v1alpha1.PhaseFailed
		ready    = v1alpha1.PhaseReady
		pending  = v1alpha1.PhasePending
	)
	built := v1alpha1.ReleaseCreationJobResult{Name: "build", Status: v1alpha1.CreationJobSuccess}
	e2e := v1alpha1.Verification{Name: "e2e"}
	upgrade := v1alpha1.Verification{Name: "upgrade", UpgradeFrom: v1alpha1.UpgradeFromPrevious}
	lint := v1alpha1.Verification{Name: "lint", Type: v1alpha1.Informing}
	type payload struct {
		config   []v1alpha1.Verification
		override *v1alpha1.PayloadOverride
		skipped  string
		creation v1alpha1.ReleaseCreationJobResult
		runs     map[string][]v1alpha1.JobRun
		states   map[string]v1alpha1.JobState // recorded states, which are not trusted
		phase    v1alpha1.PayloadPhase        // written as status.phase and as its conditions
	}
	for _, tc := range []struct {
		name string
		p    payload
		want v1alpha1.PayloadPhase
	}{
		{"accepted by its runs", payload{config: []v1alpha1.Verification{e2e, lint}, creation: built,
			runs: map[string][]v1alpha1.JobRun{"e2e": {run(1, v1alpha1.JobSuccess)}}, phase: accepted}, accepted},
		{"a hand-written Accepted without runs", payload{config: []v1alpha1.Verification{e2e}, creation: built, phase: accepted}, ready},
		{"a hand-written Accepted with Succeeded states but no runs", payload{config: []v1alpha1.Verification{e2e}, creation: built,
			states: map[string]v1alpha1.JobState{"e2e": v1alpha1.JobSuccess}, phase: accepted}, ready},
		{"a hand-written Accepted over a failed run", payload{config: []v1alpha1.Verification{e2e}, creation: built,
			runs: map[string][]v1alpha1.JobRun{"e2e": {run(1, v1alpha1.JobFailure)}}, phase: accepted}, ready},
		{"a hand-written Accepted before the image was built", payload{config: []v1alpha1.Verification{e2e},
			runs: map[string][]v1alpha1.JobRun{"e2e": {run(1, v1alpha1.JobSuccess)}}, phase: accepted}, pending},
		{"accepted by the override", payload{config: []v1alpha1.Verification{e2e}, creation: built,
			override: &v1alpha1.PayloadOverride{Override: v1alpha1.OverrideAccepted, Reason: "flake"}, phase: accepted}, accepted},
		{"an override that rejects an accepted payload", payload{config: []v1alpha1.Verification{e2e}, creation: built,
			override: &v1alpha1.PayloadOverride{Override: v1alpha1.OverrideRejected, Reason: "bad"},
			runs:     map[string][]v1alpha1.JobRun{"e2e": {run(1, v1alpha1.JobSuccess)}}, phase: accepted}, ready},
		{"accepted with a skipped upgrade", payload{config: []v1alpha1.Verification{e2e, upgrade}, creation: built, skipped: "upgrade",
			runs: map[string][]v1alpha1.JobRun{"e2e": {run(1, v1alpha1.JobSuccess)}}, phase: accepted}, accepted},
		{"a skipped upgrade that ran counts by its runs", payload{config: []v1alpha1.Verification{e2e, upgrade}, creation: built, skipped: "upgrade",
			runs: map[string][]v1alpha1.JobRun{"e2e": {run(1, v1alpha1.JobSuccess)}, "upgrade": {run(1, v1alpha1.JobFailure)}}, phase: accepted}, ready},
		{"rejected by its runs", payload{config: []v1alpha1.Verification{e2e}, creation: built,
			runs: map[string][]v1alpha1.JobRun{"e2e": {run(1, v1alpha1.JobFailure)}}, phase: rejected}, rejected},
		{"a hand-written Rejected", payload{config: []v1alpha1.Verification{e2e}, creation: built,
			runs: map[string][]v1alpha1.JobRun{"e2e": {run(1, v1alpha1.JobSuccess)}}, phase: rejected}, ready},
		{"failed by its build", payload{config: []v1alpha1.Verification{e2e},
			creation: v1alpha1.ReleaseCreationJobResult{Name: "build", Status: v1alpha1.CreationJobFailed, Message: "push failed"}, phase: failed}, failed},
		{"a hand-written Failed", payload{config: []v1alpha1.Verification{e2e}, creation: built, phase: failed}, ready},
		{"Ready is read as written", payload{config: []v1alpha1.Verification{e2e}, creation: built,
			runs: map[string][]v1alpha1.JobRun{"e2e": {run(1, v1alpha1.JobSuccess)}}, phase: ready}, ready},
		{"no verifications: accepted once built", payload{creation: built, phase: accepted}, accepted},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &v1alpha1.ReleasePayload{}
			p.Spec.PayloadVerificationConfig.Verifications = tc.p.config
			p.Spec.PayloadOverride = tc.p.override
			if tc.p.skipped != "" {
				p.Annotations = map[string]string{v1alpha1.AnnotationUpgradeSkipped: tc.p.skipped}
			}
			p.Status.ReleaseCreationJobResult = tc.p.creation
			for _, v := range tc.p.config {
				p.Status.Verifications = append(p.Status.Verifications, v1alpha1.VerificationStatus{Name: v.Name, State: tc.p.states[v.Name], Runs: tc.p.runs[v.Name]})
			}
			p.Status.Phase = tc.p.phase
			for typ, phase := range map[string]v1alpha1.PayloadPhase{
				v1alpha1.ConditionPayloadCreated: ready, v1alpha1.ConditionPayloadFailed: failed,
				v1alpha1.ConditionPayloadAccepted: accepted, v1alpha1.ConditionPayloadRejected: rejected,
			} {
				status := metav1.ConditionFalse
				if phase == tc.p.phase || (typ == v1alpha1.ConditionPayloadCreated && tc.p.phase != failed) {
					status = metav1.ConditionTrue
				}
				meta.SetStatusCondition(&p.Status.Conditions, metav1.Condition{Type: typ, Status: status, Reason: "Written"})
			}
			if got := Of(p); got != tc.want {
				t.Errorf("Of = %s, want %s (Recorded %s)", got, tc.want, Recorded(p))
			}
			if got := Accepted(p); got != (tc.want == accepted) {
				t.Errorf("Accepted = %v", got)
			}
		})
	}
}

// A phase its own conditions do not give is not a verdict either.
func TestOfWantsTheConditionsToAgree(t *testing.T) {
	p := &v1alpha1.ReleasePayload{}
	p.Status.ReleaseCreationJobResult = v1alpha1.ReleaseCreationJobResult{Name: "build", Status: v1alpha1.CreationJobSuccess}
	p.Status.Phase = v1alpha1.PhaseAccepted // no verifications: the evidence says Accepted
	if got := Of(p); got != v1alpha1.PhaseReady {
		t.Errorf("a phase without conditions: Of = %s, want Ready", got)
	}
	p.Status.Conditions = ComputeConditions(nil, p.Status.ReleaseCreationJobResult, "", nil)
	if got := Of(p); got != v1alpha1.PhaseAccepted {
		t.Errorf("with its conditions: Of = %s, want Accepted", got)
	}
}

func BenchmarkOf(b *testing.B) {
	p := &v1alpha1.ReleasePayload{}
	p.Status.ReleaseCreationJobResult = v1alpha1.ReleaseCreationJobResult{Name: "build", Status: v1alpha1.CreationJobSuccess}
	for i := range 10 {
		v := v1alpha1.Verification{Name: string(rune('a' + i)), MaxRetries: 2}
		p.Spec.PayloadVerificationConfig.Verifications = append(p.Spec.PayloadVerificationConfig.Verifications, v)
		p.Status.Verifications = append(p.Status.Verifications, v1alpha1.VerificationStatus{Name: v.Name, Runs: []v1alpha1.JobRun{run(1, v1alpha1.JobFailure), run(2, v1alpha1.JobSuccess)}})
	}
	p.Status.Conditions = ComputeConditions(nil, p.Status.ReleaseCreationJobResult, "", nil)
	p.Status.Phase = v1alpha1.PhaseAccepted
	if Of(p) != v1alpha1.PhaseAccepted {
		b.Fatalf("Of = %s", Of(p))
	}
	b.ReportAllocs()
	for b.Loop() {
		Of(p)
	}
}
