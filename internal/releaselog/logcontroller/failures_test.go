//go:build !unit

package logcontroller_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap/zapcore"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/config/crd"
	"github.com/release-controller/release-controller/internal/releaselog"
	"github.com/release-controller/release-controller/internal/releaselog/logcontroller"
	"github.com/release-controller/release-controller/internal/testenv"
	"github.com/release-controller/release-controller/internal/verdict/verdicttest"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(zapcore.ErrorLevel)))
	// The days here are far from the API server's now, which the release log's admission
	// policy refuses: the reconcilers meet objects that predate the policy.
	testenv.MainWith(m, testenv.Options{SkipPolicies: []string{crd.ReleaseLogPolicy}}, &env, nil)
}

// watchless is a client as the interceptor takes it.
type watchless struct{ client.Client }

func (watchless) Watch(context.Context, client.ObjectList, ...client.ListOption) (watch.Interface, error) {
	return nil, errors.New("not watched through this client")
}

// failing is the API server's client with every call of kind failing while its flag is set.
type failing struct {
	deletes, statusPatches, writes atomic.Bool
}

func (f *failing) client() client.Client {
	refused := errors.New("etcd is full")
	return interceptor.NewClient(watchless{env.Client}, interceptor.Funcs{
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			if f.deletes.Load() {
				return refused
			}
			return c.Delete(ctx, obj, opts...)
		},
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
			if f.statusPatches.Load() {
				return refused
			}
			return c.SubResource(sub).Patch(ctx, obj, patch, opts...)
		},
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if f.writes.Load() {
				return refused
			}
			return c.Create(ctx, obj, opts...)
		},
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			if f.writes.Load() {
				return refused
			}
			return c.Patch(ctx, obj, patch, opts...)
		},
	})
}

// TestFailurePoints makes each step of the release log's reconcilers fail in turn against
// the API server — deleting an expired day, writing a day's status, logging a verdict — and
// checks the one failure path: Reconcile returns the error for a retry, and exactly one
// Warning Event has the failure's reason and step. (A day has no condition to say it: its
// status is its count and the Valid condition of its name; the projector only reads the cache.)
func TestFailurePoints(t *testing.T) {
	ns := env.Namespace(t)
	ctx := context.Background()
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakeClock(now)
	var fail failing
	recorder := events.NewFakeRecorder(100)
	days := &logcontroller.Reconciler{Client: fail.client(), TTL: 7 * 24 * time.Hour, FutureSkew: time.Hour, Clock: clk}
	days.SetEvents(recorder)
	opts := releaselog.Options{Namespace: ns, Clock: clk}.WithDefaults(ns)
	payloads := logcontroller.NewPayloadLogger(env.Client, releaselog.NewWriter(fail.client(), env.Client, opts), recorder)

	createDay := func(day string) ctrl.Request {
		l := &v1alpha1.ReleaseLog{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: releaselog.ObjectName(day)}}
		if err := env.Client.Create(ctx, l); err != nil {
			t.Fatal(err)
		}
		return ctrl.Request{NamespacedName: client.ObjectKeyFromObject(l)}
	}
	payload := &v1alpha1.ReleasePayload{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "4.15.0-0.nightly-2026-11-23-100000"},
		Spec: v1alpha1.ReleasePayloadSpec{
			PayloadCoordinates:    v1alpha1.PayloadCoordinates{Stream: "nightly", Tag: "4.15.0-0.nightly-2026-11-23-100000"},
			PayloadCreationConfig: v1alpha1.PayloadCreationConfig{Repository: "registry.example.com/product/release"},
			Components: []v1alpha1.PinnedComponent{{Name: "api",
				Image: "registry.example.com/product/api@sha256:0000000000000000000000000000000000000000000000000000000000000000"}},
		},
	}
	if err := env.Client.Create(ctx, payload); err != nil {
		t.Fatal(err)
	}
	payload.Status = v1alpha1.ReleasePayloadStatus{
		Phase:                    v1alpha1.PhaseAccepted,
		ReleaseCreationJobResult: v1alpha1.ReleaseCreationJobResult{Status: v1alpha1.CreationJobSuccess},
		Conditions: []metav1.Condition{{Type: v1alpha1.ConditionPayloadAccepted, Status: metav1.ConditionTrue,
			Reason: v1alpha1.ReasonBlockingJobsSucceeded, Message: "all blocking jobs succeeded", LastTransitionTime: metav1.NewTime(now.Add(-time.Hour))}},
	}
	verdicttest.Earn(payload, v1alpha1.PhaseAccepted)
	if err := env.Client.Status().Update(ctx, payload); err != nil {
		t.Fatal(err)
	}

	steps := []struct {
		name       string
		flag       *atomic.Bool
		reconciler reconcile.Reconciler
		req        ctrl.Request
		reason     string
		step       string
	}{
		{"deleting an expired day", &fail.deletes, days, createDay("2026-11-01"),
			v1alpha1.ReasonReconcileFailed, "deleting the expired day: etcd is full"},
		{"writing a day's status", &fail.statusPatches, days, createDay("2026-11-22"),
			v1alpha1.ReasonReconcileFailed, "writing the day's status: etcd is full"},
		{"logging a verdict", &fail.writes, payloads, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(payload)},
			v1alpha1.EventReleaseLogFailed, "logging the Accepted verdict"},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			s.flag.Store(true)
			_, err := s.reconciler.Reconcile(ctx, s.req)
			s.flag.Store(false)
			if err == nil || !strings.Contains(err.Error(), s.step) || errors.Is(err, reconcile.TerminalError(nil)) {
				t.Errorf("Reconcile returned %v, want an error to retry saying %q", err, s.step)
			}
			warnings := testenv.Warnings(recorder)
			if len(warnings) != 1 || !strings.HasPrefix(warnings[0], "Warning "+s.reason+" ") || !strings.Contains(warnings[0], s.step) {
				t.Errorf("Warning Events %q, want one %s saying %q", warnings, s.reason, s.step)
			}
			// The step works again: the retry succeeds.
			if _, err := s.reconciler.Reconcile(ctx, s.req); err != nil {
				t.Errorf("the retry failed: %v", err)
			}
		})
	}
}
