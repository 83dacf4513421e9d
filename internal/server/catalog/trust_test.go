package catalog

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/release-controller/release-controller/api/v1alpha1"
)

func TestTrust(t *testing.T) {
	digest := "sha256:" + "ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12"
	payload := func(conds ...metav1.Condition) Entry {
		p := &v1alpha1.ReleasePayload{}
		p.Status.PayloadImage = "registry.example.com/product/release@" + digest
		p.Status.Conditions = conds
		return Entry{Payload: p}
	}
	audited := metav1.Condition{Type: v1alpha1.ConditionPayloadAudited, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonAuditPassed, Message: "4 checks passed"}
	signed := metav1.Condition{Type: v1alpha1.ConditionPayloadSigned, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonSigned, Message: v1alpha1.SignedMessage("0123456789ABCDEF", 2)}
	notSigned := metav1.Condition{Type: v1alpha1.ConditionPayloadSigned, Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonNoSigningKey, Message: "not signed: no key"}

	if got := payload().Trust(); got != (Trust{}) {
		t.Errorf("a payload before its audit: %+v", got)
	}
	got := payload(audited, signed).Trust()
	want := Trust{Audit: v1alpha1.ReasonAuditPassed, AuditMessage: "4 checks passed", Signed: true, KeyID: "0123456789ABCDEF", SignatureIndex: 2,
		SignaturePath: "/signatures/sha256=" + digest[7:] + "/signature-2", SignedMessage: signed.Message}
	if got != want {
		t.Errorf("audited and signed:\n got %+v\nwant %+v", got, want)
	}
	if got := payload(audited, notSigned).Trust(); got.Signed || got.SignedMessage != "not signed: no key" || got.SignaturePath != "" {
		t.Errorf("not signed: %+v", got)
	}
	// Sigstore signatures beside the OpenPGP ones, or alone.
	keyID := "sha256:" + "cd34cd34cd34cd34cd34cd34cd34cd34cd34cd34cd34cd34cd34cd34cd34cd34"
	sigstore := metav1.Condition{Type: v1alpha1.ConditionPayloadSigstoreSigned, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonSigned,
		Message: "signed by " + keyID + ": signature and 3 attestations (slsaprovenance1, test-result ×1, verification-summary)"}
	want.SigstoreSigned, want.SigstoreKeyID, want.SigstoreMessage = true, keyID, sigstore.Message
	if got := payload(audited, signed, sigstore).Trust(); got != want {
		t.Errorf("signed both ways:\n got %+v\nwant %+v", got, want)
	}
	if got := payload(audited, sigstore).Trust(); got.Signed || !got.SigstoreSigned || got.SigstoreKeyID != keyID {
		t.Errorf("Sigstore-signed only: %+v", got)
	}
	registryDown := metav1.Condition{Type: v1alpha1.ConditionPayloadSigstoreSigned, Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonRegistryError, Message: "the registry did not answer"}
	if got := payload(audited, signed, registryDown).Trust(); got.SigstoreSigned || got.SigstoreKeyID != "" || got.SigstoreMessage != registryDown.Message || !got.Signed {
		t.Errorf("Sigstore signing failed: %+v", got)
	}
	for message, want := range map[string]string{
		"signed by " + keyID + ": signature and 3 attestations": keyID,
		"signed by " + keyID: keyID,
		"signed by ":         "",
		"something else":     "",
	} {
		if got := sigstoreKeyID(message); got != want {
			t.Errorf("sigstoreKeyID(%q) = %q, want %q", message, got, want)
		}
	}
	if p := SignaturePath("registry.example.com/product/release:1.0.0", 1); p != "" {
		t.Errorf("SignaturePath of a tag = %q", p)
	}
}
