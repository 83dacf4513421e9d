package jobcontract

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/release-controller/release-controller/api/v1alpha1"
)

func TestRefusedRuns(t *testing.T) {
	p := &v1alpha1.ReleasePayload{}
	if RefusedRuns(p) != nil {
		t.Error("refused runs of a payload without the annotation")
	}
	at := time.Date(2026, 11, 26, 12, 0, 0, 500, time.UTC)
	value, err := WithRefusedRun(p, "1.0.0-e2e-1", RefusedRun{Verification: "e2e", Attempt: 1, Kind: v1alpha1.RunKindJob, Message: strings.Repeat("x", 2000), At: metav1.NewTime(at)})
	if err != nil {
		t.Fatal(err)
	}
	p.Annotations = map[string]string{v1alpha1.AnnotationRefusedRuns: value}
	value, err = WithRefusedRun(p, "1.0.0-e2e-2", RefusedRun{Verification: "e2e", Attempt: 2, Kind: v1alpha1.RunKindJob, Message: "invalid", At: metav1.NewTime(at)})
	if err != nil {
		t.Fatal(err)
	}
	p.Annotations[v1alpha1.AnnotationRefusedRuns] = value
	runs := RefusedRuns(p)
	if len(runs) != 2 || runs["1.0.0-e2e-2"].Attempt != 2 || runs["1.0.0-e2e-2"].Message != "invalid" {
		t.Errorf("runs = %+v", runs)
	}
	if m := runs["1.0.0-e2e-1"].Message; len(m) > 512 || !strings.Contains(m, "more bytes]") {
		t.Errorf("a long message is kept whole (%d bytes)", len(m))
	}
	if !runs["1.0.0-e2e-1"].At.Time.Equal(at.Truncate(time.Second)) {
		t.Errorf("time %v, want it to the second", runs["1.0.0-e2e-1"].At)
	}
	p.Annotations[v1alpha1.AnnotationRefusedRuns] = "{not json"
	if RefusedRuns(p) != nil {
		t.Error("a broken annotation reads as refused runs")
	}
}

func TestRefusedRunMessage(t *testing.T) {
	for cause, want := range map[string]string{
		CauseRefused:           "the API server refused the run's object: why",
		CauseTemplatesUnusable: "the run's job template could not be read: why",
		CauseForbidden:         "the run was not created: why",
	} {
		if got := (RefusedRun{Message: "why", Cause: cause}).RunMessage(); got != want {
			t.Errorf("cause %q: %q, want %q", cause, got, want)
		}
	}
}
