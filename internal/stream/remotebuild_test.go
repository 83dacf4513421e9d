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
	"github.com/release-controller/release-controller/internal/buildinput"
	"github.com/release-controller/release-controller/internal/jobcontract"
	"github.com/release-controller/release-controller/internal/registryclient"
	"github.com/release-controller/release-controller/internal/releaseimage"
)

// farmBuildStream makes, in a namespace of its own, a stream whose creation Jobs run on the
// leaf (the build farm, through the kubeconfig Secret "farm"), in the leaf's namespace of the
// same name, and waits for its first payload; mutate, when set, changes the stream first.
func farmBuildStream(t *testing.T, mutate func(*v1alpha1.ReleaseStream)) (ns string, p v1alpha1.ReleasePayload) {
	t.Helper()
	ns = farmNamespace(t)
	pushImage(t, repo(ns, "api")+":latest", map[string]string{releaseimage.LabelSource: "https://git.example.com/api", releaseimage.LabelRevision: "1111"})
	newStream(t, ns, func(s *v1alpha1.ReleaseStream) {
		s.Spec.CreationCluster = &v1alpha1.VerificationCluster{SecretRef: "farm"}
		if mutate != nil {
			mutate(s)
		}
	}, "api")
	return ns, waitPayloads(t, ns, 1)[0]
}

// leafBuildObjects counts the creation Jobs and input ConfigMaps of the payload on the leaf, by
// the contract labels.
func leafBuildObjects(g Gomega, ns, tag string) (jobs, configMaps int) {
	labels := client.MatchingLabels{v1alpha1.LabelStream: "nightly", v1alpha1.LabelPayload: tag, v1alpha1.LabelJobType: v1alpha1.JobTypeCreation}
	var jl batchv1.JobList
	g.Expect(leaf.Client.List(context.Background(), &jl, client.InNamespace(ns), labels)).To(Succeed())
	var cl corev1.ConfigMapList
	g.Expect(leaf.Client.List(context.Background(), &cl, client.InNamespace(ns), labels)).To(Succeed())
	return len(jl.Items), len(cl.Items)
}

// leafInput reads the build input the controller wrote beside the creation Job on the leaf.
func leafInput(t *testing.T, ns, name string) buildinput.Input {
	t.Helper()
	var cm corev1.ConfigMap
	NewWithT(t).Eventually(func(g Gomega) {
		g.Expect(leaf.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &cm)).To(Succeed())
	}).WithTimeout(waitTimeout).Should(Succeed())
	in, err := buildinput.Parse([]byte(cm.Data[buildinput.ConfigMapKey]))
	if err != nil {
		t.Fatal(err)
	}
	return in
}

// TestCreationOnAnotherCluster: a stream with a creationCluster gets its creation Job on that
// cluster, with the contract's labels, no owner and no service account token, beside a
// ConfigMap holding exactly the input `payload build --payload` computes; nothing of it is
// created locally. The build run from that input against the registry, and the Job finished
// there, the payload is created with that image; retention then deletes the Job and its
// ConfigMap there.
func TestCreationOnAnotherCluster(t *testing.T) {
	ctx := context.Background()
	ns, p := farmBuildStream(t, func(s *v1alpha1.ReleaseStream) {
		s.Spec.Retention.CompletedJobTTL = &metav1.Duration{}
	})
	g := NewWithT(t)
	g.Expect(p.Spec.PayloadCreationConfig.Cluster).To(Equal(&v1alpha1.VerificationCluster{SecretRef: "farm"}))
	name := jobcontract.CreationJobName(p.Name)
	job := waitLeafJob(t, ns, name)
	labels := map[string]string{v1alpha1.LabelStream: "nightly", v1alpha1.LabelPayload: p.Name, v1alpha1.LabelJobType: v1alpha1.JobTypeCreation}
	g.Expect(job.Labels).To(Equal(labels))
	g.Expect(job.OwnerReferences).To(BeEmpty())
	pod := job.Spec.Template.Spec
	g.Expect(pod.Containers[0].Command).To(Equal([]string{"release-controller", "payload", "build", "--input", "/input/build.json"}))
	g.Expect(pod.AutomountServiceAccountToken).To(HaveValue(BeFalse()))
	g.Expect(pod.Volumes).To(ContainElement(HaveField("VolumeSource.ConfigMap.Name", name)))
	g.Expect(apierrors.IsNotFound(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &batchv1.Job{}))).To(BeTrue())

	var cm corev1.ConfigMap
	g.Expect(leaf.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &cm)).To(Succeed())
	g.Expect(cm.Labels).To(Equal(labels))
	in := leafInput(t, ns, name)
	var fresh v1alpha1.ReleasePayload
	var all v1alpha1.ReleasePayloadList
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(&p), &fresh)).To(Succeed())
	g.Expect(env.Client.List(ctx, &all, client.InNamespace(ns))).To(Succeed())
	want, err := buildinput.Of(&fresh, all.Items)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(in).To(Equal(want))

	// What the Job's pod would do: build from the input and push.
	opts := in.BuildOptions()
	opts.Remote = registryclient.New().Options(ctx)
	res, err := releaseimage.Build(ctx, opts)
	g.Expect(err).NotTo(HaveOccurred())
	finishOn(t, leaf.Client, job, true)
	waitPayload(t, ns, p.Name, func(g Gomega, p *v1alpha1.ReleasePayload) {
		g.Expect(meta.IsStatusConditionTrue(p.Status.Conditions, v1alpha1.ConditionPayloadCreated)).To(BeTrue())
		g.Expect(p.Status.ReleaseCreationJobResult).To(And(HaveField("Name", name), HaveField("Namespace", ns), HaveField("Status", v1alpha1.CreationJobSuccess)))
		g.Expect(p.Status.PayloadImage).To(Equal(res.Image))
		c := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ConditionClusterUnreachable)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(c.Message).To(ContainSubstring(ns + "/farm"))
	})
	info, err := releaseimage.Info(ctx, res.Image, registryclient.New().Options(ctx)...)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(info.Metadata.Version).To(Equal(p.Name))

	g.Eventually(func(g Gomega) {
		jobs, configMaps := leafBuildObjects(g, ns, p.Name)
		g.Expect(jobs).To(BeZero())
		g.Expect(configMaps).To(BeZero())
	}).WithTimeout(waitTimeout).Should(Succeed())
}

// TestCreationClusterUnreachable: the build farm's API server stops while the creation Job
// runs there. The creation result is Unknown naming the cluster and the Job last seen, the
// payload says ClusterUnreachable naming the creation job, and nothing fails; once the cluster
// is back the same Job is read again (none is created twice) and its success creates the
// payload.
func TestCreationClusterUnreachable(t *testing.T) {
	ns, p := farmBuildStream(t, nil)
	g := NewWithT(t)
	name := jobcontract.CreationJobName(p.Name)
	job := waitLeafJob(t, ns, name)
	waitPayload(t, ns, p.Name, func(g Gomega, p *v1alpha1.ReleasePayload) {
		g.Expect(p.Status.ReleaseCreationJobResult).To(And(HaveField("Name", name), HaveField("Status", v1alpha1.CreationJobUnknown)))
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
		g.Expect(p.Status.Phase).To(Equal(v1alpha1.PhasePending))
		g.Expect(p.Status.ReleaseCreationJobResult).To(And(HaveField("Name", name), HaveField("Namespace", ns),
			HaveField("Status", v1alpha1.CreationJobUnknown), HaveField("Message", ContainSubstring("cluster "+cluster+" unreachable"))))
		c := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ConditionClusterUnreachable)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
		g.Expect(c.Reason).To(Equal(v1alpha1.ReasonClusterUnreachable))
		g.Expect(c.Message).To(And(ContainSubstring(cluster), ContainSubstring("the creation job")))
		g.Expect(meta.IsStatusConditionTrue(p.Status.Conditions, v1alpha1.ConditionPayloadFailed)).To(BeFalse())
		g.Expect(eventsOf(g, ns, "ReleasePayload", p.Name)).To(ContainElement(v1alpha1.EventClusterUnreachable))
	})

	g.Expect(leaf.StartAPIServer()).To(Succeed())
	restarted = true
	waitPayload(t, ns, p.Name, func(g Gomega, p *v1alpha1.ReleasePayload) {
		g.Expect(meta.IsStatusConditionFalse(p.Status.Conditions, v1alpha1.ConditionClusterUnreachable)).To(BeTrue())
		g.Expect(p.Status.ReleaseCreationJobResult.Message).NotTo(ContainSubstring("unreachable"))
	})
	image := pushImage(t, p.Spec.PayloadCreationConfig.Repository+":"+p.Name, nil)
	finishOn(t, leaf.Client, job, true)
	waitPayload(t, ns, p.Name, func(g Gomega, p *v1alpha1.ReleasePayload) {
		g.Expect(meta.IsStatusConditionTrue(p.Status.Conditions, v1alpha1.ConditionPayloadCreated)).To(BeTrue())
		g.Expect(p.Status.PayloadImage).To(Equal(image))
	})
	jobs, configMaps := leafBuildObjects(g, ns, p.Name)
	g.Expect(jobs).To(Equal(1))
	g.Expect(configMaps).To(Equal(1))
}

// TestCreationOnAnotherClusterAborted: a payload superseded before its image was built has its
// creation Job and ConfigMap deleted on the creation cluster; the newer payload's are created
// there.
func TestCreationOnAnotherClusterAborted(t *testing.T) {
	ns, p := farmBuildStream(t, func(s *v1alpha1.ReleaseStream) { s.Spec.MaxUnreadyReleases = 3 })
	waitLeafJob(t, ns, jobcontract.CreationJobName(p.Name))
	leafInput(t, ns, jobcontract.CreationJobName(p.Name))
	pushImage(t, repo(ns, "api")+":latest", map[string]string{releaseimage.LabelRevision: "2222"})
	newer := waitPayloads(t, ns, 2)[0]
	waitLeafJob(t, ns, jobcontract.CreationJobName(newer.Name))
	waitPayload(t, ns, p.Name, func(g Gomega, p *v1alpha1.ReleasePayload) {
		g.Expect(p.Status.Phase).To(Equal(v1alpha1.PhaseFailed))
		g.Expect(meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ConditionPayloadFailed)).To(HaveField("Reason", v1alpha1.ReasonAborted))
	})
	NewWithT(t).Eventually(func(g Gomega) {
		jobs, configMaps := leafBuildObjects(g, ns, p.Name)
		g.Expect(jobs).To(BeZero())
		g.Expect(configMaps).To(BeZero())
		jobs, configMaps = leafBuildObjects(g, ns, newer.Name)
		g.Expect(jobs).To(Equal(1))
		g.Expect(configMaps).To(Equal(1))
	}).WithTimeout(waitTimeout).Should(Succeed())
}
