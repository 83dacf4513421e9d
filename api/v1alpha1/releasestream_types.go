package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ComponentSource is one image of the product, followed by tag or pinned by digest.
type ComponentSource struct {
	// Name identifies the component inside the payload (its image-references entry).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",message="component name must be lowercase letters, digits and '-', starting and ending with a letter or digit"
	Name string `json:"name"`

	// Image is the pull spec to follow: repository:tag, or repository@sha256:digest to pin.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]+([._-][a-z0-9]+)*((:[0-9]+)?(/[a-z0-9]+([._-][a-z0-9]+)*)+)?(:[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}|@sha256:[a-f0-9]{64})$')",message="image must be a pull spec with a tag or a sha256 digest, e.g. registry.example.com/product/api:latest"
	Image string `json:"image"`
}

// Retention says which payloads, jobs and images garbage collection removes.
type Retention struct {
	// KeepAccepted is how many of the newest accepted payloads are always kept.
	// Rejected and failed payloads older than the oldest kept accepted one are deleted,
	// unless keepRejected or rejectedMaxAge keeps them.
	// +kubebuilder:default=10
	// +kubebuilder:validation:Minimum=1
	// +optional
	KeepAccepted int32 `json:"keepAccepted,omitempty"`

	// AcceptedMaxAge expires accepted payloads beyond the newest keepAccepted once they are older than this.
	// +optional
	AcceptedMaxAge *metav1.Duration `json:"acceptedMaxAge,omitempty"`

	// KeepRejected is how many of the newest rejected and failed payloads (counted together)
	// are always kept, so they stay to be read. Default 5; 0 keeps none by count, leaving
	// rejectedMaxAge and the accepted payloads' rule.
	// +kubebuilder:default=5
	// +kubebuilder:validation:Minimum=0
	// +optional
	KeepRejected *int32 `json:"keepRejected,omitempty"`

	// RejectedMaxAge keeps rejected and failed payloads beyond the newest keepRejected while
	// they are younger than this.
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('0s')",message="rejectedMaxAge must be a non-negative duration, e.g. 168h"
	// +optional
	RejectedMaxAge *metav1.Duration `json:"rejectedMaxAge,omitempty"`

	// CompletedJobTTL is how long finished jobs are kept before they are deleted.
	// +optional
	CompletedJobTTL *metav1.Duration `json:"completedJobTTL,omitempty"`

	// DeleteImages also deletes the registry tags of collected payloads.
	// +optional
	DeleteImages bool `json:"deleteImages,omitempty"`
}

// ReleaseStreamSpec is a source of component images and the rules that turn it into releases.
// +kubebuilder:validation:XValidation:rule="!has(self.payloadBaseComponent) || self.components.exists(c, c.name == self.payloadBaseComponent)",message="payloadBaseComponent must name one of the stream's components"
// +kubebuilder:validation:XValidation:rule="!has(self.verification) || self.verification.all(v, !has(v.platforms) || (has(self.platforms) && v.platforms.all(p, p in self.platforms)))",message="a verification's platforms must be platforms of the stream"
type ReleaseStreamSpec struct {
	// Components are the images that make up the product.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=1000
	Components []ComponentSource `json:"components"`

	// TagPrefix starts every release tag: <tagPrefix>-<UTC YYYY-MM-DD-HHMMSS>. It is a semantic
	// version, lowercase, without build metadata, e.g. 4.15.0-0.nightly, and at most 45
	// characters so that tags fit in a label value.
	// +kubebuilder:validation:MinLength=5
	// +kubebuilder:validation:MaxLength=45
	// +kubebuilder:validation:XValidation:rule="self.matches('^(0|[1-9][0-9]{0,18})[.](0|[1-9][0-9]{0,18})[.](0|[1-9][0-9]{0,18})(-(0|[1-9][0-9]{0,18}|[0-9]*[a-z-][0-9a-z-]*)([.](0|[1-9][0-9]{0,18}|[0-9]*[a-z-][0-9a-z-]*))*)?$')",message="tagPrefix must be a lowercase semantic version without build metadata (numbers without leading zeros, at most 19 digits), e.g. 4.15.0 or 4.15.0-0.nightly"
	TagPrefix string `json:"tagPrefix"`

	// PayloadRepository receives the payload images, tagged with their release tags.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=255
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]+([._-][a-z0-9]+)*((:[0-9]+)?(/[a-z0-9]+([._-][a-z0-9]+)*)+)?$')",message="payloadRepository must be a repository without tag or digest, e.g. registry.example.com/product/release"
	PayloadRepository string `json:"payloadRepository"`

	// MirrorRepository, when set, receives a copy of every component image before the payload
	// is built, so pruning the source cannot break a payload.
	// +optional
	// +kubebuilder:validation:MaxLength=255
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]+([._-][a-z0-9]+)*((:[0-9]+)?(/[a-z0-9]+([._-][a-z0-9]+)*)+)?$')",message="mirrorRepository must be a repository without tag or digest"
	MirrorRepository string `json:"mirrorRepository,omitempty"`

	// Platforms are the platforms ("os/arch" or "os/arch/variant", e.g. linux/amd64) every
	// payload is built for. Each component must provide every one (an image index, or a
	// single image of the one platform), and the payload image is an OCI image index with one
	// payload manifest per platform, each pinning that platform's component digests. Empty:
	// one payload image, of the components' platform.
	// +listType=set
	// +kubebuilder:validation:MaxItems=8
	// +kubebuilder:validation:items:MaxLength=64
	// +kubebuilder:validation:items:XValidation:rule="self.matches('^[a-z0-9]+/[a-z0-9_]+(/[a-z0-9]+)?$')",message="a platform is os/arch or os/arch/variant, e.g. linux/amd64 or linux/arm64/v8"
	// +optional
	Platforms []string `json:"platforms,omitempty"`

	// PayloadBaseComponent names the component whose image each payload image is built on: its
	// layers and configuration (entrypoint, user, environment) come first and the release
	// manifests go on top, so the payload runs as that component does, the way OpenShift's
	// payloads run the cluster-version operator. Empty: the payload image holds the release
	// manifests only and runs nothing.
	// +kubebuilder:validation:MaxLength=63
	// +optional
	PayloadBaseComponent string `json:"payloadBaseComponent,omitempty"`

	// CreationCluster, when set, names the cluster the creation Jobs run on (a build farm), as
	// a verification's cluster does: a kubeconfig Secret in the stream's namespace and the
	// namespace there (default: the stream's namespace's name). Each Job reads its input (the
	// payload's components, platforms and earlier releases) from a ConfigMap the controller
	// creates beside it, so it needs no access to this cluster. Empty: the Jobs run beside the
	// payloads.
	// +optional
	CreationCluster *VerificationCluster `json:"creationCluster,omitempty"`

	// Verification lists the tests every payload of this stream runs.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:XValidation:rule="self.all(v, has(v.job) != has(v.prowJob))",message="exactly one of job or prowJob must be set"
	// +optional
	Verification []Verification `json:"verification,omitempty"`

	// VerificationServiceAccount is the only ServiceAccount, of the stream's namespace, a
	// verification Job's pod may run as: the controller sets it on every Job, and a template
	// that names another one (serviceAccountName or serviceAccount) is refused. Unset: the
	// namespace's "default", without its API token.
	// +optional
	VerificationServiceAccount *VerificationServiceAccount `json:"verificationServiceAccount,omitempty"`

	// MaxUnreadyReleases is how many payloads may be pending verification at once; no new
	// payload is created while that many are neither accepted, rejected nor failed.
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	// +optional
	MaxUnreadyReleases int32 `json:"maxUnreadyReleases,omitempty"`

	// MinCreationInterval is the least time between two payloads of this stream.
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('0s')",message="minCreationInterval must be a non-negative duration, e.g. 1h"
	// +optional
	MinCreationInterval *metav1.Duration `json:"minCreationInterval,omitempty"`

	// PublishTags are floating tags in the payload repository (e.g. latest, 4.15) that are
	// moved to every newly accepted payload.
	// +listType=set
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MaxLength=128
	// +kubebuilder:validation:items:XValidation:rule="self.matches('^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$')",message="publish tags must be valid image tags"
	// +optional
	PublishTags []string `json:"publishTags,omitempty"`

	// Retention says what garbage collection keeps.
	// +optional
	Retention Retention `json:"retention,omitempty"`

	// Jira, when set, moves the Jira issues named in an accepted payload's changelog (since
	// the previous accepted payload) to a target status, with a comment linking the payload.
	// +optional
	Jira *JiraConfig `json:"jira,omitempty"`

	// UpdateService says how /graph serves the stream's payloads to clusters: the channels it
	// declares and whether the controller declares the risks it sees itself.
	// +optional
	UpdateService *UpdateService `json:"updateService,omitempty"`

	// Suspend stops the stream: while true nothing is imported, created, built, verified,
	// published or collected; payloads already running keep their status up to date.
	// +optional
	Suspend bool `json:"suspend,omitempty"`
}

// UpdateService is how the update service (/graph) serves a stream.
// +kubebuilder:validation:XValidation:rule="!has(self.channels) || self.channels.all(c, !has(c.feeders) || c.feeders.all(f, f.from != c.name && self.channels.exists(o, o.name == f.from)))",message="a feeder's from must name another channel of the stream"
type UpdateService struct {
	// Channels are the stream's update channels (/graph?channel=NAME). Empty: OSRC's channel
	// names (stable, prerelease, nightly, …) keep their meaning for the stream.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=32
	// +optional
	Channels []UpdateChannel `json:"channels,omitempty"`

	// DetectRisks lets the update service declare the risks it sees itself: an upgrade whose
	// test failed in some runs and passed in others, and an informing verification that failed
	// on the target. Each is served as a conditional edge (type Always) naming the runs.
	// +optional
	DetectRisks bool `json:"detectRisks,omitempty"`
}

// UpdateChannel is one update channel: the payloads that join it directly, and the
// channels that feed it after a delay.
// +kubebuilder:validation:XValidation:rule="has(self.versions) || (has(self.feeders) && size(self.feeders) > 0)",message="a channel takes payloads by versions, by feeders, or both"
type UpdateChannel struct {
	// Name is the channel's name in /graph?channel=.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([a-z0-9.-]*[a-z0-9])?$`
	Name string `json:"name"`

	// Versions is an anchored regular expression (^…$) of the versions that join the channel
	// directly once in one of Phases. Empty: only feeders fill the channel.
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:XValidation:rule="self.startsWith('^') && self.endsWith('$') && ''.matches(self) == ''.matches(self)",message="versions must be an anchored regular expression (^…$) that compiles"
	// +optional
	Versions string `json:"versions,omitempty"`

	// Phases are the phases a payload joins the channel directly in. Default: Accepted.
	// +listType=set
	// +kubebuilder:validation:MaxItems=5
	// +optional
	Phases []PayloadPhase `json:"phases,omitempty"`

	// Feeders promote payloads into this channel from others.
	// +kubebuilder:validation:MaxItems=8
	// +optional
	Feeders []ChannelFeeder `json:"feeders,omitempty"`
}

// ChannelFeeder promotes a payload from one channel into another once it has been in the
// first for Delay, matches Filter, is not tombstoned and no risk that applies to every cluster
// leads into it.
type ChannelFeeder struct {
	// From names the channel (of the same stream) payloads come from.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	From string `json:"from"`

	// Delay is how long a payload soaks in From before it joins, e.g. 48h.
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('0s')",message="delay must be a non-negative duration, e.g. 48h"
	// +optional
	Delay metav1.Duration `json:"delay,omitempty"`

	// Filter is an anchored regular expression (^…$) of the versions the feeder promotes;
	// empty: every version.
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:XValidation:rule="self.startsWith('^') && self.endsWith('$') && ''.matches(self) == ''.matches(self)",message="filter must be an anchored regular expression (^…$) that compiles"
	// +optional
	Filter string `json:"filter,omitempty"`
}

// JiraConfig says which Jira issues an accepted payload verifies, and how to reach Jira.
type JiraConfig struct {
	// URL of the Jira server, e.g. https://issues.example.com.
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="isURL(self) && (url(self).getScheme() == 'https' || url(self).getScheme() == 'http')",message="url must be an http or https URL"
	URL string `json:"url"`

	// Projects are the project keys whose issues are considered (e.g. OCPBUGS); issue keys of
	// other projects in the changelog are left alone.
	// +listType=set
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=64
	// +kubebuilder:validation:items:Pattern=`^[A-Z][A-Z0-9_]{1,63}$`
	Projects []string `json:"projects"`

	// TargetStatus is the status the issues are moved to.
	// +kubebuilder:default=VERIFIED
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=255
	// +optional
	TargetStatus string `json:"targetStatus,omitempty"`

	// TokenSecret names a Secret in the stream's namespace whose key "token" is a Jira
	// personal access token (sent as a bearer token), or, with the key "email" too, a Jira
	// Cloud API token (sent with the email as basic authentication).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	TokenSecret string `json:"tokenSecret"`
}

// ComponentStatus is what the import found for one component.
type ComponentStatus struct {
	// Name of the component.
	Name string `json:"name"`
	// Image is the component pinned by digest, when it resolved.
	// +optional
	Image string `json:"image,omitempty"`
	// Error says why the component did not resolve.
	// +optional
	Error string `json:"error,omitempty"`
	// LastChanged is when the component's outcome last changed: it resolved to a new digest,
	// or an error began, changed or ended. Imports that find nothing new leave it (and the
	// status) alone.
	// +optional
	LastChanged *metav1.Time `json:"lastChanged,omitempty"`
	// Failures counts the failed resolutions since the last success; retries back off with it.
	// +optional
	Failures int32 `json:"failures,omitempty"`
}

// PayloadCounts counts a stream's payloads by phase.
type PayloadCounts struct {
	// +optional
	Pending int32 `json:"pending,omitempty"`
	// +optional
	Ready int32 `json:"ready,omitempty"`
	// +optional
	Accepted int32 `json:"accepted,omitempty"`
	// +optional
	Rejected int32 `json:"rejected,omitempty"`
	// +optional
	Failed int32 `json:"failed,omitempty"`
}

// ReleaseStreamStatus is what the stream controller observed and did.
type ReleaseStreamStatus struct {
	// ObservedGeneration is the generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions of the stream.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// Components are the resolved components.
	// +listType=map
	// +listMapKey=name
	// +optional
	Components []ComponentStatus `json:"components,omitempty"`

	// ComponentsHash identifies the resolved component set; a new payload is created when it changes.
	// +optional
	ComponentsHash string `json:"componentsHash,omitempty"`

	// LatestPayload is the tag of the newest payload.
	// +optional
	LatestPayload string `json:"latestPayload,omitempty"`

	// LatestAccepted is the tag of the newest accepted payload.
	// +optional
	LatestAccepted string `json:"latestAccepted,omitempty"`

	// Payloads counts the stream's payloads by phase.
	// +optional
	Payloads PayloadCounts `json:"payloads,omitempty"`

	// PublishedImage is the payload image the publish tags point at.
	// +optional
	PublishedImage string `json:"publishedImage,omitempty"`
	// LastHandledReconcileAt is the value of the release-controller.dev/reconcile-requested-at
	// annotation the controller last reconciled.
	// +optional
	LastHandledReconcileAt string `json:"lastHandledReconcileAt,omitempty"`
}

// ReleaseStream is a source of component images and the rules that turn it into release payloads.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=rls,categories=release-controller
// +kubebuilder:validation:XValidation:rule="size(self.metadata.name) <= 63",message="a stream's name is at most 63 characters: it is the value of the release-controller.dev/stream label"
// +kubebuilder:printcolumn:name="Prefix",type=string,JSONPath=`.spec.tagPrefix`
// +kubebuilder:printcolumn:name="Latest",type=string,JSONPath=`.status.latestPayload`
// +kubebuilder:printcolumn:name="Accepted",type=string,JSONPath=`.status.latestAccepted`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ReleaseStream struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ReleaseStreamSpec   `json:"spec"`
	Status ReleaseStreamStatus `json:"status,omitempty"`
}

// ReleaseStreamList is a list of ReleaseStreams.
//
// +kubebuilder:object:root=true
type ReleaseStreamList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ReleaseStream `json:"items"`
}

func init() {
	SchemeBuilder.Register(&ReleaseStream{}, &ReleaseStreamList{})
}
