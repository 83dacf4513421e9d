//go:build !unit

package pipeline_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	authorizationv1 "k8s.io/api/authorization/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/jobcontract"
	"github.com/release-controller/release-controller/internal/manager"
	"github.com/release-controller/release-controller/internal/pipeline"
	"github.com/release-controller/release-controller/internal/releaselog"
	"github.com/release-controller/release-controller/internal/testenv"
	"github.com/release-controller/release-controller/internal/verdict/verdicttest"
)

// TestFailurePoints makes each step of the pipeline reconciler fail in turn, against the API
// server (a client that fails one call, a missing Secret, a pipeline's account without the
// right to create or delete its verification Jobs, a release log that refuses writes), and
// checks the one failure path:
// Reconcile returns the error (terminal for an app no retry can read), Ready is False naming
// the step with the failure's reason, Reconciling says ProgressingWithRetry (Stalled for the
// app), and exactly one Warning Event has the failure's reason. The reconciler runs without
// its controller: only the test calls Reconcile.
func TestFailurePoints(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	g := NewWithT(t)
	pns := ns(t, mgmt.Client)
	deploy(t, mgmt.Client, pns, "web", "1")
	// The pipeline acts as its namespace's default account, which may get the app: each
	// reconcile asks (AccessTTL below is a millisecond).
	grant(t, pns, pns, "default", readDeployments)
	var notified atomic.Int32
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { notified.Add(1) }))
	defer receiver.Close()
	stream := &v1alpha1.ReleaseStream{
		ObjectMeta: metav1.ObjectMeta{Namespace: pns, Name: "nightly"},
		Spec: v1alpha1.ReleaseStreamSpec{TagPrefix: "1.0.0-0.nightly", PayloadRepository: "registry.example.com/product/release",
			Components: []v1alpha1.ComponentSource{{Name: "api", Image: "registry.example.com/product/api:latest"}}},
	}
	g.Expect(mgmt.Client.Create(ctx, stream)).To(Succeed())
	tag := "1.0.0-0.nightly-2026-03-25-120000"
	createPayload(t, pns, "nightly", tag, func(p *v1alpha1.ReleasePayload) { verdicttest.Earn(p, v1alpha1.PhaseAccepted) })
	p := &v1alpha1.Pipeline{
		ObjectMeta: metav1.ObjectMeta{Namespace: pns, Name: "web"},
		Spec: v1alpha1.PipelineSpec{
			AppRef: v1alpha1.AppReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", Container: "web"},
			Source: &v1alpha1.PipelineSource{ReleaseStream: "nightly"},
			Promotion: &v1alpha1.Promotion{Strategy: v1alpha1.StrategyNotification, Notification: &v1alpha1.NotificationPromotion{
				URL: receiver.URL + "/promote", SecretRef: &v1alpha1.SecretKeyReference{Name: "notify-key"}}},
			Environments: []v1alpha1.Environment{{Name: "dev", Targets: []v1alpha1.Target{{Namespace: pns}}}},
		},
	}
	g.Expect(mgmt.Client.Create(ctx, p)).To(Succeed())
	key := client.ObjectKeyFromObject(p)

	// A second pipeline verifies its environment after rollout: its Jobs are created as its
	// account, which may at first do nothing with Jobs.
	vns, logNS := ns(t, mgmt.Client), ns(t, mgmt.Client)
	deploy(t, mgmt.Client, vns, "web", "1")
	grant(t, vns, vns, "default", readDeployments)
	jobRights := func(verbs ...string) {
		t.Helper()
		role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: vns, Name: "verification-runs"}}
		_, err := controllerutil.CreateOrUpdate(ctx, mgmt.Client, role, func() error {
			role.Rules = []rbacv1.PolicyRule{{APIGroups: []string{"batch"}, Resources: []string{"jobs"}, Verbs: verbs}}
			return nil
		})
		g.Expect(err).NotTo(HaveOccurred())
	}
	jobRights("get")
	g.Expect(mgmt.Client.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: vns, Name: "verification-runs"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "verification-runs"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: vns, Name: "default"}}})).To(Succeed())
	checked := &v1alpha1.Pipeline{
		ObjectMeta: metav1.ObjectMeta{Namespace: vns, Name: "web"},
		Spec: v1alpha1.PipelineSpec{
			AppRef: v1alpha1.AppReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", Container: "web"},
			Environments: []v1alpha1.Environment{{Name: "dev", Targets: []v1alpha1.Target{{Namespace: vns}},
				Verification: &v1alpha1.EnvironmentVerification{Verifications: []v1alpha1.Verification{smokeCheck("", "")}, OnFailure: v1alpha1.OnFailureRollback}}},
		},
	}
	g.Expect(mgmt.Client.Create(ctx, checked)).To(Succeed())
	vkey := client.ObjectKeyFromObject(checked)
	smokeRun := func(rev string) client.ObjectKey {
		return client.ObjectKey{Namespace: vns, Name: jobcontract.PipelineRun{PipelineNamespace: vns, Pipeline: "web", Environment: "dev", Revision: rev, Verification: "smoke", Attempt: 1}.Name()}
	}

	mgr, err := manager.New(mgmt.Config, manager.Options{MetricsAddr: "0", ProbeAddr: "0", SkipControllerNameValidation: true})
	if err != nil {
		t.Fatal(err)
	}
	var failApp, failReview, failStream, failStatus, failLog atomic.Bool
	recorder := events.NewFakeRecorder(100)
	var failFreezes atomic.Bool
	r := &pipeline.Reconciler{Events: recorder, DefaultServiceAccount: "default", AccessTTL: time.Millisecond}
	r.Log = releaselog.NewWriter(testenv.FailingClient(mgmt.Client, interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if failLog.Load() {
				return errors.New("the release log is read-only")
			}
			return c.Create(ctx, obj, opts...)
		},
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			if failLog.Load() {
				return errors.New("the release log is read-only")
			}
			return c.Patch(ctx, obj, patch, opts...)
		},
	}), mgmt.Client, releaselog.Options{Namespace: logNS})
	r.Client = testenv.FailingClient(mgr.GetClient(), interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, k client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if _, ok := obj.(*v1alpha1.ReleaseStream); ok && failStream.Load() {
				return errors.New("the cache is gone")
			}
			if err := c.Get(ctx, k, obj, opts...); err != nil {
				return err
			}
			if p, ok := obj.(*v1alpha1.Pipeline); ok && failApp.Load() {
				// What admission refuses today, written before the rule existed.
				p.Spec.AppRef.APIVersion = "apps/v1/extra"
			}
			return nil
		},
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if _, ok := obj.(*authorizationv1.SubjectAccessReview); ok && failReview.Load() {
				return errors.New("the authorizer timed out")
			}
			return c.Create(ctx, obj, opts...)
		},
		SubResourceApply: func(ctx context.Context, c client.Client, sub string, obj runtime.ApplyConfiguration, opts ...client.SubResourceApplyOption) error {
			if failStatus.Load() {
				return errors.New("etcd is full")
			}
			return c.SubResource(sub).Apply(ctx, obj, opts...)
		},
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			if _, ok := list.(*v1alpha1.ReleaseFreezeList); ok && failFreezes.Load() {
				return errors.New("the cache is gone")
			}
			return c.List(ctx, list, opts...)
		},
	})
	if err := r.SetupWithoutController(ctx, mgr); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager stopped with: %v", err)
		}
	})

	// cached waits until the cache holds the pipeline as the API server does, so that each
	// pass starts from the status the previous one wrote.
	cachedOf := func(key client.ObjectKey) {
		t.Helper()
		NewWithT(t).Eventually(func(g Gomega) {
			var direct, fromCache v1alpha1.Pipeline
			g.Expect(mgmt.Client.Get(ctx, key, &direct)).To(Succeed())
			g.Expect(mgr.GetClient().Get(ctx, key, &fromCache)).To(Succeed())
			g.Expect(fromCache.ResourceVersion).To(Equal(direct.ResourceVersion))
		}).WithTimeout(waitTimeout).Should(Succeed())
	}
	cached := func() { cachedOf(key) }
	currentOf := func(key client.ObjectKey) *v1alpha1.Pipeline {
		var p v1alpha1.Pipeline
		if err := mgmt.Client.Get(ctx, key, &p); err != nil {
			t.Fatal(err)
		}
		return &p
	}
	current := func() *v1alpha1.Pipeline { return currentOf(key) }
	// reconcileChecked reconciles the verified pipeline until done says so, whatever each
	// reconcile reports (its Events are dropped).
	reconcileChecked := func(what string, done func(p *v1alpha1.Pipeline) bool) {
		t.Helper()
		NewWithT(t).Eventually(func(g Gomega) {
			cachedOf(vkey)
			_, _ = r.Reconcile(ctx, ctrl.Request{NamespacedName: vkey})
			testenv.Warnings(recorder)
			g.Expect(done(currentOf(vkey))).To(BeTrue(), what)
		}).WithTimeout(waitTimeout).WithPolling(100 * time.Millisecond).Should(Succeed())
	}
	warnings := func() []string { return testenv.Warnings(recorder) }

	// Until the clusters manager runs and the target's informer has synced, dev is not
	// observed: reconcile until it is.
	g.Eventually(func(g Gomega) {
		cached()
		_, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: key})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(meta.IsStatusConditionTrue(current().Status.Conditions, v1alpha1.ConditionReady)).To(BeTrue())
	}).WithTimeout(waitTimeout).WithPolling(100 * time.Millisecond).Should(Succeed())
	for _, w := range warnings() {
		g.Expect(w).To(HavePrefix("Warning ReconcileFailed watching the targets' clusters: the clusters manager is not started"))
	}

	steps := []struct {
		name   string
		set    func(on bool)
		reason string // of Ready and the Event
		step   string // in Ready's message and the Event's note
		// stalled: Stalled, not Reconciling, and a terminal error.
		stalled bool
		// written: the status says the failure (false: the status write is what failed).
		written bool
		// pipeline is the pipeline reconciled; zero: the first.
		pipeline client.ObjectKey
	}{
		{"an app no kind can be read of", failApp.Store, v1alpha1.EventInvalidApp,
			"reading the pipeline's app: appRef.apiVersion", true, true, client.ObjectKey{}},
		{"asking whether the account may get the app", failReview.Store, v1alpha1.ReasonReconcileFailed,
			"checking whether the pipeline's account may get the app in " + pns, false, true, client.ObjectKey{}},
		{"reading the source stream", failStream.Store, v1alpha1.ReasonReconcileFailed,
			"reading the source stream nightly: the cache is gone", false, true, client.ObjectKey{}},
		{name: "listing the freezes", set: failFreezes.Store, reason: v1alpha1.ReasonReconcileFailed,
			step: "listing the freezes: the cache is gone", written: true},
		{"promoting without the notification key", func(on bool) {
			if !on {
				g.Expect(mgmt.Client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: pns, Name: "notify-key"},
					Data: map[string][]byte{v1alpha1.SecretKeyHMAC: []byte("k")}})).To(Succeed())
				return
			}
			stream.Status.LatestAccepted = tag
			g.Expect(mgmt.Client.Status().Update(ctx, stream)).To(Succeed())
			g.Eventually(func(g Gomega) {
				var s v1alpha1.ReleaseStream
				g.Expect(mgr.GetClient().Get(ctx, client.ObjectKeyFromObject(stream), &s)).To(Succeed())
				g.Expect(s.Status.LatestAccepted).To(Equal(tag))
			}).WithTimeout(waitTimeout).Should(Succeed())
		}, v1alpha1.EventPromotionFailed, "promoting " + tag + " to dev: reading the key Secret notify-key", false, true, client.ObjectKey{}},
		{"writing the status", failStatus.Store, v1alpha1.ReasonReconcileFailed,
			"writing the status: etcd is full", false, false, client.ObjectKey{}},
		// Verification after rollout: dev is ready at 1, never verified.
		{"launching a verification run the account may not create", func(on bool) {
			if !on {
				jobRights("get", "create")
			}
		}, v1alpha1.ReasonReconcileFailed, "launching " + smokeRun("1").Name + " of 1 in dev: ", false, true, vkey},
		{"logging a verification's outcome", func(on bool) {
			if !on {
				failLog.Store(false)
				return
			}
			reconcileChecked("the run of 1 launched", func(p *v1alpha1.Pipeline) bool {
				return mgmt.Client.Get(ctx, smokeRun("1"), &batchv1.Job{}) == nil
			})
			var job batchv1.Job
			g.Expect(mgmt.Client.Get(ctx, smokeRun("1"), &job)).To(Succeed())
			finishJob(t, mgmt.Client, &job, true)
			g.Eventually(func(g Gomega) {
				records, err := r.Verify.Jobs.ByPipeline(ctx, vns, "web")
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(records).To(ContainElement(HaveField("State", v1alpha1.JobSuccess)))
			}).WithTimeout(waitTimeout).Should(Succeed())
			failLog.Store(true)
		}, v1alpha1.ReasonReconcileFailed, "logging the verification of 1 in dev: ", false, true, vkey},
		{"deleting a run the account may not delete", func(on bool) {
			if !on {
				jobRights("get", "create", "delete")
				return
			}
			reconcileChecked("1 verified", func(p *v1alpha1.Pipeline) bool { return envStatus(p, "dev").LastVerified == "1" })
			setImage(t, mgmt.Client, vns, "web", "2")
			rollOut(t, mgmt.Client, vns, "web")
			reconcileChecked("verifying 2", func(p *v1alpha1.Pipeline) bool {
				v := envStatus(p, "dev").Verification
				return v != nil && v.Revision == "2"
			})
		}, v1alpha1.ReasonReconcileFailed, "deleting the verification run " + smokeRun("1").Name + ": ", false, true, vkey},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			target := key
			if s.pipeline != (client.ObjectKey{}) {
				target = s.pipeline
			}
			cachedOf(target)
			s.set(true)
			cachedOf(target)
			before := currentOf(target)
			_, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: target})
			s.set(false)
			if err == nil || !strings.Contains(err.Error(), s.step) {
				t.Fatalf("Reconcile returned %v, want an error saying %q", err, s.step)
			}
			if terminal := errors.Is(err, reconcile.TerminalError(nil)); terminal != s.stalled {
				t.Errorf("terminal: %v, want %v (%v)", terminal, s.stalled, err)
			}
			after := currentOf(target)
			if !s.written {
				if after.ResourceVersion != before.ResourceVersion {
					t.Errorf("the status changed to %+v though its write failed", after.Status)
				}
			} else {
				conds := after.Status.Conditions
				ready := meta.FindStatusCondition(conds, v1alpha1.ConditionReady)
				if ready == nil || ready.Status != metav1.ConditionFalse || ready.Reason != s.reason || !strings.Contains(ready.Message, s.step) {
					t.Errorf("Ready %+v, want False %s saying %q", ready, s.reason, s.step)
				}
				progress, other := v1alpha1.ConditionReconciling, v1alpha1.ConditionStalled
				if s.stalled {
					progress, other = other, progress
				}
				if c := meta.FindStatusCondition(conds, progress); c == nil || c.Status != metav1.ConditionTrue || !strings.Contains(c.Message, s.step) ||
					(!s.stalled && c.Reason != v1alpha1.ReasonProgressingWithRetry) {
					t.Errorf("%s %+v, want True saying %q", progress, c, s.step)
				}
				if c := meta.FindStatusCondition(conds, other); c != nil {
					t.Errorf("%s present: %+v", other, c)
				}
			}
			if w := warnings(); len(w) != 1 || !strings.HasPrefix(w[0], "Warning "+s.reason+" ") || !strings.Contains(w[0], s.step) {
				t.Errorf("Warning Events %q, want one %s saying %q", w, s.reason, s.step)
			}
		})
	}

	// Every step works again: the promotion the failed write did not record is recorded (it
	// is not carried out again), and no failure is reported.
	cached()
	if _, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: key}); err != nil {
		t.Fatalf("Reconcile after the failures: %v", err)
	}
	got := current()
	g.Expect(meta.IsStatusConditionTrue(got.Status.Conditions, v1alpha1.ConditionReady)).To(BeTrue(), "%+v", got.Status.Conditions)
	g.Expect(meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionReconciling)).To(BeNil())
	g.Expect(meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionStalled)).To(BeNil())
	g.Expect(envStatus(got, "dev").LastPromotion).NotTo(BeNil())
	g.Expect(envStatus(got, "dev").LastPromotion.Revision).To(Equal(tag))
	g.Expect(notified.Load()).To(Equal(int32(1)), "notifications sent")
	g.Expect(warnings()).To(BeEmpty())

	// And the verified pipeline: the run of 1 is collected now, 2 is verified, nothing fails.
	cachedOf(vkey)
	if _, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: vkey}); err != nil {
		t.Fatalf("Reconcile of the verified pipeline after the failures: %v", err)
	}
	got = currentOf(vkey)
	g.Expect(meta.IsStatusConditionTrue(got.Status.Conditions, v1alpha1.ConditionReady)).To(BeTrue(), "%+v", got.Status.Conditions)
	g.Expect(meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionReconciling).Message).To(Equal("verifying 2 in dev"))
	g.Expect(envStatus(got, "dev").LastVerified).To(Equal("1"))
	g.Expect(apierrors.IsNotFound(mgmt.Client.Get(ctx, smokeRun("1"), &batchv1.Job{}))).To(BeTrue(), "the run of 1 is not collected")
	g.Expect(mgmt.Client.Get(ctx, smokeRun("2"), &batchv1.Job{})).To(Succeed())
	g.Expect(warnings()).To(BeEmpty())
}
