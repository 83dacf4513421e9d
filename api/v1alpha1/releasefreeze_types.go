package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// FreezeSchedule is a recurring freeze window.
type FreezeSchedule struct {
	// Cron is when each window starts, in the five fields of cron (minute hour day-of-month
	// month day-of-week), read in TimeZone, e.g. "0 18 * * 5" for Fridays at 18:00.
	// +kubebuilder:validation:MinLength=9
	// +kubebuilder:validation:MaxLength=128
	Cron string `json:"cron"`

	// Duration of each window, counted on the clock of TimeZone: 63h from Friday 18:00 ends
	// on Monday at 09:00, also when the clocks change in between.
	// +kubebuilder:validation:XValidation:rule="duration(self) > duration('0s')",message="duration must be a positive duration, e.g. 63h"
	Duration metav1.Duration `json:"duration"`

	// TimeZone is the IANA time zone Cron is read in, e.g. Europe/Berlin; default UTC.
	// Windows follow its daylight-saving changes.
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9_+-]+(/[A-Za-z0-9_+-]+)*$`
	// +optional
	TimeZone string `json:"timeZone,omitempty"`
}

// ReleaseFreezeSpec says when promotions stop, why, and which.
// +kubebuilder:validation:XValidation:rule="!has(self.schedule) || (!has(self.start) && !has(self.end))",message="a freeze has a schedule or a start and end, not both"
// +kubebuilder:validation:XValidation:rule="!has(self.start) || !has(self.end) || timestamp(self.end) > timestamp(self.start)",message="end must be after start"
type ReleaseFreezeSpec struct {
	// Reason is shown on every environment the freeze holds and in the release log.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	Reason string `json:"reason"`

	// Start of the freeze; absent: from its creation.
	// +optional
	Start *metav1.Time `json:"start,omitempty"`

	// End of the freeze; absent (and no schedule): until it is ended or deleted, a
	// stop-the-line.
	// +optional
	End *metav1.Time `json:"end,omitempty"`

	// Schedule makes the freeze recur instead of start and end.
	// +optional
	Schedule *FreezeSchedule `json:"schedule,omitempty"`

	// Pipelines selects the pipelines frozen by their labels; absent: every pipeline (of the
	// namespace, for a ReleaseFreeze; of every namespace, for a ClusterReleaseFreeze).
	// +optional
	Pipelines *metav1.LabelSelector `json:"pipelines,omitempty"`

	// Environments names the environments frozen; empty: all of them.
	// +listType=set
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MaxLength=63
	// +optional
	Environments []string `json:"environments,omitempty"`
}

// ReleaseFreezeStatus is what the controller found of a freeze.
type ReleaseFreezeStatus struct {
	// ObservedGeneration is the generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions: Active (True while the freeze holds), Ready (False when the spec cannot be
	// read, e.g. an unknown time zone or a cron that does not parse).
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// ActiveSince is when the current (or last) window began.
	// +optional
	ActiveSince *metav1.Time `json:"activeSince,omitempty"`
	// ActiveUntil is when the current window ends (absent while active: no end).
	// +optional
	ActiveUntil *metav1.Time `json:"activeUntil,omitempty"`
	// NextStart is when the next window begins, if one is due.
	// +optional
	NextStart *metav1.Time `json:"nextStart,omitempty"`
}

// ReleaseFreeze stops the promotions of the pipelines of its namespace (those it selects)
// for a window, a recurring schedule or, without an end, until it is ended.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=freeze,categories=release-controller
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.spec.reason`
// +kubebuilder:printcolumn:name="Active",type=string,JSONPath=`.status.conditions[?(@.type=="Active")].status`
// +kubebuilder:printcolumn:name="Until",type=date,JSONPath=`.status.activeUntil`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ReleaseFreeze struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ReleaseFreezeSpec   `json:"spec"`
	Status ReleaseFreezeStatus `json:"status,omitempty"`
}

// ReleaseFreezeList is a list of ReleaseFreezes.
//
// +kubebuilder:object:root=true
type ReleaseFreezeList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ReleaseFreeze `json:"items"`
}

// ClusterReleaseFreeze is a ReleaseFreeze of every namespace, for the platform team.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=cfreeze,categories=release-controller
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.spec.reason`
// +kubebuilder:printcolumn:name="Active",type=string,JSONPath=`.status.conditions[?(@.type=="Active")].status`
// +kubebuilder:printcolumn:name="Until",type=date,JSONPath=`.status.activeUntil`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ClusterReleaseFreeze struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ReleaseFreezeSpec   `json:"spec"`
	Status ReleaseFreezeStatus `json:"status,omitempty"`
}

// ClusterReleaseFreezeList is a list of ClusterReleaseFreezes.
//
// +kubebuilder:object:root=true
type ClusterReleaseFreezeList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ClusterReleaseFreeze `json:"items"`
}

// Condition types of a freeze.
const (
	// ConditionFreezeActive is True while the freeze holds.
	ConditionFreezeActive = "Active"
)

func init() {
	SchemeBuilder.Register(&ReleaseFreeze{}, &ReleaseFreezeList{}, &ClusterReleaseFreeze{}, &ClusterReleaseFreezeList{})
}
