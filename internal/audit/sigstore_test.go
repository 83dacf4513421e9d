//go:build !unit

package audit_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/attestation"
	"github.com/release-controller/release-controller/internal/audit"
	"github.com/release-controller/release-controller/internal/registryclient"
	"github.com/release-controller/release-controller/internal/signing/cosign"
	"github.com/release-controller/release-controller/internal/testenv"
)

// newCosignKey makes a Sigstore key and its Secret (cosign.key) in ns.
func newCosignKey(t *testing.T, ns, secretName string) (*cosign.Signer, types.NamespacedName) {
	t.Helper()
	pem, err := cosign.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	signer, err := cosign.LoadSigner(pem, nil)
	if err != nil {
		t.Fatal(err)
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: secretName}, Data: map[string][]byte{audit.SecretKeyCosign: pem}}
	if err := env.Client.Create(context.Background(), secret); err != nil {
		t.Fatal(err)
	}
	return signer, types.NamespacedName{Namespace: ns, Name: secretName}
}

// verifiedPayload is an accepted payload with two verifications that passed, e2e and upgrade:
// its attestations are the provenance, two test results and the verification summary.
func verifiedPayload(t *testing.T, ns string) *v1alpha1.ReleasePayload {
	t.Helper()
	job := &v1alpha1.JobBackend{Template: batchv1.JobTemplateSpec{}}
	return createPayloadWith(t, ns, true, []v1alpha1.Verification{{Name: "e2e", Job: job}, {Name: "upgrade", Job: job}})
}

// attached counts what key verifies on the payload's image in the registry: its signatures and
// its attestations of each predicate type, each by where it was found ("tag", "referrer").
func attached(g Gomega, p *v1alpha1.ReleasePayload, signer *cosign.Signer) map[string]map[string]int {
	ctx := context.Background()
	image, err := name.NewDigest(p.Status.PayloadImage)
	g.Expect(err).NotTo(HaveOccurred())
	counts := map[string]map[string]int{"signature": {}}
	sigs, err := cosign.VerifySignatures(ctx, image, signer.PublicKey())
	g.Expect(err).NotTo(HaveOccurred())
	for _, s := range sigs {
		g.Expect(s.Identity).To(Equal(p.Spec.PayloadCreationConfig.Repository + ":" + p.Name))
		g.Expect(s.Digest).To(Equal(image.DigestStr()))
		counts["signature"][s.Where]++
	}
	for _, typ := range []string{attestation.PredicateSLSAProvenance, attestation.PredicateTestResult, attestation.PredicateVerificationSummary} {
		atts, err := cosign.VerifyAttestations(ctx, image, signer.PublicKey(), typ)
		g.Expect(err).NotTo(HaveOccurred(), typ)
		counts[typ] = map[string]int{}
		for _, a := range atts {
			counts[typ][a.Where]++
		}
	}
	return counts
}

// onceEach is what a payload of verifiedPayload carries, signed once: one signature and one
// attestation per statement, each in the tag layout and as a referrer.
var onceEach = map[string]map[string]int{
	"signature":                              {cosign.FoundInTag: 1, cosign.FoundInReferrer: 1},
	attestation.PredicateSLSAProvenance:      {cosign.FoundInTag: 1, cosign.FoundInReferrer: 1},
	attestation.PredicateTestResult:          {cosign.FoundInTag: 2, cosign.FoundInReferrer: 2},
	attestation.PredicateVerificationSummary: {cosign.FoundInTag: 1, cosign.FoundInReferrer: 1},
}

// tagDigests are the manifests of the payload image's attachment tags: cosign's .sig and .att,
// and the referrers-tag fallback (the embedded registry has no referrers API). Equal digests
// mean nothing was written.
func tagDigests(g Gomega, p *v1alpha1.ReleasePayload) map[string]string {
	image, err := name.NewDigest(p.Status.PayloadImage)
	g.Expect(err).NotTo(HaveOccurred())
	base := strings.Replace(image.DigestStr(), ":", "-", 1)
	out := map[string]string{}
	for _, suffix := range []string{".sig", ".att", ""} {
		desc, err := remote.Head(image.Context().Tag(base + suffix))
		g.Expect(err).NotTo(HaveOccurred(), base+suffix)
		out[base+suffix] = desc.Digest.String()
	}
	return out
}

// TestSigstoreSignsAcceptedPayloadOnce: a Sigstore key alone (no OpenPGP key or store) signs and
// attests an accepted payload in the registry; cosign's own verification finds one of each, in
// both layouts; a restart that lost the conditions writes nothing more.
func TestSigstoreSignsAcceptedPayloadOnce(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	signer, secret := newCosignKey(t, ns, "cosign-key")
	p := verifiedPayload(t, ns)

	stop := startAudit(t, ns, &audit.Reconciler{Options: audit.Options{SigstoreKeySecret: secret}})
	g.Eventually(condition(g, p, v1alpha1.ConditionPayloadSigstoreSigned), waitTimeout).Should(withReason(v1alpha1.ReasonSigned))
	c := condition(g, p, v1alpha1.ConditionPayloadSigstoreSigned)()
	g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
	g.Expect(c.Message).To(Equal("signed by " + signer.KeyID() + ": signature and 4 attestations (slsaprovenance1, test-result ×2, verification-summary)"))
	g.Expect(condition(g, p, v1alpha1.ConditionPayloadAudited)().Status).To(Equal(metav1.ConditionTrue))
	// The OpenPGP signature is not configured: it says so, and does not hold Sigstore back.
	g.Expect(condition(g, p, v1alpha1.ConditionPayloadSigned)()).To(withReason(v1alpha1.ReasonNoSigningKey))
	g.Expect(attached(g, p, signer)).To(Equal(onceEach))
	before := tagDigests(g, p)

	// Another key verifies nothing.
	otherPEM, err := cosign.GenerateKey()
	g.Expect(err).NotTo(HaveOccurred())
	other, err := cosign.LoadSigner(otherPEM, nil)
	g.Expect(err).NotTo(HaveOccurred())
	image, err := name.NewDigest(p.Status.PayloadImage)
	g.Expect(err).NotTo(HaveOccurred())
	_, err = cosign.VerifySignatures(context.Background(), image, other.PublicKey())
	g.Expect(err).To(HaveOccurred())

	// A restart (a new reconciler), with the conditions lost as a crash between the registry
	// writes and the status write would lose them: audited and found signed, nothing written.
	stop()
	var lost v1alpha1.ReleasePayload
	g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(p), &lost)).To(Succeed())
	for _, typ := range []string{v1alpha1.ConditionPayloadAudited, v1alpha1.ConditionPayloadSigned, v1alpha1.ConditionPayloadSigstoreSigned} {
		meta.RemoveStatusCondition(&lost.Status.Conditions, typ)
	}
	g.Expect(env.Client.Status().Update(context.Background(), &lost)).To(Succeed())
	recorder := events.NewFakeRecorder(100)
	startAudit(t, ns, &audit.Reconciler{Options: audit.Options{SigstoreKeySecret: secret}, Events: recorder})
	g.Eventually(condition(g, p, v1alpha1.ConditionPayloadSigstoreSigned), waitTimeout).Should(withReason(v1alpha1.ReasonSigned))
	g.Expect(tagDigests(g, p)).To(Equal(before), "a restart wrote to the registry")
	g.Expect(attached(g, p, signer)).To(Equal(onceEach))
	for len(recorder.Events) > 0 {
		e := <-recorder.Events
		g.Expect(e).NotTo(ContainSubstring("attached"), "a restart said it attached something")
	}
}

// TestSigstoreNotForFailedAudit: a payload whose audit fails gets no Sigstore signature.
func TestSigstoreNotForFailedAudit(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	signer, secret := newCosignKey(t, ns, "cosign-key")
	p := acceptedPayload(t, ns)
	img, err := random.Image(128, 1)
	g.Expect(err).NotTo(HaveOccurred())
	push(t, p.Spec.PayloadCreationConfig.Repository+":"+p.Name, img) // re-tagged

	startAudit(t, ns, &audit.Reconciler{Options: audit.Options{SigstoreKeySecret: secret}})
	g.Eventually(condition(g, p, v1alpha1.ConditionPayloadSigstoreSigned), waitTimeout).Should(withReason(v1alpha1.ReasonNotSignedAuditFailed))
	g.Expect(condition(g, p, v1alpha1.ConditionPayloadSigstoreSigned)().Status).To(Equal(metav1.ConditionFalse))
	g.Expect(condition(g, p, v1alpha1.ConditionPayloadAudited)()).To(withReason(v1alpha1.ReasonAuditFailed))
	image, err := name.NewDigest(p.Status.PayloadImage)
	g.Expect(err).NotTo(HaveOccurred())
	_, err = cosign.VerifySignatures(context.Background(), image, signer.PublicKey())
	g.Expect(err).To(HaveOccurred())
	_, err = remote.Head(image.Context().Tag(strings.Replace(image.DigestStr(), ":", "-", 1) + ".sig"))
	g.Expect(err).To(HaveOccurred(), "a payload whose audit failed has a .sig tag")
}

// refusingWrites is a registry transport that refuses every write (not GET or HEAD) while down
// is set: the audit reads the payload back, the signatures cannot be attached.
type refusingWrites struct{ down *atomic.Bool }

func (t refusingWrites) RoundTrip(req *http.Request) (*http.Response, error) {
	if t.down.Load() && req.Method != http.MethodGet && req.Method != http.MethodHead {
		return nil, errors.New("dial tcp: connection refused")
	}
	return http.DefaultTransport.RoundTrip(req)
}

// TestSigstoreRegistryOutage: a registry that refuses the writes leaves the payload
// RegistryError, with a Warning Event, retried with backoff; once it takes them again the
// payload has exactly one signature and one of each attestation.
func TestSigstoreRegistryOutage(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	signer, secret := newCosignKey(t, ns, "cosign-key")
	p := verifiedPayload(t, ns)
	var down atomic.Bool
	down.Store(true)
	recorder := events.NewFakeRecorder(10000)
	startAudit(t, ns, &audit.Reconciler{
		Options:  audit.Options{SigstoreKeySecret: secret},
		Registry: registryclient.New(remote.WithTransport(refusingWrites{&down})),
		Events:   recorder,
	})
	g.Eventually(condition(g, p, v1alpha1.ConditionPayloadSigstoreSigned), waitTimeout).Should(withReason(v1alpha1.ReasonRegistryError))
	c := condition(g, p, v1alpha1.ConditionPayloadSigstoreSigned)()
	g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
	g.Expect(c.Message).To(ContainSubstring("attaching the signature of"))
	g.Expect(c.Message).To(ContainSubstring("connection refused"))
	g.Expect(condition(g, p, v1alpha1.ConditionPayloadAudited)().Status).To(Equal(metav1.ConditionTrue))
	g.Eventually(func() []string { return testenv.Warnings(recorder) }, waitTimeout).Should(
		ContainElement(HavePrefix("Warning " + v1alpha1.ReasonRegistryError + " attaching the signature of")))

	down.Store(false)
	g.Eventually(condition(g, p, v1alpha1.ConditionPayloadSigstoreSigned), waitTimeout).Should(withReason(v1alpha1.ReasonSigned))
	g.Expect(attached(g, p, signer)).To(Equal(onceEach))
}

// TestSigstorePlatformPayloadSignsEveryImage: with both formats configured, as make run has
// them, a payload built for two platforms gets its OpenPGP signatures and, in the registry, a
// Sigstore signature of its index and of each platform's image, and its attestations.
func TestSigstorePlatformPayloadSignsEveryImage(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	key := newKey(t, ns, "signing-key")
	signer, secret := newCosignKey(t, ns, "cosign-key")
	p := platformPayload(t, ns)
	startAudit(t, ns, &audit.Reconciler{Options: audit.Options{Store: openStore(t, t.TempDir()), KeySecret: key.secret, SigstoreKeySecret: secret}})
	g.Eventually(condition(g, p, v1alpha1.ConditionPayloadSigstoreSigned), waitTimeout).Should(withReason(v1alpha1.ReasonSigned))
	g.Eventually(condition(g, p, v1alpha1.ConditionPayloadSigned), waitTimeout).Should(withReason(v1alpha1.ReasonSigned))
	g.Expect(condition(g, p, v1alpha1.ConditionPayloadSigstoreSigned)().Message).To(
		Equal("signed by " + signer.KeyID() + ": signature and 2 attestations (slsaprovenance1, verification-summary)"))

	g.Expect(p.Status.PlatformImages).To(HaveLen(2))
	for _, im := range append([]string{p.Status.PayloadImage}, p.Status.PlatformImages[0].Image, p.Status.PlatformImages[1].Image) {
		d, err := name.NewDigest(im)
		g.Expect(err).NotTo(HaveOccurred())
		sigs, err := cosign.VerifySignatures(context.Background(), d, signer.PublicKey())
		g.Expect(err).NotTo(HaveOccurred(), im)
		where := map[string]int{}
		for _, s := range sigs {
			g.Expect(s.Identity).To(Equal(p.Spec.PayloadCreationConfig.Repository + ":" + p.Name))
			g.Expect(s.Digest).To(Equal(d.DigestStr()))
			where[s.Where]++
		}
		g.Expect(where).To(Equal(map[string]int{cosign.FoundInTag: 1, cosign.FoundInReferrer: 1}), im)
	}
	image, err := name.NewDigest(p.Status.PayloadImage)
	g.Expect(err).NotTo(HaveOccurred())
	for _, typ := range []string{attestation.PredicateSLSAProvenance, attestation.PredicateVerificationSummary} {
		atts, err := cosign.VerifyAttestations(context.Background(), image, signer.PublicKey(), typ)
		g.Expect(err).NotTo(HaveOccurred(), typ)
		g.Expect(atts).To(HaveLen(2), typ) // the .att tag and a referrer
	}
}

// TestSigstoreAttestsALateInformingResult: an informing verification still running when the
// payload is signed gets its test result attested once it finishes, beside the others, which
// are not written again.
func TestSigstoreAttestsALateInformingResult(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	signer, secret := newCosignKey(t, ns, "cosign-key")
	p := verifiedPayload(t, ns)
	var running v1alpha1.ReleasePayload
	g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(p), &running)).To(Succeed())
	running.Status.Verifications = append(running.Status.Verifications, v1alpha1.VerificationStatus{
		Name: "conformance", Type: v1alpha1.Informing, State: v1alpha1.JobPending})
	g.Expect(env.Client.Status().Update(context.Background(), &running)).To(Succeed())

	startAudit(t, ns, &audit.Reconciler{Options: audit.Options{SigstoreKeySecret: secret}})
	g.Eventually(condition(g, p, v1alpha1.ConditionPayloadSigstoreSigned), waitTimeout).Should(withReason(v1alpha1.ReasonSigned))
	g.Expect(attached(g, p, signer)).To(Equal(onceEach))

	var done v1alpha1.ReleasePayload
	g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(p), &done)).To(Succeed())
	for i := range done.Status.Verifications {
		if done.Status.Verifications[i].Name == "conformance" {
			done.Status.Verifications[i].State = v1alpha1.JobFailure
		}
	}
	g.Expect(env.Client.Status().Update(context.Background(), &done)).To(Succeed())
	want := "signed by " + signer.KeyID() + ": signature and 5 attestations (slsaprovenance1, test-result ×3, verification-summary)"
	g.Eventually(func() string { return condition(g, p, v1alpha1.ConditionPayloadSigstoreSigned)().Message }, waitTimeout).Should(Equal(want))
	g.Expect(attached(g, p, signer)).To(Equal(map[string]map[string]int{
		"signature":                              {cosign.FoundInTag: 1, cosign.FoundInReferrer: 1},
		attestation.PredicateSLSAProvenance:      {cosign.FoundInTag: 1, cosign.FoundInReferrer: 1},
		attestation.PredicateTestResult:          {cosign.FoundInTag: 3, cosign.FoundInReferrer: 3},
		attestation.PredicateVerificationSummary: {cosign.FoundInTag: 1, cosign.FoundInReferrer: 1},
	}))
}
