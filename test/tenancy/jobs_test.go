package tenancy

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	prowv1 "github.com/release-controller/release-controller/api/prow/v1"
	"github.com/release-controller/release-controller/api/v1alpha1"
)

// TestAttackProwJobIntoAnotherNamespace: tenant A's stream verifies with a ProwJob bound for
// tenant B's namespace. Before issue 33 the controller created it there with its own rights.
// Now the run is never created: it fails naming prowJob.namespace and the controller's
// --prowjob-namespace (which lists none here), the payload is rejected with a
// VerificationFailed Event saying the same, and B's namespace holds no ProwJob.
func TestAttackProwJobIntoAnotherNamespace(t *testing.T) {
	ctx := context.Background()
	g := NewWithT(t)
	a, b := rc.a, rc.b
	since := time.Now()
	publish(t, a.namespace, "prow-web", "r1", "")
	asTenant(t, a, streamOf(a.namespace, "prow", []string{"prow-web"}, v1alpha1.Verification{
		Name: "e2e", ProwJob: &v1alpha1.ProwJobBackend{Namespace: b.namespace, Spec: prowv1.ProwJobSpec{
			Job: "periodic-e2e", PodSpec: &corev1.PodSpec{Containers: []corev1.Container{{Name: "test", Image: "tests", Command: []string{"true"}}}},
		}},
	}))
	p := waitPhase(t, a.namespace, "prow", v1alpha1.PhaseRejected)
	g.Expect(p.Status.Verifications).To(HaveLen(1))
	v := p.Status.Verifications[0]
	g.Expect(v.State).To(Equal(v1alpha1.JobFailure))
	g.Expect(v.Runs).NotTo(BeEmpty())
	rule := `prowJob.namespace: "` + b.namespace + `" is neither the payload's namespace "` + a.namespace +
		`" nor allowed by the controller's --prowjob-namespace (which lists none)`
	g.Expect(v.Runs[len(v.Runs)-1].Message).To(ContainSubstring(rule))
	e := waitEvent(t, a.namespace, "ReleasePayload", p.Name, v1alpha1.EventVerificationFailed)
	g.Expect(e.Note).To(ContainSubstring(rule))

	var jobs prowv1.ProwJobList
	g.Expect(env.Client.List(ctx, &jobs, client.InNamespace(b.namespace))).To(Succeed())
	g.Expect(jobs.Items).To(BeEmpty(), "a ProwJob was created in tenant B's namespace")
	checkNothingOutside(t, since, a)
}

// waitPhase waits until the newest payload of ns's stream has phase, and returns it.
func waitPhase(t *testing.T, ns, streamName string, phase v1alpha1.PayloadPhase) v1alpha1.ReleasePayload {
	t.Helper()
	var found v1alpha1.ReleasePayload
	NewWithT(t).Eventually(func(g Gomega) {
		var list v1alpha1.ReleasePayloadList
		g.Expect(env.Client.List(context.Background(), &list, client.InNamespace(ns))).To(Succeed())
		ok := false
		for _, p := range list.Items {
			if p.Spec.PayloadCoordinates.Stream == streamName && p.Status.Phase == phase {
				found, ok = p, true
			}
		}
		g.Expect(ok).To(BeTrue(), "no %s payload of %s", phase, streamName)
	}).WithTimeout(waitTimeout).WithPolling(200 * time.Millisecond).Should(Succeed())
	return found
}
