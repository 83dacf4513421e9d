package audit

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/release-controller/release-controller/api/v1alpha1"
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
}

// Done reports that nothing is left to do.
func (s Step) Done() bool { return s == Step{} }

// Decide returns the next step for p: only accepted payloads are audited, once; a payload
// that passed is signed once (by whichever key is current then: a later key does not sign
// it again); a failed audit is final and never signed. An audit that could not run (the
// registry was unreachable) runs again.
func Decide(p *v1alpha1.ReleasePayload, canSign bool) Step {
	if !verdict.Accepted(p) {
		return Step{}
	}
	audited := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ConditionPayloadAudited)
	signed := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ConditionPayloadSigned)
	switch {
	case audited == nil || audited.Reason == v1alpha1.ReasonAuditError:
		return Step{Audit: true, Sign: canSign, NoKey: !canSign}
	case audited.Status != metav1.ConditionTrue:
		if signed == nil || signed.Reason != v1alpha1.ReasonNotSignedAuditFailed {
			return Step{AuditFailed: true}
		}
		return Step{}
	case signed != nil && signed.Status == metav1.ConditionTrue:
		return Step{}
	case canSign:
		return Step{Sign: true}
	case signed == nil || signed.Reason != v1alpha1.ReasonNoSigningKey:
		return Step{NoKey: true}
	}
	return Step{}
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
