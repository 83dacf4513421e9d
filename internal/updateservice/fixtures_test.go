package updateservice

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/server/catalog"
	"github.com/release-controller/release-controller/internal/verdict/verdicttest"
)

// t0 is the tests' epoch: every time is an offset from it.
var t0 = time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)

func at(d time.Duration) time.Time { return t0.Add(d) }

// accepted is an accepted payload of ns/stream whose PayloadAccepted turned True at since.
func accepted(ns, stream, tag string, since time.Time) *v1alpha1.ReleasePayload {
	p := verdicttest.Payload(ns, stream, tag, true)
	c := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ConditionPayloadAccepted)
	c.LastTransitionTime = metav1.NewTime(since)
	return p
}

// tombstoned marks p withdrawn since since.
func tombstoned(p *v1alpha1.ReleasePayload, since time.Time) *v1alpha1.ReleasePayload {
	if p.Annotations == nil {
		p.Annotations = map[string]string{}
	}
	p.Annotations[v1alpha1.AnnotationTombstone] = "breaks ingress"
	p.Status.Conditions = append(p.Status.Conditions, metav1.Condition{
		Type: v1alpha1.ConditionPayloadTombstoned, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonTombstoned,
		Message: "breaks ingress", LastTransitionTime: metav1.NewTime(since),
	})
	return p
}

// streamOf puts payloads into a catalog under a stream with update service spec us, and
// returns the stream's snapshot.
func streamOf(t *testing.T, us *v1alpha1.UpdateService, payloads ...*v1alpha1.ReleasePayload) *catalog.Stream {
	t.Helper()
	c := catalog.New()
	c.SetStream(&v1alpha1.ReleaseStream{
		ObjectMeta: metav1.ObjectMeta{Namespace: "product", Name: "4.15"},
		Spec:       v1alpha1.ReleaseStreamSpec{PayloadRepository: "registry.example.com/product/release", UpdateService: us},
	})
	for _, p := range payloads {
		c.SetPayload(p)
	}
	s, err := c.StreamIn("product", "4.15")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// risk is an UpgradeRisk of namespace product declared at declared.
func risk(name string, declared time.Time, spec v1alpha1.UpgradeRiskSpec) *v1alpha1.UpgradeRisk {
	if spec.Name == "" {
		spec.Name = "SomeRisk"
	}
	if spec.Message == "" {
		spec.Message = "It breaks."
	}
	if spec.URL == "" {
		spec.URL = "https://issues.example.com/" + name
	}
	return &v1alpha1.UpgradeRisk{
		ObjectMeta: metav1.ObjectMeta{Namespace: "product", Name: name, CreationTimestamp: metav1.NewTime(declared)},
		Spec:       spec,
	}
}

func mustIndex(t *testing.T, risks ...*v1alpha1.UpgradeRisk) *Index {
	t.Helper()
	var compiled []Risk
	for _, u := range risks {
		r, err := Compile(u)
		if err != nil {
			t.Fatalf("compiling %s: %v", u.Name, err)
		}
		compiled = append(compiled, r)
	}
	return NewIndex(compiled)
}

var promql = []v1alpha1.MatchingRule{{Type: v1alpha1.MatchingRulePromQL, PromQL: &v1alpha1.PromQLRule{PromQL: "topk(1, cluster_infrastructure{type=\"AWS\"})"}}}
