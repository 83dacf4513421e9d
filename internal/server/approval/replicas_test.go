//go:build !unit

package approval_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"go.uber.org/zap/zapcore"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/kubeauth"
	"github.com/release-controller/release-controller/internal/manager"
	"github.com/release-controller/release-controller/internal/pipeline/signature"
	"github.com/release-controller/release-controller/internal/server"
	"github.com/release-controller/release-controller/internal/server/approval"
	"github.com/release-controller/release-controller/internal/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(zapcore.ErrorLevel)))
	testenv.Main(m, &env, nil)
}

const waitTimeout = 30 * time.Second

// cachePipelines finds pipelines in a replica's own informer cache, as the api's catalog does.
type cachePipelines struct{ c cache.Cache }

func (p cachePipelines) Pipeline(namespace, name string) (*v1alpha1.Pipeline, bool) {
	var out v1alpha1.Pipeline
	if err := p.c.Get(context.Background(), types.NamespacedName{Namespace: namespace, Name: name}, &out); err != nil {
		return nil, false
	}
	return &out, true
}

// countingReader counts the reads that reach the API server through it.
type countingReader struct {
	client.Reader
	gets atomic.Int32
}

func (r *countingReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	r.gets.Add(1)
	return r.Reader.Get(ctx, key, obj, opts...)
}

// countingKeys counts the approval key reads.
type countingKeys struct {
	approval.Keys
	reads atomic.Int32
}

func (k *countingKeys) Key(ctx context.Context, p *v1alpha1.Pipeline, name string) ([]byte, error) {
	k.reads.Add(1)
	return k.Keys.Key(ctx, p, name)
}

// replica is one api server's approval route: an informer cache, a handler with its own
// memory of used signatures, served over HTTP.
type replica struct {
	URL  string
	live *countingReader
	keys *countingKeys
}

// startReplica starts a replica whose approval keys are read as defaultServiceAccount (empty:
// with the test's administrator rights) until the test ends.
func startReplica(t *testing.T, defaultServiceAccount string) *replica {
	t.Helper()
	return startReplicaWith(t, defaultServiceAccount, nil)
}

// startReplicaWith is startReplica with its handler configured by configure (Report, Log).
func startReplicaWith(t *testing.T, defaultServiceAccount string, configure func(*approval.Handler)) *replica {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	c, err := cache.New(env.Config, cache.Options{Scheme: manager.NewScheme()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.GetInformer(ctx, &v1alpha1.Pipeline{}); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- c.Start(ctx) }()
	if !c.WaitForCacheSync(ctx) {
		t.Fatal("the cache did not sync")
	}
	rep := &replica{
		live: &countingReader{Reader: env.Client},
		keys: &countingKeys{Keys: approval.NewTenantKeys(env.Config, env.Client, defaultServiceAccount)},
	}
	h := approval.NewHandler(env.Client, rep.live, cachePipelines{c}, rep.keys, kubeauth.NewReviewer(env.Client, kubeauth.Options{}))
	if configure != nil {
		configure(h)
	}
	s := server.New()
	approval.Register(s, h)
	srv := httptest.NewServer(s.Handler())
	rep.URL = srv.URL
	t.Cleanup(func() {
		srv.Close()
		cancel()
		if err := <-done; err != nil {
			t.Errorf("the replica's cache stopped: %v", err)
		}
	})
	return rep
}

// setup creates, in a namespace of its own, the approval key Secret "approvals" and the
// pipeline "web" whose environment prod asks for approval with it and waits for revision.
func setup(t *testing.T, key []byte, revision string, mutate func(*v1alpha1.Pipeline)) *v1alpha1.Pipeline {
	t.Helper()
	ctx := context.Background()
	ns := env.Namespace(t)
	g := NewWithT(t)
	g.Expect(env.Client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "approvals"},
		Data: map[string][]byte{v1alpha1.SecretKeyHMAC: key}})).To(Succeed())
	p := &v1alpha1.Pipeline{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
		Spec: v1alpha1.PipelineSpec{
			AppRef: v1alpha1.AppReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", Container: "web"},
			Environments: []v1alpha1.Environment{
				{Name: "dev", Targets: []v1alpha1.Target{{Namespace: ns}}},
				{Name: "prod", Targets: []v1alpha1.Target{{Namespace: ns + "-prod"}},
					Approval: &v1alpha1.Approval{SecretRef: &v1alpha1.SecretKeyReference{Name: "approvals"}}},
			},
		},
	}
	if mutate != nil {
		mutate(p)
	}
	g.Expect(env.Client.Create(ctx, p)).To(Succeed())
	wait(t, p, revision)
	return p
}

// wait makes prod of p wait for the approval of revision, as the controller would: a
// server-side apply of the environments' status without the approval route's part.
func wait(t *testing.T, p *v1alpha1.Pipeline, revision string) {
	t.Helper()
	waitFor(t, p, map[string]string{"prod": revision})
}

// waitFor makes each environment of p named in revisions wait for the approval of its
// revision, and the others wait for nothing.
func waitFor(t *testing.T, p *v1alpha1.Pipeline, revisions map[string]string) {
	t.Helper()
	var envs []any
	for _, e := range p.Spec.Environments {
		item := map[string]any{"name": e.Name}
		if rev := revisions[e.Name]; rev != "" {
			item["waitingApproval"] = map[string]any{"revision": rev, "since": metav1.Now().UTC().Format(time.RFC3339)}
		}
		envs = append(envs, item)
	}
	u := &unstructured.Unstructured{Object: map[string]any{"status": map[string]any{"environments": envs}}}
	u.SetGroupVersionKind(v1alpha1.GroupVersion.WithKind("Pipeline"))
	u.SetNamespace(p.Namespace)
	u.SetName(p.Name)
	NewWithT(t).Expect(env.Client.Status().Apply(context.Background(), client.ApplyConfigurationFromUnstructured(u),
		client.FieldOwner("release-controller"), client.ForceOwnership)).To(Succeed())
}

// send posts req, signed at signedAt, to the replica; it returns the status code and message.
func send(t *testing.T, to *replica, req approval.Request, signedAt time.Time) (int, string) {
	t.Helper()
	req.Server = to.URL
	req.Now = func() time.Time { return signedAt }
	_, err := req.Send(context.Background(), http.DefaultClient)
	var se *approval.StatusError
	switch {
	case err == nil:
		return http.StatusOK, ""
	case errors.As(err, &se):
		return se.Code, se.Message
	}
	t.Fatalf("sending the approval: %v", err)
	return 0, ""
}

// usedSignatures is prod's record of used signatures.
func usedSignatures(t *testing.T, p *v1alpha1.Pipeline) []v1alpha1.UsedSignature {
	t.Helper()
	var got v1alpha1.Pipeline
	NewWithT(t).Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(p), &got)).To(Succeed())
	if len(got.Status.Environments) < 2 || got.Status.Environments[1].Approval == nil {
		return nil
	}
	return got.Status.Environments[1].Approval.UsedSignatures
}

// A signed approval accepted by one replica is refused by another (which never saw it), by a
// replica started after it (a restart), and by two replicas sent the same new signature at
// once but once: the used signatures are recorded in the pipeline's status, in the write
// that records the approval. Before, each process remembered its own.
func TestReplayIsRefusedByEveryReplica(t *testing.T) {
	g := NewWithT(t)
	key := []byte("prod approval key")
	p := setup(t, key, "2", nil)
	a, b := startReplica(t, ""), startReplica(t, "")
	req := approval.Request{Namespace: p.Namespace, Pipeline: p.Name, Environment: "prod", Revision: "2", Key: key}
	signedAt := time.Now()

	// Replica a's cache may not have the pipeline yet: until it has, a 404.
	g.Eventually(func() int { code, _ := send(t, a, req, signedAt); return code }).WithTimeout(waitTimeout).
		Should(Equal(http.StatusOK))
	used := usedSignatures(t, p)
	g.Expect(used).To(HaveLen(1))
	g.Expect(used[0].Expires.Time).To(BeTemporally(">=", signedAt.Add(signature.Window).Truncate(time.Second)))

	// The very same request to the other replica, and to one started now: refused, with
	// what it recorded.
	repeated := "(every request signed with one key is one machine approver): the policy needs 1 distinct approvers, it has 1, and was met at "
	var code int
	var msg string
	g.Eventually(func() int { code, msg = send(t, b, req, signedAt); return code }).WithTimeout(waitTimeout).
		ShouldNot(Equal(http.StatusNotFound))
	g.Expect(code).To(Equal(http.StatusConflict))
	g.Expect(msg).To(ContainSubstring(repeated))
	g.Expect(msg).To(HaveSuffix("; this request repeats that one: this signature was used already"))
	restarted := startReplica(t, "")
	g.Eventually(func() int { code, msg = send(t, restarted, req, signedAt); return code }).WithTimeout(waitTimeout).
		ShouldNot(Equal(http.StatusNotFound))
	g.Expect(code).To(Equal(http.StatusConflict))
	g.Expect(msg).To(ContainSubstring(repeated))
	g.Expect(usedSignatures(t, p)).To(HaveLen(1), "a repeat records nothing")

	// prod waits for 3: one signature sent to both replicas at once is accepted once.
	wait(t, p, "3")
	req.Revision = "3"
	signedAt = time.Now()
	codes := make([]int, 2)
	var wg sync.WaitGroup
	for i, to := range []*replica{a, b} {
		wg.Go(func() { codes[i], _ = send(t, to, req, signedAt) })
	}
	wg.Wait()
	g.Expect(codes).To(ConsistOf(http.StatusOK, http.StatusConflict), "one replica accepts, the other refuses")
	g.Expect(usedSignatures(t, p)).To(HaveLen(2), "both signatures are within the window")
}

// Two approvals signed with one key in the same second carry one signature: the second is
// the first again. To the replica that recorded the first, and to another, it is answered as a
// second signed approval in another second is, with the same words: the one machine approver
// approved already and the policy needs another. Before, it answered only that the signature
// was used. The replica that recorded the first answers without reading anything.
func TestSignedApprovalsInOneSecond(t *testing.T) {
	g := NewWithT(t)
	key := []byte("prod approval key")
	p := setup(t, key, "2", func(p *v1alpha1.Pipeline) { p.Spec.Environments[1].Approval.MinApprovers = 2 })
	a, b := startReplica(t, ""), startReplica(t, "")
	req := approval.Request{Namespace: p.Namespace, Pipeline: p.Name, Environment: "prod", Revision: "2", Key: key}
	signedAt := time.Now()
	g.Eventually(func() int { code, _ := send(t, a, req, signedAt); return code }).WithTimeout(waitTimeout).
		Should(Equal(http.StatusOK))
	keys, gets := a.keys.reads.Load(), a.live.gets.Load()
	approved := func() *v1alpha1.ApprovalRecord {
		var got v1alpha1.Pipeline
		g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(p), &got)).To(Succeed())
		return got.Status.Environments[1].Approval
	}
	first := approved()
	g.Expect(first.Approvers).To(HaveLen(1))
	machine := `hmac:approvals approved revision 2 of environment "prod" already, at ` + first.Approvers[0].Time.UTC().Format(time.RFC3339) +
		" (every request signed with one key is one machine approver): the policy needs 2 distinct approvers, it has 1"
	code, msg := send(t, a, req, signedAt)
	g.Expect(code).To(Equal(http.StatusConflict))
	g.Expect(msg).To(Equal(machine + "; this request repeats that one: this signature was used already"))
	g.Expect(a.keys.reads.Load()).To(Equal(keys), "the repeat read the key")
	g.Expect(a.live.gets.Load()).To(Equal(gets), "the repeat read the pipeline")

	g.Eventually(func() int { code, msg = send(t, b, req, signedAt); return code }).WithTimeout(waitTimeout).
		ShouldNot(Equal(http.StatusNotFound))
	g.Expect(code).To(Equal(http.StatusConflict))
	g.Expect(msg).To(Equal(machine + "; this request repeats that one: this signature was used already"))

	// In another second, another signature: Decide's refusal, the same words.
	code, msg = send(t, a, req, signedAt.Add(time.Second))
	g.Expect(code).To(Equal(http.StatusConflict))
	g.Expect(msg).To(Equal(machine))

	rec := approved()
	g.Expect(rec.Approvers).To(Equal(first.Approvers))
	g.Expect(rec.PolicyMet).To(BeNil())
	g.Expect(rec.UsedSignatures).To(HaveLen(1), "only the first approval's signature is recorded")
}

// Nothing is read from the API server for a signed request whose signature does not check
// out without a key (malformed, out of its window, replayed to this replica), and the live
// pipeline is read only once the signature verified: a wrong signature reads the key and
// nothing more.
func TestNothingIsReadBeforeTheSignatureChecksOut(t *testing.T) {
	g := NewWithT(t)
	key := []byte("prod approval key")
	p := setup(t, key, "2", nil)
	r := startReplica(t, "")
	req := approval.Request{Namespace: p.Namespace, Pipeline: p.Name, Environment: "prod", Revision: "2", Key: []byte("not the key")}
	// Wait for the cache: a wrong signature reads the key (and is refused, 401).
	g.Eventually(func() int { code, _ := send(t, r, req, time.Now()); return code }).WithTimeout(waitTimeout).
		Should(Equal(http.StatusUnauthorized))
	g.Expect(r.live.gets.Load()).To(BeZero(), "the live pipeline was read for a wrong signature")
	keys := r.keys.reads.Load()
	g.Expect(keys).NotTo(BeZero())

	code, _ := send(t, r, req, time.Now().Add(-time.Hour))
	g.Expect(code).To(Equal(http.StatusUnauthorized), "expired")
	post := func(ts, sig string) int {
		hr, err := http.NewRequest(http.MethodPost, r.URL+"/pipelines/"+p.Namespace+"/web/prod/2/approve", nil)
		g.Expect(err).NotTo(HaveOccurred())
		hr.Header.Set(signature.HeaderTimestamp, ts)
		hr.Header.Set(signature.HeaderSignature, sig)
		resp, err := http.DefaultClient.Do(hr)
		g.Expect(err).NotTo(HaveOccurred())
		resp.Body.Close()
		return resp.StatusCode
	}
	g.Expect(post(time.Now().UTC().Format(time.RFC3339), "sha256=zz")).To(Equal(http.StatusBadRequest), "malformed")
	g.Expect(post("yesterday", "sha256="+strings.Repeat("0", 64))).To(Equal(http.StatusBadRequest), "malformed timestamp")
	g.Expect(r.keys.reads.Load()).To(Equal(keys), "a key was read for a request that needs none to be refused")

	// The good one reads the key and the live pipeline; its replay to this replica neither.
	req.Key = key
	signedAt := time.Now()
	code, msg := send(t, r, req, signedAt)
	g.Expect(code).To(Equal(http.StatusOK), msg)
	g.Expect(r.live.gets.Load()).NotTo(BeZero())
	keys, gets := r.keys.reads.Load(), r.live.gets.Load()
	code, _ = send(t, r, req, signedAt)
	g.Expect(code).To(Equal(http.StatusConflict))
	g.Expect(r.keys.reads.Load()).To(Equal(keys))
	g.Expect(r.live.gets.Load()).To(Equal(gets))
}

// The key is read as the pipeline's ServiceAccount (spec.serviceAccountName, else the
// default account): an account RBAC does not let read the Secret gets a refusal naming the
// Secret, the account and where it came from; granted get on that one Secret, the approval
// goes through. Before, the api read any Secret of any namespace with its own rights.
func TestTheKeyIsReadAsTheTenant(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	key := []byte("prod approval key")
	p := setup(t, key, "2", nil)
	named := setup(t, key, "2", func(p *v1alpha1.Pipeline) { p.Spec.ServiceAccountName = "deployer" })
	r := startReplica(t, "default")
	req := approval.Request{Namespace: p.Namespace, Pipeline: p.Name, Environment: "prod", Revision: "2", Key: key}

	var code int
	var msg string
	g.Eventually(func() int { code, msg = send(t, r, req, time.Now()); return code }).WithTimeout(waitTimeout).
		ShouldNot(Equal(http.StatusNotFound))
	g.Expect(code).To(Equal(http.StatusConflict))
	for _, want := range []string{"Secret " + p.Namespace + "/approvals", "ServiceAccount " + p.Namespace + "/default", "--default-service-account", "grant that account get"} {
		g.Expect(msg).To(ContainSubstring(want))
	}
	namedReq := req
	namedReq.Namespace = named.Namespace
	g.Eventually(func() int { code, msg = send(t, r, namedReq, time.Now()); return code }).WithTimeout(waitTimeout).
		ShouldNot(Equal(http.StatusNotFound))
	g.Expect(code).To(Equal(http.StatusConflict))
	g.Expect(msg).To(ContainSubstring("ServiceAccount " + named.Namespace + "/deployer (the pipeline's spec.serviceAccountName)"))

	// Granted get on the one Secret, the default account reads it.
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: "approval-key"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{"approvals"}, Verbs: []string{"get"}}}}
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: "approval-key"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: p.Namespace, Name: "default"}}}
	g.Expect(env.Client.Create(ctx, role)).To(Succeed())
	g.Expect(env.Client.Create(ctx, binding)).To(Succeed())
	g.Eventually(func() int { code, msg = send(t, r, req, time.Now()); return code }).WithTimeout(waitTimeout).
		Should(Equal(http.StatusOK), "last answer: %s", msg)
}
