package v1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ProwJobType is how Prow triggered a job; the release controller launches periodics.
// +kubebuilder:validation:Enum=presubmit;postsubmit;periodic;batch
type ProwJobType string

// ProwJob types.
const (
	PresubmitJob  ProwJobType = "presubmit"
	PostsubmitJob ProwJobType = "postsubmit"
	PeriodicJob   ProwJobType = "periodic"
	BatchJob      ProwJobType = "batch"
)

// ProwJobAgent is the Prow controller that runs a job.
type ProwJobAgent string

// KubernetesAgent runs the job as a pod.
const KubernetesAgent ProwJobAgent = "kubernetes"

// ProwJobState is the state Prow reports for a job.
type ProwJobState string

// ProwJob states, as Prow writes them.
const (
	TriggeredState ProwJobState = "triggered"
	PendingState   ProwJobState = "pending"
	SuccessState   ProwJobState = "success"
	FailureState   ProwJobState = "failure"
	AbortedState   ProwJobState = "aborted"
	ErrorState     ProwJobState = "error"
)

// ProwJobSpec is the part of Prow's job spec the release controller sets.
type ProwJobSpec struct {
	// Type is the kind of trigger; release verification jobs are periodics.
	// +optional
	Type ProwJobType `json:"type,omitempty"`
	// Agent is the Prow controller that runs the job.
	// +optional
	Agent ProwJobAgent `json:"agent,omitempty"`
	// Cluster is the build cluster the job's pod runs on.
	// +optional
	Cluster string `json:"cluster,omitempty"`
	// Namespace is the namespace of the job's pod in the build cluster.
	// +optional
	Namespace string `json:"namespace,omitempty"`
	// Job is the job's name in Prow's configuration.
	// +kubebuilder:validation:MinLength=1
	Job string `json:"job"`
	// Report asks Prow's reporters to report the result.
	// +optional
	Report bool `json:"report,omitempty"`
	// PodSpec is the pod Prow runs.
	// +optional
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	// +kubebuilder:pruning:PreserveUnknownFields
	PodSpec *corev1.PodSpec `json:"pod_spec,omitempty"`
}

// ProwJobStatus is the part of Prow's job status the release controller reads.
type ProwJobStatus struct {
	// +optional
	StartTime metav1.Time `json:"startTime,omitempty"`
	// +optional
	PendingTime *metav1.Time `json:"pendingTime,omitempty"`
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`
	// +optional
	State ProwJobState `json:"state,omitempty"`
	// +optional
	Description string `json:"description,omitempty"`
	// URL links to the job's results.
	// +optional
	URL string `json:"url,omitempty"`
	// +optional
	PodName string `json:"pod_name,omitempty"`
	// +optional
	BuildID string `json:"build_id,omitempty"`
}

// ProwJob is one run of a Prow job.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:path=prowjobs,singular=prowjob,shortName=pj
// +kubebuilder:subresource:status
// +kubebuilder:metadata:annotations="api-approved.kubernetes.io=https://github.com/kubernetes/test-infra/pull/8669"
// +kubebuilder:printcolumn:name="Job",type=string,JSONPath=`.spec.job`
// +kubebuilder:printcolumn:name="State",type=string,JSONPath=`.status.state`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ProwJob struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +kubebuilder:pruning:PreserveUnknownFields
	Spec ProwJobSpec `json:"spec,omitempty"`
	// +kubebuilder:pruning:PreserveUnknownFields
	Status ProwJobStatus `json:"status,omitempty"`
}

// ProwJobList is a list of ProwJobs.
//
// +kubebuilder:object:root=true
type ProwJobList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ProwJob `json:"items"`
}

func init() {
	SchemeBuilder.Register(&ProwJob{}, &ProwJobList{})
}

// IsTerminal reports whether Prow will change the state no further.
func (s ProwJobState) IsTerminal() bool {
	switch s {
	case SuccessState, FailureState, AbortedState, ErrorState:
		return true
	}
	return false
}
