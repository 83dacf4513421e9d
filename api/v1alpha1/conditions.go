package v1alpha1

// Condition types of a ReleasePayload (a contract).
const (
	ConditionPayloadCreated  = "PayloadCreated"
	ConditionPayloadFailed   = "PayloadFailed"
	ConditionPayloadAccepted = "PayloadAccepted"
	ConditionPayloadRejected = "PayloadRejected"
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
)

// Condition types of a ReleaseStream.
const (
	// ConditionImported is True when every component resolved to a digest.
	ConditionImported = "Imported"
	// ConditionReady is True when the stream works as configured; its message says what the
	// stream is waiting for.
	ConditionReady = "Ready"
)

// Condition reasons of a ReleaseStream.
const (
	ReasonComponentsResolved   = "ComponentsResolved"
	ReasonComponentsUnresolved = "ComponentsUnresolved"
	ReasonMirrorFailed         = "MirrorFailed"
	ReasonPayloadCreated       = "PayloadCreated"
	ReasonUpToDate             = "UpToDate"
	ReasonTooManyUnready       = "TooManyUnreadyReleases"
	ReasonCreationInterval     = "WaitingForCreationInterval"
	ReasonPublishFailed        = "PublishFailed"
	ReasonReconcileFailed      = "ReconcileFailed"
)
