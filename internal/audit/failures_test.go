//go:build !unit

package audit_test

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/remote"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/audit"
	"github.com/release-controller/release-controller/internal/manager"
	"github.com/release-controller/release-controller/internal/registryclient"
	"github.com/release-controller/release-controller/internal/testenv"
)

// refusing is a registry transport that refuses every request while down is set.
type refusing struct{ down *atomic.Bool }

func (t refusing) RoundTrip(req *http.Request) (*http.Response, error) {
	if t.down.Load() {
		return nil, errors.New("dial tcp: connection refused")
	}
	return http.DefaultTransport.RoundTrip(req)
}

// TestFailurePoints makes each step of the audit fail in turn — the registry read, the
// signature store for the audit record, for the public keys and for the signature, the status
// write — against the API server, a registry and a store, and checks the one failure path:
// Reconcile returns the error, the condition it is about is False with the failure's reason
// and step, and exactly one Warning Event has the reason.
func TestFailurePoints(t *testing.T) {
	ns := env.Namespace(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dir := filepath.Join(t.TempDir(), "store")
	store := openStore(t, dir)
	// breakStore replaces the store's folder by a file, and mends it.
	breakStore := func(broken bool) {
		t.Helper()
		var err error
		if broken {
			if err = os.Rename(dir, dir+".away"); err == nil {
				err = os.WriteFile(dir, []byte("the bucket is down"), 0o600)
			}
		} else if err = os.Remove(dir); err == nil {
			err = os.Rename(dir+".away", dir)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	p := acceptedPayload(t, ns)

	mgr, err := ctrl.NewManager(env.Config, ctrl.Options{
		Scheme:  manager.NewScheme(),
		Metrics: metricsserver.Options{BindAddress: "0"},
		Cache:   cache.Options{DefaultNamespaces: map[string]cache.Config{ns: {}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	var registryDown, failPatch atomic.Bool
	recorder := events.NewFakeRecorder(100)
	r := &audit.Reconciler{
		Options:  audit.Options{Store: store, KeySecret: types.NamespacedName{Namespace: ns, Name: "signing-key"}, Burst: 100, Interval: time.Second},
		Registry: registryclient.New(remote.WithTransport(refusing{&registryDown})),
		Events:   recorder,
	}
	r.Client = testenv.FailingClient(mgr.GetClient(), interceptor.Funcs{
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
			if failPatch.Load() {
				return errors.New("etcd is full")
			}
			return c.SubResource(sub).Patch(ctx, obj, patch, opts...)
		},
	})
	r.Setup(mgr)
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager stopped with: %v", err)
		}
	})

	key := client.ObjectKeyFromObject(p)
	payload := func() *v1alpha1.ReleasePayload {
		var got v1alpha1.ReleasePayload
		if err := env.Client.Get(ctx, key, &got); err != nil {
			t.Fatal(err)
		}
		return &got
	}
	// reconcile waits until the cache holds the payload as the API server does, so that each
	// pass starts from the status the previous one wrote, and reconciles it once.
	reconcileOnce := func() (ctrl.Result, error) {
		t.Helper()
		NewWithT(t).Eventually(func(g Gomega) {
			var fromCache v1alpha1.ReleasePayload
			g.Expect(mgr.GetClient().Get(ctx, key, &fromCache)).To(Succeed())
			g.Expect(fromCache.ResourceVersion).To(Equal(payload().ResourceVersion))
		}).WithTimeout(waitTimeout).Should(Succeed())
		return r.Reconcile(ctx, ctrl.Request{NamespacedName: key})
	}
	warnings := func() []string { return testenv.Warnings(recorder) }
	// failed checks a pass that failed at step: the error, the conditions (each of conds
	// False with reason, naming the step; none when the status write failed) and the Event.
	failed := func(t *testing.T, reason, step string, conds ...string) {
		t.Helper()
		before := payload().Status.Conditions
		_, err := reconcileOnce()
		if err == nil || !strings.Contains(err.Error(), step) || errors.Is(err, reconcile.TerminalError(nil)) {
			t.Errorf("Reconcile returned %v, want an error to retry saying %q", err, step)
		}
		after := payload().Status.Conditions
		for _, typ := range conds {
			if c := meta.FindStatusCondition(after, typ); c == nil || c.Status != metav1.ConditionFalse || !strings.Contains(c.Message, step) {
				t.Errorf("%s %+v, want False saying %q", typ, c, step)
			}
		}
		if len(conds) == 0 && !equalConditions(before, after) {
			t.Errorf("the conditions changed to %+v though their write failed", after)
		}
		if w := warnings(); len(w) != 1 || !strings.HasPrefix(w[0], "Warning "+reason+" ") || !strings.Contains(w[0], step) {
			t.Errorf("Warning Events %q, want one %s saying %q", w, reason, step)
		}
	}

	t.Run("reading the payload back", func(t *testing.T) {
		registryDown.Store(true)
		defer registryDown.Store(false)
		failed(t, v1alpha1.ReasonAuditError, "auditing the payload: resolving", v1alpha1.ConditionPayloadAudited)
		if c := meta.FindStatusCondition(payload().Status.Conditions, v1alpha1.ConditionPayloadAudited); c == nil || c.Reason != v1alpha1.ReasonAuditError {
			t.Errorf("PayloadAudited %+v, want AuditError", c)
		}
	})
	t.Run("storing the audit record", func(t *testing.T) {
		breakStore(true)
		defer breakStore(false)
		failed(t, v1alpha1.ReasonSignatureStoreError, "auditing the payload: storing the audit record",
			v1alpha1.ConditionPayloadAudited, v1alpha1.ConditionPayloadSigned)
		if c := meta.FindStatusCondition(payload().Status.Conditions, v1alpha1.ConditionPayloadSigned); c == nil || c.Reason != v1alpha1.ReasonSignatureStoreError {
			t.Errorf("PayloadSigned %+v, want SignatureStoreError", c)
		}
	})

	// The audit passes; without the key's Secret the payload waits for one, which is no failure.
	if res, err := reconcileOnce(); err != nil || res.RequeueAfter == 0 {
		t.Fatalf("audit without a key: %v, %+v", err, res)
	}
	if w := warnings(); len(w) != 1 || !strings.HasPrefix(w[0], "Warning "+v1alpha1.ReasonNoSigningKey) {
		t.Fatalf("Warning Events %q, want the one saying there is no key", w)
	}
	newKey(t, ns, "signing-key")

	t.Run("publishing the public keys", func(t *testing.T) {
		breakStore(true)
		defer breakStore(false)
		failed(t, v1alpha1.ReasonSignatureStoreError, "publishing the public keys", v1alpha1.ConditionPayloadSigned)
	})
	t.Run("writing the status", func(t *testing.T) {
		failPatch.Store(true)
		defer failPatch.Store(false)
		failed(t, v1alpha1.ReasonReconcileFailed, "writing the audit status")
	})

	// Every step works again: the payload is signed (by the signature the failed write left).
	if _, err := reconcileOnce(); err != nil {
		t.Fatalf("Reconcile after the failures: %v", err)
	}
	st := payload().Status.Conditions
	if !meta.IsStatusConditionTrue(st, v1alpha1.ConditionPayloadAudited) || !meta.IsStatusConditionTrue(st, v1alpha1.ConditionPayloadSigned) {
		t.Fatalf("conditions %+v, want audited and signed", st)
	}
	if w := warnings(); len(w) != 0 {
		t.Fatalf("Warning Events %q after the failures", w)
	}
}

func equalConditions(a, b []metav1.Condition) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
