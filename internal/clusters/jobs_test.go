//go:build !unit

package clusters_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/clusters"
	"github.com/release-controller/release-controller/internal/jobcontract"
	"github.com/release-controller/release-controller/internal/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	testenv.Main(m, &env, nil)
}

const waitTimeout = 60 * time.Second

// startJobs runs a jobs manager until the test ends, in a namespace of the test's own.
func startJobs(t *testing.T) (context.Context, string, *clusters.Jobs) {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	jobs := clusters.NewJobs(env.Client, env.Client, jobcontract.Selector())
	go func() { _ = jobs.Start(ctx) }()
	return ctx, env.Namespace(t), jobs
}

// TestJobsUsesWhatIsNamed: a cluster is built from its kubeconfig Secret when a user names it
// (a missing Secret, or one without the key value, is an invalid cluster named in the view),
// its job cache lists the controller's Jobs in the namespaces used there, and the cluster stops
// once nobody uses it. The "remote" cluster is the test API server itself, through a Secret.
func TestJobsUsesWhatIsNamed(t *testing.T) {
	ctx, ns, jobs := startJobs(t)
	g := NewWithT(t)

	key := clusters.Key{Namespace: ns, Secret: "farm"}
	payload := types.NamespacedName{Namespace: ns, Name: "4.15.0-0.nightly-2026-11-22-093000"}
	want := map[clusters.Key][]string{key: {ns}}
	use := func(g Gomega) clusters.View {
		views, err := jobs.Use(ctx, "payload", payload, want)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(views).To(HaveKey(key))
		return views[key]
	}

	view := use(g)
	g.Expect(view.Invalid).To(BeTrue())
	g.Expect(view.Problem).To(Equal("kubeconfig Secret " + ns + "/farm not found"))

	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "farm"}, Data: map[string][]byte{"kubeconfig": []byte("x")}}
	g.Expect(env.Client.Create(ctx, secret)).To(Succeed())
	view = use(g)
	g.Expect(view.Invalid).To(BeTrue())
	g.Expect(view.Problem).To(ContainSubstring(`has no key "value"`))

	path := filepath.Join(t.TempDir(), "kubeconfig")
	g.Expect(env.WriteKubeconfig(path)).To(Succeed())
	kubeconfig, err := os.ReadFile(path)
	g.Expect(err).NotTo(HaveOccurred())
	secret.Data = map[string][]byte{v1alpha1.SecretKeyKubeconfig: kubeconfig}
	g.Expect(env.Client.Update(ctx, secret)).To(Succeed())

	p := &v1alpha1.ReleasePayload{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: payload.Name},
		Spec: v1alpha1.ReleasePayloadSpec{PayloadCoordinates: v1alpha1.PayloadCoordinates{Stream: "nightly", Tag: payload.Name}}}
	run := jobcontract.VerificationRun(p, "e2e", 1, "")
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: run.Name(), Labels: run.Labels(ns), Annotations: run.Annotations()},
		Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "test", Image: "tests"}},
		}}},
	}
	g.Expect(env.Client.Create(ctx, job)).To(Succeed())
	g.Eventually(func(g Gomega) {
		view := use(g)
		g.Expect(view.Problem).To(BeEmpty())
		g.Expect(view.Synced()).To(BeTrue())
		records, err := view.Jobs.ByPayload(ctx, ns, payload.Name)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(records).To(ConsistOf(And(HaveField("Name", run.Name()), HaveField("Verification", "e2e"), HaveField("Attempt", int32(1)))))
	}).WithTimeout(waitTimeout).Should(Succeed())
	g.Expect(jobs.Running()).To(ConsistOf(key))

	// The payload is gone: nobody uses the cluster, which stops.
	views, err := jobs.Use(ctx, "payload", payload, nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(views).To(BeEmpty())
	g.Expect(jobs.Running()).To(BeEmpty())
	g.Expect(env.Client.Delete(ctx, job, client.PropagationPolicy(metav1.DeletePropagationBackground))).To(Succeed())
}

// TestJobsClusterDownFromTheStart: a cluster that does not answer when it is first named (a
// controller started while its build farm is down) is a problem named in the view, not an
// invalid Secret, and its jobs are not taken as listed.
func TestJobsClusterDownFromTheStart(t *testing.T) {
	ctx, ns, jobs := startJobs(t)
	g := NewWithT(t)

	// Nothing listens on port 1 of the loopback address.
	down := []byte("apiVersion: v1\nkind: Config\nclusters: [{name: down, cluster: {server: 'https://127.0.0.1:1'}}]\n" +
		"users: [{name: u, user: {token: t}}]\ncontexts: [{name: down, context: {cluster: down, user: u}}]\ncurrent-context: down\n")
	g.Expect(env.Client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "down"},
		Data: map[string][]byte{v1alpha1.SecretKeyKubeconfig: down}})).To(Succeed())
	key := clusters.Key{Namespace: ns, Secret: "down"}
	g.Eventually(func(g Gomega) {
		views, err := jobs.Use(ctx, "payload", types.NamespacedName{Namespace: ns, Name: "p"}, map[clusters.Key][]string{key: {ns}})
		g.Expect(err).NotTo(HaveOccurred())
		view := views[key]
		g.Expect(view.Synced()).To(BeFalse())
		g.Expect(view.Invalid).To(BeFalse())
		g.Expect(view.Problem).To(ContainSubstring("cluster " + key.String() + " unreachable"))
	}).WithTimeout(waitTimeout).Should(Succeed())
}
