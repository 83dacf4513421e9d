//go:build !unit

package freeze_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/freeze"
	"github.com/release-controller/release-controller/internal/manager"
	"github.com/release-controller/release-controller/internal/releaselog"
	"github.com/release-controller/release-controller/internal/testenv"
)

// TestFailurePoints makes each step of the freeze reconciler fail in turn, against the API
// server (a spec that cannot be read, a release log and a status write that fail), and checks
// the one failure path: Reconcile returns the error (terminal for the spec), Ready is False
// naming the step with the failure's reason, Stalled (for the spec) or Reconciling
// (ProgressingWithRetry) says so, and exactly one Warning Event has the failure's reason. A
// start the release log did not take is not shown as one either: the next pass logs it. The
// reconciler runs without its controller: only the test calls Reconcile.
func TestFailurePoints(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	g := NewWithT(t)
	logNS, ns := env.Namespace(t), env.Namespace(t)
	f := &v1alpha1.ReleaseFreeze{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "weekend"},
		Spec: v1alpha1.ReleaseFreezeSpec{Reason: "weekend", Schedule: &v1alpha1.FreezeSchedule{
			Cron: "0 18 * * 5", Duration: metav1.Duration{Duration: 63 * time.Hour}, TimeZone: "Mars/Olympus_Mons"}}}
	g.Expect(env.Client.Create(ctx, f)).To(Succeed())
	key := client.ObjectKeyFromObject(f)

	mgr, err := manager.New(env.Config, manager.Options{MetricsAddr: "0", ProbeAddr: "0", SkipControllerNameValidation: true,
		ReleaseLog: releaselog.Options{Namespace: logNS}})
	if err != nil {
		t.Fatal(err)
	}
	var failLog, failStatus atomic.Bool
	logClient := testenv.FailingClient(mgr.GetClient(), interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if _, ok := obj.(*v1alpha1.ReleaseLog); ok && failLog.Load() {
				return errors.New("the release log's day is refused")
			}
			return c.Create(ctx, obj, opts...)
		},
	})
	recorder := events.NewFakeRecorder(100)
	r := &freeze.Reconciler{Events: recorder, Log: releaselog.NewWriter(logClient, mgr.GetAPIReader(), releaselog.Options{Namespace: logNS})}
	r.Client = testenv.FailingClient(mgr.GetClient(), interceptor.Funcs{
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
			if failStatus.Load() {
				return errors.New("etcd is full")
			}
			return c.SubResource(sub).Patch(ctx, obj, patch, opts...)
		},
	})
	if err := r.SetupWithoutController(mgr); err != nil {
		t.Fatal(err)
	}
	testenv.Run(t, mgr)

	current := func() *v1alpha1.ReleaseFreeze {
		var f v1alpha1.ReleaseFreeze
		g.Expect(env.Client.Get(ctx, key, &f)).To(Succeed())
		return &f
	}
	// cached waits until the cache holds the freeze as the API server does.
	cached := func() {
		t.Helper()
		g.Eventually(func(g Gomega) {
			var fromCache v1alpha1.ReleaseFreeze
			g.Expect(mgr.GetClient().Get(ctx, key, &fromCache)).To(Succeed())
			g.Expect(fromCache.ResourceVersion).To(Equal(current().ResourceVersion))
		}).WithTimeout(waitTimeout).Should(Succeed())
	}
	reconcileFreeze := func() error {
		_, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: key}, &v1alpha1.ReleaseFreeze{})
		return err
	}
	toStopTheLine := func(on bool) {
		if !on {
			return
		}
		f := current()
		f.Spec.Schedule = nil
		g.Expect(env.Client.Update(ctx, f)).To(Succeed())
	}

	steps := []struct {
		name    string
		set     func(on bool)
		reason  string // of Ready and the Event
		step    string // in Ready's message and the Event's note
		stalled bool
		// written: the status says the failure (false: the status write is what failed).
		written bool
	}{
		{"a time zone that does not exist", func(bool) {}, v1alpha1.ReasonInvalidFreeze,
			`reading the freeze: spec.schedule.timeZone: unknown time zone "Mars/Olympus_Mons"`, true, true},
		{"logging the start", func(on bool) { toStopTheLine(on); failLog.Store(on) }, v1alpha1.EventReleaseLogFailed,
			"logging the freeze's start: ", false, true},
		{"writing the status", failStatus.Store, v1alpha1.ReasonReconcileFailed,
			"writing the status: etcd is full", false, false},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			cached()
			s.set(true)
			cached()
			before := current()
			err := reconcileFreeze()
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
				testenv.CheckFailed(t, conds, s.reason, s.step, s.stalled)
				if meta.IsStatusConditionTrue(conds, v1alpha1.ConditionFreezeActive) {
					t.Errorf("Active is True though its start was not logged: %+v", conds)
				}
			}
			if w := testenv.Warnings(recorder); len(w) != 1 || !strings.HasPrefix(w[0], "Warning "+s.reason+" ") || !strings.Contains(w[0], s.step) {
				t.Errorf("Warning Events %q, want one %s saying %q", w, s.reason, s.step)
			}
		})
	}

	// Every step works again: the start is logged and shown, and no failure is reported.
	cached()
	g.Expect(reconcileFreeze()).To(Succeed())
	got := current()
	g.Expect(meta.IsStatusConditionTrue(got.Status.Conditions, v1alpha1.ConditionFreezeActive)).To(BeTrue(), "%+v", got.Status.Conditions)
	g.Expect(meta.IsStatusConditionTrue(got.Status.Conditions, v1alpha1.ConditionReady)).To(BeTrue(), "%+v", got.Status.Conditions)
	g.Expect(meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionReconciling)).To(BeNil())
	g.Expect(meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionStalled)).To(BeNil())
	g.Expect(freezeEntries(t, logNS, ns+"/weekend")).To(HaveLen(1))
	g.Expect(testenv.Warnings(recorder)).To(BeEmpty())
}
