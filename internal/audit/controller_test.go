//go:build !unit

package audit_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	. "github.com/onsi/gomega"
	"go.uber.org/zap/zapcore"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/audit"
	"github.com/release-controller/release-controller/internal/devenv/registry"
	"github.com/release-controller/release-controller/internal/manager"
	"github.com/release-controller/release-controller/internal/releaseimage"
	"github.com/release-controller/release-controller/internal/signing"
	signstore "github.com/release-controller/release-controller/internal/signing/store"
	"github.com/release-controller/release-controller/internal/testenv"
	"github.com/release-controller/release-controller/internal/verdict/verdicttest"
)

var (
	env *testenv.Env
	reg *registry.Server
)

// waitTimeout bounds every wait; it is a deadline for a broken test, not a performance assertion.
const waitTimeout = 60 * time.Second

func TestMain(m *testing.M) {
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(zapcore.ErrorLevel)))
	testenv.Main(m, &env, func(*testenv.Env) (func(), error) {
		dir, err := os.MkdirTemp("", "audit-registry-")
		if err != nil {
			return nil, err
		}
		reg, err = registry.Start(context.Background(), registry.Options{Dir: dir, Addr: "127.0.0.1:0"})
		if err != nil {
			return nil, err
		}
		return func() { _ = reg.Close(); _ = os.RemoveAll(dir) }, nil
	})
}

var minute atomic.Int32

// pushComponent pushes a random image as <registry>/<repo>:latest and returns it by digest.
func pushComponent(t *testing.T, repo string) string {
	t.Helper()
	img, err := random.Image(256, 1)
	if err != nil {
		t.Fatal(err)
	}
	return push(t, reg.Addr()+"/"+repo+":latest", img)
}

func push(t *testing.T, ref string, img v1.Image) string {
	t.Helper()
	tag, err := name.NewTag(ref)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(tag, img); err != nil {
		t.Fatalf("pushing %s: %v", ref, err)
	}
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return tag.Context().Digest(d.String()).String()
}

// acceptedPayload builds a payload image of two fresh components in the registry and creates
// its ReleasePayload in ns, accepted, as the payload controller leaves it.
func acceptedPayload(t *testing.T, ns string) *v1alpha1.ReleasePayload {
	t.Helper()
	return createPayload(t, ns, true)
}

// handWrittenPayload is acceptedPayload with a verification e2e that never ran, and a status
// someone wrote by hand to say Accepted.
func handWrittenPayload(t *testing.T, ns string) *v1alpha1.ReleasePayload {
	t.Helper()
	return createPayload(t, ns, false)
}

func createPayload(t *testing.T, ns string, earned bool) *v1alpha1.ReleasePayload {
	t.Helper()
	var verifications []v1alpha1.Verification
	if !earned {
		verifications = []v1alpha1.Verification{{Name: "e2e", Job: &v1alpha1.JobBackend{Template: batchv1.JobTemplateSpec{}}}}
	}
	return createPayloadWith(t, ns, earned, verifications)
}

// createPayloadWith is createPayload with verifications configured; earned, each gets passing
// runs (verdicttest.Earn).
func createPayloadWith(t *testing.T, ns string, earned bool, verifications []v1alpha1.Verification) *v1alpha1.ReleasePayload {
	t.Helper()
	created := time.Date(2026, 11, 23, 10, int(minute.Add(1)), 0, 0, time.UTC)
	tag := "4.15.0-0.nightly-" + created.Format("2006-01-02-150405")
	repo := reg.Addr() + "/" + ns + "/release"
	var components []releaseimage.Component
	var pinned []v1alpha1.PinnedComponent
	for _, c := range []string{"api", "web"} {
		image := pushComponent(t, ns+"/"+c)
		components = append(components, releaseimage.Component{Name: c, Image: image})
		pinned = append(pinned, v1alpha1.PinnedComponent{Name: c, Image: image})
	}
	res, err := releaseimage.Build(context.Background(), releaseimage.BuildOptions{
		Tag: tag, Stream: "nightly", Repository: repo, Components: components, Created: created,
	})
	if err != nil {
		t.Fatalf("building payload %s: %v", tag, err)
	}
	p := &v1alpha1.ReleasePayload{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: tag},
		Spec: v1alpha1.ReleasePayloadSpec{
			PayloadCoordinates:    v1alpha1.PayloadCoordinates{Stream: "nightly", Tag: tag},
			Components:            pinned,
			PayloadCreationConfig: v1alpha1.PayloadCreationConfig{Repository: repo},
		},
	}
	p.Spec.PayloadVerificationConfig.Verifications = verifications
	ctx := context.Background()
	if err := env.Client.Create(ctx, p); err != nil {
		t.Fatal(err)
	}
	p.Status = v1alpha1.ReleasePayloadStatus{
		Phase:                    v1alpha1.PhaseAccepted,
		PayloadImage:             res.Image,
		ReleaseCreationJobResult: v1alpha1.ReleaseCreationJobResult{Status: v1alpha1.CreationJobSuccess},
		Conditions: []metav1.Condition{{
			Type: v1alpha1.ConditionPayloadAccepted, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonBlockingJobsSucceeded,
			Message: "all blocking jobs succeeded", LastTransitionTime: metav1.Now(),
		}},
	}
	if earned {
		verdicttest.Earn(p, v1alpha1.PhaseAccepted) // as the payload controller records it
	}
	if err := env.Client.Status().Update(ctx, p); err != nil {
		t.Fatal(err)
	}
	return p
}

type signer struct {
	key    *signing.Key
	secret types.NamespacedName
}

// newKey makes a signing key and its Secret in ns.
func newKey(t *testing.T, ns, secretName string) signer {
	t.Helper()
	armored, err := signing.GenerateKey("release-controller test", "test@example.com")
	if err != nil {
		t.Fatal(err)
	}
	key, err := signing.ParsePrivateKey(armored, nil, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: secretName}, Data: map[string][]byte{audit.SecretKeyPrivate: armored}}
	if err := env.Client.Create(context.Background(), secret); err != nil {
		t.Fatal(err)
	}
	return signer{key: key, secret: types.NamespacedName{Namespace: ns, Name: secretName}}
}

func openStore(t *testing.T, dir string) *signstore.Store {
	t.Helper()
	store, err := signstore.Open(context.Background(), "file://"+dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	return store
}

// startAudit runs the audit controller alone, in ns, until the test ends or stop is called.
func startAudit(t *testing.T, ns string, r *audit.Reconciler) (stop func()) {
	t.Helper()
	skip := true
	mgr, err := ctrl.NewManager(env.Config, ctrl.Options{
		Scheme:     manager.NewScheme(),
		Metrics:    metricsserver.Options{BindAddress: "0"},
		Cache:      cache.Options{DefaultNamespaces: map[string]cache.Config{ns: {}}},
		Controller: config.Controller{SkipNameValidation: &skip},
	})
	if err != nil {
		t.Fatal(err)
	}
	r.Client = mgr.GetClient()
	if err := r.SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	stopped := false
	stop = func() {
		if !stopped {
			stopped = true
			cancel()
			if err := <-done; err != nil {
				t.Errorf("manager: %v", err)
			}
		}
	}
	t.Cleanup(stop)
	return stop
}

func condition(g Gomega, p *v1alpha1.ReleasePayload, typ string) func() *metav1.Condition {
	return func() *metav1.Condition {
		var got v1alpha1.ReleasePayload
		g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(p), &got)).To(Succeed())
		return meta.FindStatusCondition(got.Status.Conditions, typ)
	}
}

func withReason(reason string) OmegaMatcher {
	return And(Not(BeNil()), WithTransform(func(c *metav1.Condition) string { return c.Reason }, Equal(reason)))
}

func digestOf(p *v1alpha1.ReleasePayload) string {
	_, d, _ := strings.Cut(p.Status.PayloadImage, "@")
	return d
}

func TestAcceptedPayloadIsAuditedAndSignedOnce(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	dir := t.TempDir()
	key := newKey(t, ns, "signing-key")
	p := acceptedPayload(t, ns)
	notAccepted := acceptedPayload(t, ns)
	notAccepted.Status.Phase = v1alpha1.PhaseReady
	meta.FindStatusCondition(notAccepted.Status.Conditions, v1alpha1.ConditionPayloadAccepted).Status = metav1.ConditionFalse
	g.Expect(env.Client.Status().Update(context.Background(), notAccepted)).To(Succeed())
	handWritten := handWrittenPayload(t, ns)

	stop := startAudit(t, ns, &audit.Reconciler{Options: audit.Options{Store: openStore(t, dir), KeySecret: key.secret}})
	g.Eventually(condition(g, p, v1alpha1.ConditionPayloadSigned), waitTimeout).Should(withReason(v1alpha1.ReasonSigned))
	audited := condition(g, p, v1alpha1.ConditionPayloadAudited)()
	g.Expect(audited.Status).To(Equal(metav1.ConditionTrue), audited.Message)
	signed := condition(g, p, v1alpha1.ConditionPayloadSigned)()
	g.Expect(signed.Message).To(HavePrefix("signed by " + key.key.ID()))

	// The store holds one signature a consumer verifies, the audit record and the public key.
	store := openStore(t, dir)
	sigs, err := store.Signatures(context.Background(), digestOf(p))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(sigs).To(HaveLen(1))
	claims, keyID, err := signing.Verify(key.key.Keyring(), sigs[0])
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(keyID).To(Equal(key.key.ID()))
	g.Expect(claims.ManifestDigest).To(Equal(digestOf(p)))
	g.Expect(claims.DockerReference).To(Equal(p.Spec.PayloadCreationConfig.Repository + ":" + p.Name))
	raw, err := store.Audit(context.Background(), digestOf(p))
	g.Expect(err).NotTo(HaveOccurred())
	var rec audit.Record
	g.Expect(json.Unmarshal(raw, &rec)).To(Succeed())
	g.Expect(rec.Passed).To(BeTrue())
	g.Expect(rec.Payload).To(Equal(p.Name))
	g.Expect(rec.Checks).To(HaveLen(6))
	published, err := store.PublicKeys(context.Background())
	g.Expect(err).NotTo(HaveOccurred())
	kr, err := signing.ParsePublicKeys(published)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(kr.IDs()).To(ContainElement(key.key.ID()))

	// Not accepted, or accepted by hand only: never audited (nor signed).
	g.Consistently(condition(g, notAccepted, v1alpha1.ConditionPayloadAudited), time.Second).Should(BeNil())
	g.Expect(condition(g, handWritten, v1alpha1.ConditionPayloadAudited)()).To(BeNil())
	g.Expect(condition(g, handWritten, v1alpha1.ConditionPayloadSigned)()).To(BeNil())

	// A restart, with the conditions lost as a crash between the signature and the status
	// write would lose them: the payload is audited again, and its signature found, not
	// made twice.
	stop()
	var lost v1alpha1.ReleasePayload
	g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(p), &lost)).To(Succeed())
	meta.RemoveStatusCondition(&lost.Status.Conditions, v1alpha1.ConditionPayloadAudited)
	meta.RemoveStatusCondition(&lost.Status.Conditions, v1alpha1.ConditionPayloadSigned)
	g.Expect(env.Client.Status().Update(context.Background(), &lost)).To(Succeed())
	startAudit(t, ns, &audit.Reconciler{Options: audit.Options{Store: openStore(t, dir), KeySecret: key.secret}})
	g.Eventually(condition(g, p, v1alpha1.ConditionPayloadSigned), waitTimeout).Should(withReason(v1alpha1.ReasonSigned))
	sigs, err = store.Signatures(context.Background(), digestOf(p))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(sigs).To(HaveLen(1), "a restart signed again")
}

func TestRetaggedPayloadFailsItsAuditAndIsNotSigned(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	dir := t.TempDir()
	key := newKey(t, ns, "signing-key")
	p := acceptedPayload(t, ns)
	// Someone pushes another image to the payload's tag.
	img, err := random.Image(128, 1)
	g.Expect(err).NotTo(HaveOccurred())
	push(t, p.Spec.PayloadCreationConfig.Repository+":"+p.Name, img)

	startAudit(t, ns, &audit.Reconciler{Options: audit.Options{Store: openStore(t, dir), KeySecret: key.secret}})
	g.Eventually(condition(g, p, v1alpha1.ConditionPayloadSigned), waitTimeout).Should(withReason(v1alpha1.ReasonNotSignedAuditFailed))
	audited := condition(g, p, v1alpha1.ConditionPayloadAudited)()
	g.Expect(audited.Status).To(Equal(metav1.ConditionFalse))
	g.Expect(audited.Reason).To(Equal(v1alpha1.ReasonAuditFailed))
	g.Expect(audited.Message).To(ContainSubstring("re-tagged"))
	sigs, err := openStore(t, dir).Signatures(context.Background(), digestOf(p))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(sigs).To(BeEmpty())
	// The failed record is stored too.
	raw, err := openStore(t, dir).Audit(context.Background(), digestOf(p))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(raw)).To(ContainSubstring(`"passed": false`))
}

func TestNoKeyIsAConditionUntilTheKeyComes(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	dir := t.TempDir()
	p := acceptedPayload(t, ns)
	secret := types.NamespacedName{Namespace: ns, Name: "later-key"}
	startAudit(t, ns, &audit.Reconciler{Options: audit.Options{Store: openStore(t, dir), KeySecret: secret, KeyRetry: 200 * time.Millisecond}})
	g.Eventually(condition(g, p, v1alpha1.ConditionPayloadSigned), waitTimeout).Should(withReason(v1alpha1.ReasonNoSigningKey))
	g.Expect(condition(g, p, v1alpha1.ConditionPayloadSigned)().Message).To(ContainSubstring("later-key does not exist"))
	g.Expect(condition(g, p, v1alpha1.ConditionPayloadAudited)().Status).To(Equal(metav1.ConditionTrue))

	// A Secret without a usable key says so.
	bad := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "later-key"}, Data: map[string][]byte{audit.SecretKeyPrivate: []byte("not a key")}}
	g.Expect(env.Client.Create(context.Background(), bad)).To(Succeed())
	g.Eventually(func() string { return condition(g, p, v1alpha1.ConditionPayloadSigned)().Message }, waitTimeout).Should(ContainSubstring("the signing key in Secret"))
	sigs, err := openStore(t, dir).Signatures(context.Background(), digestOf(p))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(sigs).To(BeEmpty())

	// The key arrives: the payload is signed.
	armored, err := signing.GenerateKey("later", "later@example.com")
	g.Expect(err).NotTo(HaveOccurred())
	bad.Data = map[string][]byte{audit.SecretKeyPrivate: armored}
	g.Expect(env.Client.Update(context.Background(), bad)).To(Succeed())
	g.Eventually(condition(g, p, v1alpha1.ConditionPayloadSigned), waitTimeout).Should(withReason(v1alpha1.ReasonSigned))
}

func TestNoSignerConfiguredAuditsOnly(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	p := acceptedPayload(t, ns)
	startAudit(t, ns, &audit.Reconciler{})
	g.Eventually(condition(g, p, v1alpha1.ConditionPayloadSigned), waitTimeout).Should(withReason(v1alpha1.ReasonNoSigningKey))
	g.Expect(condition(g, p, v1alpha1.ConditionPayloadAudited)().Status).To(Equal(metav1.ConditionTrue))
}

// A store that fails (its folder replaced by a file) and recovers: the payload waits with
// SignatureStoreError and is signed when the store is back; nothing is lost.
func TestStoreOutageIsRetriedUntilSigned(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	dir := filepath.Join(t.TempDir(), "store")
	key := newKey(t, ns, "signing-key")
	store := openStore(t, dir)
	g.Expect(os.Rename(dir, dir+".away")).To(Succeed())
	g.Expect(os.WriteFile(dir, []byte("the bucket is down"), 0o600)).To(Succeed())

	p := acceptedPayload(t, ns)
	startAudit(t, ns, &audit.Reconciler{Options: audit.Options{Store: store, KeySecret: key.secret}})
	// The audit record is refused first: the audit could not be kept, and the signature
	// says the store is why it waits.
	g.Eventually(condition(g, p, v1alpha1.ConditionPayloadSigned), waitTimeout).Should(withReason(v1alpha1.ReasonSignatureStoreError))
	g.Expect(condition(g, p, v1alpha1.ConditionPayloadAudited)()).To(withReason(v1alpha1.ReasonAuditError))
	g.Expect(condition(g, p, v1alpha1.ConditionPayloadSigned)().Message).To(ContainSubstring("not a directory"))

	g.Expect(os.Remove(dir)).To(Succeed())
	g.Expect(os.Rename(dir+".away", dir)).To(Succeed())
	g.Eventually(condition(g, p, v1alpha1.ConditionPayloadSigned), waitTimeout).Should(withReason(v1alpha1.ReasonSigned))
	sigs, err := store.Signatures(context.Background(), digestOf(p))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(sigs).To(HaveLen(1))
	_, err = store.Audit(context.Background(), digestOf(p))
	g.Expect(err).NotTo(HaveOccurred(), fmt.Sprintf("the audit record of %s was lost", p.Name))
}
