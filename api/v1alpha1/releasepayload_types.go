package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PayloadCoordinates say which stream a payload belongs to and which release it is.
type PayloadCoordinates struct {
	// Stream is the name of the ReleaseStream, in the payload's namespace.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Stream string `json:"stream"`

	// Tag is the release tag, <tagPrefix>-<UTC YYYY-MM-DD-HHMMSS>; it is also the payload's name.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// The rule admits exactly the semantic versions the controllers parse (numbers without
	// leading zeros, of at most 19 digits, which fit 64 bits), so that every payload sorts as
	// the version it is.
	// +kubebuilder:validation:XValidation:rule="self.matches('^(0|[1-9][0-9]{0,18})[.](0|[1-9][0-9]{0,18})[.](0|[1-9][0-9]{0,18})(-(0|[1-9][0-9]{0,18}|[0-9]*[a-z-][0-9a-z-]*)([.](0|[1-9][0-9]{0,18}|[0-9]*[a-z-][0-9a-z-]*))*)?$')",message="tag must be a lowercase semantic version (numbers without leading zeros, at most 19 digits), e.g. 4.15.0-0.nightly-2026-11-22-093000"
	Tag string `json:"tag"`
}

// PinnedComponent is one component of a payload, pinned by digest at creation.
type PinnedComponent struct {
	// Name of the component.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Name string `json:"name"`

	// Image is the component's pull spec by digest.
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]+([._-][a-z0-9]+)*((:[0-9]+)?(/[a-z0-9]+([._-][a-z0-9]+)*)+)?@sha256:[a-f0-9]{64}$')",message="component image must be pinned by digest (repository@sha256:...), the repository in lowercase"
	Image string `json:"image"`

	// Source is the pull spec the stream follows for this component, when it differs from Image.
	// +kubebuilder:validation:MaxLength=512
	// +optional
	Source string `json:"source,omitempty"`
}

// PayloadCreationConfig says where the payload image is written.
type PayloadCreationConfig struct {
	// Repository receives the payload image as <repository>:<tag>.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=255
	Repository string `json:"repository"`

	// MirrorRepository, when set, holds copies of the component images.
	// +kubebuilder:validation:MaxLength=255
	// +optional
	MirrorRepository string `json:"mirrorRepository,omitempty"`

	// Platforms the payload image is built for (the stream's platforms when the payload was
	// created); empty: one image of the components' platform.
	// +listType=set
	// +kubebuilder:validation:MaxItems=8
	// +optional
	Platforms []string `json:"platforms,omitempty"`

	// BaseComponent names the component whose image the payload image is built on (the
	// stream's payloadBaseComponent when the payload was created).
	// +kubebuilder:validation:MaxLength=63
	// +optional
	BaseComponent string `json:"baseComponent,omitempty"`

	// Cluster, when set, is the cluster the creation Job runs on (the stream's creationCluster
	// when the payload was created): the Job gets its whole input in a ConfigMap beside it and
	// needs no way back to this cluster.
	// +optional
	Cluster *VerificationCluster `json:"cluster,omitempty"`
}

// PayloadVerificationConfig is the stream's verification list as it was when the payload was
// created; later edits of the stream do not change it. The job templates are either inline
// (each verification sets job or prowJob) or, as the stream controller writes them, kept once
// per distinct list in a ConfigMap that TemplatesFrom names: then the verifications set no
// backend, and the payload, which every status write carries whole, is kilobytes smaller.
// +kubebuilder:validation:XValidation:rule="has(self.templatesFrom) || !has(self.verifications) || self.verifications.all(v, has(v.job) != has(v.prowJob))",message="exactly one of job or prowJob must be set"
// +kubebuilder:validation:XValidation:rule="!has(self.templatesFrom) || !has(self.verifications) || self.verifications.all(v, !has(v.job) && !has(v.prowJob))",message="with templatesFrom, no verification sets job or prowJob: their templates are in the ConfigMap"
type PayloadVerificationConfig struct {
	// Verifications to run against the payload. Atomic, as the spec never changes: the API
	// server then keeps no field ownership per verification and job template, which every
	// status write would carry; names are kept unique by a rule instead.
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:XValidation:rule="self.all(v, self.exists_one(w, w.name == v.name))",message="verification names must be unique"
	// +optional
	Verifications []Verification `json:"verifications,omitempty"`

	// TemplatesFrom names the ConfigMap, in the payload's namespace, holding the verifications
	// with their job templates; unset, the templates are inline.
	// +optional
	TemplatesFrom *VerificationTemplates `json:"templatesFrom,omitempty"`

	// ServiceAccount is the stream's verificationServiceAccount when the payload was created:
	// the only account the verification Jobs' pods may run as. Unset: the namespace's
	// "default", without its API token.
	// +optional
	ServiceAccount *VerificationServiceAccount `json:"serviceAccount,omitempty"`
}

// VerificationTemplates is a ConfigMap holding a verification list, job templates included,
// as JSON under the key VerificationTemplatesKey. The stream controller creates one per
// stream and distinct list, immutable; the launcher refuses one whose content is not the one
// recorded.
type VerificationTemplates struct {
	// ConfigMap is the ConfigMap's name.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	ConfigMap string `json:"configMap"`

	// Digest is the sha256 of the key's value, as sha256:<hex>.
	// +kubebuilder:validation:XValidation:rule="self.matches('^sha256:[a-f0-9]{64}$')",message="digest must be sha256:<64 hex digits>"
	Digest string `json:"digest"`
}

// VerificationTemplatesKey is the key of a VerificationTemplates ConfigMap.
const VerificationTemplatesKey = "verifications.json"

// PayloadOverrideType forces a payload's verdict.
// +kubebuilder:validation:Enum=Accepted;Rejected
type PayloadOverrideType string

// Override values.
const (
	OverrideAccepted PayloadOverrideType = "Accepted"
	OverrideRejected PayloadOverrideType = "Rejected"
)

// PayloadOverride is a person's verdict, which wins over the verification results
// (but not over a failed creation job).
type PayloadOverride struct {
	// Override is Accepted or Rejected.
	Override PayloadOverrideType `json:"override"`

	// Reason says why, for the record.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	Reason string `json:"reason"`
}

// ReleasePayloadSpec is one release candidate: what it contains and how it is judged.
type ReleasePayloadSpec struct {
	// PayloadCoordinates name the stream and the release tag.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="payloadCoordinates are immutable"
	PayloadCoordinates PayloadCoordinates `json:"payloadCoordinates"`

	// Components pinned by digest.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=1000
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="components are immutable"
	Components []PinnedComponent `json:"components"`

	// PayloadCreationConfig says where the payload image goes.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="payloadCreationConfig is immutable"
	PayloadCreationConfig PayloadCreationConfig `json:"payloadCreationConfig"`

	// PayloadVerificationConfig is the verification list copied from the stream at creation.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="payloadVerificationConfig is immutable"
	// +optional
	PayloadVerificationConfig PayloadVerificationConfig `json:"payloadVerificationConfig,omitempty"`

	// PayloadOverride forces the verdict.
	// +optional
	PayloadOverride *PayloadOverride `json:"payloadOverride,omitempty"`
}

// PayloadPhase summarises the conditions.
// +kubebuilder:validation:Enum=Pending;Ready;Accepted;Rejected;Failed
type PayloadPhase string

// Phases (a contract).
const (
	PhasePending  PayloadPhase = "Pending"
	PhaseReady    PayloadPhase = "Ready"
	PhaseAccepted PayloadPhase = "Accepted"
	PhaseRejected PayloadPhase = "Rejected"
	PhaseFailed   PayloadPhase = "Failed"
)

// CreationJobStatus is the outcome of the job that builds the payload image.
// +kubebuilder:validation:Enum=Unknown;Success;Failed
type CreationJobStatus string

// Creation job outcomes.
const (
	CreationJobUnknown CreationJobStatus = "Unknown"
	CreationJobSuccess CreationJobStatus = "Success"
	CreationJobFailed  CreationJobStatus = "Failed"
)

// ReleaseCreationJobResult is what the creation job did.
type ReleaseCreationJobResult struct {
	// Namespace and Name of the creation Job, once one was found.
	// +optional
	Namespace string `json:"namespace,omitempty"`
	// +optional
	Name string `json:"name,omitempty"`

	// Status is Unknown while the job runs or is missing, then Success or Failed.
	Status CreationJobStatus `json:"status"`

	// Message is the job's own explanation.
	// +optional
	Message string `json:"message,omitempty"`
}

// JobState is the state of one verification or one of its runs.
// +kubebuilder:validation:Enum=Pending;Success;Failure;Unknown;Skipped
type JobState string

// Job states.
const (
	JobPending JobState = "Pending"
	JobSuccess JobState = "Success"
	JobFailure JobState = "Failure"
	// JobUnknown means the run's object disappeared before it finished.
	JobUnknown JobState = "Unknown"
	// JobSkipped means the verification was not run: an upgrade verification with no earlier
	// accepted payload to start from. It is final, has no runs, and does not hold a payload
	// back from acceptance. Only verifications are Skipped, never runs.
	JobSkipped JobState = "Skipped"
)

// IsTerminal reports whether a run or verification in this state is over.
func (s JobState) IsTerminal() bool {
	return s == JobSuccess || s == JobFailure || s == JobUnknown || s == JobSkipped
}

// RunKind is the backend of a run.
// +kubebuilder:validation:Enum=Job;ProwJob
type RunKind string

// Run kinds.
const (
	RunKindJob     RunKind = "Job"
	RunKindProwJob RunKind = "ProwJob"
)

// JobRun is one run of a verification: one Job or ProwJob.
type JobRun struct {
	// Kind, Namespace and Name locate the run's object.
	Kind      RunKind `json:"kind"`
	Namespace string  `json:"namespace"`
	Name      string  `json:"name"`

	// Attempt is the run's number within its verification, from 1.
	// +optional
	Attempt int32 `json:"attempt,omitempty"`

	// State of the run.
	State JobState `json:"state"`

	// UpgradeFrom is the release tag an upgrade run started from.
	// +optional
	UpgradeFrom string `json:"upgradeFrom,omitempty"`

	// URL links to the run's results.
	// +optional
	URL string `json:"url,omitempty"`

	// Message is the backend's explanation of the state.
	// +optional
	Message string `json:"message,omitempty"`

	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`
}

// VerificationStatus is the state of one verification and every run of it.
type VerificationStatus struct {
	// Name of the verification.
	Name string `json:"name"`

	// Type is Blocking or Informing.
	Type VerificationType `json:"type"`

	// UpgradeFrom, for upgrade verifications.
	// +optional
	UpgradeFrom UpgradeFrom `json:"upgradeFrom,omitempty"`

	// State is derived from the runs: Success on a passing run (or enough passing aggregated
	// runs), Failure once the retries or the aggregated runs are used up; Skipped, without
	// runs, for an upgrade verification that had no earlier accepted payload to start from.
	State JobState `json:"state"`

	// Message explains the state, e.g. "2 of 3 runs failed".
	// +optional
	Message string `json:"message,omitempty"`

	// Runs, oldest first.
	// +optional
	Runs []JobRun `json:"runs,omitempty"`
}

// ReleasePayloadStatus is the verdict on a payload and the evidence for it.
type ReleasePayloadStatus struct {
	// Phase is derived from the conditions: Accepted, Rejected or Failed when that condition
	// is True, else Ready when PayloadCreated is True, else Pending.
	// +optional
	Phase PayloadPhase `json:"phase,omitempty"`

	// Conditions PayloadCreated, PayloadFailed, PayloadAccepted and PayloadRejected (the
	// payload controller's); PayloadAudited and PayloadSigned (the audit controller's, on
	// accepted payloads); PayloadIssuesVerified (the Jira controller's, when the stream
	// configures Jira).
	// Atomic, not a map keyed by type as conditions usually are: the writers patch the status
	// with JSON merge patches, which replace lists whole whatever their type, under optimistic
	// locks; what a map would add is the API server's field ownership per condition and field,
	// which no writer uses and every status write carries (about 600 bytes of managed fields).
	// The writers keep one condition per type.
	// +listType=atomic
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// ReleaseCreationJobResult is the outcome of the job that builds the payload image.
	// +optional
	ReleaseCreationJobResult ReleaseCreationJobResult `json:"releaseCreationJobResult,omitempty"`

	// PayloadImage is the payload image's pull spec by digest, once built: an image index
	// when the payload has platforms.
	// +optional
	PayloadImage string `json:"payloadImage,omitempty"`

	// PlatformImages are the payload's image of each platform, by digest, when it has
	// platforms (written with payloadImage).
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=8
	// +optional
	PlatformImages []PlatformImage `json:"platformImages,omitempty"`

	// Verifications hold one entry per verification of the payload's verification config.
	// Atomic: the payload controller alone writes them, always whole, so the API server
	// keeps no field ownership per entry and run (it would cost every status write).
	// +listType=atomic
	// +optional
	Verifications []VerificationStatus `json:"verifications,omitempty"`
}

// PlatformImage is the payload image of one platform.
type PlatformImage struct {
	// Platform is os/arch or os/arch/variant.
	Platform string `json:"platform"`
	// Image is the platform's payload manifest, by digest.
	Image string `json:"image"`
}

// ReleasePayload is one release candidate: a point-in-time set of component digests, its
// payload image, the results of its creation and verification jobs, and the verdict.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=rlp,categories=release-controller
// +kubebuilder:validation:XValidation:rule="self.metadata.name == self.spec.payloadCoordinates.tag",message="metadata.name must equal spec.payloadCoordinates.tag"
// +kubebuilder:printcolumn:name="Stream",type=string,JSONPath=`.spec.payloadCoordinates.stream`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Accepted",type=string,JSONPath=`.status.conditions[?(@.type=="PayloadAccepted")].status`
// +kubebuilder:printcolumn:name="Message",type=string,priority=1,JSONPath=`.status.conditions[?(@.type=="PayloadAccepted")].message`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ReleasePayload struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ReleasePayloadSpec   `json:"spec"`
	Status ReleasePayloadStatus `json:"status,omitempty"`
}

// ReleasePayloadList is a list of ReleasePayloads.
//
// +kubebuilder:object:root=true
type ReleasePayloadList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ReleasePayload `json:"items"`
}

func init() {
	SchemeBuilder.Register(&ReleasePayload{}, &ReleasePayloadList{})
}
