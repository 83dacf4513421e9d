//go:build !unit

package stream_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/jobcache"
	"github.com/release-controller/release-controller/internal/jobcontract"
	"github.com/release-controller/release-controller/internal/manager"
	"github.com/release-controller/release-controller/internal/registryclient"
	"github.com/release-controller/release-controller/internal/stream"
	"github.com/release-controller/release-controller/internal/testenv"
)

// TestFailurePoints makes steps of the stream reconciler fail in turn against an API server
// (a client that fails one call, a source stream that is not found) and checks the one
// failure path: Reconcile returns the error (terminal for a stall), Ready is False naming the
// step with the failure's reason, Reconciling says ProgressingWithRetry (Stalled for the
// stall), and exactly one Warning Event has the failure's reason. The reconciler runs without
// its controller, on an API server of the test's own (the suite's manager would reconcile the
// stream too): only the test calls Reconcile.
func TestFailurePoints(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	fenv, err := testenv.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = fenv.Stop() })
	g := NewWithT(t)
	ns := fenv.Namespace(t)
	pushImage(t, repo(ns, "api")+":latest", nil)
	upgrade := jobVerification("upgrade")
	upgrade.UpgradeFrom = v1alpha1.UpgradeFromPrevious
	upgrade.From = &v1alpha1.UpgradeSourceStream{Stream: "stable"}
	for _, s := range []*v1alpha1.ReleaseStream{
		{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "stable"}, Spec: v1alpha1.ReleaseStreamSpec{TagPrefix: "4.14.0", PayloadRepository: repo(ns, "stable"),
			Components: []v1alpha1.ComponentSource{{Name: "api", Image: repo(ns, "api") + ":latest"}}}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "nightly"}, Spec: v1alpha1.ReleaseStreamSpec{TagPrefix: "4.15.0-0.nightly", PayloadRepository: repo(ns, "release"),
			MaxUnreadyReleases: 10, Verification: []v1alpha1.Verification{upgrade},
			Components: []v1alpha1.ComponentSource{{Name: "api", Image: repo(ns, "api") + ":latest"}}}},
	} {
		g.Expect(fenv.Client.Create(ctx, s)).To(Succeed())
	}
	key := client.ObjectKey{Namespace: ns, Name: "nightly"}

	mgr, err := manager.New(fenv.Config, manager.Options{MetricsAddr: "0", ProbeAddr: "0", SkipControllerNameValidation: true})
	if err != nil {
		t.Fatal(err)
	}
	jobs, err := jobcache.New(mgr, jobcache.Options{Selector: jobcontract.Selector()})
	if err != nil {
		t.Fatal(err)
	}
	g.Expect(mgr.Add(jobs)).To(Succeed())
	var failList, failPayloadCreate, failJobCreate, hideSource, failStatus atomic.Bool
	recorder := events.NewFakeRecorder(100)
	// A pass a minute after the one before: every component is imported, every tag is new.
	clock := clocktesting.NewFakePassiveClock(time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC))
	r := &stream.Reconciler{Events: recorder, Jobs: jobs, Clock: clock, ImportInterval: time.Second, Registry: registryclient.New(),
		BuildImage: "release-controller:test"}
	r.Client = testenv.FailingClient(mgr.GetClient(), interceptor.Funcs{
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			if _, ok := list.(*v1alpha1.ReleasePayloadList); ok && failList.Load() {
				return errors.New("the cache is gone")
			}
			return c.List(ctx, list, opts...)
		},
		Get: func(ctx context.Context, c client.WithWatch, k client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if _, ok := obj.(*v1alpha1.ReleaseStream); ok && k.Name == "stable" && hideSource.Load() {
				return apierrors.NewNotFound(v1alpha1.GroupVersion.WithResource("releasestreams").GroupResource(), k.Name)
			}
			return c.Get(ctx, k, obj, opts...)
		},
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			switch obj.(type) {
			case *v1alpha1.ReleasePayload:
				if failPayloadCreate.Load() {
					return errors.New("quota exceeded")
				}
			case *batchv1.Job:
				if failJobCreate.Load() {
					return errors.New("admission webhook refused")
				}
			}
			return c.Create(ctx, obj, opts...)
		},
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
			if _, ok := obj.(*v1alpha1.ReleaseStream); ok && failStatus.Load() {
				return errors.New("etcd is full")
			}
			return c.SubResource(sub).Patch(ctx, obj, patch, opts...)
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

	// cached waits until the cache holds the stream and its payloads as the API server does,
	// so that each pass starts from what the previous one wrote.
	cached := func() {
		t.Helper()
		NewWithT(t).Eventually(func(g Gomega) {
			var direct, fromCache v1alpha1.ReleaseStream
			g.Expect(fenv.Client.Get(ctx, key, &direct)).To(Succeed())
			g.Expect(mgr.GetClient().Get(ctx, key, &fromCache)).To(Succeed())
			g.Expect(fromCache.ResourceVersion).To(Equal(direct.ResourceVersion))
			var payloads, cachedPayloads v1alpha1.ReleasePayloadList
			g.Expect(fenv.Client.List(ctx, &payloads, client.InNamespace(ns))).To(Succeed())
			g.Expect(mgr.GetClient().List(ctx, &cachedPayloads, client.InNamespace(ns))).To(Succeed())
			g.Expect(cachedPayloads.Items).To(HaveLen(len(payloads.Items)))
			g.Expect(jobs.HasSynced()).To(BeTrue())
		}).WithTimeout(waitTimeout).Should(Succeed())
	}
	current := func() *v1alpha1.ReleaseStream {
		var s v1alpha1.ReleaseStream
		if err := fenv.Client.Get(ctx, key, &s); err != nil {
			t.Fatal(err)
		}
		return &s
	}
	warnings := func() []string { return testenv.Warnings(recorder) }
	pass := func() error {
		t.Helper()
		cached()
		clock.SetTime(clock.Now().Add(time.Minute))
		_, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: key})
		return err
	}

	// The first pass creates a payload and its creation job.
	g.Expect(pass()).To(Succeed())
	g.Expect(meta.IsStatusConditionTrue(current().Status.Conditions, v1alpha1.ConditionReady)).To(BeTrue(), "%+v", current().Status.Conditions)
	g.Expect(warnings()).To(BeEmpty())

	// newComponents moves the component's tag, so that the next pass creates a payload.
	newComponents := func() { pushImage(t, repo(ns, "api")+":latest", nil) }
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
		{"listing payloads", failList.Store, v1alpha1.ReasonReconcileFailed, "listing payloads: the cache is gone", false, true},
		{"creating a payload", func(on bool) {
			if on {
				newComponents()
			}
			failPayloadCreate.Store(on)
		}, v1alpha1.ReasonReconcileFailed, "creating payload 4.15.0-0.nightly-", false, true},
		{"creating a creation job (reported on the payload)", func(on bool) {
			if on {
				newComponents()
			}
			failJobCreate.Store(on)
		}, v1alpha1.ReasonReconcileFailed, "creating the build job of 4.15.0-0.nightly-", false, true},
		{"an upgrade source stream that does not exist", hideSource.Store, v1alpha1.ReasonUpgradeSourceMissing,
			"an upgrade verification starts from stream stable, which does not exist", true, true},
		{"writing the status", func(on bool) {
			if on {
				newComponents() // the status changes: there is something to write
			}
			failStatus.Store(on)
		}, v1alpha1.ReasonReconcileFailed, "writing the status: etcd is full", false, false},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			s.set(true)
			before := current()
			err := pass()
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

	// Every step works again: the pass creates what the failed steps did not, and reports
	// nothing.
	if err := pass(); err != nil {
		t.Fatalf("Reconcile after the failures: %v", err)
	}
	got := current()
	g.Expect(meta.IsStatusConditionTrue(got.Status.Conditions, v1alpha1.ConditionReady)).To(BeTrue(), "%+v", got.Status.Conditions)
	g.Expect(meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionStalled)).To(BeNil())
	if c := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionReconciling); c == nil || c.Reason != v1alpha1.ReasonProgressing {
		t.Errorf("Reconciling %+v, want Progressing: the payloads are being built", c)
	}
	g.Expect(warnings()).To(BeEmpty())
}
