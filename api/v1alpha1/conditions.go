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
