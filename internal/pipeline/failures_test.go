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
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/manager"
	"github.com/release-controller/release-controller/internal/pipeline"
	"github.com/release-controller/release-controller/internal/testenv"
	"github.com/release-controller/release-controller/internal/verdict/verdicttest"
)

// TestFailurePoints makes each step of the pipeline reconciler fail in turn, against the API
// server (a client that fails one call, a missing Secret), and checks the one failure path:
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

	mgr, err := manager.New(mgmt.Config, manager.Options{MetricsAddr: "0", ProbeAddr: "0", SkipControllerNameValidation: true})
	if err != nil {
		t.Fatal(err)
	}
	var failApp, failReview, failStream, failStatus atomic.Bool
	recorder := events.NewFakeRecorder(100)
	r := &pipeline.Reconciler{Events: recorder, DefaultServiceAccount: "default", AccessTTL: time.Millisecond}
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
	cached := func() {
		t.Helper()
		NewWithT(t).Eventually(func(g Gomega) {
			var direct, fromCache v1alpha1.Pipeline
			g.Expect(mgmt.Client.Get(ctx, key, &direct)).To(Succeed())
			g.Expect(mgr.GetClient().Get(ctx, key, &fromCache)).To(Succeed())
			g.Expect(fromCache.ResourceVersion).To(Equal(direct.ResourceVersion))
		}).WithTimeout(waitTimeout).Should(Succeed())
	}
	current := func() *v1alpha1.Pipeline {
		var p v1alpha1.Pipeline
		if err := mgmt.Client.Get(ctx, key, &p); err != nil {
			t.Fatal(err)
		}
		return &p
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
	}{
		{"an app no kind can be read of", failApp.Store, v1alpha1.EventInvalidApp,
			"reading the pipeline's app: appRef.apiVersion", true, true},
		{"asking whether the account may get the app", failReview.Store, v1alpha1.ReasonReconcileFailed,
			"checking whether the pipeline's account may get the app in " + pns, false, true},
		{"reading the source stream", failStream.Store, v1alpha1.ReasonReconcileFailed,
			"reading the source stream nightly: the cache is gone", false, true},
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
		}, v1alpha1.EventPromotionFailed, "promoting " + tag + " to dev: reading the key Secret notify-key", false, true},
		{"writing the status", failStatus.Store, v1alpha1.ReasonReconcileFailed,
			"writing the status: etcd is full", false, false},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			cached()
			s.set(true)
			before := current()
			_, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: key})
			s.set(false)
			if err == nil || !strings.Contains(err.Error(), s.step) {
				t.Fatalf("Reconcile returned %v, want an error saying %q", err, s.step)
			}
			if terminal := errors.Is(err, reconcile.TerminalError(nil)); terminal != s.stalled {
				t.Errorf("terminal: %v, want %v (%v)", terminal, s.stalled, err)
			}
			after := current()
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
}
