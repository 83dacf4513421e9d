package v1alpha1

// Reasons of the Events the controllers record (events.k8s.io), besides the
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
	// EventVerdictCorrected (Warning): the status held a verdict its recorded evidence does not
	// give (someone else wrote it, such as a hand-edited Accepted condition); nothing acted on
	// it, and the payload controller wrote back the phase the evidence gives.
	EventVerdictCorrected = "VerdictCorrected"
	// EventReleaseLogFull (Warning): the payload's verdict is not in the release log: its day
	// holds the most entries or bytes it may.
	EventReleaseLogFull = "ReleaseLogFull"
	// EventReleaseLogFailed (Warning): the payload's verdict could not be written to the
	// release log (the API server refused or failed); it is retried.
	EventReleaseLogFailed = "ReleaseLogFailed"

	// On a Pipeline.

	// EventPromoted (Normal): a revision was promoted into an environment (related: nothing;
	// the note names the environment, revision, strategy and approver).
	EventPromoted = "Promoted"
	// EventPromotionFailed (Warning): a promotion failed; it is retried with backoff.
	EventPromotionFailed = "PromotionFailed"
	// EventClusterUnreachable (Warning): a target's cluster cannot be reached or its
	// kubeconfig Secret cannot be used.
	EventClusterUnreachable = "ClusterUnreachable"
	// EventTargetForbidden (Warning): the pipeline's service account may not get a local
	// target's app; the target is neither shown nor promoted (Ready=False, TargetForbidden).
	EventTargetForbidden = "TargetForbidden"
	// EventInvalidApp (Warning): the pipeline's appRef names no kind the controller can read.
	EventInvalidApp = "InvalidApp"
)
