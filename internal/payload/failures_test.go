//go:build !unit

package payload_test

import (
	"cmp"
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/jobcache"
	"github.com/release-controller/release-controller/internal/jobcontract"
	"github.com/release-controller/release-controller/internal/manager"
	"github.com/release-controller/release-controller/internal/payload"
	"github.com/release-controller/release-controller/internal/testenv"
)

// TestFailurePoints makes each step of the payload reconciler fail in turn against an API
// server (a client that fails one call, a verification naming a cluster this controller
// cannot reach) and checks the one failure path: Reconcile returns the error, Ready is False
// naming the step, Reconciling says ProgressingWithRetry, the verdict conditions stay, and
// exactly one Warning Event has the failure's reason. The reconciler runs without its
// controller, on an API server of the test's own (the suite's manager would reconcile the
// payloads too): only the test calls Reconcile.
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
	const building, remote = "4.15.0-0.nightly-2026-11-28-120000", "4.15.0-0.nightly-2026-11-28-120100"
	g.Expect(fenv.Client.Create(ctx, newPayload(ns, building, jobVerification("e2e")))).To(Succeed())
	onCluster := jobVerification("e2e")
	onCluster.Cluster = &v1alpha1.VerificationCluster{SecretRef: "build-farm"}
	g.Expect(fenv.Client.Create(ctx, newPayload(ns, remote, onCluster))).To(Succeed())
	// The creation job of the first payload: reading it means listing its pods too.
	g.Expect(fenv.Client.Create(ctx, &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "create-" + building,
		Labels: jobLabels(building, v1alpha1.JobTypeCreation, "")}, Spec: podJobSpec()})).To(Succeed())

	mgr, err := manager.New(fenv.Config, manager.Options{MetricsAddr: "0", ProbeAddr: "0", SkipControllerNameValidation: true})
	if err != nil {
		t.Fatal(err)
	}
	jobs, err := jobcache.New(mgr, jobcache.Options{Selector: jobcontract.Selector()})
	if err != nil {
		t.Fatal(err)
	}
	g.Expect(mgr.Add(jobs)).To(Succeed())
	g.Expect(payload.IndexPods(ctx, mgr.GetFieldIndexer())).To(Succeed())
	var failPods, failStatus atomic.Bool
	recorder := events.NewFakeRecorder(100)
	r := &payload.Reconciler{Events: recorder, Jobs: jobs}
	r.Client = testenv.FailingClient(mgr.GetClient(), interceptor.Funcs{
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			if _, ok := list.(*corev1.PodList); ok && failPods.Load() {
				return errors.New("the cache is gone")
			}
			return c.List(ctx, list, opts...)
		},
		SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			if failStatus.Load() {
				return errors.New("etcd is full")
			}
			return c.SubResource(sub).Update(ctx, obj, opts...)
		},
	})
	r.SetupWithoutController(mgr)
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager stopped with: %v", err)
		}
	})

	key := func(tag string) client.ObjectKey { return client.ObjectKey{Namespace: ns, Name: tag} }
	current := func(tag string) *v1alpha1.ReleasePayload {
		var p v1alpha1.ReleasePayload
		if err := fenv.Client.Get(ctx, key(tag), &p); err != nil {
			t.Fatal(err)
		}
		return &p
	}
	// cached waits until the cache holds the payload as the API server does, and the job
	// cache its creation job.
	cached := func(tag string) {
		t.Helper()
		NewWithT(t).Eventually(func(g Gomega) {
			var fromCache v1alpha1.ReleasePayload
			g.Expect(mgr.GetClient().Get(ctx, key(tag), &fromCache)).To(Succeed())
			g.Expect(fromCache.ResourceVersion).To(Equal(current(tag).ResourceVersion))
			records, err := jobs.ByPayload(ctx, ns, building)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(records).To(HaveLen(1))
		}).WithTimeout(waitTimeout).Should(Succeed())
	}
	warnings := func() []string { return testenv.Warnings(recorder) }

	// The first reconcile records the creation job: Pending, Reconciling while it builds.
	cached(building)
	_, err = r.Reconcile(ctx, ctrl.Request{NamespacedName: key(building)})
	g.Expect(err).NotTo(HaveOccurred())
	conds := current(building).Status.Conditions
	g.Expect(meta.FindStatusCondition(conds, v1alpha1.ConditionReconciling)).NotTo(BeNil())
	g.Expect(meta.FindStatusCondition(conds, v1alpha1.ConditionReconciling).Message).To(ContainSubstring("by the creation job create-" + building))
	g.Expect(warnings()).To(BeEmpty())

	steps := []struct {
		name, tag string
		set       func(on bool)
		step      string // in Ready's message and the Event's note
		// written: the status says the failure (false: the status write is what failed).
		written bool
	}{
		{"reading the creation job's pods", building, failPods.Store, "reading the payload's jobs: listing pods of payload", true},
		{"writing the status", building, failStatus.Store, "writing the status: etcd is full", false},
		{"a verification on a cluster this controller cannot reach", remote, func(bool) {},
			"reading the payload's jobs on its verification clusters: the jobs of " + ns + "/" + remote + " name clusters, and this controller runs no clusters manager", true},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			cached(s.tag)
			s.set(true)
			before := current(s.tag)
			_, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: key(s.tag)})
			s.set(false)
			if err == nil || !strings.Contains(err.Error(), s.step) {
				t.Fatalf("Reconcile returned %v, want an error saying %q", err, s.step)
			}
			after := current(s.tag)
			if !s.written {
				if after.ResourceVersion != before.ResourceVersion {
					t.Errorf("the status changed to %+v though its write failed", after.Status)
				}
			} else {
				conds := after.Status.Conditions
				ready := meta.FindStatusCondition(conds, v1alpha1.ConditionReady)
				if ready == nil || ready.Status != metav1.ConditionFalse || ready.Reason != v1alpha1.ReasonReconcileFailed || !strings.Contains(ready.Message, s.step) {
					t.Errorf("Ready %+v, want False %s saying %q", ready, v1alpha1.ReasonReconcileFailed, s.step)
				}
				if c := meta.FindStatusCondition(conds, v1alpha1.ConditionReconciling); c == nil || c.Reason != v1alpha1.ReasonProgressingWithRetry || !strings.Contains(c.Message, s.step) {
					t.Errorf("Reconciling %+v, want ProgressingWithRetry saying %q", c, s.step)
				}
				if c := meta.FindStatusCondition(conds, v1alpha1.ConditionStalled); c != nil {
					t.Errorf("Stalled present: %+v", c)
				}
				// The verdict stays; a payload without a status gets Pending.
				if want := cmp.Or(before.Status.Phase, v1alpha1.PhasePending); after.Status.Phase != want {
					t.Errorf("the phase moved from %q to %q on a failure", before.Status.Phase, after.Status.Phase)
				}
			}
			if w := warnings(); len(w) != 1 || !strings.HasPrefix(w[0], "Warning "+v1alpha1.ReasonReconcileFailed+" ") || !strings.Contains(w[0], s.step) {
				t.Errorf("Warning Events %q, want one %s saying %q", w, v1alpha1.ReasonReconcileFailed, s.step)
			}
		})
	}

	// Every step works again: the payload's status is computed from its jobs, and nothing is
	// reported.
	cached(building)
	if _, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: key(building)}); err != nil {
		t.Fatalf("Reconcile after the failures: %v", err)
	}
	got := current(building)
	g.Expect(got.Status.Phase).To(Equal(v1alpha1.PhasePending))
	g.Expect(meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionReconciling).Reason).To(Equal(v1alpha1.ReasonProgressing))
	g.Expect(meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionReady).Reason).To(Equal(v1alpha1.ReasonPayloadNotCreated))
	g.Expect(warnings()).To(BeEmpty())
}
