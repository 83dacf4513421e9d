//go:build !unit

package pipeline_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/kubeauth"
	"github.com/release-controller/release-controller/internal/manager"
	"github.com/release-controller/release-controller/internal/pipeline"
	"github.com/release-controller/release-controller/internal/releaselog"
	"github.com/release-controller/release-controller/internal/server"
	"github.com/release-controller/release-controller/internal/server/approval"
	"github.com/release-controller/release-controller/internal/verdict/verdicttest"
)

// waitTimeout bounds every wait: a deadline for a broken test, not a performance assertion.
const waitTimeout = 90 * time.Second

const image = "registry.example.com/web"

// startController runs the pipeline controller (and nothing else) on the management
// cluster until the test ends.
func startController(t *testing.T, logNamespace string) *pipeline.Reconciler {
	t.Helper()
	r, _ := startStoppable(t, logNamespace)
	return r
}

// startStoppable is startController with a function that stops its manager sooner (as a
// leader that goes away).
func startStoppable(t *testing.T, logNamespace string) (*pipeline.Reconciler, func()) {
	t.Helper()
	opts := manager.Options{MetricsAddr: "0", ProbeAddr: "0", SkipControllerNameValidation: true,
		ReleaseLog: releaselog.Options{Namespace: logNamespace}}
	mgr, err := manager.New(mgmt.Config, opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &pipeline.Reconciler{Log: releaselog.NewWriter(mgr.GetClient(), mgr.GetAPIReader(), releaselog.Options{Namespace: logNamespace})}
	if err := r.SetupWithManager(ctx, mgr); err != nil {
		t.Fatal(err)
	}
	r.Clusters.HealthInterval = 500 * time.Millisecond
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("manager: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return r, stop
}

func ns(t *testing.T, c client.Client) string {
	t.Helper()
	n := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "pl-"}}
	if err := c.Create(context.Background(), n); err != nil {
		t.Fatal(err)
	}
	return n.Name
}

// deploy creates a Deployment of container web at tag, rolled out.
func deploy(t *testing.T, c client.Client, namespace, name, tag string) {
	t.Helper()
	labels := map[string]string{"app": name}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{
					{Name: "proxy", Image: "registry.example.com/proxy:9"},
					{Name: "web", Image: image + ":" + tag},
				}},
			},
		},
	}
	if err := c.Create(context.Background(), d); err != nil {
		t.Fatal(err)
	}
	rollOut(t, c, namespace, name)
}

// rollOut writes the status the Deployment controller would once the rollout is done (no
// such controller runs with envtest).
func rollOut(t *testing.T, c client.Client, namespace, name string) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var d appsv1.Deployment
		if err := c.Get(context.Background(), types.NamespacedName{Namespace: namespace, Name: name}, &d); err != nil {
			return err
		}
		d.Status = appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: 1, UpdatedReplicas: 1, ReadyReplicas: 1, AvailableReplicas: 1}
		return c.Status().Update(context.Background(), &d)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// setImage deploys a new tag by hand (as a CI system would), not rolled out yet.
func setImage(t *testing.T, c client.Client, namespace, name, tag string) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var d appsv1.Deployment
		if err := c.Get(context.Background(), types.NamespacedName{Namespace: namespace, Name: name}, &d); err != nil {
			return err
		}
		d.Spec.Template.Spec.Containers[1].Image = image + ":" + tag
		return c.Update(context.Background(), &d)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// waitImage waits until the Deployment's web container runs tag, and returns the Deployment.
func waitImage(t *testing.T, c client.Client, namespace, name, tag string) *appsv1.Deployment {
	t.Helper()
	var d appsv1.Deployment
	NewWithT(t).Eventually(func(g Gomega) {
		g.Expect(c.Get(context.Background(), types.NamespacedName{Namespace: namespace, Name: name}, &d)).To(Succeed())
		g.Expect(d.Spec.Template.Spec.Containers[1].Image).To(Equal(image + ":" + tag))
	}).WithTimeout(waitTimeout).WithPolling(100 * time.Millisecond).Should(Succeed())
	return &d
}

func waitPipeline(t *testing.T, key types.NamespacedName, desc string, ok func(p *v1alpha1.Pipeline) bool) *v1alpha1.Pipeline {
	t.Helper()
	var p v1alpha1.Pipeline
	NewWithT(t).Eventually(func(g Gomega) {
		g.Expect(mgmt.Client.Get(context.Background(), key, &p)).To(Succeed())
		g.Expect(ok(&p)).To(BeTrue(), "%s; status: %+v", desc, p.Status)
	}).WithTimeout(waitTimeout).WithPolling(100 * time.Millisecond).Should(Succeed())
	return &p
}

func envStatus(p *v1alpha1.Pipeline, name string) v1alpha1.EnvironmentStatus {
	for _, e := range p.Status.Environments {
		if e.Name == name {
			return e
		}
	}
	return v1alpha1.EnvironmentStatus{}
}

func revisions(p *v1alpha1.Pipeline) []string {
	var out []string
	for _, e := range p.Status.Environments {
		r := e.Revision
		if !e.Ready {
			r += "(not ready)"
		}
		out = append(out, r)
	}
	return out
}

func waitingFor(p *v1alpha1.Pipeline, env string) string {
	if w := envStatus(p, env).WaitingApproval; w != nil {
		return w.Revision
	}
	return ""
}

// TestPromotionAcrossClusters drives a pipeline dev (management cluster) → staging (leaf
// cluster, through a kubeconfig Secret) → prod (management cluster, approval required) with
// Deployments: a change on the management cluster promotes on the leaf and a leaf change on
// the management cluster; approvals good, bad, expired, replayed; the leaf stopped and started
// again; and the informers stopped once no pipeline needs them.
func TestPromotionAcrossClusters(t *testing.T) {
	ctx := context.Background()
	g := NewWithT(t)
	logNS := ns(t, mgmt.Client)
	r := startController(t, logNS)
	pns := ns(t, mgmt.Client)    // the pipelines, dev and prod
	prodNS := ns(t, mgmt.Client) // prod
	stagingNS := ns(t, leafClient)

	deploy(t, mgmt.Client, pns, "web", "1")
	deploy(t, leafClient, stagingNS, "web", "1")
	deploy(t, mgmt.Client, prodNS, "web", "1")
	key := []byte("approval-key")
	for _, s := range []*corev1.Secret{
		{ObjectMeta: metav1.ObjectMeta{Namespace: pns, Name: "leaf"}, Data: map[string][]byte{v1alpha1.SecretKeyKubeconfig: leafKubeconfig}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: pns, Name: "approvals"}, Data: map[string][]byte{v1alpha1.SecretKeyHMAC: key}},
	} {
		g.Expect(mgmt.Client.Create(ctx, s)).To(Succeed())
	}
	p := &v1alpha1.Pipeline{
		ObjectMeta: metav1.ObjectMeta{Namespace: pns, Name: "web"},
		Spec: v1alpha1.PipelineSpec{
			AppRef: v1alpha1.AppReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", Container: "web"},
			Environments: []v1alpha1.Environment{
				{Name: "dev", Targets: []v1alpha1.Target{{Namespace: pns}}},
				{Name: "staging", Targets: []v1alpha1.Target{{Namespace: stagingNS, ClusterRef: "leaf"}}},
				{Name: "prod", Targets: []v1alpha1.Target{{Namespace: prodNS}},
					Approval: &v1alpha1.Approval{SecretRef: &v1alpha1.SecretKeyReference{Name: "approvals"}}},
			},
		},
	}
	g.Expect(mgmt.Client.Create(ctx, p)).To(Succeed())
	pk := client.ObjectKeyFromObject(p)

	// Observed everywhere at 1.
	got := waitPipeline(t, pk, "all at 1 and Ready", func(p *v1alpha1.Pipeline) bool {
		return slices.Equal(revisions(p), []string{"1", "1", "1"}) && meta.IsStatusConditionTrue(p.Status.Conditions, v1alpha1.ConditionReady)
	})
	g.Expect(meta.IsStatusConditionFalse(got.Status.Conditions, v1alpha1.ConditionClusterUnreachable)).To(BeTrue())
	g.Expect(r.Clusters.Stats()).To(Equal(pipeline.Stats{Clusters: 2, Informers: 2}))
	g.Expect(gauge(t, pipeline.MetricClusters)).To(Equal(2.0), "the clusters gauge is Stats().Clusters")
	g.Expect(gauge(t, pipeline.MetricInformers)).To(Equal(2.0), "the informers gauge is Stats().Informers")

	// dev moves to 2 (management cluster): staging on the leaf gets 2, applied by the
	// release-controller field manager.
	setImage(t, mgmt.Client, pns, "web", "2")
	rollOut(t, mgmt.Client, pns, "web")
	staging := waitImage(t, leafClient, stagingNS, "web", "2")
	g.Expect(slices.ContainsFunc(staging.ManagedFields, func(f metav1.ManagedFieldsEntry) bool {
		return f.Manager == pipeline.FieldManager && f.Operation == metav1.ManagedFieldsOperationApply
	})).To(BeTrue(), "no apply by %s in %+v", pipeline.FieldManager, staging.ManagedFields)
	g.Expect(staging.Spec.Template.Spec.Containers[0].Image).To(Equal("registry.example.com/proxy:9"), "another container changed")
	got = waitPipeline(t, pk, "staging promoted to 2", func(p *v1alpha1.Pipeline) bool {
		lp := envStatus(p, "staging").LastPromotion
		return lp != nil && lp.Revision == "2"
	})
	g.Expect(envStatus(got, "staging").LastPromotion.Strategy).To(Equal(v1alpha1.StrategyPatch))
	promotionID := envStatus(got, "staging").LastPromotion.ID
	g.Expect(promotionID).To(Equal(string(got.UID) + "/staging/2"))

	// The promotion is in the release log, once.
	g.Eventually(func(g Gomega) {
		var logs v1alpha1.ReleaseLogList
		g.Expect(mgmt.Client.List(ctx, &logs, client.InNamespace(logNS))).To(Succeed())
		n := 0
		for _, l := range logs.Items {
			for _, e := range l.Spec.Entries {
				if e.ID == promotionID {
					n++
					g.Expect(e.Type).To(Equal(releaselog.TypePromotion))
					g.Expect(e.Version).To(Equal("2"))
				}
			}
		}
		g.Expect(n).To(Equal(1))
	}).WithTimeout(waitTimeout).Should(Succeed())

	// The leaf rolls staging out: prod (management cluster) waits for approval of 2.
	rollOut(t, leafClient, stagingNS, "web")
	waitPipeline(t, pk, "prod waits for 2", func(p *v1alpha1.Pipeline) bool { return waitingFor(p, "prod") == "2" })

	// Approvals, through the api's handler.
	reviewer := kubeauth.NewReviewer(mgmt.Client, kubeauth.Options{})
	handler := approval.NewHandler(mgmt.Client, mgmt.Client, livePipelines{mgmt.Client}, approval.NewTenantKeys(mgmt.Config, mgmt.Client, ""), reviewer)
	s := server.New()
	approval.Register(s, handler)
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	approve := func(env, rev string, k []byte, now time.Time) (*approval.Response, int) {
		resp, err := approval.Request{Server: srv.URL, Namespace: pns, Pipeline: "web", Environment: env, Revision: rev, Key: k,
			Now: func() time.Time { return now }}.Send(ctx, srv.Client())
		var se *approval.StatusError
		if errors.As(err, &se) {
			g.Expect(se.Message).NotTo(ContainSubstring("sha256="), "an error echoes a signature")
			return nil, se.Code
		}
		g.Expect(err).NotTo(HaveOccurred())
		return resp, http.StatusOK
	}
	now := time.Now()
	_, code := approve("prod", "2", []byte("wrong key"), now)
	g.Expect(code).To(Equal(http.StatusUnauthorized), "bad signature")
	_, code = approve("prod", "2", key, now.Add(-10*time.Minute))
	g.Expect(code).To(Equal(http.StatusUnauthorized), "expired signature")
	_, code = approve("prod", "3", key, now)
	g.Expect(code).To(Equal(http.StatusConflict), "wrong revision")
	_, code = approve("qa", "2", key, now)
	g.Expect(code).To(Equal(http.StatusNotFound), "unknown environment")
	_, code = approve("staging", "2", key, now)
	g.Expect(code).To(Equal(http.StatusConflict), "environment without approval")
	// Unsigned, and a token nobody issued.
	resp, err := srv.Client().Post(srv.URL+"/pipelines/"+pns+"/web/prod/2/approve", "text/plain", nil)
	g.Expect(err).NotTo(HaveOccurred())
	resp.Body.Close()
	g.Expect(resp.StatusCode).To(Equal(http.StatusUnauthorized))
	_, err = approval.Request{Server: srv.URL, Namespace: pns, Pipeline: "web", Environment: "prod", Revision: "2", Token: "not-a-token"}.Send(ctx, srv.Client())
	g.Expect(err).To(MatchError(ContainSubstring("401")))

	// The good one, then the very same request again: a replay.
	signedAt := time.Now()
	ok, code := approve("prod", "2", key, signedAt)
	g.Expect(code).To(Equal(http.StatusOK))
	g.Expect(ok.Approver).To(Equal("hmac:approvals"))
	_, code = approve("prod", "2", key, signedAt)
	g.Expect(code).To(Equal(http.StatusConflict), "replayed signature")

	// Approved: prod gets 2, the approver recorded.
	waitImage(t, mgmt.Client, prodNS, "web", "2")
	waitPipeline(t, pk, "prod promoted with its approver", func(p *v1alpha1.Pipeline) bool {
		lp := envStatus(p, "prod").LastPromotion
		return lp != nil && lp.Revision == "2" && lp.Approver == "hmac:approvals" && waitingFor(p, "prod") == ""
	})
	// A stale approval: 2 was promoted already.
	_, code = approve("prod", "2", key, time.Now().Add(time.Second))
	g.Expect(code).To(Equal(http.StatusConflict))
	rollOut(t, mgmt.Client, prodNS, "web")
	waitPipeline(t, pk, "all at 2", func(p *v1alpha1.Pipeline) bool { return slices.Equal(revisions(p), []string{"2", "2", "2"}) })

	// The leaf stops: the pipeline says its cluster is unreachable, and nothing crashes.
	g.Expect(leaf.StopAPIServer()).To(Succeed())
	waitPipeline(t, pk, "ClusterUnreachable", func(p *v1alpha1.Pipeline) bool {
		return meta.IsStatusConditionTrue(p.Status.Conditions, v1alpha1.ConditionClusterUnreachable) &&
			meta.IsStatusConditionFalse(p.Status.Conditions, v1alpha1.ConditionReady)
	})
	// Started again: it is watched as before; dev's 3 reaches it, and its rollout asks prod
	// for approval.
	g.Expect(leaf.StartAPIServer()).To(Succeed())
	waitPipeline(t, pk, "leaf reachable again", func(p *v1alpha1.Pipeline) bool {
		return meta.IsStatusConditionFalse(p.Status.Conditions, v1alpha1.ConditionClusterUnreachable)
	})
	setImage(t, mgmt.Client, pns, "web", "3")
	rollOut(t, mgmt.Client, pns, "web")
	waitImage(t, leafClient, stagingNS, "web", "3")
	rollOut(t, leafClient, stagingNS, "web")
	waitPipeline(t, pk, "prod waits for 3", func(p *v1alpha1.Pipeline) bool { return waitingFor(p, "prod") == "3" })

	// A second pipeline fed by a ReleaseStream, on the same clusters and kind: it shares the
	// informers.
	deploy(t, mgmt.Client, pns, "api", "1")
	deploy(t, leafClient, stagingNS, "api", "1")
	stream := &v1alpha1.ReleaseStream{
		ObjectMeta: metav1.ObjectMeta{Namespace: pns, Name: "nightly"},
		Spec: v1alpha1.ReleaseStreamSpec{
			TagPrefix: "1.0.0-0.nightly", PayloadRepository: "registry.example.com/product/release",
			Components: []v1alpha1.ComponentSource{{Name: "api", Image: "registry.example.com/product/api:latest"}},
		},
	}
	g.Expect(mgmt.Client.Create(ctx, stream)).To(Succeed())
	second := &v1alpha1.Pipeline{
		ObjectMeta: metav1.ObjectMeta{Namespace: pns, Name: "api"},
		Spec: v1alpha1.PipelineSpec{
			AppRef: v1alpha1.AppReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "api", Container: "web"},
			Source: &v1alpha1.PipelineSource{ReleaseStream: "nightly"},
			Environments: []v1alpha1.Environment{
				{Name: "dev", Targets: []v1alpha1.Target{{Namespace: pns}}},
				{Name: "staging", Targets: []v1alpha1.Target{{Namespace: stagingNS, ClusterRef: "leaf"}}},
			},
		},
	}
	g.Expect(mgmt.Client.Create(ctx, second)).To(Succeed())
	waitPipeline(t, client.ObjectKeyFromObject(second), "api observed", func(p *v1alpha1.Pipeline) bool {
		return slices.Equal(revisions(p), []string{"1", "1"})
	})
	g.Expect(r.Clusters.Stats()).To(Equal(pipeline.Stats{Clusters: 2, Informers: 2}))
	// The stream's status names a payload whose Accepted verdict was written by hand (its
	// build not finished): it is not promoted. Then it names one the payload controller would
	// have accepted: dev gets its tag, and only that one was ever promoted.
	forged := createPayload(t, pns, "nightly", "1.0.0-0.nightly-2026-03-25-110000", func(p *v1alpha1.ReleasePayload) {
		verdicttest.Earn(p, v1alpha1.PhaseAccepted)
		p.Status.ReleaseCreationJobResult.Status = v1alpha1.CreationJobUnknown
	})
	stream.Status.LatestAccepted = forged.Name
	g.Expect(mgmt.Client.Status().Update(ctx, stream)).To(Succeed())
	tag := "1.0.0-0.nightly-2026-03-25-120000"
	createPayload(t, pns, "nightly", tag, func(p *v1alpha1.ReleasePayload) { verdicttest.Earn(p, v1alpha1.PhaseAccepted) })
	stream.Status.LatestAccepted = tag
	g.Expect(mgmt.Client.Status().Update(ctx, stream)).To(Succeed())
	waitImage(t, mgmt.Client, pns, "api", tag)
	got = waitPipeline(t, client.ObjectKeyFromObject(second), "dev promoted once", func(p *v1alpha1.Pipeline) bool {
		lp := envStatus(p, "dev").LastPromotion
		return lp != nil && lp.Revision == tag
	})
	// The log is written in promotion order: once it holds the earned tag's promotion, it
	// would hold the forged one's before it.
	var promoted []string
	g.Eventually(func(g Gomega) {
		var logs v1alpha1.ReleaseLogList
		g.Expect(mgmt.Client.List(ctx, &logs, client.InNamespace(logNS))).To(Succeed())
		promoted = nil
		for _, l := range logs.Items {
			for _, e := range l.Spec.Entries {
				if strings.HasPrefix(e.ID, string(got.UID)+"/") {
					promoted = append(promoted, e.Version)
				}
			}
		}
		g.Expect(promoted).To(ContainElement(tag))
	}).WithTimeout(waitTimeout).Should(Succeed())
	g.Expect(promoted).NotTo(ContainElement(forged.Name), "the hand-written verdict was promoted")

	// Deleting one pipeline leaves the shared informers; deleting both stops them all.
	g.Expect(mgmt.Client.Delete(ctx, p)).To(Succeed())
	g.Consistently(func() pipeline.Stats { return r.Clusters.Stats() }).WithTimeout(time.Second).Should(Equal(pipeline.Stats{Clusters: 2, Informers: 2}))
	g.Expect(mgmt.Client.Delete(ctx, second)).To(Succeed())
	g.Eventually(func() pipeline.Stats { return r.Clusters.Stats() }).WithTimeout(waitTimeout).Should(Equal(pipeline.Stats{}))
	g.Expect(gauge(t, pipeline.MetricInformers)).To(Equal(0.0), "the informers gauge is Stats().Informers")
}

// createPayload creates a payload of stream with a pinned component and gives it the status
// that status makes (from an empty one).
// livePipelines finds pipelines for the approval handler in the API server, where the api
// finds them in its informer cache.
type livePipelines struct{ c client.Reader }

func (l livePipelines) Pipeline(namespace, name string) (*v1alpha1.Pipeline, bool) {
	var p v1alpha1.Pipeline
	if err := l.c.Get(context.Background(), types.NamespacedName{Namespace: namespace, Name: name}, &p); err != nil {
		return nil, false
	}
	return &p, true
}

func createPayload(t *testing.T, namespace, stream, tag string, status func(*v1alpha1.ReleasePayload)) *v1alpha1.ReleasePayload {
	t.Helper()
	ctx := context.Background()
	p := &v1alpha1.ReleasePayload{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: tag, Labels: map[string]string{v1alpha1.LabelStream: stream}},
		Spec: v1alpha1.ReleasePayloadSpec{
			PayloadCoordinates: v1alpha1.PayloadCoordinates{Stream: stream, Tag: tag},
			Components: []v1alpha1.PinnedComponent{{
				Name: "api", Image: "registry.example.com/product/api@sha256:" + strings.Repeat("a", 64),
			}},
			PayloadCreationConfig: v1alpha1.PayloadCreationConfig{Repository: "registry.example.com/product/release"},
		},
	}
	if err := mgmt.Client.Create(ctx, p); err != nil {
		t.Fatalf("creating payload %s: %v", tag, err)
	}
	status(p)
	for i := range p.Status.Conditions {
		p.Status.Conditions[i].LastTransitionTime = metav1.Now()
	}
	if err := mgmt.Client.Status().Update(ctx, p); err != nil {
		t.Fatalf("writing the status of payload %s: %v", tag, err)
	}
	return p
}

// gauge reads a gauge of controller-runtime's metrics registry (what /metrics serves).
func gauge(t *testing.T, name string) float64 {
	t.Helper()
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == name && len(f.GetMetric()) == 1 {
			return f.GetMetric()[0].GetGauge().GetValue()
		}
	}
	t.Fatalf("no gauge %s in the metrics registry", name)
	return 0
}
