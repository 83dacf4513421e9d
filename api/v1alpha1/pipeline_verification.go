package v1alpha1

// The job contract of an environment's verification runs (Jobs and ProwJobs), besides
// LabelJobType (JobTypeVerification) and LabelVerify (the verification's name): the pipeline
// controller finds a run again by them after a restart, and a person with kubectl.
const (
	// LabelPipeline is the pipeline's name (a hash of it when it is longer than a label value).
	LabelPipeline = "release-controller.dev/pipeline"
	// LabelEnvironment is the environment whose verification the run is.
	LabelEnvironment = "release-controller.dev/environment"
	// AnnotationPipeline is the pipeline, namespace/name: which pipeline the run belongs to,
	// wherever the run is created (another namespace, another cluster).
	AnnotationPipeline = "release-controller.dev/pipeline"
	// AnnotationRevision is the revision the run verifies.
	AnnotationRevision = "release-controller.dev/revision"
)

// Environment variables every container of an environment's verification run gets (a
// contract), on top of its template's.
const (
	// EnvPipeline is the pipeline's name; EnvPipelineNamespace its namespace.
	EnvPipeline          = "RELEASE_PIPELINE"
	EnvPipelineNamespace = "RELEASE_PIPELINE_NAMESPACE"
	// EnvEnvironment is the environment verified.
	EnvEnvironment = "RELEASE_ENVIRONMENT"
	// EnvRevision is the revision every target of the environment is ready at.
	EnvRevision = "RELEASE_REVISION"
	// EnvTargets are the environment's targets, comma-separated, each NAMESPACE (the cluster
	// the controller runs against) or CLUSTERREF:NAMESPACE (clusterRef names the target's
	// kubeconfig Secret).
	EnvTargets = "RELEASE_TARGETS"
)

// MaxUnpromotable bounds PipelineStatus.Unpromotable (keep it in step with the marker): past it
// the oldest entry goes.
const MaxUnpromotable = 64

// ConditionPromotionHeld is True while a failed verification holds the pipeline's promotions
// (onFailure: hold, or rollback with no revision to return to): nothing is promoted into any
// environment until the environment where it failed is at another revision (a person rolled it
// forward or back). The message names the revision, the environment and the verifications.
const ConditionPromotionHeld = "PromotionHeld"

// Reasons of ConditionPromotionHeld.
const (
	// ReasonVerificationFailed (PromotionHeld=True): a blocking verification failed and the
	// environment's onFailure holds the pipeline.
	ReasonVerificationFailed = "VerificationFailed"
	// ReasonNotHeld (PromotionHeld=False): no failed verification holds the pipeline.
	ReasonNotHeld = "NotHeld"
)

// Reasons of the Events the pipeline controller records about verifications after rollout.
const (
	// EventVerificationPassed (Normal): an environment's verification of a revision passed;
	// the next environment may take the revision.
	EventVerificationPassed = "VerificationPassed"
	// EventRolledBack (Warning): an environment whose verification failed was promoted back to
	// the last revision that passed there; the note says from which revision to which, and
	// which verifications failed. The failed revision is never promoted further.
	EventRolledBack = "RolledBack"
	// EventPromotionHeld (Warning): a failed verification holds the pipeline's promotions; the
	// note says why and until when.
	EventPromotionHeld = "PromotionHeld"
	// (EventVerificationStarted, EventVerificationRetried and EventVerificationFailed are the
	// payloads' reasons, used on a Pipeline for its environments' runs too.)
)
