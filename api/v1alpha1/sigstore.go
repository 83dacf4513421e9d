package v1alpha1

// The Sigstore signatures and attestations of an accepted payload (issue 36), beside the
// OpenPGP signatures of PayloadSigned.
const (
	// ConditionPayloadSigstoreSigned is True when the payload's image in its registry carries
	// a Sigstore signature by the controller's Sigstore key (the sha256-<hex>.sig tag and a
	// bundle referrer) of its index and of each platform's image, and every attestation (the
	// SLSA provenance, one test result per verification, the verification summary). The
	// message names the key id and the attestations. Absent when the controller has no
	// Sigstore key configured; False says why not yet (ReasonNoSigningKey,
	// ReasonNotSignedAuditFailed, ReasonRegistryError).
	ConditionPayloadSigstoreSigned = "PayloadSigstoreSigned"

	// ReasonRegistryError (PayloadSigstoreSigned=False): the registry refused or did not
	// answer a write or read of the signatures or attestations; it is retried with backoff.
	ReasonRegistryError = "RegistryError"
)
