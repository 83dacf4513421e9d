package catalog

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/release-controller/release-controller/api/v1alpha1"
)

// Trust is what the audit and the signing controller said of an accepted payload, as the
// pages, REST and MCP show it.
type Trust struct {
	// Audit is the PayloadAudited condition's reason (AuditPassed, AuditFailed, AuditError),
	// empty before the audit; AuditMessage its message.
	Audit, AuditMessage string
	// Signed: signature-<SignatureIndex> of the payload's digest, made with the key KeyID, is in
	// the signature store, served at SignaturePath.
	Signed         bool
	KeyID          string
	SignatureIndex int
	SignaturePath  string
	// SignedMessage is the PayloadSigned condition's message, signed or not ("" before signing).
	SignedMessage string
	// SigstoreSigned: the payload's image carries, in its registry, Sigstore signatures and
	// attestations made with the Sigstore key SigstoreKeyID ("sha256:<hex>"). SigstoreMessage is
	// the PayloadSigstoreSigned condition's message, signed or not ("" without a Sigstore key).
	SigstoreSigned  bool
	SigstoreKeyID   string
	SigstoreMessage string
}

// Trust reads the payload's audit and signature from its conditions.
func (e Entry) Trust() Trust {
	var t Trust
	conds := e.Payload.Status.Conditions
	if c := meta.FindStatusCondition(conds, v1alpha1.ConditionPayloadAudited); c != nil {
		t.Audit, t.AuditMessage = c.Reason, c.Message
	}
	if c := meta.FindStatusCondition(conds, v1alpha1.ConditionPayloadSigned); c != nil {
		t.SignedMessage = c.Message
		if c.Status == metav1.ConditionTrue {
			if key, n, ok := v1alpha1.ParseSignedMessage(c.Message); ok {
				t.Signed, t.KeyID, t.SignatureIndex = true, key, n
				t.SignaturePath = SignaturePath(e.Payload.Status.PayloadImage, n)
			}
		}
	}
	if c := meta.FindStatusCondition(conds, v1alpha1.ConditionPayloadSigstoreSigned); c != nil {
		t.SigstoreMessage = c.Message
		if c.Status == metav1.ConditionTrue {
			t.SigstoreSigned, t.SigstoreKeyID = true, sigstoreKeyID(c.Message)
		}
	}
	return t
}

// sigstoreKeyID is the key id of a PayloadSigstoreSigned message, "signed by <key id>: what is
// attached"; empty when the message does not start so.
func sigstoreKeyID(message string) string {
	rest, ok := strings.CutPrefix(message, "signed by ")
	if !ok {
		return ""
	}
	fields := strings.Fields(rest)
	if len(fields) == 0 {
		return ""
	}
	return strings.TrimSuffix(fields[0], ":")
}

// SigstorePublicKeyPath is where the HTTP server serves the public key of the Sigstore
// signatures and attestations.
const SigstorePublicKeyPath = "/signatures/cosign.pub"

// cosignKeyFlags are the flags cosign v3 needs to check what the controller signs with its own
// key: the public key saved as cosign.pub, and no transparency log, which it logs nowhere.
const cosignKeyFlags = "--key cosign.pub --insecure-ignore-tlog=true"

// CosignVerifyCommand is the cosign command that checks the Sigstore signature of the image
// pullSpec (by digest), with the key of SigstorePublicKeyPath saved as cosign.pub.
func CosignVerifyCommand(pullSpec string) string {
	return "cosign verify " + cosignKeyFlags + " " + pullSpec
}

// CosignVerifyAttestationCommand is the cosign command that checks the attestation of
// predicateType (cosign's short name or the URI) of the image pullSpec.
func CosignVerifyAttestationCommand(pullSpec, predicateType string) string {
	return "cosign verify-attestation " + cosignKeyFlags + " --type " + predicateType + " " + pullSpec
}

// SignaturePath is where the HTTP server serves signature-<n> of the image pullSpec (by
// digest): /signatures/sha256=<hex>/signature-<n>; empty for a pull spec without a digest.
func SignaturePath(pullSpec string, n int) string {
	_, digest, ok := strings.Cut(pullSpec, "@")
	if !ok || !strings.HasPrefix(digest, "sha256:") {
		return ""
	}
	return fmt.Sprintf("/signatures/%s/signature-%d", strings.Replace(digest, ":", "=", 1), n)
}
