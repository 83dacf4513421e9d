package v1alpha1

import (
	batchv1 "k8s.io/api/batch/v1"

	prowv1 "github.com/release-controller/release-controller/api/prow/v1"
)

// VerificationType says whether a verification decides acceptance.
// +kubebuilder:validation:Enum=Blocking;Informing
type VerificationType string

const (
	// Blocking verifications must succeed for a payload to be accepted; one failure rejects it.
	Blocking VerificationType = "Blocking"
	// Informing verifications are run and reported but never accept or reject a payload.
	Informing VerificationType = "Informing"
)

// UpgradeFrom selects the accepted payload an upgrade verification starts from.
// Versions are compared as semantic versions.
// +kubebuilder:validation:Enum=Previous;PreviousMinus1;PreviousMinor;PreviousPatch
type UpgradeFrom string

const (
	// UpgradeFromPrevious is the newest accepted payload of the stream older than this one.
	UpgradeFromPrevious UpgradeFrom = "Previous"
	// UpgradeFromPreviousMinus1 is the accepted payload before UpgradeFromPrevious.
	UpgradeFromPreviousMinus1 UpgradeFrom = "PreviousMinus1"
	// UpgradeFromPreviousMinor is the newest accepted payload of the previous minor version.
	UpgradeFromPreviousMinor UpgradeFrom = "PreviousMinor"
	// UpgradeFromPreviousPatch is the newest accepted payload of an earlier patch version of the same minor.
	UpgradeFromPreviousPatch UpgradeFrom = "PreviousPatch"
)

// UpgradeSourceStream names the stream an upgrade starts from.
type UpgradeSourceStream struct {
	// Stream is a ReleaseStream in the payload's namespace.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Stream string `json:"stream"`
}

// Verification is one test a payload must (blocking) or may (informing) pass. A stream's
// verification sets exactly one backend (job or prowJob); a payload's sets none when its
// templates are kept in a ConfigMap (PayloadVerificationConfig.TemplatesFrom).
//
// +kubebuilder:validation:XValidation:rule="!has(self.from) || has(self.upgradeFrom)",message="from needs upgradeFrom: from names the stream the upgrade starts from, upgradeFrom which of its accepted payloads"
// +kubebuilder:validation:XValidation:rule="!has(self.job) || !has(self.prowJob)",message="job and prowJob cannot both be set"
// +kubebuilder:validation:XValidation:rule="!has(self.aggregation) || !has(self.maxRetries) || self.maxRetries == 0",message="maxRetries cannot be combined with aggregation: an aggregated verification judges its runs together"
// +kubebuilder:validation:XValidation:rule="!has(self.cluster) || !has(self.prowJob)",message="cluster runs job backends only: a ProwJob is created where Prow runs (prowJob.namespace), and Prow picks its build cluster"
// +kubebuilder:validation:XValidation:rule="!has(self.platforms) || size(self.platforms) < 2 || self.platforms.all(p, size(self.name) + size(p) <= 63)",message="name is too long for one verification per platform: <name>-<arch> must fit in 63 characters"
type Verification struct {
	// Name identifies the verification in the payload's status and in the
	// release-controller.dev/verify label of its jobs.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",message="name must be lowercase letters, digits and '-', starting and ending with a letter or digit"
	Name string `json:"name"`

	// Type is Blocking (decides acceptance) or Informing (reported only).
	// +kubebuilder:default=Blocking
	// +optional
	Type VerificationType `json:"type,omitempty"`

	// UpgradeFrom makes this an upgrade verification: it receives the selected earlier
	// accepted payload as RELEASE_IMAGE_INITIAL.
	// +optional
	UpgradeFrom UpgradeFrom `json:"upgradeFrom,omitempty"`

	// From takes an upgrade's source from another stream of the namespace (OpenShift's
	// upgrades from the previous minor's stream): upgradeFrom picks among that stream's
	// accepted payloads instead of this one's. It needs upgradeFrom.
	// +optional
	From *UpgradeSourceStream `json:"from,omitempty"`

	// Platforms runs the verification once per listed platform of the stream: a payload
	// gets one verification per platform, named <name>-<arch> (<name>-<arch>-<variant> for
	// a platform with a variant) when several are listed, each of whose jobs carries the
	// platform (a Job is scheduled on nodes of its OS and architecture, a ProwJob gets it in
	// its environment and labels). The verdict needs every blocking one. Empty: one run,
	// wherever the job lands.
	// +listType=set
	// +kubebuilder:validation:MaxItems=8
	// +kubebuilder:validation:items:MaxLength=64
	// +kubebuilder:validation:items:XValidation:rule="self.matches('^[a-z0-9]+/[a-z0-9_]+(/[a-z0-9]+)?$')",message="a platform is os/arch or os/arch/variant, e.g. linux/arm64"
	// +optional
	Platforms []string `json:"platforms,omitempty"`

	// MaxRetries is how many times a failed run is retried before the verification fails.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=20
	// +optional
	MaxRetries int32 `json:"maxRetries,omitempty"`

	// Aggregation runs the verification several times and judges the runs together.
	// +optional
	Aggregation *Aggregation `json:"aggregation,omitempty"`

	// Job runs the verification as a batch/v1 Job.
	// +optional
	Job *JobBackend `json:"job,omitempty"`

	// ProwJob runs the verification as a Prow ProwJob.
	// +optional
	ProwJob *ProwJobBackend `json:"prowJob,omitempty"`

	// Cluster runs the verification's Jobs on another cluster than the controller's (a build
	// farm); unset, they run beside the payload. Only job backends may name one.
	// +optional
	Cluster *VerificationCluster `json:"cluster,omitempty"`
}

// VerificationCluster is the cluster a verification's Jobs are created, watched and collected
// on, reached through a kubeconfig Secret.
type VerificationCluster struct {
	// SecretRef names a Secret in the stream's namespace holding the cluster's kubeconfig
	// under the key value (the Cluster API convention, as a pipeline target's clusterRef).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-.a-z0-9]*[a-z0-9])?$')",message="secretRef must be a Secret's name (a DNS subdomain)"
	SecretRef string `json:"secretRef"`

	// Namespace is where the Jobs are created on that cluster; default a namespace of the
	// same name as the stream's. It must exist there.
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",message="namespace must be a DNS label"
	// +optional
	Namespace string `json:"namespace,omitempty"`
}

// VerificationServiceAccount is the ServiceAccount verification Jobs' pods run as. A Job
// template is a pod spec written by a tenant: it runs as this account of its own namespace,
// never as one it names (which could be the controller's own where they share a namespace).
type VerificationServiceAccount struct {
	// Name of a ServiceAccount of the stream's namespace; default "default".
	// +kubebuilder:default=default
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-.a-z0-9]*[a-z0-9])?$')",message="name must be a ServiceAccount's name (a DNS subdomain)"
	// +optional
	Name string `json:"name,omitempty"`

	// MountToken mounts the account's API token in the pods (automountServiceAccountToken,
	// or a projected serviceAccountToken volume); default false: verification pods get no
	// credentials for the API server unless the stream asks for them.
	// +optional
	MountToken bool `json:"mountToken,omitempty"`
}

// DefaultVerificationServiceAccount is the account verification pods run as when a stream
// names none.
const DefaultVerificationServiceAccount = "default"

// AccountName is the ServiceAccount's name; DefaultVerificationServiceAccount when a is nil or
// names none.
func (a *VerificationServiceAccount) AccountName() string {
	if a == nil || a.Name == "" {
		return DefaultVerificationServiceAccount
	}
	return a.Name
}

// MountsToken reports whether the pods get the account's API token; false when a is nil.
func (a *VerificationServiceAccount) MountsToken() bool {
	return a != nil && a.MountToken
}

// Aggregation runs a verification several times; it succeeds when enough runs pass.
type Aggregation struct {
	// Runs is how many runs are launched.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	Runs int32 `json:"runs"`

	// PassRatio is the share of runs that must pass, greater than 0 and at most 1.
	// +kubebuilder:validation:XValidation:rule="self > 0.0 && self <= 1.0",message="passRatio must be greater than 0 and at most 1"
	PassRatio float64 `json:"passRatio"`
}

// JobBackend runs a verification as a batch/v1 Job.
type JobBackend struct {
	// Template is the Job to create. The controller adds its labels and the RELEASE_*
	// environment to every container.
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	// +kubebuilder:pruning:PreserveUnknownFields
	Template batchv1.JobTemplateSpec `json:"template"`
}

// ProwJobBackend runs a verification as a Prow ProwJob.
type ProwJobBackend struct {
	// Namespace is where ProwJobs are created (Prow's namespace); default the payload's.
	// +optional
	Namespace string `json:"namespace,omitempty"`

	// Spec is the ProwJob to create.
	Spec prowv1.ProwJobSpec `json:"spec"`
}

// IsBlocking reports whether the verification decides acceptance; an empty type means Blocking.
func (v *Verification) IsBlocking() bool {
	return v.Type != Informing
}
