//go:build !unit

package pipeline_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/pipeline"
	"github.com/release-controller/release-controller/internal/verdict/verdicttest"
)

// pipelineVersions records every version of the pipelines of namespace the API server
// sends a watch, from now until the test ends.
type pipelineVersions struct {
	mu       sync.Mutex
	versions []v1alpha1.Pipeline
}

func watchPipelines(t *testing.T, namespace string) *pipelineVersions {
	t.Helper()
	wc, err := client.NewWithWatch(mgmt.Config, client.Options{Scheme: mgmt.Client.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	w, err := wc.Watch(context.Background(), &v1alpha1.PipelineList{}, client.InNamespace(namespace))
	if err != nil {
		t.Fatal(err)
	}
	v := &pipelineVersions{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			if p, ok := ev.Object.(*v1alpha1.Pipeline); ok {
				v.mu.Lock()
				v.versions = append(v.versions, *p.DeepCopy())
				v.mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() {
		w.Stop()
		<-done
	})
	return v
}

// seen returns the versions received so far.
func (v *pipelineVersions) seen() []v1alpha1.Pipeline {
	v.mu.Lock()
	defer v.mu.Unlock()
	return slices.Clone(v.versions)
}

// TestATargetTheAccountMayNotGetIsHidden: the controller watches the local cluster's apps with
// its own rights, so before the change a pipeline of namespace A whose first environment's
// target is a Deployment of namespace B showed that Deployment's revision and readiness in its
// status (and on the pages, REST and MCP), though A's account may not read it. Now a
// SubjectAccessReview asks whether the account may get it: no version of the status shows
// anything of B's app, the status says why (Ready=False TargetForbidden, the target's message,
// a TargetForbidden Event, naming the account, the resource, the app and the namespace), and
// nothing is promoted into B or from it. Once the account is granted get and patch in B (a
// RoleBinding, which nothing watches: the answer is asked again when its cache entry expires),
// B is observed and promoted into, and its revision promoted on into A.
func TestATargetTheAccountMayNotGetIsHidden(t *testing.T) {
	ctx := context.Background()
	g := NewWithT(t)
	tenant, other := ns(t, mgmt.Client), ns(t, mgmt.Client)
	startTenantController(t, ns(t, mgmt.Client), "default", false)
	user := "system:serviceaccount:" + tenant + ":default"

	// B's app, at a revision nothing but B's Deployment has; A's app, which A's account edits.
	const secret = "only-in-b"
	deploy(t, mgmt.Client, other, "web", secret)
	deploy(t, mgmt.Client, tenant, "web", "1")
	grant(t, tenant, tenant, "default", editDeployments)

	// A source with an accepted payload: due into the first environment.
	stream := &v1alpha1.ReleaseStream{
		ObjectMeta: metav1.ObjectMeta{Namespace: tenant, Name: "nightly"},
		Spec: v1alpha1.ReleaseStreamSpec{
			TagPrefix: "1.0.0-0.nightly", PayloadRepository: "registry.example.com/product/release",
			Components: []v1alpha1.ComponentSource{{Name: "api", Image: "registry.example.com/product/api:latest"}},
		},
	}
	g.Expect(mgmt.Client.Create(ctx, stream)).To(Succeed())
	tag := "1.0.0-0.nightly-2026-03-25-120000"
	createPayload(t, tenant, "nightly", tag, func(p *v1alpha1.ReleasePayload) { verdicttest.Earn(p, v1alpha1.PhaseAccepted) })
	stream.Status.LatestAccepted = tag
	g.Expect(mgmt.Client.Status().Update(ctx, stream)).To(Succeed())

	versions := watchPipelines(t, tenant)
	p := &v1alpha1.Pipeline{ObjectMeta: metav1.ObjectMeta{Namespace: tenant, Name: "web"}, Spec: v1alpha1.PipelineSpec{
		AppRef: v1alpha1.AppReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", Container: "web"},
		Source: &v1alpha1.PipelineSource{ReleaseStream: "nightly"},
		Environments: []v1alpha1.Environment{
			{Name: "dev", Targets: []v1alpha1.Target{{Namespace: other}}},
			{Name: "prod", Targets: []v1alpha1.Target{{Namespace: tenant}}},
		},
	}}
	g.Expect(mgmt.Client.Create(ctx, p)).To(Succeed())
	t.Cleanup(func() { _ = mgmt.Client.Delete(context.Background(), p) })
	key := client.ObjectKeyFromObject(p)

	why := "account " + user + " may not get deployments.apps web in namespace " + other
	hidden := func(p *v1alpha1.Pipeline) bool {
		c := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ConditionReady)
		return c != nil && c.Status == metav1.ConditionFalse && c.Reason == v1alpha1.ReasonTargetForbidden
	}
	var said v1alpha1.Pipeline
	g.Eventually(func() bool {
		for _, v := range versions.seen() {
			if hidden(&v) {
				said = v
				return true
			}
		}
		return false
	}).WithTimeout(waitTimeout).Should(BeTrue(), "no version of the pipeline says dev is hidden")
	g.Expect(meta.FindStatusCondition(said.Status.Conditions, v1alpha1.ConditionReady).Message).To(ContainSubstring(why))
	dev := envStatus(&said, "dev")
	g.Expect(dev.Targets).To(HaveLen(1))
	g.Expect(dev.Targets[0].Message).To(ContainSubstring(why))
	g.Expect(dev.Targets[0].Revision).To(BeEmpty())
	g.Expect(dev.Targets[0].Ready).To(BeFalse())
	g.Expect(dev.Revision).To(BeEmpty())
	g.Expect(dev.LastPromotion).To(BeNil())
	// prod, which A's account may read, is shown (once its cache has synced).
	waitPipeline(t, key, "prod shown, dev hidden", func(p *v1alpha1.Pipeline) bool {
		return hidden(p) && envStatus(p, "prod").Revision == "1"
	})
	waitEvent(t, key, v1alpha1.EventTargetForbidden, why)

	// Every version written until now (all received before the grant exists): nothing of
	// B's app, and no promotion.
	for _, v := range versions.seen() {
		status, err := json.Marshal(v.Status)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(string(status)).NotTo(ContainSubstring(secret), "a version of the status shows B's revision: %s", status)
		g.Expect(envStatus(&v, "dev").LastPromotion).To(BeNil())
		g.Expect(envStatus(&v, "prod").LastPromotion).To(BeNil())
	}
	var d appsv1.Deployment
	g.Expect(mgmt.Client.Get(ctx, types.NamespacedName{Namespace: other, Name: "web"}, &d)).To(Succeed())
	g.Expect(d.Spec.Template.Spec.Containers[1].Image).To(Equal(image + ":" + secret))
	g.Expect(slices.ContainsFunc(d.ManagedFields, func(f metav1.ManagedFieldsEntry) bool { return f.Manager == pipeline.FieldManager })).To(BeFalse())
	g.Expect(mgmt.Client.Get(ctx, types.NamespacedName{Namespace: tenant, Name: "web"}, &d)).To(Succeed())
	g.Expect(d.Spec.Template.Spec.Containers[1].Image).To(Equal(image + ":1"))

	// Granted get and patch in B: observed and promoted into, then on into A.
	grant(t, other, tenant, "default", rbacv1.PolicyRule{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, ResourceNames: []string{"web"}, Verbs: []string{"get", "patch"}})
	waitImage(t, mgmt.Client, other, "web", tag)
	waitPipeline(t, key, "dev promoted and observed", func(p *v1alpha1.Pipeline) bool {
		dev := envStatus(p, "dev")
		return dev.LastPromotion != nil && dev.LastPromotion.Revision == tag && len(dev.Targets) == 1 && dev.Targets[0].Revision == tag &&
			!strings.Contains(dev.Targets[0].Message, why) && !hidden(p)
	})
	rollOut(t, mgmt.Client, other, "web")
	waitImage(t, mgmt.Client, tenant, "web", tag)
}
