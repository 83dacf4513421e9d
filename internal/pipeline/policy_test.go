//go:build !unit

package pipeline_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/manager"
	"github.com/release-controller/release-controller/internal/pipeline"
	"github.com/release-controller/release-controller/internal/releaselog"
	"github.com/release-controller/release-controller/internal/server/approval"
	"github.com/release-controller/release-controller/internal/testenv"
)

// devToLeaf makes a pipeline dev (the management cluster) → staging (the leaf, through a
// kubeconfig Secret) [→ prod (the management cluster)], every Deployment at 1, changed by
// edit before it is created.
func devToLeaf(t *testing.T, withProd bool, edit func(p *v1alpha1.Pipeline)) (key types.NamespacedName, stagingNS, prodNS string) {
	t.Helper()
	pns, stagingNS := ns(t, mgmt.Client), ns(t, leafClient)
	deploy(t, mgmt.Client, pns, "web", "1")
	deploy(t, leafClient, stagingNS, "web", "1")
	if err := mgmt.Client.Create(context.Background(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: pns, Name: "leaf"},
		Data: map[string][]byte{v1alpha1.SecretKeyKubeconfig: leafKubeconfig}}); err != nil {
		t.Fatal(err)
	}
	p := &v1alpha1.Pipeline{
		ObjectMeta: metav1.ObjectMeta{Namespace: pns, Name: "web"},
		Spec: v1alpha1.PipelineSpec{
			AppRef: v1alpha1.AppReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", Container: "web"},
			Environments: []v1alpha1.Environment{
				{Name: "dev", Targets: []v1alpha1.Target{{Namespace: pns}}},
				{Name: "staging", Targets: []v1alpha1.Target{{Namespace: stagingNS, ClusterRef: "leaf"}}},
			},
		},
	}
	if withProd {
		prodNS = ns(t, mgmt.Client)
		deploy(t, mgmt.Client, prodNS, "web", "1")
		p.Spec.Environments = append(p.Spec.Environments, v1alpha1.Environment{Name: "prod", Targets: []v1alpha1.Target{{Namespace: prodNS}}})
	}
	if edit != nil {
		edit(p)
	}
	if err := mgmt.Client.Create(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	return client.ObjectKeyFromObject(p), stagingNS, prodNS
}

// promotionsLogged are the release log's promotion entries of the pipeline uid, each
// "environment/revision".
func promotionsLogged(t *testing.T, logNS string, uid types.UID) []string {
	t.Helper()
	var out []string
	for _, e := range logEntries(t, logNS) {
		if rest, ok := strings.CutPrefix(e.ID, string(uid)+"/"); ok && e.Type == releaselog.TypePromotion {
			out = append(out, rest)
		}
	}
	slices.Sort(out)
	return out
}

func logEntries(t *testing.T, logNS string) []v1alpha1.ReleaseLogEntry {
	t.Helper()
	var logs v1alpha1.ReleaseLogList
	if err := mgmt.Client.List(context.Background(), &logs, client.InNamespace(logNS)); err != nil {
		t.Fatal(err)
	}
	var out []v1alpha1.ReleaseLogEntry
	for _, l := range logs.Items {
		out = append(out, l.Spec.Entries...)
	}
	return out
}

// TestSoakHoldsThenReleases: staging takes what dev is ready at only once it has been ready
// there for minSoak, time driven by the reconciler's clock; the reconcile that finds the soak
// asks to come back when it ends (RequeueAfter), not sooner. The test calls Reconcile itself.
func TestSoakHoldsThenReleases(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	g := NewWithT(t)
	key, stagingNS, _ := devToLeaf(t, false, func(p *v1alpha1.Pipeline) {
		p.Spec.Promotion = &v1alpha1.Promotion{MinSoak: &metav1.Duration{Duration: time.Hour}}
	})
	mgr, err := manager.New(mgmt.Config, manager.Options{MetricsAddr: "0", ProbeAddr: "0", SkipControllerNameValidation: true})
	if err != nil {
		t.Fatal(err)
	}
	// Whole seconds: the status keeps readySince to the second.
	clock := clocktesting.NewFakeClock(time.Now().Truncate(time.Second))
	r := &pipeline.Reconciler{Clock: clock}
	if err := r.SetupWithoutController(ctx, mgr); err != nil {
		t.Fatal(err)
	}
	testenv.Run(t, mgr)
	// pass reconciles once the cache holds the pipeline as written, and returns the result
	// and the pipeline after it.
	pass := func(g Gomega) (ctrl.Result, *v1alpha1.Pipeline) {
		var direct, cached v1alpha1.Pipeline
		g.Expect(mgmt.Client.Get(ctx, key, &direct)).To(Succeed())
		g.Expect(mgr.GetClient().Get(ctx, key, &cached)).To(Succeed())
		g.Expect(cached.ResourceVersion).To(Equal(direct.ResourceVersion))
		res, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: key})
		g.Expect(err).NotTo(HaveOccurred())
		var p v1alpha1.Pipeline
		g.Expect(mgmt.Client.Get(ctx, key, &p)).To(Succeed())
		return res, &p
	}
	g.Eventually(func(g Gomega) {
		_, p := pass(g)
		g.Expect(revisions(p)).To(Equal([]string{"1", "1"}))
	}).WithTimeout(waitTimeout).WithPolling(100 * time.Millisecond).Should(Succeed())

	// A minute later, dev ready at 2: it soaks an hour before staging may take it.
	clock.Step(time.Minute)
	setImage(t, mgmt.Client, key.Namespace, "web", "2")
	rollOut(t, mgmt.Client, key.Namespace, "web")
	// dev at 2 and ready, and the soak that starts then, are observations: a reconcile that
	// sees them first holds the write back ObservationDelay and asks to come back then, when
	// the clock is moved on (only then).
	var res ctrl.Result
	var p *v1alpha1.Pipeline
	seen := clock.Now()
	g.Eventually(func(g Gomega) {
		res, p = pass(g)
		if res.RequeueAfter > 0 && res.RequeueAfter <= pipeline.ObservationDelay {
			clock.Step(res.RequeueAfter)
			res, p = pass(g)
		}
		g.Expect(revisions(p)).To(Equal([]string{"2", "1"}))
		g.Expect(envStatus(p, "dev").Ready).To(BeTrue())
	}).WithTimeout(waitTimeout).WithPolling(100 * time.Millisecond).Should(Succeed())
	dev := envStatus(p, "dev")
	start := dev.ReadySince.Time
	g.Expect(start).To(BeTemporally(">=", seen), "the soak starts when dev was seen ready")
	g.Expect(start).To(BeTemporally("<", clock.Now()), "held back, then written")
	g.Expect(dev.SoakUntil.Time).To(BeTemporally("==", start.Add(time.Hour)))
	g.Expect(res.RequeueAfter).To(Equal(start.Add(time.Hour).Sub(clock.Now())), "back when the soak ends")
	g.Expect(envStatus(p, "staging").LastPromotion).To(BeNil())

	// A minute before: still soaking, back in a minute; nothing written.
	clock.Step(start.Add(59 * time.Minute).Sub(clock.Now()))
	res, p2 := pass(g)
	g.Expect(res.RequeueAfter).To(Equal(time.Minute))
	g.Expect(p2.ResourceVersion).To(Equal(p.ResourceVersion))
	g.Expect(waitImage(t, leafClient, stagingNS, "web", "1").Spec.Template.Spec.Containers[1].Image).To(Equal(image + ":1"))

	// Soaked: staging on the leaf takes 2; dev's soak is over, its readySince kept.
	clock.Step(time.Minute)
	_, p = pass(g)
	waitImage(t, leafClient, stagingNS, "web", "2")
	g.Expect(envStatus(p, "staging").LastPromotion.Revision).To(Equal("2"))
	dev = envStatus(p, "dev")
	g.Expect(dev.SoakUntil).To(BeNil())
	g.Expect(dev.ReadySince.Time).To(BeTemporally("==", start))
}

// TestFreezeHoldsThenReleases: a ReleaseFreeze of staging without an end (a stop-the-line) and
// a ClusterReleaseFreeze of prod selecting the pipeline by label hold what dev is ready at;
// the first ended, staging takes it, the second deleted, prod does. The freeze's start and
// end are in the release log, before the promotions it held.
func TestFreezeHoldsThenReleases(t *testing.T) {
	ctx := context.Background()
	g := NewWithT(t)
	logNS := ns(t, mgmt.Client)
	startController(t, logNS)
	mgmt.StartFreezes(t, logNS)
	var mark string
	key, stagingNS, prodNS := devToLeaf(t, true, func(p *v1alpha1.Pipeline) {
		mark = p.Namespace
		p.Labels = map[string]string{"freeze-test": mark}
	})
	waitPipeline(t, key, "all at 1", func(p *v1alpha1.Pipeline) bool { return slices.Equal(revisions(p), []string{"1", "1", "1"}) })

	line := &v1alpha1.ReleaseFreeze{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: "incident"},
		Spec: v1alpha1.ReleaseFreezeSpec{Reason: "incident 42", Environments: []string{"staging"}}}
	g.Expect(mgmt.Client.Create(ctx, line)).To(Succeed())
	holidays := &v1alpha1.ClusterReleaseFreeze{ObjectMeta: metav1.ObjectMeta{Name: "holidays-" + mark},
		Spec: v1alpha1.ReleaseFreezeSpec{Reason: "holidays", Environments: []string{"prod"},
			Pipelines: &metav1.LabelSelector{MatchLabels: map[string]string{"freeze-test": mark}}}}
	g.Expect(mgmt.Client.Create(ctx, holidays)).To(Succeed())
	t.Cleanup(func() { _ = mgmt.Client.Delete(ctx, holidays) })
	frozen := waitPipeline(t, key, "staging and prod frozen", func(p *v1alpha1.Pipeline) bool {
		return envStatus(p, "staging").Frozen != nil && envStatus(p, "prod").Frozen != nil
	})
	g.Expect(envStatus(frozen, "staging").Frozen).To(Equal(&v1alpha1.FreezeRecord{Freeze: key.Namespace + "/incident", Reason: "incident 42"}))
	g.Expect(envStatus(frozen, "prod").Frozen).To(Equal(&v1alpha1.FreezeRecord{Freeze: holidays.Name, Reason: "holidays"}))
	g.Expect(envStatus(frozen, "dev").Frozen).To(BeNil())
	g.Expect(conditionReason(frozen, v1alpha1.ConditionFrozen)).To(Equal("True/" + v1alpha1.ReasonFreezeActive))

	// dev at 2: staging is due it, and frozen.
	setImage(t, mgmt.Client, key.Namespace, "web", "2")
	rollOut(t, mgmt.Client, key.Namespace, "web")
	held := waitPipeline(t, key, "dev at 2, staging held", func(p *v1alpha1.Pipeline) bool {
		return slices.Equal(revisions(p), []string{"2", "1", "1"}) && envStatus(p, "staging").Frozen != nil
	})
	g.Expect(envStatus(held, "staging").LastPromotion).To(BeNil())
	g.Expect(waitImage(t, leafClient, stagingNS, "web", "1").Spec.Template.Spec.Containers[1].Image).To(Equal(image + ":1"))

	// The stop-the-line ended (what `release-controller freeze end` does): staging takes 2,
	// prod stays frozen.
	g.Eventually(func() error {
		var f v1alpha1.ReleaseFreeze
		if err := mgmt.Client.Get(ctx, client.ObjectKeyFromObject(line), &f); err != nil {
			return err
		}
		end := metav1.NewTime(time.Now().Truncate(time.Second))
		f.Spec.End = &end
		return mgmt.Client.Update(ctx, &f)
	}).WithTimeout(waitTimeout).Should(Succeed())
	waitImage(t, leafClient, stagingNS, "web", "2")
	rollOut(t, leafClient, stagingNS, "web")
	held = waitPipeline(t, key, "staging at 2, prod held", func(p *v1alpha1.Pipeline) bool {
		return slices.Equal(revisions(p), []string{"2", "2", "1"}) && envStatus(p, "staging").Frozen == nil
	})
	g.Expect(envStatus(held, "prod").Frozen).NotTo(BeNil())
	g.Expect(envStatus(held, "prod").LastPromotion).To(BeNil())
	g.Expect(waitImage(t, mgmt.Client, prodNS, "web", "1").Spec.Template.Spec.Containers[1].Image).To(Equal(image + ":1"))

	// The cluster's freeze deleted: prod takes 2, and nothing is frozen any more.
	g.Expect(mgmt.Client.Delete(ctx, holidays)).To(Succeed())
	waitImage(t, mgmt.Client, prodNS, "web", "2")
	done := waitPipeline(t, key, "nothing frozen", func(p *v1alpha1.Pipeline) bool {
		return envStatus(p, "prod").Frozen == nil && conditionReason(p, v1alpha1.ConditionFrozen) == ""
	})
	g.Expect(promotionsLogged(t, logNS, done.UID)).To(Equal([]string{"prod/2", "staging/2"}))

	// The release log has the freezes' starts and the stop-the-line's end, before the
	// promotion it held.
	var freezes []string
	var ended, promoted time.Time
	for _, e := range logEntries(t, logNS) {
		switch {
		case e.Type == releaselog.TypeFreeze:
			freezes = append(freezes, e.Version+": "+e.Message)
			if e.Version == key.Namespace+"/incident" && strings.Contains(e.Message, " ended: ") {
				ended = e.Date.Time
			}
		case e.ID == string(done.UID)+"/staging/2":
			promoted = e.Date.Time
		}
	}
	g.Expect(freezes).To(ConsistOf(
		key.Namespace+"/incident: freeze "+key.Namespace+"/incident started: incident 42; every pipeline, environments staging, until it is ended",
		key.Namespace+"/incident: freeze "+key.Namespace+"/incident ended: incident 42",
		holidays.Name+": freeze "+holidays.Name+" started: holidays; the pipelines freeze-test="+mark+", environments prod, until it is ended"))
	g.Expect(promoted).NotTo(BeTemporally("<", ended))
}

// reject records a rejection of revision in env as the API server's approval route does: its
// part of the environment's status, applied with its field manager.
func reject(t *testing.T, key types.NamespacedName, env, revision, reason string) {
	t.Helper()
	item, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&v1alpha1.EnvironmentStatus{Name: env,
		Rejections: []v1alpha1.RejectionRecord{{Revision: revision, By: "alice", Reason: reason, Time: metav1.NewTime(time.Now().Truncate(time.Second))}}})
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{Object: map[string]any{"status": map[string]any{"environments": []any{item}}}}
	u.SetGroupVersionKind(v1alpha1.GroupVersion.WithKind("Pipeline"))
	u.SetNamespace(key.Namespace)
	u.SetName(key.Name)
	if err := mgmt.Client.Status().Apply(context.Background(), client.ApplyConfigurationFromUnstructured(u),
		client.FieldOwner(approval.FieldManager), client.ForceOwnership); err != nil {
		t.Fatal(err)
	}
}

// TestRejectedRevisionNeverPromoted: staging rejected 2; dev at 2 is not promoted there, dev
// at 3 is; the rejection stays in the status through the controller's writes, and the release
// log never has 2 in staging.
func TestRejectedRevisionNeverPromoted(t *testing.T) {
	g := NewWithT(t)
	logNS := ns(t, mgmt.Client)
	startController(t, logNS)
	key, stagingNS, _ := devToLeaf(t, false, nil)
	waitPipeline(t, key, "all at 1", func(p *v1alpha1.Pipeline) bool { return slices.Equal(revisions(p), []string{"1", "1"}) })

	reject(t, key, "staging", "2", "breaks checkout")
	// Answered after the rejection: the controller's cache has it.
	requestReconcile(t, key, "after-the-rejection")

	setImage(t, mgmt.Client, key.Namespace, "web", "2")
	rollOut(t, mgmt.Client, key.Namespace, "web")
	held := waitPipeline(t, key, "dev at 2, staging not promoted", func(p *v1alpha1.Pipeline) bool {
		return slices.Equal(revisions(p), []string{"2", "1"})
	})
	g.Expect(envStatus(held, "staging").LastPromotion).To(BeNil())
	g.Expect(envStatus(held, "staging").Rejections).To(HaveLen(1))

	setImage(t, mgmt.Client, key.Namespace, "web", "3")
	rollOut(t, mgmt.Client, key.Namespace, "web")
	waitImage(t, leafClient, stagingNS, "web", "3")
	rollOut(t, leafClient, stagingNS, "web")
	done := waitPipeline(t, key, "both at 3", func(p *v1alpha1.Pipeline) bool {
		return slices.Equal(revisions(p), []string{"3", "3"})
	})
	g.Expect(promotionsLogged(t, logNS, done.UID)).To(Equal([]string{"staging/3"}))
	rejections := envStatus(done, "staging").Rejections
	g.Expect(rejections).To(HaveLen(1))
	g.Expect(rejections[0].Revision).To(Equal("2"))
	g.Expect(rejections[0].Reason).To(Equal("breaks checkout"))
}
