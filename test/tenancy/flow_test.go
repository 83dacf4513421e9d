//go:build !unit

package tenancy

import (
	"cmp"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/stream"
)

const (
	// appImage is the image of the tenants' app; a promotion sets its tag to the payload's.
	appImage = "registry.example.com/web"
	// promoterAccount is the account of config/samples/tenant/promoter.yaml, which the
	// tenants' pipelines name.
	promoterAccount = "promoter"
)

// TestTenantStreamToPipeline is tenant A's own flow, with nothing but A's token and the Roles
// of config/samples/tenant: a stream builds and verifies a payload in A's namespace (the
// creation Job as the build account, the verification as the namespace's default account
// without a token), A's pipeline promotes it into A's dev namespace, then into A's prod
// namespace once A approves with its token. Nothing outside A's namespaces changes.
func TestTenantStreamToPipeline(t *testing.T) {
	g := NewWithT(t)
	a := rc.a
	since := time.Now()

	publish(t, a.namespace, "api", "r1", "")
	publish(t, a.namespace, "web", "r1", "")
	asTenant(t, a, newStream(a.namespace, "nightly", verifyJob("inspect", `release-controller payload info "$RELEASE_IMAGE_LATEST" && echo "inspected $RELEASE_TAG"`)))
	p := waitAccepted(t, a.namespace, "nightly")
	for _, v := range p.Status.Verifications {
		g.Expect(v.State).To(Equal(v1alpha1.JobSuccess), "verification %s: %+v", v.Name, v)
	}

	for _, ns := range []string{a.namespace, a.prod} {
		asTenant(t, a, deployment(ns, "web", "0"))
		rollOut(t, ns, "web")
	}
	asTenant(t, a, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: a.namespace, Name: "prod-approvals"},
		Data: map[string][]byte{v1alpha1.SecretKeyHMAC: []byte("tenant a's prod approval key")}})
	asTenant(t, a, &v1alpha1.Pipeline{
		ObjectMeta: metav1.ObjectMeta{Namespace: a.namespace, Name: "web"},
		Spec: v1alpha1.PipelineSpec{
			AppRef:             v1alpha1.AppReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", Container: "web"},
			Source:             &v1alpha1.PipelineSource{ReleaseStream: "nightly"},
			ServiceAccountName: promoterAccount,
			Environments: []v1alpha1.Environment{
				{Name: "dev", Targets: []v1alpha1.Target{{Namespace: a.namespace}}},
				{Name: "prod", Targets: []v1alpha1.Target{{Namespace: a.prod}},
					Approval: &v1alpha1.Approval{SecretRef: &v1alpha1.SecretKeyReference{Name: "prod-approvals"}}},
			},
		},
	})
	waitImage(t, a.namespace, "web", p.Name)
	rollOut(t, a.namespace, "web")
	waitWaiting(t, a.namespace, "web", "prod", p.Name)
	out, err := runCLI("pipeline", "approve", a.namespace+"/web", "prod", p.Name, "--server", rc.server, "--token-file", a.tokenFile)
	g.Expect(err).NotTo(HaveOccurred(), "pipeline approve: %s", out)
	waitImage(t, a.prod, "web", p.Name)
	waitPromotion(t, a.namespace, "web", "prod", p.Name, a.username())

	checkNothingOutside(t, since, a)
}

// asTenant creates obj with tenant t's own credentials.
func asTenant(t *testing.T, te *tenant, obj client.Object) {
	t.Helper()
	if err := te.client.Create(context.Background(), obj); err != nil {
		t.Fatalf("tenant %s creating %T %s/%s: %v", te.name, obj, obj.GetNamespace(), obj.GetName(), err)
	}
}

func repo(ns, image string) string { return fmt.Sprintf("%s/%s/%s", reg.Addr(), ns, image) }

// publish pushes a new build of a component, labelled with its source (default
// https://git.example.com/<component>) and revision as a CI system would.
func publish(t *testing.T, ns, component, revision, source string) {
	t.Helper()
	img, err := random.Image(512, 1)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture = "linux", "amd64"
	cfg.Config.Labels = map[string]string{
		"org.opencontainers.image.source":   cmp.Or(source, "https://git.example.com/"+component),
		"org.opencontainers.image.revision": revision,
	}
	if img, err = mutate.ConfigFile(img, cfg); err != nil {
		t.Fatal(err)
	}
	ref, err := name.ParseReference(repo(ns, component) + ":latest")
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(ref, img); err != nil {
		t.Fatal(err)
	}
}

// verifyJob is a Job verification running a shell script (release-controller on its PATH),
// its template as a tenant writes one: no service account, nothing privileged.
func verifyJob(name, body string) v1alpha1.Verification {
	return v1alpha1.Verification{Name: name, Job: &v1alpha1.JobBackend{Template: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{
		BackoffLimit: ptr.To[int32](0),
		Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers:    []corev1.Container{{Name: "test", Image: "tests", Command: []string{"sh", "-c", body}}},
		}},
	}}}}
}

// newStream is a stream of ns's api and web components with the given verifications.
func newStream(ns, name string, verifications ...v1alpha1.Verification) *v1alpha1.ReleaseStream {
	return streamOf(ns, name, []string{"api", "web"}, verifications...)
}

// streamOf is a stream of ns's components (their repositories' latest tags) with the given
// verifications.
func streamOf(ns, name string, components []string, verifications ...v1alpha1.Verification) *v1alpha1.ReleaseStream {
	var sources []v1alpha1.ComponentSource
	for _, c := range components {
		sources = append(sources, v1alpha1.ComponentSource{Name: c, Image: repo(ns, c) + ":latest"})
	}
	return &v1alpha1.ReleaseStream{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.ReleaseStreamSpec{
			TagPrefix:          "1.0.0-0." + name,
			PayloadRepository:  repo(ns, name+"-release"),
			Components:         sources,
			MaxUnreadyReleases: 1,
			Verification:       verifications,
		},
	}
}

// waitAccepted waits until the newest payload of ns's stream is accepted and is none of
// earlier (tags), and returns it.
func waitAccepted(t *testing.T, ns, streamName string, earlier ...string) v1alpha1.ReleasePayload {
	t.Helper()
	var newest v1alpha1.ReleasePayload
	NewWithT(t).Eventually(func(g Gomega) {
		var list v1alpha1.ReleasePayloadList
		g.Expect(env.Client.List(context.Background(), &list, client.InNamespace(ns))).To(Succeed())
		var mine []v1alpha1.ReleasePayload
		for _, p := range list.Items {
			if p.Spec.PayloadCoordinates.Stream == streamName {
				mine = append(mine, p)
			}
		}
		g.Expect(mine).NotTo(BeEmpty())
		stream.NewestFirst(mine)
		newest = mine[0]
		g.Expect(earlier).NotTo(ContainElement(newest.Name), "no new payload of %s yet", streamName)
		g.Expect(newest.Status.Phase).To(Equal(v1alpha1.PhaseAccepted), "conditions: %+v", newest.Status.Conditions)
	}).WithTimeout(waitTimeout).WithPolling(200 * time.Millisecond).Should(Succeed())
	return newest
}

// deployment is an app of a tenant: a Deployment whose container web runs appImage:tag.
func deployment(namespace, name, tag string) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: appImage + ":" + tag}}}},
		},
	}
}

// rollOut writes the status the Deployment controller would (none runs here).
func rollOut(t *testing.T, namespace, name string) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var d appsv1.Deployment
		if err := env.Client.Get(context.Background(), types.NamespacedName{Namespace: namespace, Name: name}, &d); err != nil {
			return err
		}
		d.Status = appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: 1, UpdatedReplicas: 1, ReadyReplicas: 1, AvailableReplicas: 1}
		return env.Client.Status().Update(context.Background(), &d)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// waitImage waits until the Deployment's web container runs appImage:tag.
func waitImage(t *testing.T, namespace, name, tag string) {
	t.Helper()
	NewWithT(t).Eventually(func(g Gomega) {
		var d appsv1.Deployment
		g.Expect(env.Client.Get(context.Background(), types.NamespacedName{Namespace: namespace, Name: name}, &d)).To(Succeed())
		g.Expect(d.Spec.Template.Spec.Containers[0].Image).To(Equal(appImage + ":" + tag))
	}).WithTimeout(waitTimeout).Should(Succeed())
}

func waitWaiting(t *testing.T, namespace, pipeline, envName, revision string) {
	t.Helper()
	NewWithT(t).Eventually(func(g Gomega) {
		var p v1alpha1.Pipeline
		g.Expect(env.Client.Get(context.Background(), types.NamespacedName{Namespace: namespace, Name: pipeline}, &p)).To(Succeed())
		found := false
		for _, e := range p.Status.Environments {
			if e.Name == envName && e.WaitingApproval != nil && e.WaitingApproval.Revision == revision {
				found = true
			}
		}
		g.Expect(found).To(BeTrue(), "%s does not wait for %s: %+v", envName, revision, p.Status)
	}).WithTimeout(waitTimeout).Should(Succeed())
}

// mustContainAll fails unless s holds every part.
func mustContainAll(t *testing.T, what, s string, parts ...string) {
	t.Helper()
	for _, p := range parts {
		if !strings.Contains(s, p) {
			t.Errorf("%s does not say %q: %s", what, p, s)
		}
	}
}

// waitPromotion waits until the pipeline's environment records its promotion to revision,
// approved by approver.
func waitPromotion(t *testing.T, namespace, pipeline, envName, revision, approver string) {
	t.Helper()
	NewWithT(t).Eventually(func(g Gomega) {
		var p v1alpha1.Pipeline
		g.Expect(env.Client.Get(context.Background(), types.NamespacedName{Namespace: namespace, Name: pipeline}, &p)).To(Succeed())
		var lp *v1alpha1.PromotionRecord
		for _, e := range p.Status.Environments {
			if e.Name == envName {
				lp = e.LastPromotion
			}
		}
		g.Expect(lp).NotTo(BeNil(), "%s has no promotion: %+v", envName, p.Status)
		g.Expect(lp.Revision).To(Equal(revision))
		g.Expect(lp.Approver).To(Equal(approver))
	}).WithTimeout(waitTimeout).WithPolling(200 * time.Millisecond).Should(Succeed())
}
