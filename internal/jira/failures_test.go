//go:build !unit

package jira_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/changelog"
	"github.com/release-controller/release-controller/internal/jira"
	"github.com/release-controller/release-controller/internal/jira/jiratest"
	"github.com/release-controller/release-controller/internal/manager"
	"github.com/release-controller/release-controller/internal/testenv"
)

// failingChangeLogs fails every changelog while fail is set.
type failingChangeLogs struct {
	changelog.PayloadChangeLogs
	fail *atomic.Bool
}

func (f failingChangeLogs) ChangeLog(ctx context.Context, from, to *v1alpha1.ReleasePayload) (*changelog.ChangeLog, error) {
	if f.fail.Load() {
		return nil, errors.New("the git server is down")
	}
	return f.PayloadChangeLogs.ChangeLog(ctx, from, to)
}

// TestFailurePoints makes each step of the Jira reconciler fail in turn, against the API
// server, a local Jira and a git repository, and checks the one failure path: Reconcile
// returns the error (a terminal one when only someone changing Jira helps),
// PayloadIssuesVerified is False naming the step, and exactly one Warning Event has the
// failure's reason.
func TestFailurePoints(t *testing.T) {
	ns := env.Namespace(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv := jiratest.Start(t)
	srv.AddIssue("OCPBUGS-1", "NEW") // no way to VERIFIED from NEW
	prod := newProduct(t)
	c0 := prod.commit("Start")
	c1 := prod.commit("OCPBUGS-1: fix it")
	createStream(t, ns, srv.URL, "jira-token")
	createAccepted(t, prod.payload(ns, tag0, c0))
	createAccepted(t, prod.payload(ns, tag1, c1))

	mgr, err := manager.New(env.Config, manager.Options{MetricsAddr: "0", ProbeAddr: "0", Namespace: ns, SkipControllerNameValidation: true})
	if err != nil {
		t.Fatal(err)
	}
	var failList, failPatch, failChangeLog atomic.Bool
	r := newReconciler(t)
	r.ChangeLogs = failingChangeLogs{r.ChangeLogs, &failChangeLog}
	recorder := events.NewFakeRecorder(100)
	r.Events = recorder
	r.Client = testenv.FailingClient(mgr.GetClient(), interceptor.Funcs{
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			if _, ok := list.(*v1alpha1.ReleasePayloadList); ok && failList.Load() {
				return errors.New("the cache is gone")
			}
			return c.List(ctx, list, opts...)
		},
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
			if failPatch.Load() {
				return errors.New("etcd is full")
			}
			return c.SubResource(sub).Patch(ctx, obj, patch, opts...)
		},
	})
	if err := r.Setup(ctx, mgr); err != nil {
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

	key := types.NamespacedName{Namespace: ns, Name: tag1}
	// cached waits until the cache holds the payload as the API server does, so that each
	// pass starts from the status the previous one wrote.
	cached := func() {
		t.Helper()
		NewWithT(t).Eventually(func(g Gomega) {
			var direct, fromCache v1alpha1.ReleasePayload
			g.Expect(env.Client.Get(ctx, key, &direct)).To(Succeed())
			g.Expect(mgr.GetClient().Get(ctx, key, &fromCache)).To(Succeed())
			g.Expect(fromCache.ResourceVersion).To(Equal(direct.ResourceVersion))
		}).WithTimeout(waitTimeout).Should(Succeed())
	}
	condition := func() *metav1.Condition {
		var p v1alpha1.ReleasePayload
		if err := env.Client.Get(ctx, key, &p); err != nil {
			t.Fatal(err)
		}
		return meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ConditionPayloadIssuesVerified)
	}

	steps := []struct {
		name     string
		set      func(on bool)
		reason   string // of the condition and the Event
		step     string // in the condition's message and the Event's note
		terminal bool
		// written: the condition says the failure (false: the status write is what failed).
		written bool
	}{
		{"listing the accepted payloads", failList.Store, v1alpha1.ReasonChangeLogUnavailable,
			"finding the previous accepted payload: listing the accepted payloads of stream nightly: the cache is gone", false, true},
		{"computing the changelog", failChangeLog.Store, v1alpha1.ReasonChangeLogUnavailable,
			"computing the changelog from " + tag0 + ": the git server is down", false, true},
		{"reading the token Secret", func(bool) {}, v1alpha1.ReasonJiraMisconfigured,
			"the token Secret jira-token does not exist", false, true},
		{"moving an issue Jira has no transition for", func(on bool) {
			if on {
				createSecret(t, ns, "jira-token", srv.URL, map[string]string{jira.SecretKeyToken: srv.Token})
			} else {
				srv.AddIssue("OCPBUGS-1", "ON_QA")
			}
		}, v1alpha1.ReasonIssuesNotVerified, "no transition from NEW to VERIFIED", true, true},
		{"writing the status", failPatch.Store, v1alpha1.ReasonReconcileFailed,
			"writing the Jira verification status: etcd is full", false, false},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			cached()
			s.set(true)
			before := condition()
			_, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: key})
			s.set(false)
			if err == nil || !strings.Contains(err.Error(), s.step) {
				t.Fatalf("Reconcile returned %v, want an error saying %q", err, s.step)
			}
			if terminal := errors.Is(err, reconcile.TerminalError(nil)); terminal != s.terminal {
				t.Errorf("terminal: %v, want %v (%v)", terminal, s.terminal, err)
			}
			c := condition()
			switch {
			case !s.written:
				if !sameCondition(c, before) {
					t.Errorf("the condition changed to %+v though its write failed", c)
				}
			case c == nil || c.Status != metav1.ConditionFalse || c.Reason != s.reason || !strings.Contains(c.Message, s.step):
				t.Errorf("PayloadIssuesVerified %+v, want False %s saying %q", c, s.reason, s.step)
			}
			warnings := testenv.Warnings(recorder)
			if len(warnings) != 1 || !strings.HasPrefix(warnings[0], "Warning "+s.reason+" ") || !strings.Contains(warnings[0], s.step) {
				t.Errorf("Warning Events %q, want one %s saying %q", warnings, s.reason, s.step)
			}
		})
	}

	// With every step working again the issue is verified, and no failure is reported.
	cached()
	if _, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: key}); err != nil {
		t.Fatalf("Reconcile after the failures: %v", err)
	}
	if c := condition(); c == nil || c.Status != metav1.ConditionTrue || c.Reason != v1alpha1.ReasonIssuesVerified {
		t.Fatalf("PayloadIssuesVerified %+v, want True", c)
	}
}

// sameCondition compares two conditions, nil included.
func sameCondition(a, b *metav1.Condition) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}
