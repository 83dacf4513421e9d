package v1alpha1

// Condition types of a ReleasePayload (a contract).
const (
	ConditionPayloadCreated  = "PayloadCreated"
	ConditionPayloadFailed   = "PayloadFailed"
	ConditionPayloadAccepted = "PayloadAccepted"
	ConditionPayloadRejected = "PayloadRejected"

	// ConditionPayloadAudited is True when the accepted payload's image, read back from the
	// registry, matched the payload; False names the check that failed.
	ConditionPayloadAudited = "PayloadAudited"
	// ConditionPayloadSigned is True when a signature of the payload's digest by the current
	// signing key is stored (the message names the key id); False says why not.
	ConditionPayloadSigned = "PayloadSigned"
	// ConditionPayloadIssuesVerified is True when the Jira issues of the payload's changelog
	// were moved to the stream's target status; False says which could not be.
	ConditionPayloadIssuesVerified = "PayloadIssuesVerified"
	// ConditionPayloadTombstoned is True while the payload carries the tombstone annotation
	// (the message is its reason); its transition is when the update service stopped
	// promoting it and offering it as a target.
	ConditionPayloadTombstoned = "PayloadTombstoned"
)

// Condition reasons of a ReleasePayload.
const (
	// PayloadCreated
	ReasonCreationJobSucceeded = "CreationJobSucceeded"
	ReasonCreationJobFailed    = "CreationJobFailed"
	ReasonCreationJobPending   = "CreationJobPending"
	ReasonCreationJobNotFound  = "CreationJobNotFound"

	// PayloadFailed
	ReasonCreationJobNotFailed = "CreationJobNotFailed"
	ReasonAborted              = "Aborted"

	// PayloadAccepted and PayloadRejected
	ReasonPayloadFailed          = "PayloadFailed"
	ReasonPayloadNotCreated      = "PayloadNotCreated"
	ReasonManualOverride         = "ManualOverride"
	ReasonBlockingJobsSucceeded  = "BlockingJobsSucceeded"
	ReasonVerificationsCompleted = "VerificationsCompleted"
	ReasonBlockingJobsPending    = "BlockingJobsPending"
	ReasonBlockingJobFailed      = "BlockingJobFailed"
	ReasonPayloadAccepted        = "PayloadAccepted"
	ReasonPayloadRejected        = "PayloadRejected"

	// PayloadAudited
	ReasonAuditPassed = "AuditPassed"
	ReasonAuditFailed = "AuditFailed"
	// ReasonAuditError: the audit could not run (registry unreachable); it is retried.
	ReasonAuditError = "AuditError"

	// PayloadSigned
	ReasonSigned = "Signed"
	// ReasonNotSignedAuditFailed: a payload that failed its audit is never signed.
	ReasonNotSignedAuditFailed = "AuditFailed"
	// ReasonNoSigningKey: the controller has no usable key; nothing is signed.
	ReasonNoSigningKey = "NoSigningKey"
	// ReasonSignatureStoreError: the signature store could not be written; it is retried.
	ReasonSignatureStoreError = "SignatureStoreError"

	// PayloadTombstoned
	ReasonTombstoned = "Tombstoned"

	// PayloadIssuesVerified
	ReasonIssuesVerified       = "IssuesVerified"
	ReasonNoIssues             = "NoIssues"
	ReasonIssuesNotVerified    = "IssuesNotVerified"
	ReasonJiraMisconfigured    = "JiraMisconfigured"
	ReasonChangeLogUnavailable = "ChangeLogUnavailable"
)

// Condition types of a ReleaseStream. internal/stream/status.go sets them, each from what one
// reconcile found; Ready is decided there, in one place, from the others and the pass's failures.
const (
	// ConditionImported is True when every component resolved to a digest.
	ConditionImported = "Imported"
	// ConditionUpgradeGraphRecorded is True when the stream's upgrade results are recorded in
	// its ConfigMap <stream>-upgrade-graph; False says why they cannot be.
	ConditionUpgradeGraphRecorded = "UpgradeGraphRecorded"
	// ConditionReady is True when the stream works as configured; its message says what the
	// stream is waiting for. It is False when a step of the last reconcile failed (the reason
	// names the first that did, the message lists them all) or a component does not resolve.
	ConditionReady = "Ready"
)

// Condition reasons of a ReleaseStream.
const (
	// ReasonComponentsResolved (Imported=True): every component resolved to a digest.
	ReasonComponentsResolved = "ComponentsResolved"
	// ReasonComponentsUnresolved (Imported=False, Ready=False): some components did not
	// resolve; they are retried with backoff and no payload is created meanwhile.
	ReasonComponentsUnresolved = "ComponentsUnresolved"

	// ReasonPayloadCreated (Ready=True): the pass created a payload, or is about to.
	ReasonPayloadCreated = "PayloadCreated"
	// ReasonUpToDate (Ready=True): the newest payload has the current components.
	ReasonUpToDate = "UpToDate"
	// ReasonTooManyUnready (Ready=True): components changed, but maxUnreadyReleases payloads
	// still wait for a verdict.
	ReasonTooManyUnready = "TooManyUnreadyReleases"
	// ReasonCreationInterval (Ready=True): components changed, but minCreationInterval has not
	// passed since the newest payload.
	ReasonCreationInterval = "WaitingForCreationInterval"

	// ReasonVerificationNameClash (Ready=False): two of the stream's verifications would give
	// a payload two verifications of one name (e2e with several platforms makes e2e-arm64,
	// which another verification is called); no payload is created until the spec is fixed
	// (Stalled=True).
	ReasonVerificationNameClash = "VerificationNameClash"

	// ReasonMirrorFailed (Ready=False): copying the components to mirrorRepository failed.
	ReasonMirrorFailed = "MirrorFailed"
	// ReasonPublishFailed (Ready=False): moving the publish tags to the newest accepted payload failed.
	ReasonPublishFailed = "PublishFailed"
	// ReasonReconcileFailed (Ready=False): another step failed (an API or registry call).
	ReasonReconcileFailed = "ReconcileFailed"
	// ReasonUpgradeSourceMissing (Ready=False, Stalled=True): an upgrade verification starts
	// from another stream (from.stream) that does not exist; its payloads wait, and the stream
	// is reconciled again when that stream appears or its own spec changes.
	ReasonUpgradeSourceMissing = "UpgradeSourceMissing"

	// ReasonUpgradeGraphUpToDate (UpgradeGraphRecorded=True): every finished upgrade run is in the ConfigMap.
	ReasonUpgradeGraphUpToDate = "UpgradeGraphUpToDate"
	// ReasonUpgradeGraphNotOwned (UpgradeGraphRecorded=False, Ready=False): a ConfigMap named
	// <stream>-upgrade-graph exists without the label release-controller.dev/stream=<stream>
	// (made by hand, or another stream's). The controller does not overwrite it; it retries
	// with exponential backoff until the ConfigMap is deleted or renamed.
	ReasonUpgradeGraphNotOwned = "UpgradeGraphNotOwned"
	// ReasonUpgradeGraphUnreadable (UpgradeGraphRecorded=False, Ready=False): the ConfigMap's
	// graph.json is not an upgrade graph; it is left as it is.
	ReasonUpgradeGraphUnreadable = "UpgradeGraphUnreadable"
	// ReasonUpgradeGraphWriteFailed (UpgradeGraphRecorded=False, Ready=False): writing the
	// ConfigMap failed; it is retried with backoff.
	ReasonUpgradeGraphWriteFailed = "UpgradeGraphWriteFailed"
)

// Condition types every ReleaseStream, ReleasePayload and Pipeline carries beside Ready, with
// the meanings kstatus gives them (read by `kubectl wait`, Flux, Argo CD health checks and
// Helm): abnormal-true, so each is present only while True.
const (
	// ConditionReconciling is True while the controller is still working toward the object's
	// spec: a step is under way (Progressing) or failed and is retried (ProgressingWithRetry).
	ConditionReconciling = "Reconciling"
	// ConditionStalled is True when the controller cannot go on until the spec (or what the
	// message names) changes; it is not retried meanwhile.
	ConditionStalled = "Stalled"
)

// Reasons of Reconciling.
const (
	// ReasonProgressing (Reconciling=True): the controller started work it waits on (a
	// creation job, verifications, a rollout).
	ReasonProgressing = "Progressing"
	// ReasonProgressingWithRetry (Reconciling=True): a step failed; it is retried with backoff
	// and Ready's message says what failed.
	ReasonProgressingWithRetry = "ProgressingWithRetry"
	// ReasonSuspended (Ready keeps its last value; Reconciling absent): spec.suspend is set,
	// nothing is created, imported or promoted.
	ReasonSuspended = "Suspended"
)
