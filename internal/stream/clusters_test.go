//go:build !unit

package stream_test

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/jobcontract"
)

// farmStream makes, in a namespace of its own, a stream whose blocking verification e2e runs
// on the leaf (the build farm, through the kubeconfig Secret "farm"), and builds its first
// payload. The Jobs go to the leaf's namespace of the same name. mutate, when set, changes the
// stream before it is created.
func farmStream(t *testing.T, maxRetries int32, mutate func(*v1alpha1.ReleaseStream)) (ns string, p v1alpha1.ReleasePayload) {
	t.Helper()
	ns = farmNamespace(t)
	pushImage(t, repo(ns, "api")+":latest", nil)
	newStream(t, ns, func(s *v1alpha1.ReleaseStream) {
		e2e := jobVerification("e2e")
		e2e.MaxRetries = maxRetries
		e2e.Cluster = &v1alpha1.VerificationCluster{SecretRef: "farm"}
		s.Spec.Verification = []v1alpha1.Verification{e2e}
		if mutate != nil {
			mutate(s)
		}
	}, "api")
	p = waitPayloads(t, ns, 1)[0]
	build(t, &p)
	return ns, p
}

// farmNamespace makes a namespace of its own, the namespace of the same name on the leaf, and
// the Secret "farm" there holding the leaf's kubeconfig.
func farmNamespace(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	ns := env.Namespace(t)
	g := NewWithT(t)
	g.Expect(leaf.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	g.Expect(env.Client.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "farm"},
		Data:       map[string][]byte{v1alpha1.SecretKeyKubeconfig: leaf.Kubeconfig},
	})).To(Succeed())
	return ns
}

// waitLeafJob waits for the controller to create the Job on the leaf.
func waitLeafJob(t *testing.T, ns, name string) *batchv1.Job {
	t.Helper()
	job := &batchv1.Job{}
	NewWithT(t).Eventually(func(g Gomega) {
		g.Expect(leaf.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, job)).To(Succeed())
	}).WithTimeout(waitTimeout).Should(Succeed())
	return job
}

// leafRuns counts the verification Jobs of the payload on the leaf, by the contract labels.
func leafRuns(g Gomega, ns, tag string) int {
	var jobs batchv1.JobList
	g.Expect(leaf.Client.List(context.Background(), &jobs, client.InNamespace(ns), client.MatchingLabels{
		v1alpha1.LabelStream: "nightly", v1alpha1.LabelPayload: tag, v1alpha1.LabelJobType: v1alpha1.JobTypeVerification, v1alpha1.LabelVerify: "e2e",
	})).To(Succeed())
	return len(jobs.Items)
}

// TestVerificationOnAnotherClusterAccepts: a blocking verification that names a cluster runs
// its Job there, with the contract's labels and environment and no owner (the payload is not
// on that cluster); its success there accepts the payload, and nothing of it runs locally.
func TestVerificationOnAnotherClusterAccepts(t *testing.T) {
	ns, p := farmStream(t, 0, nil)
	g := NewWithT(t)
	name := jobcontract.RunName(p.Name, "e2e", 1)
	job := waitLeafJob(t, ns, name)
	g.Expect(job.Labels).To(Equal(map[string]string{
		v1alpha1.LabelStream: "nightly", v1alpha1.LabelPayload: p.Name, v1alpha1.LabelJobType: v1alpha1.JobTypeVerification, v1alpha1.LabelVerify: "e2e",
	}))
	g.Expect(job.OwnerReferences).To(BeEmpty())
	g.Expect(envOf(job)).To(HaveKeyWithValue(v1alpha1.EnvReleaseTag, p.Name))
	g.Expect(apierrors.IsNotFound(env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &batchv1.Job{}))).To(BeTrue())

	finishOn(t, leaf.Client, job, true)
	waitPayload(t, ns, p.Name, func(g Gomega, p *v1alpha1.ReleasePayload) {
		g.Expect(p.Status.Phase).To(Equal(v1alpha1.PhaseAccepted))
		g.Expect(p.Status.Verifications).To(ConsistOf(And(HaveField("Name", "e2e"), HaveField("State", v1alpha1.JobSuccess),
			HaveField("Runs", ConsistOf(And(HaveField("Name", name), HaveField("Namespace", ns), HaveField("State", v1alpha1.JobSuccess)))))))
		c := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ConditionClusterUnreachable)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(c.Message).To(ContainSubstring(ns + "/farm"))
	})
	g.Expect(leafRuns(g, ns, p.Name)).To(Equal(1))
}

// TestVerificationOnAnotherClusterRejects: a failed run there rejects the payload, and
// retention deletes the finished Job there once the payload recorded it.
func TestVerificationOnAnotherClusterRejects(t *testing.T) {
	ns, p := farmStream(t, 0, func(s *v1alpha1.ReleaseStream) {
		s.Spec.Retention.CompletedJobTTL = &metav1.Duration{}
	})
	finishOn(t, leaf.Client, waitLeafJob(t, ns, jobcontract.RunName(p.Name, "e2e", 1)), false)
	waitPayload(t, ns, p.Name, func(g Gomega, p *v1alpha1.ReleasePayload) {
		g.Expect(p.Status.Phase).To(Equal(v1alpha1.PhaseRejected))
		g.Expect(p.Status.Verifications).To(ConsistOf(HaveField("State", v1alpha1.JobFailure)))
	})
	NewWithT(t).Eventually(func(g Gomega) {
		g.Expect(leafRuns(g, ns, p.Name)).To(BeZero())
	}).WithTimeout(waitTimeout).Should(Succeed())
	waitPayload(t, ns, p.Name, func(g Gomega, p *v1alpha1.ReleasePayload) {
		g.Expect(p.Status.Phase).To(Equal(v1alpha1.PhaseRejected))
		g.Expect(p.Status.Verifications).To(ConsistOf(HaveField("Runs", ConsistOf(HaveField("State", v1alpha1.JobFailure)))))
	})
}

// TestVerificationClusterUnreachable: the build farm's API server stops while its run is
// going. The verification says Unknown naming the cluster, the payload's ClusterUnreachable
// condition and an Event say so, and the run is kept (not lost, not run again). Once the
// cluster is back the same Job is read again, nothing is created twice, and its success
// accepts the payload.
func TestVerificationClusterUnreachable(t *testing.T) {
	ns, p := farmStream(t, 2, nil)
	g := NewWithT(t)
	name := jobcontract.RunName(p.Name, "e2e", 1)
	job := waitLeafJob(t, ns, name)
	waitPayload(t, ns, p.Name, func(g Gomega, p *v1alpha1.ReleasePayload) {
		g.Expect(p.Status.Verifications).To(ConsistOf(HaveField("Runs", ConsistOf(HaveField("Name", name)))))
	})

	g.Expect(leaf.StopAPIServer()).To(Succeed())
	restarted := false
	defer func() {
		if !restarted {
			_ = leaf.StartAPIServer()
		}
	}()
	cluster := ns + "/farm"
	waitPayload(t, ns, p.Name, func(g Gomega, p *v1alpha1.ReleasePayload) {
		g.Expect(p.Status.Phase).To(Equal(v1alpha1.PhaseReady))
		g.Expect(p.Status.Verifications).To(ConsistOf(And(
			HaveField("State", v1alpha1.JobUnknown),
			HaveField("Message", ContainSubstring("cluster "+cluster+" unreachable")),
			HaveField("Runs", ConsistOf(And(HaveField("Name", name), HaveField("State", v1alpha1.JobPending),
				HaveField("Message", ContainSubstring("cluster "+cluster+" unreachable"))))))))
		c := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ConditionClusterUnreachable)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
		g.Expect(c.Reason).To(Equal(v1alpha1.ReasonClusterUnreachable))
		g.Expect(c.Message).To(ContainSubstring(cluster))
		g.Expect(eventsOf(g, ns, "ReleasePayload", p.Name)).To(ContainElement(v1alpha1.EventClusterUnreachable))
	})

	g.Expect(leaf.StartAPIServer()).To(Succeed())
	restarted = true
	waitPayload(t, ns, p.Name, func(g Gomega, p *v1alpha1.ReleasePayload) {
		g.Expect(meta.IsStatusConditionFalse(p.Status.Conditions, v1alpha1.ConditionClusterUnreachable)).To(BeTrue())
		g.Expect(p.Status.Verifications).To(ConsistOf(HaveField("State", v1alpha1.JobPending)))
	})
	finishOn(t, leaf.Client, job, true)
	waitPayload(t, ns, p.Name, func(g Gomega, p *v1alpha1.ReleasePayload) {
		g.Expect(p.Status.Phase).To(Equal(v1alpha1.PhaseAccepted))
		g.Expect(p.Status.Verifications).To(ConsistOf(HaveField("Runs", ConsistOf(And(HaveField("Name", name), HaveField("State", v1alpha1.JobSuccess))))))
	})
	g.Expect(leafRuns(g, ns, p.Name)).To(Equal(1))
}
