package v1alpha1

// Labels on every Job and ProwJob the controller creates (a contract: outside tools select on them).
const (
	// LabelStream names the ReleaseStream the job belongs to.
	LabelStream = "release-controller.dev/stream"
	// LabelPayload holds the payload's release tag, which is also the payload's name.
	LabelPayload = "release-controller.dev/payload"
	// LabelJobType is JobTypeCreation or JobTypeVerification.
	LabelJobType = "release-controller.dev/job-type"
	// LabelVerify names the verification a verification job runs.
	LabelVerify = "release-controller.dev/verify"
	// LabelPlatform is the platform a verification job runs for, "/" written "-" (e.g.
	// linux-arm64); absent on jobs of a verification without platforms.
	LabelPlatform = "release-controller.dev/platform"
	// LabelPayloadNamespace names the payload's namespace when the job lives in another one
	// (ProwJobs are created in Prow's namespace). Absent means the job's own namespace.
	LabelPayloadNamespace = "release-controller.dev/payload-namespace"
)

// LabelContent tells the ConfigMaps the stream controller keeps beside a stream (labelled
// LabelStream) apart: ContentVerificationTemplates for a payload's verification templates
// (see VerificationTemplates); absent on the stream's upgrade graph.
const (
	LabelContent                 = "release-controller.dev/content"
	ContentVerificationTemplates = "verification-templates"
)

// Values of LabelJobType.
const (
	JobTypeCreation     = "creation"
	JobTypeVerification = "verification"
)

// Annotations on verification jobs that describe one run.
const (
	// AnnotationAttempt is the run's number within its verification, starting at 1:
	// the retry attempt, or the index of an aggregated run.
	AnnotationAttempt = "release-controller.dev/attempt"
	// AnnotationUpgradeFrom is the release tag an upgrade run starts from.
	AnnotationUpgradeFrom = "release-controller.dev/upgrade-from"
	// AnnotationURL links to the run's results, for backends that do not report one themselves.
	AnnotationURL = "release-controller.dev/url"
)

// Annotations on a ReleasePayload.
const (
	// AnnotationKeep stops garbage collection from ever deleting the payload.
	AnnotationKeep = "release-controller.dev/keep"
	// AnnotationComponentsHash identifies the component set the payload was created from.
	AnnotationComponentsHash = "release-controller.dev/components-hash"
	// AnnotationAborted, set by the stream controller on a payload that was superseded before
	// its image was built, says why; such a payload fails instead of being built.
	AnnotationAborted = "release-controller.dev/aborted"
	// AnnotationTombstone withdraws a payload from the update service, its value saying why
	// (set by a release engineer: kubectl annotate or `release-controller risk tombstone`). The
	// payload keeps its node in the channels it is in, so clusters on it still find it, but
	// no upgrade leads into it and no feeder promotes it further.
	AnnotationTombstone = "release-controller.dev/tombstone"
	// AnnotationUpgradeSkipped lists (comma-separated) the upgrade verifications that had no
	// earlier accepted payload to start from when the payload was verified.
	AnnotationUpgradeSkipped = "release-controller.dev/upgrade-skipped"
	// AnnotationRefusedRuns records the verification runs whose Job or ProwJob the API server
	// refused (an invalid template): JSON, run name to the run's verification, attempt and the
	// API server's message. Each counts as a failed run.
	AnnotationRefusedRuns = "release-controller.dev/refused-runs"
)

// Environment given to every verification job (a contract).
const (
	EnvReleaseImageLatest  = "RELEASE_IMAGE_LATEST"
	EnvReleaseTag          = "RELEASE_TAG"
	EnvReleaseStream       = "RELEASE_STREAM"
	EnvReleaseImageInitial = "RELEASE_IMAGE_INITIAL"
	// EnvReleasePlatform is the platform (os/arch[/variant]) a verification job runs for;
	// set only on jobs of a verification with platforms.
	EnvReleasePlatform = "RELEASE_PLATFORM"
)

// Annotations on a Secret that say where its credential may be sent (Jira tokens, git
// credentials). internal/secreturl decides with them.
const (
	// AnnotationAllowedURLs lists the URL prefixes the Secret may be sent to, one per line or
	// comma-separated, e.g. "https://jira.example.com". They are compared as parsed URLs:
	// scheme, host, port and whole path segments. Without it the Secret is sent nowhere.
	AnnotationAllowedURLs = "release-controller.dev/allowed-urls"
	// AnnotationAllowInsecureHTTP, "true", lets the Secret go over plain http too; otherwise
	// only https (and ssh for git) carry it.
	AnnotationAllowInsecureHTTP = "release-controller.dev/allow-insecure-http"
)

// AnnotationReconcileRequestedAt asks for a reconcile now (as Flux's
// reconcile.fluxcd.io/requestedAt): any new value makes the controller reconcile the object,
// and status.lastHandledReconcileAt repeats the value once it has. `release-controller
// reconcile stream|pipeline NAME` sets it and waits for that answer.
const AnnotationReconcileRequestedAt = "release-controller.dev/reconcile-requested-at"
