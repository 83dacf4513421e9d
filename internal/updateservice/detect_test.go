package updateservice

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/release-controller/release-controller/api/v1alpha1"
)

func TestDetect(t *testing.T) {
	flaky := accepted("product", "4.15", "4.15.2", at(0))
	flaky.Status.Verifications = append(flaky.Status.Verifications, v1alpha1.VerificationStatus{
		Name: "upgrade", Type: v1alpha1.Blocking, State: v1alpha1.JobSuccess, Runs: []v1alpha1.JobRun{
			{Name: "upgrade-1", UpgradeFrom: "4.15.1", State: v1alpha1.JobFailure, URL: "https://ci.example.com/upgrade-1", CompletionTime: ptrTime(at(time.Minute))},
			{Name: "upgrade-2", UpgradeFrom: "4.15.1", State: v1alpha1.JobSuccess},
		},
	})
	steady := accepted("product", "4.15", "4.15.3", at(0))
	steady.Status.Verifications = append(steady.Status.Verifications,
		v1alpha1.VerificationStatus{Name: "upgrade", Type: v1alpha1.Blocking, State: v1alpha1.JobSuccess, Runs: []v1alpha1.JobRun{
			{Name: "upgrade-1", UpgradeFrom: "4.15.2", State: v1alpha1.JobSuccess},
		}},
		v1alpha1.VerificationStatus{Name: "e2e-aws-serial", Type: v1alpha1.Informing, State: v1alpha1.JobFailure, Runs: []v1alpha1.JobRun{
			{Name: "serial-1", State: v1alpha1.JobFailure, CompletionTime: ptrTime(at(2 * time.Minute))},
		}},
	)
	payloads := []*v1alpha1.ReleasePayload{accepted("product", "4.15", "4.15.1", at(0)), flaky, steady}
	page := func(tag string) string { return "https://release.example.com/" + tag }

	if got := Detect(streamOf(t, &v1alpha1.UpdateService{}, payloads...), page); got != nil {
		t.Fatalf("a stream that did not opt in detected %v", got)
	}
	risks := Detect(streamOf(t, &v1alpha1.UpdateService{DetectRisks: true}, payloads...), page)
	if len(risks) != 2 {
		t.Fatalf("detected %d risks, want 2: %+v", len(risks), risks)
	}
	x := NewIndex(risks)
	on := x.On("product", "4.15", "4.15.1", "4.15.2")
	if len(on) != 1 || on[0].Name != RiskFlakyUpgrade || on[0].URL != "https://ci.example.com/upgrade-1" ||
		!strings.Contains(on[0].Message, "failed in 1 of 2 runs (upgrade-1)") || !on[0].Declared.Equal(at(time.Minute)) || !on[0].AppliesToAll() {
		t.Errorf("flaky upgrade risk: %+v", on)
	}
	if other := x.On("product", "4.15", "4.15.0", "4.15.2"); len(other) != 0 {
		t.Errorf("the flaky upgrade's risk applies to another source: %+v", other)
	}
	into := x.On("product", "4.15", "4.15.2", "4.15.3")
	if len(into) != 1 || into[0].Name != "InformingE2eAwsSerialFailed" || into[0].URL != page("4.15.3") ||
		!strings.Contains(into[0].Message, "e2e-aws-serial failed on 4.15.3 (serial-1)") || into[0].Blocks() {
		t.Errorf("informing risk: %+v", into)
	}
	if a, b := risks[0].Key(), risks[1].Key(); a == b {
		t.Errorf("two detected risks share the key %q", a)
	}
}

func TestListRunsIsBounded(t *testing.T) {
	runs := []string{"a", "b", "c", "d", "e", "f", "g"}
	if got, want := listRuns(runs), "a, b, c, d, e and 2 more"; got != want {
		t.Errorf("listRuns = %q, want %q", got, want)
	}
}

func TestCamel(t *testing.T) {
	for in, want := range map[string]string{"e2e-aws-serial": "E2eAwsSerial", "upgrade": "Upgrade", "conformance_4.15": "Conformance415"} {
		if got := camel(in); got != want {
			t.Errorf("camel(%q) = %q, want %q", in, got, want)
		}
	}
}

func ptrTime(t time.Time) *metav1.Time {
	m := metav1.NewTime(t)
	return &m
}
