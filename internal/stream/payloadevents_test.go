package stream

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/release-controller/release-controller/api/v1alpha1"
)

// TestPayloadChange: which payload updates enqueue the payload's stream, and which the streams
// upgrading from it.
func TestPayloadChange(t *testing.T) {
	verifying := func() v1alpha1.ReleasePayload {
		p := payloadAt("p1", time.Minute, v1alpha1.PhaseReady)
		p.Status.PayloadImage = "registry/release@sha256:1"
		p.Status.ReleaseCreationJobResult = v1alpha1.ReleaseCreationJobResult{Name: "p1-create", Status: v1alpha1.CreationJobSuccess}
		p.Status.Verifications = []v1alpha1.VerificationStatus{{Name: "e2e", State: v1alpha1.JobPending, Runs: []v1alpha1.JobRun{
			{Kind: v1alpha1.RunKindJob, Namespace: "ns", Name: "p1-e2e-1", Attempt: 1, State: v1alpha1.JobPending, URL: "https://logs/1"},
		}}}
		return p
	}
	completed := metav1.NewTime(now)
	tests := []struct {
		name            string
		change          func(p *v1alpha1.ReleasePayload)
		own, dependents bool
	}{
		{"nothing a pass reads: a condition's message", func(p *v1alpha1.ReleasePayload) {
			p.Status.Conditions = append(p.Status.Conditions, metav1.Condition{Type: "Extra", Message: "x"})
		}, false, false},
		{"nothing a pass reads: a run's URL and message", func(p *v1alpha1.ReleasePayload) {
			p.Status.Verifications[0].Runs[0].URL, p.Status.Verifications[0].Runs[0].Message = "https://logs/2", "running"
		}, false, false},
		{"nothing a pass reads: the resource version", func(p *v1alpha1.ReleasePayload) { p.ResourceVersion = "42" }, false, false},
		{"a run finished (state, completion)", func(p *v1alpha1.ReleasePayload) {
			p.Status.Verifications[0].Runs[0].State, p.Status.Verifications[0].Runs[0].CompletionTime = v1alpha1.JobFailure, &completed
		}, true, false},
		{"a run recorded", func(p *v1alpha1.ReleasePayload) {
			p.Status.Verifications[0].Runs = append(p.Status.Verifications[0].Runs, v1alpha1.JobRun{Kind: v1alpha1.RunKindJob, Namespace: "ns", Name: "p1-e2e-2", Attempt: 2})
		}, true, false},
		{"the creation job is done", func(p *v1alpha1.ReleasePayload) {
			p.Status.ReleaseCreationJobResult.Status = v1alpha1.CreationJobFailed
		}, true, false},
		{"the image is recorded", func(p *v1alpha1.ReleasePayload) { p.Status.PayloadImage = "registry/release@sha256:2" }, true, false},
		{"aborted (an annotation)", func(p *v1alpha1.ReleasePayload) {
			p.Annotations[v1alpha1.AnnotationAborted] = "superseded"
		}, true, false},
		{"a deletion begins", func(p *v1alpha1.ReleasePayload) { p.DeletionTimestamp = &completed }, true, false},
		{"accepted: its stream and the streams upgrading from it", func(p *v1alpha1.ReleasePayload) {
			*p = payloadAt("p1", time.Minute, v1alpha1.PhaseAccepted)
		}, true, true},
		{"rejected: the stream's counts, no upgrade source", func(p *v1alpha1.ReleasePayload) {
			*p = payloadAt("p1", time.Minute, v1alpha1.PhaseRejected)
		}, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			old := verifying()
			p := verifying()
			p.Annotations = map[string]string{}
			tt.change(&p)
			own, dependents := PayloadChange(&old, &p)
			if own != tt.own || dependents != tt.dependents {
				t.Errorf("PayloadChange = own %v, dependents %v; want %v, %v", own, dependents, tt.own, tt.dependents)
			}
		})
	}
	// An accepted payload that is no longer (an override) concerns the dependents too.
	accepted, rejected := payloadAt("p1", time.Minute, v1alpha1.PhaseAccepted), payloadAt("p1", time.Minute, v1alpha1.PhaseRejected)
	if own, dependents := PayloadChange(&accepted, &rejected); !own || !dependents {
		t.Errorf("accepted → rejected: own %v, dependents %v; want both", own, dependents)
	}
}
