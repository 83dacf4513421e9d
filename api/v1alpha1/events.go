package v1alpha1

// Reasons of the Events the stream and payload controllers record (events.k8s.io), besides the
// condition reasons their failures carry (ReasonReconcileFailed, ReasonMirrorFailed,
// ReasonPublishFailed, ReasonUpgradeGraphNotOwned, …: a failed step is a Warning Event with
// the reason its Ready condition shows).
const (
	// On a ReleaseStream.

	// EventPayloadCreated (Normal): the stream created a payload (related: the payload).
	EventPayloadCreated = "PayloadCreated"
	// EventPublished (Normal): the publish tags were moved to the newest accepted payload.
	EventPublished = "Published"
	// EventPayloadCollected (Normal): retention deleted a payload.
	EventPayloadCollected = "PayloadCollected"
	// EventImportFailed (Warning): components began to fail to resolve, or fail differently.
	EventImportFailed = "ImportFailed"

	// On a ReleasePayload.

	// EventBuildStarted (Normal): the stream controller created the payload's creation job.
	EventBuildStarted = "BuildStarted"
	// EventBuildSucceeded (Normal): the creation job succeeded; the payload is created.
	EventBuildSucceeded = "BuildSucceeded"
	// EventBuildFailed (Warning): the creation job failed, or the payload was aborted
	// (superseded before its image was built); the payload failed.
	EventBuildFailed = "BuildFailed"
	// EventVerificationStarted (Normal): the first run (or an aggregated run) of a verification was launched.
	EventVerificationStarted = "VerificationStarted"
	// EventVerificationRetried (Normal): a failed or lost verification run was run again.
	EventVerificationRetried = "VerificationRetried"
	// EventVerificationFailed (Warning): a verification run failed.
	EventVerificationFailed = "VerificationFailed"
	// EventVerificationLost (Warning): a verification run's object was deleted before it finished.
	EventVerificationLost = "VerificationLost"
	// EventAccepted (Normal): the payload was accepted.
	EventAccepted = "Accepted"
	// EventRejected (Warning): the payload was rejected.
	EventRejected = "Rejected"
)
