package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Bounds of a ReleaseLog, the same as the markers below (keep them in step). With the link's
// length they keep the admission rules' CEL cost within the API server's budget. In practice a
// day is also bounded by the object size etcd accepts (1.5 MiB by default), which a few
// thousand entries reach first.
const (
	// MaxReleaseLogEntries is the most entries one day's ReleaseLog holds.
	MaxReleaseLogEntries = 10000
	// MaxReleaseLogMessageLength bounds an entry's message, in characters.
	MaxReleaseLogMessageLength = 1024
)

// ReleaseLogEntry is one release event: a release accepted or rejected, a promotion, a hotfix,
// or whatever other tools record.
type ReleaseLogEntry struct {
	// ID, when set, identifies the event: an entry whose id is already in the day is not added
	// again, so a writer that retries (or restarts) does not log the same event twice.
	// +kubebuilder:validation:MaxLength=128
	// +optional
	ID string `json:"id,omitempty"`

	// Type of the event, e.g. release, rejected, promotion, hotfix.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Type string `json:"type"`

	// Version the event is about, e.g. a release tag or an application version.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	Version string `json:"version"`

	// Origin is the system that recorded the event, e.g. release-controller or argocd.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	Origin string `json:"origin"`

	// Date is when the event happened; it falls on the object's day (UTC).
	Date metav1.Time `json:"date"`

	// Author is who wrote the entry. Entries added through the release log's API carry the
	// authenticated caller's username (which a caller cannot choose); the controller's own
	// entries say release-controller.
	// +kubebuilder:validation:MaxLength=512
	// +optional
	Author string `json:"author,omitempty"`

	// ReportedAuthor is the author a writer named when it was not the writer itself, e.g. the
	// person a CI system acts for: display text, not verified.
	// +kubebuilder:validation:MaxLength=128
	// +optional
	ReportedAuthor string `json:"reportedAuthor,omitempty"`

	// Message says what happened.
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	Message string `json:"message,omitempty"`

	// Link points to more: an http(s) URL, or an absolute path on the release-controller's web
	// server (e.g. /releases/<namespace>/<stream>/<tag>).
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:XValidation:rule="isURL(self) && (self.startsWith('/') ? !self.startsWith('//') : url(self).getScheme() in ['http', 'https'] && url(self).getHost() != '')",message="link must be an http(s) URL (https://host/...) or an absolute path (/...)"
	// +optional
	Link string `json:"link,omitempty"`

	// Seal marks an entry written through the release controller (its own entries, and those
	// added with AddRelease): an HMAC-SHA256 (16 bytes of it, base64url), keyed by the release
	// log key, of the namespace, the day and the rest of the entry. Readers show an entry whose seal is missing or wrong as
	// written directly, its author unverified. Nobody sets it by hand.
	// +kubebuilder:validation:MaxLength=128
	// +optional
	Seal string `json:"seal,omitempty"`
}

// ReleaseLogSpec holds one day's events.
type ReleaseLogSpec struct {
	// Entries of the day, in the order they were added.
	// +kubebuilder:validation:MaxItems=10000
	// +listType=atomic
	// +optional
	Entries []ReleaseLogEntry `json:"entries,omitempty"`
}

// ReleaseLogStatus is what the controller observed of the day.
type ReleaseLogStatus struct {
	// EntryCount is how many entries the day holds.
	// +optional
	EntryCount int32 `json:"entryCount,omitempty"`

	// ObservedGeneration is the generation EntryCount was counted from.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions: Valid says whether the object's name names a UTC day that has begun.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// Condition of a ReleaseLog.
const (
	// ConditionReleaseLogValid is True when the name parses as a day. An object whose name
	// does not is reported with it and otherwise left alone (never projected or deleted).
	ConditionReleaseLogValid = "Valid"
)

// Condition reasons of a ReleaseLog.
const (
	ReasonValidDay   = "ValidDay"
	ReasonInvalidDay = "InvalidDay"
	// ReasonFutureDay: the day has not begun; readers do not show it before it does.
	ReasonFutureDay = "FutureDay"
)

// ReleaseLog is one UTC day of release events, named release-YYYY-MM-DD. The controller
// deletes it once it is older than the log's time to live.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=rlog,categories=release-controller
// +kubebuilder:validation:XValidation:rule="self.metadata.name.matches('^release-[0-9]{4}-[0-9]{2}-[0-9]{2}$')",message="metadata.name must be release-YYYY-MM-DD, the UTC day of the entries, e.g. release-2026-03-25"
// +kubebuilder:printcolumn:name="Entries",type=integer,JSONPath=`.status.entryCount`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ReleaseLog struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ReleaseLogSpec   `json:"spec,omitempty"`
	Status ReleaseLogStatus `json:"status,omitempty"`
}

// ReleaseLogList is a list of ReleaseLogs.
//
// +kubebuilder:object:root=true
type ReleaseLogList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ReleaseLog `json:"items"`
}

func init() {
	SchemeBuilder.Register(&ReleaseLog{}, &ReleaseLogList{})
}
