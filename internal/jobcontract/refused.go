package jobcontract

import (
	"encoding/json"
	"maps"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/conditions"
)

// A verification run whose object the API server refuses (its template is invalid) never
// exists, so no job will ever say it failed. The stream controller records it on the payload
// (v1alpha1.AnnotationRefusedRuns) and the payload controller counts it as a failed run with
// the API server's message: it uses up an attempt, and the payload reaches a verdict.

// The same holds for a run whose job templates cannot be read any more (the ConfigMap a
// payload names is gone or holds other content): CauseTemplatesUnusable.

// And for a run the tenancy rules refuse (a Job template that reaches past its pod, a ProwJob
// bound for a namespace not allowed): CauseForbidden.

// RefusedRun is one refused run.
type RefusedRun struct {
	Verification string           `json:"verification"`
	Attempt      int32            `json:"attempt"`
	Kind         v1alpha1.RunKind `json:"kind"`
	Message      string           `json:"message"`
	At           metav1.Time      `json:"at"`
	// Cause is why the run was never created: CauseRefused (empty), CauseTemplatesUnusable or
	// CauseForbidden.
	Cause string `json:"cause,omitempty"`
}

// Causes of a RefusedRun.
const (
	// CauseRefused: the API server refused the run's object.
	CauseRefused = ""
	// CauseTemplatesUnusable: the payload's job templates could not be read.
	CauseTemplatesUnusable = "TemplatesUnusable"
	// CauseForbidden: the tenancy rules refused the run's object before it was created.
	CauseForbidden = "Forbidden"
)

// RunMessage is the message of the failed run r stands for.
func (r RefusedRun) RunMessage() string {
	switch r.Cause {
	case CauseTemplatesUnusable:
		return "the run's job template could not be read: " + r.Message
	case CauseForbidden:
		return "the run was not created: " + r.Message
	}
	return "the API server refused the run's object: " + r.Message
}

// maxRefusedMessage bounds each message, so that the annotation stays small.
const maxRefusedMessage = 512

// RefusedRuns reads the refused runs of p, by run name; an unreadable annotation (edited by
// hand) reads as none.
func RefusedRuns(p *v1alpha1.ReleasePayload) map[string]RefusedRun {
	raw := p.Annotations[v1alpha1.AnnotationRefusedRuns]
	if raw == "" {
		return nil
	}
	var runs map[string]RefusedRun
	if err := json.Unmarshal([]byte(raw), &runs); err != nil {
		return nil
	}
	return runs
}

// WithRefusedRun is the annotation's value with run name added.
func WithRefusedRun(p *v1alpha1.ReleasePayload, name string, r RefusedRun) (string, error) {
	runs := maps.Clone(RefusedRuns(p))
	if runs == nil {
		runs = map[string]RefusedRun{}
	}
	r.Message = conditions.Truncate(r.Message, maxRefusedMessage)
	r.At = metav1.NewTime(r.At.UTC().Truncate(time.Second))
	runs[name] = r
	out, err := json.Marshal(runs)
	return string(out), err
}
