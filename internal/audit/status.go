package audit

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/attestation"
	"github.com/release-controller/release-controller/internal/verdict"
)

// Step is what the audit controller does next for one payload.
type Step struct {
	// Audit: read the image back and evaluate it.
	Audit bool
	// Sign: sign the audited payload (it passed, and the controller has a key and a store).
	Sign bool
	// NoKey: record that the payload is not signed because the controller has no key.
	NoKey bool
	// AuditFailed: record that the payload is not signed because its audit failed.
	AuditFailed bool

	// SigstoreSign: attach the Sigstore signatures and attestations of the audited payload
	// (it passed, and the controller has a Sigstore key configured).
	SigstoreSign bool
	// SigstoreAuditFailed: record that the payload gets no Sigstore signature because its
	// audit failed.
	SigstoreAuditFailed bool
}

// Signers are the signing formats the controller is configured with; each is decided alone.
type Signers struct {
	// OpenPGP: a signing key Secret and a signature store.
	OpenPGP bool
	// Sigstore: a Sigstore key (Secret or KMS).
	Sigstore bool
}

// Done reports that nothing is left to do.
func (s Step) Done() bool { return s == Step{} }

// Decide returns the next step for p: only accepted payloads are audited, once; a payload
// that passed is signed once in each configured format (by whichever key is current then: a
// later key does not sign it again); a failed audit is final and never signed. An audit that
// could not run (the registry was unreachable) runs again.
//
// The OpenPGP signature's condition says NoSigningKey when the controller has none; the
// Sigstore condition is left out when the controller has no Sigstore key configured.
func Decide(p *v1alpha1.ReleasePayload, signers Signers) Step {
	if !verdict.Accepted(p) {
		return Step{}
	}
	audited := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ConditionPayloadAudited)
	signed := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ConditionPayloadSigned)
	sigstore := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ConditionPayloadSigstoreSigned)
	var step Step
	switch {
	case audited == nil || audited.Reason == v1alpha1.ReasonAuditError:
		// The signatures follow in the same step, if the audit passes.
		return Step{Audit: true, Sign: signers.OpenPGP, NoKey: !signers.OpenPGP, SigstoreSign: signers.Sigstore}
	case audited.Status != metav1.ConditionTrue:
		step.AuditFailed = notRecordedAuditFailed(signed)
		step.SigstoreAuditFailed = signers.Sigstore && notRecordedAuditFailed(sigstore)
		return step
	}
	switch {
	case signed != nil && signed.Status == metav1.ConditionTrue:
	case signers.OpenPGP:
		step.Sign = true
	case signed == nil || signed.Reason != v1alpha1.ReasonNoSigningKey:
		step.NoKey = true
	}
	step.SigstoreSign = signers.Sigstore && (sigstore == nil || sigstore.Status != metav1.ConditionTrue || attestationsBehind(p, sigstore))
	return step
}

// attestationsBehind reports whether the payload now has statements that signed, its True
// PayloadSigstoreSigned, does not count: a verification (an informing one) that finished
// after the payload was signed has a test result to attach. The attestations attached are
// found again, not written twice.
func attestationsBehind(p *v1alpha1.ReleasePayload, signed *metav1.Condition) bool {
	statements, err := attestation.Statements(p, nil, BuilderID())
	if err != nil {
		return false // the signing step says why, when it runs
	}
	return !strings.HasSuffix(signed.Message, ": "+attachedSummary(statements))
}

// notRecordedAuditFailed reports whether signed, a signature's condition of a payload whose
// audit failed, does not say so yet.
func notRecordedAuditFailed(signed *metav1.Condition) bool {
	return signed == nil || signed.Reason != v1alpha1.ReasonNotSignedAuditFailed
}

// AuditedCondition is PayloadAudited for a finished audit:
//   - True, AuditPassed: every check passed.
//   - False, AuditFailed: the message names the first check that failed and why.
func AuditedCondition(rec Record) metav1.Condition {
	if failed := rec.Failed(); failed != nil {
		return metav1.Condition{Type: v1alpha1.ConditionPayloadAudited, Status: metav1.ConditionFalse,
			Reason: v1alpha1.ReasonAuditFailed, Message: fmt.Sprintf("check %s failed: %s", failed.Name, failed.Message)}
	}
	return metav1.Condition{Type: v1alpha1.ConditionPayloadAudited, Status: metav1.ConditionTrue,
		Reason: v1alpha1.ReasonAuditPassed, Message: fmt.Sprintf("%d checks passed against %s", len(rec.Checks), rec.Image)}
}

// AuditErrorCondition is PayloadAudited False, AuditError: the audit could not run (the
// registry or the store did not answer); it is retried with backoff.
func AuditErrorCondition(err error) metav1.Condition {
	return metav1.Condition{Type: v1alpha1.ConditionPayloadAudited, Status: metav1.ConditionFalse,
		Reason: v1alpha1.ReasonAuditError, Message: "the audit could not run, retrying: " + err.Error()}
}

// SignedCondition is PayloadSigned True, Signed: a signature by keyID is in the store. The
// message starts with "signed by <key id>", which the pages show.
func SignedCondition(keyID string, index int) metav1.Condition {
	return metav1.Condition{Type: v1alpha1.ConditionPayloadSigned, Status: metav1.ConditionTrue,
		Reason: v1alpha1.ReasonSigned, Message: v1alpha1.SignedMessage(keyID, index)}
}

// NotSignedAuditFailedCondition is PayloadSigned False, AuditFailed: a payload whose audit
// failed is never signed.
func NotSignedAuditFailedCondition() metav1.Condition {
	return metav1.Condition{Type: v1alpha1.ConditionPayloadSigned, Status: metav1.ConditionFalse,
		Reason: v1alpha1.ReasonNotSignedAuditFailed, Message: "not signed: the payload failed its audit"}
}

// NoKeyCondition is PayloadSigned False, NoSigningKey: the controller has no signing key
// (why says which: none configured, or the Secret is missing or unusable). The payload is
// signed once a key is there.
func NoKeyCondition(why string) metav1.Condition {
	return metav1.Condition{Type: v1alpha1.ConditionPayloadSigned, Status: metav1.ConditionFalse,
		Reason: v1alpha1.ReasonNoSigningKey, Message: "not signed: " + why}
}

// StoreErrorCondition is PayloadSigned False, SignatureStoreError: the signature store could
// not be read or written; signing is retried with backoff, and nothing is lost.
func StoreErrorCondition(err error) metav1.Condition {
	return metav1.Condition{Type: v1alpha1.ConditionPayloadSigned, Status: metav1.ConditionFalse,
		Reason: v1alpha1.ReasonSignatureStoreError, Message: "not signed yet, retrying: " + err.Error()}
}

// SigstoreSignedCondition is PayloadSigstoreSigned True, Signed: the payload's image carries
// the Sigstore signatures by keyID and the attestations of statements. The message is
// "signed by <key id>: signature and N attestations (slsaprovenance1, test-result ×K,
// verification-summary)", the attestations by the type names cosign's --type takes where it has
// one, in the order attested.
func SigstoreSignedCondition(keyID string, statements []attestation.Statement) metav1.Condition {
	return metav1.Condition{Type: v1alpha1.ConditionPayloadSigstoreSigned, Status: metav1.ConditionTrue,
		Reason: v1alpha1.ReasonSigned, Message: "signed by " + keyID + ": " + attachedSummary(statements)}
}

// attachedSummary says what statements attach: "signature and 6 attestations
// (slsaprovenance1, test-result ×4, verification-summary)".
func attachedSummary(statements []attestation.Statement) string {
	var names []string
	counts := map[string]int{}
	for _, s := range statements {
		name := predicateName(s.PredicateType)
		if counts[name] == 0 {
			names = append(names, name)
		}
		counts[name]++
	}
	for i, n := range names {
		if counts[n] > 1 {
			names[i] = fmt.Sprintf("%s ×%d", n, counts[n])
		}
	}
	attestations := fmt.Sprintf("%d attestations", len(statements))
	if len(statements) == 1 {
		attestations = "1 attestation"
	}
	if len(names) > 0 {
		attestations += " (" + strings.Join(names, ", ") + ")"
	}
	return "signature and " + attestations
}

// predicateName is a short name of a predicate type: cosign's --type name of the SLSA
// provenance, the last word of the others.
func predicateName(predicateType string) string {
	switch predicateType {
	case attestation.PredicateSLSAProvenance:
		return "slsaprovenance1"
	case attestation.PredicateTestResult:
		return "test-result"
	case attestation.PredicateVerificationSummary:
		return "verification-summary"
	}
	return predicateType
}

// SigstoreAuditFailedCondition is PayloadSigstoreSigned False, AuditFailed: a payload whose
// audit failed is never signed.
func SigstoreAuditFailedCondition() metav1.Condition {
	return sigstoreCondition(NotSignedAuditFailedCondition())
}

// SigstoreNoKeyCondition is PayloadSigstoreSigned False, NoSigningKey: the configured Sigstore
// key is not usable (why says how); the payload is signed once it is.
func SigstoreNoKeyCondition(why string) metav1.Condition {
	return sigstoreCondition(NoKeyCondition(why))
}

// sigstoreCondition is c, a PayloadSigned condition, said of the Sigstore signatures.
func sigstoreCondition(c metav1.Condition) metav1.Condition {
	c.Type = v1alpha1.ConditionPayloadSigstoreSigned
	return c
}

// RegistryErrorCondition is PayloadSigstoreSigned False, RegistryError: the registry refused
// or did not answer while the signatures or attestations were attached; it is retried with
// backoff, and what is attached already is found, not attached again.
func RegistryErrorCondition(err error) metav1.Condition {
	return metav1.Condition{Type: v1alpha1.ConditionPayloadSigstoreSigned, Status: metav1.ConditionFalse,
		Reason: v1alpha1.ReasonRegistryError, Message: "not signed yet, retrying: " + err.Error()}
}
