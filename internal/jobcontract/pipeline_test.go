package jobcontract

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/release-controller/release-controller/api/v1alpha1"
)

// TestPipelineRunRoundTrip: what the pipeline controller writes on a run is what it reads
// back, whatever the revision holds, and the name is a valid Job name and pod label value.
func TestPipelineRunRoundTrip(t *testing.T) {
	long := strings.Repeat("long-pipeline-name-", 5)
	for _, r := range []PipelineRun{
		{PipelineNamespace: "team-a", Pipeline: "web", Environment: "dev", Revision: "1.0.3", Verification: "smoke", Attempt: 1},
		{PipelineNamespace: "team-a", Pipeline: "web", Environment: "prod", Revision: "1.0.3+build.7", Verification: "smoke", Attempt: 3},
		{PipelineNamespace: "team-a", Pipeline: "web", Environment: "dev", Revision: "sha256:0123abcd", Verification: "e2e", Attempt: 2},
		{PipelineNamespace: "team-a", Pipeline: long, Environment: "staging", Revision: "V2..-", Verification: "e2e-aws-ovn-upgrade", Attempt: 12},
	} {
		name := r.Name()
		if len(name) > MaxNameLength || len(validation.IsDNS1123Subdomain(name)) > 0 || len(validation.IsValidLabelValue(name)) > 0 {
			t.Errorf("%+v: name %q is not a valid Job name and label value", r, name)
		}
		for k, v := range r.Labels() {
			if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
				t.Errorf("%+v: label %s=%q: %v", r, k, v, errs)
			}
		}
		obj := &metav1.ObjectMeta{Namespace: "elsewhere", Name: name, Labels: r.Labels(), Annotations: r.Annotations()}
		got, ok := ParsePipelineRun(obj)
		if !ok {
			t.Fatalf("%+v: not parsed back", r)
		}
		if diff := cmp.Diff(r, got); diff != "" {
			t.Errorf("round trip (-wrote +read):\n%s", diff)
		}
		if got.Key() != "team-a/"+r.Pipeline {
			t.Errorf("key %q", got.Key())
		}
	}
}

// TestPipelineRunNames: runs that differ in any part have different names, however dashes
// split the parts; the same run always has the same name.
func TestPipelineRunNames(t *testing.T) {
	base := PipelineRun{PipelineNamespace: "ns", Pipeline: "a-b", Environment: "c", Revision: "1", Verification: "v", Attempt: 1}
	variants := []PipelineRun{
		{PipelineNamespace: "ns", Pipeline: "a", Environment: "b-c", Revision: "1", Verification: "v", Attempt: 1},
		{PipelineNamespace: "other", Pipeline: "a-b", Environment: "c", Revision: "1", Verification: "v", Attempt: 1},
		{PipelineNamespace: "ns", Pipeline: "a-b", Environment: "c", Revision: "1+x", Verification: "v", Attempt: 1},
		{PipelineNamespace: "ns", Pipeline: "a-b", Environment: "c", Revision: "1-x", Verification: "v", Attempt: 1},
		{PipelineNamespace: "ns", Pipeline: "a-b", Environment: "c", Revision: "1", Verification: "v", Attempt: 2},
	}
	seen := map[string]PipelineRun{base.Name(): base}
	for _, r := range variants {
		if other, dup := seen[r.Name()]; dup {
			t.Errorf("%+v and %+v share the name %s", r, other, r.Name())
		}
		seen[r.Name()] = r
	}
	again := base
	if again.Name() != base.Name() || !strings.HasPrefix(base.Name(), "a-b-c-1-v-1-") {
		t.Errorf("name %q, again %q", base.Name(), again.Name())
	}
}

// TestParsePipelineRunRefusesOthers: a payload's run, a creation job and objects without the
// pipeline annotation are not pipeline runs.
func TestParsePipelineRunRefusesOthers(t *testing.T) {
	run := VerificationRun(payload("ns", "4.15.0"), "e2e", 1, "")
	for name, obj := range map[string]*metav1.ObjectMeta{
		"a payload's run":        {Labels: run.Labels("ns"), Annotations: run.Annotations()},
		"a creation job":         {Labels: CreationJob(payload("ns", "4.15.0")).Labels("ns")},
		"a malformed annotation": {Labels: map[string]string{v1alpha1.LabelJobType: v1alpha1.JobTypeVerification, v1alpha1.LabelVerify: "e2e"}, Annotations: map[string]string{v1alpha1.AnnotationPipeline: "web"}},
		"no verification":        {Labels: map[string]string{v1alpha1.LabelJobType: v1alpha1.JobTypeVerification}, Annotations: map[string]string{v1alpha1.AnnotationPipeline: "ns/web"}},
	} {
		if r, ok := ParsePipelineRun(obj); ok {
			t.Errorf("%s parsed as %+v", name, r)
		}
	}
}
