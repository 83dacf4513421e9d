package pipeline

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/release-controller/release-controller/api/v1alpha1"
)

// TestRunEnvAndAccount: a run's environment (the contract), the account its pods run as, and
// its object's contract metadata.
func TestRunEnvAndAccount(t *testing.T) {
	p := &v1alpha1.Pipeline{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "web"}}
	env := v1alpha1.Environment{Name: "staging", Targets: []v1alpha1.Target{{Namespace: "a"}, {Namespace: "b", ClusterRef: "leaf"}}}
	v := check("smoke", 0)
	v.Platforms = []string{"linux/arm64"}
	got := map[string]string{}
	for _, e := range RunEnv(p, env, "1.0.3", &v) {
		got[e.Name] = e.Value
	}
	want := map[string]string{"RELEASE_PIPELINE": "web", "RELEASE_PIPELINE_NAMESPACE": "team-a", "RELEASE_ENVIRONMENT": "staging",
		"RELEASE_REVISION": "1.0.3", "RELEASE_TARGETS": "a,leaf:b", "RELEASE_PLATFORM": "linux/arm64"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("env (-want +got):\n%s", diff)
	}
	for _, tt := range []struct{ named, dflt, want string }{{"deployer", "default", "deployer"}, {"", "ci", "ci"}, {"", "", "default"}} {
		p.Spec.ServiceAccountName = tt.named
		if a := VerificationAccount(p, tt.dflt); a.AccountName() != tt.want || a.MountsToken() {
			t.Errorf("account of %q/%q: %+v", tt.named, tt.dflt, a)
		}
	}
	o := RunObject(p, "staging", "1.0.3", &v, 2, "team-a")
	if o.Owner == nil || o.Owner.Kind != "Pipeline" || o.Annotations[v1alpha1.AnnotationRevision] != "1.0.3" || o.Labels[v1alpha1.LabelEnvironment] != "staging" {
		t.Errorf("run object %+v", o)
	}
	if RunObject(p, "staging", "1.0.3", &v, 2, "elsewhere").Owner != nil {
		t.Error("a run in another namespace is owned by the pipeline")
	}
}
