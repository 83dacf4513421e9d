package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Bounds of a Pipeline, the same as the markers below (keep them in step): they keep the CEL
// rules' cost within the API server's budget.
const (
	MaxPipelineEnvironments = 16
	MaxEnvironmentTargets   = 32
)

// The app kinds a Pipeline knows without being told where their revision is (AppReference).
const (
	// FluxHelmReleaseGroup's HelmRelease: the revision is the chart version last applied
	// (status.history[0].chartVersion, or status.lastAppliedRevision on older API versions);
	// ready when its Ready condition is True for its generation; a promotion sets
	// spec.chart.spec.version.
	FluxHelmReleaseGroup = "helm.toolkit.fluxcd.io"
	// FluxKustomizationGroup's Kustomization: the revision is status.lastAppliedRevision;
	// ready when its Ready condition is True for its generation. It has no field a
	// promotion sets by default: the patch strategy needs appRef.promotionPath.
	FluxKustomizationGroup = "kustomize.toolkit.fluxcd.io"
	// ArgoCDGroup's Application: the revision is status.sync.revision; ready when Synced and
	// Healthy; a promotion sets spec.source.targetRevision.
	ArgoCDGroup = "argoproj.io"
)

// Promotion strategies.
const (
	// StrategyPatch sets the revision in the environment's app objects on their clusters
	// (server-side apply, field manager release-controller).
	StrategyPatch = "patch"
	// StrategyNotification POSTs a JSON PromotionEvent to a URL, signed with HMAC-SHA256.
	StrategyNotification = "notification"
	// StrategyPullRequest commits the revision into a file of a git repository and pushes a
	// branch, for a person (or a merge bot) to open and merge the pull request.
	StrategyPullRequest = "pullRequest"
)

// Keys of a git credentials Secret (PullRequestPromotion.SecretRef), the names Flux's
// GitRepository uses: username and password for HTTP basic auth (a provider's access token
// goes in password), or bearerToken for an Authorization: Bearer header.
const (
	SecretKeyGitUsername    = "username"
	SecretKeyGitPassword    = "password"
	SecretKeyGitBearerToken = "bearerToken"
)

// Defaults of the pullRequest strategy.
const (
	// DefaultPromotionBranch is the branch template: {pipeline}, {environment} and {revision}
	// are replaced by the pipeline's name, the environment's name and the revision (with the
	// characters a branch name cannot hold replaced by "-").
	DefaultPromotionBranch = "promote/{pipeline}/{environment}/{revision}"
	// DefaultBaseBranch is the branch a promotion branch starts from.
	DefaultBaseBranch = "main"
	// DefaultGitAuthorName and DefaultGitAuthorEmail sign the promotion commits.
	DefaultGitAuthorName  = "release-controller"
	DefaultGitAuthorEmail = "release-controller@localhost"
)

// SecretKeyHMAC is the key of a Secret holding a shared HMAC key (approvals, notifications).
const SecretKeyHMAC = "hmac-key"

// SecretKeyKubeconfig is the key of a cluster's kubeconfig in its Secret (the Cluster API
// convention).
const SecretKeyKubeconfig = "value"

// AppReference names the app a pipeline promotes: an object of this kind and name in each
// target's namespace.
//
// +kubebuilder:validation:XValidation:rule="!(self.apiVersion == 'apps/v1' && self.kind == 'Deployment') || has(self.container)",message="a Deployment app names the container whose image is the revision (container)"
// +kubebuilder:validation:XValidation:rule="(self.apiVersion == 'apps/v1' && self.kind == 'Deployment') || (self.apiVersion.startsWith('helm.toolkit.fluxcd.io/') && self.kind == 'HelmRelease') || (self.apiVersion.startsWith('kustomize.toolkit.fluxcd.io/') && self.kind == 'Kustomization') || (self.apiVersion.startsWith('argoproj.io/') && self.kind == 'Application') || (has(self.revisionPath) && has(self.promotionPath))",message="an app of a kind other than Flux HelmRelease or Kustomization, Argo CD Application or apps/v1 Deployment names its revisionPath and promotionPath"
// +kubebuilder:validation:XValidation:rule="!has(self.container) || (self.apiVersion == 'apps/v1' && self.kind == 'Deployment')",message="container is only for apps/v1 Deployment apps"
type AppReference struct {
	// APIVersion of the app, e.g. helm.toolkit.fluxcd.io/v2 or apps/v1.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self.matches('^([a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?v[0-9]+((alpha|beta)[0-9]+)?$')",message="apiVersion must be GROUP/VERSION (or VERSION for the core group), e.g. apps/v1"
	APIVersion string `json:"apiVersion"`

	// Kind of the app, e.g. HelmRelease.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="self.matches('^[A-Z][A-Za-z0-9]*$')",message="kind must be a Kubernetes kind, e.g. HelmRelease"
	Kind string `json:"kind"`

	// Name of the app object in every target's namespace.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`

	// Container, for an apps/v1 Deployment, names the container whose image tag (or digest)
	// is the revision; a promotion sets that image's tag.
	// +kubebuilder:validation:MaxLength=63
	// +optional
	Container string `json:"container,omitempty"`

	// RevisionPath is the dotted path of the field holding the app's revision, e.g.
	// status.lastAppliedRevision. Required for kinds not known; overrides a known kind's.
	// +kubebuilder:validation:MaxLength=256
	// +kubebuilder:validation:XValidation:rule="self.matches('^[A-Za-z0-9_-]+([.][A-Za-z0-9_-]+)*$')",message="revisionPath must be a dotted field path, e.g. status.lastAppliedRevision"
	// +optional
	RevisionPath string `json:"revisionPath,omitempty"`

	// PromotionPath is the dotted path of the field a promotion sets to the new revision,
	// e.g. spec.version. Required for kinds not known; overrides a known kind's.
	// +kubebuilder:validation:MaxLength=256
	// +kubebuilder:validation:XValidation:rule="self.matches('^[A-Za-z0-9_-]+([.][A-Za-z0-9_-]+)*$')",message="promotionPath must be a dotted field path, e.g. spec.chart.spec.version"
	// +optional
	PromotionPath string `json:"promotionPath,omitempty"`
}

// Target is one place an environment's app runs: a namespace on a cluster.
type Target struct {
	// Namespace holding the app object.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",message="namespace must be a DNS label"
	Namespace string `json:"namespace"`

	// ClusterRef names a Secret in the pipeline's namespace holding the kubeconfig of the
	// target's cluster under the key value (the Cluster API convention); empty means the
	// cluster the controller runs against.
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:default=""
	// +optional
	ClusterRef string `json:"clusterRef"`
}

// SecretKeyReference names a Secret in the pipeline's namespace whose key hmac-key holds a
// shared key.
type SecretKeyReference struct {
	// Name of the Secret.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}

// NotificationPromotion configures the notification strategy.
type NotificationPromotion struct {
	// URL receives a POST of the promotion event as JSON.
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="isURL(self) && url(self).getScheme() in ['http', 'https'] && url(self).getHost() != ''",message="url must be an http(s) URL"
	URL string `json:"url"`

	// SecretRef names the Secret whose hmac-key signs the event: the header
	// X-Release-Controller-Timestamp (RFC 3339) and X-Release-Controller-Signature,
	// sha256=<hex HMAC-SHA256 of "release-controller.dev/notification/v1\nPOST\nPATH\nTIMESTAMP\n"
	// + body>, PATH being the URL's path. The first line keeps a notification from ever being
	// an approval, and the Secret must not be any environment's approval key (a key has one
	// purpose). Absent: unsigned.
	// +optional
	SecretRef *SecretKeyReference `json:"secretRef,omitempty"`
}

// GitCredentialsReference names a Secret in the pipeline's namespace holding git credentials:
// the keys username and password (HTTP basic auth; an access token goes in password), or
// bearerToken.
type GitCredentialsReference struct {
	// Name of the Secret.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}

// GitAuthor signs the promotion commits (author and committer).
type GitAuthor struct {
	// Name; default release-controller.
	// +kubebuilder:validation:MaxLength=256
	// +optional
	Name string `json:"name,omitempty"`
	// Email; default release-controller@localhost.
	// +kubebuilder:validation:MaxLength=256
	// +kubebuilder:validation:XValidation:rule="self.matches('^[^<> ]+@[^<> ]+$')",message="email must be an e-mail address"
	// +optional
	Email string `json:"email,omitempty"`
}

// PullRequestPromotion configures the pullRequest strategy: the revision is written into one
// scalar of a YAML file of a git repository, committed on a branch of its own and pushed
// (never forced). The pull request itself is left to a person or to the git provider's
// automation.
type PullRequestPromotion struct {
	// URL of the repository, http or https (ssh is not supported), e.g.
	// https://github.com/example/fleet.git.
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="isURL(self) && url(self).getScheme() in ['http', 'https'] && url(self).getHost() != ''",message="url must be the http(s) URL of a git repository (ssh is not supported)"
	URL string `json:"url"`

	// BaseBranch is the branch a promotion branch starts from when it does not exist yet;
	// default main.
	// +kubebuilder:validation:MaxLength=255
	// +kubebuilder:validation:XValidation:rule="self.matches('^[A-Za-z0-9._/-]+$') && !self.contains('..') && !self.contains('//') && !self.startsWith('/') && !self.startsWith('-') && !self.endsWith('/') && !self.endsWith('.') && !self.endsWith('.lock')",message="baseBranch must be a branch name, e.g. main"
	// +optional
	BaseBranch string `json:"baseBranch,omitempty"`

	// Branch is the template of the branch pushed: {pipeline}, {environment} and {revision}
	// are replaced by the pipeline's name, the environment's name and the revision (the
	// characters a branch name cannot hold replaced by -); default
	// promote/{pipeline}/{environment}/{revision}. A template without {revision} keeps one
	// branch per environment, each promotion a commit on top of it.
	// +kubebuilder:validation:MaxLength=255
	// +kubebuilder:validation:XValidation:rule="self.matches('^[A-Za-z0-9._/{}-]+$') && !self.contains('..') && !self.contains('//') && !self.startsWith('/') && !self.startsWith('-') && !self.endsWith('/') && !self.endsWith('.') && !self.endsWith('.lock')",message="branch must be a branch name, in which {pipeline}, {environment} and {revision} are replaced"
	// +optional
	Branch string `json:"branch,omitempty"`

	// Path of the YAML file in the repository, from its root, e.g. apps/web/staging/release.yaml.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:XValidation:rule="!self.startsWith('/') && !self.endsWith('/') && !self.contains('//') && !self.matches('(^|/)[.][.]?(/|$)')",message="path must be a relative file path without . or .. elements"
	Path string `json:"path"`

	// YAMLPath is the scalar of the file set to the revision: keys separated by dots, a
	// sequence's item by its index ([0]) or by the value of one of its keys ([name=web]),
	// e.g. spec.chart.spec.version or images[name=web].newTag. In a file of several YAML
	// documents, the first document that has the path is changed. Comments, order, quoting
	// and indentation are kept: the commit changes that value only.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:XValidation:rule="self.matches('^[A-Za-z0-9_-]+([[]([0-9]+|[A-Za-z0-9_-]+=[^]]+)[]])*([.][A-Za-z0-9_-]+([[]([0-9]+|[A-Za-z0-9_-]+=[^]]+)[]])*)*$')",message="yamlPath must be keys separated by dots, each optionally followed by [index] or [key=value], e.g. images[name=web].newTag"
	YAMLPath string `json:"yamlPath"`

	// SecretRef names the Secret holding the credentials; absent: anonymous.
	// +optional
	SecretRef *GitCredentialsReference `json:"secretRef,omitempty"`

	// Author of the promotion commits (also their committer).
	// +optional
	Author *GitAuthor `json:"author,omitempty"`
}

// Promotion says how a revision is promoted into an environment.
//
// +kubebuilder:validation:XValidation:rule="self.strategy != 'notification' || has(self.notification)",message="the notification strategy needs notification.url"
// +kubebuilder:validation:XValidation:rule="self.strategy == 'notification' || !has(self.notification)",message="notification is only for the notification strategy"
// +kubebuilder:validation:XValidation:rule="self.strategy != 'pullRequest' || has(self.pullRequest)",message="the pullRequest strategy needs pullRequest (url, path, yamlPath)"
// +kubebuilder:validation:XValidation:rule="self.strategy == 'pullRequest' || !has(self.pullRequest)",message="pullRequest is only for the pullRequest strategy"
type Promotion struct {
	// Strategy: patch (the default) sets the revision in the app objects; notification POSTs
	// an event for another system to act on; pullRequest commits the revision into a file of
	// a git repository and pushes a branch.
	// +kubebuilder:validation:Enum=patch;notification;pullRequest
	// +kubebuilder:default=patch
	// +optional
	Strategy string `json:"strategy,omitempty"`

	// Notification configures the notification strategy.
	// +optional
	Notification *NotificationPromotion `json:"notification,omitempty"`

	// PullRequest configures the pullRequest strategy.
	// +optional
	PullRequest *PullRequestPromotion `json:"pullRequest,omitempty"`

	// MinSoak is how long every target of the environment must have been ready at a revision
	// before the next environment takes it (its soak time), e.g. 2h. On spec.promotion: every
	// environment's, unless it says otherwise.
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('0s')",message="minSoak must be a non-negative duration, e.g. 2h"
	// +optional
	MinSoak *metav1.Duration `json:"minSoak,omitempty"`
}

// Approval makes promotions into an environment wait for approvals: signed with a shared key
// (one machine approver, hmac:<secret name>), or sent with a Kubernetes bearer token whose user
// RBAC allows to update pipelines/approval (each user one approver), as the policy says.
type Approval struct {
	// SecretRef names the Secret whose hmac-key signs approvals. Absent: only bearer tokens
	// approve.
	// +optional
	SecretRef *SecretKeyReference `json:"secretRef,omitempty"`

	// MinApprovers is how many distinct approvers a revision needs before it is promoted here.
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=10
	// +optional
	MinApprovers int32 `json:"minApprovers,omitempty"`

	// Users may approve (Kubernetes user names as a TokenReview reports them, e.g.
	// alice@example.com or system:serviceaccount:ns:name), on top of the RBAC check. With
	// users or groups set, a signed (HMAC) approval never counts: the policy names people.
	// +listType=set
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=253
	// +optional
	Users []string `json:"users,omitempty"`

	// Groups whose members may approve (as a TokenReview reports the user's groups).
	// +listType=set
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=253
	// +optional
	Groups []string `json:"groups,omitempty"`

	// SeparationOfDuties refuses an approver who approved the same revision for the previous
	// environment: each environment's approvers are other people.
	// +optional
	SeparationOfDuties bool `json:"separationOfDuties,omitempty"`
}

// Values of EnvironmentVerification.OnFailure.
const (
	// OnFailureRollback promotes the environment back to the last revision that passed its
	// verification there, and never promotes the failed revision further.
	OnFailureRollback = "rollback"
	// OnFailureHold stops the pipeline's promotions until the revision changes or a person acts.
	OnFailureHold = "hold"
)

// EnvironmentVerification runs tests against an environment once every target is ready at a
// new revision, with the verification contract of streams (retries, blocking and informing,
// aggregation, remote clusters).
// +kubebuilder:validation:XValidation:rule="self.verifications.all(v, !has(v.upgradeFrom) && !has(v.from))",message="an environment's verifications run against the environment; upgradeFrom and from are for streams"
type EnvironmentVerification struct {
	// Verifications run against the environment; each Job gets the revision and the
	// environment in its environment variables.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:XValidation:rule="self.all(v, has(v.job) != has(v.prowJob))",message="exactly one of job or prowJob must be set"
	Verifications []Verification `json:"verifications"`

	// OnFailure is what a failed blocking verification does: rollback or hold (the default).
	// +kubebuilder:validation:Enum=rollback;hold
	// +kubebuilder:default=hold
	// +optional
	OnFailure string `json:"onFailure,omitempty"`
}

// Environment is one stage of a pipeline, e.g. dev, staging or prod.
type Environment struct {
	// Name of the environment, unique in the pipeline.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",message="an environment's name must be a DNS label, e.g. staging"
	Name string `json:"name"`

	// Targets are where the environment's app runs; it is at a revision when every target
	// is ready at it.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=32
	// +listType=map
	// +listMapKey=namespace
	// +listMapKey=clusterRef
	Targets []Target `json:"targets"`

	// Promotion overrides the pipeline's promotion for promotions into this environment.
	// +optional
	Promotion *Promotion `json:"promotion,omitempty"`

	// Approval, when set, makes promotions into this environment wait for approvals.
	// +optional
	Approval *Approval `json:"approval,omitempty"`

	// Verification, when set, runs tests against the environment after each rollout: only a
	// revision that passed them goes to the next environment.
	// +optional
	Verification *EnvironmentVerification `json:"verification,omitempty"`
}

// PipelineSource feeds the first environment.
type PipelineSource struct {
	// ReleaseStream, in the pipeline's namespace: each newly accepted payload's tag is
	// promoted into the first environment.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	ReleaseStream string `json:"releaseStream"`
}

// PipelineSpec is an app and the environments it is promoted through, in order.
//
// +kubebuilder:validation:XValidation:rule="!has(self.promotion) || !has(self.promotion.notification) || !has(self.promotion.notification.secretRef) || self.environments.all(e, !has(e.approval) || !has(e.approval.secretRef) || e.approval.secretRef.name != self.promotion.notification.secretRef.name)",message="spec.promotion.notification.secretRef must not name the Secret of an environment's approval.secretRef: a notification key signs notifications only, an approval key approvals only; give the notification a Secret of its own",fieldPath=".promotion.notification.secretRef"
// +kubebuilder:validation:XValidation:rule="self.environments.all(n, !has(n.promotion) || !has(n.promotion.notification) || !has(n.promotion.notification.secretRef) || self.environments.all(e, !has(e.approval) || !has(e.approval.secretRef) || e.approval.secretRef.name != n.promotion.notification.secretRef.name))",message="an environment's promotion.notification.secretRef must not name the Secret of an environment's approval.secretRef (spec.environments[].promotion.notification.secretRef, spec.environments[].approval.secretRef): a notification key signs notifications only, an approval key approvals only; give the notification a Secret of its own"
// +kubebuilder:validation:XValidation:rule="!(self.appRef.apiVersion.startsWith('kustomize.toolkit.fluxcd.io/') && self.appRef.kind == 'Kustomization') || has(self.appRef.promotionPath) || self.environments.all(e, (has(e.promotion) ? e.promotion.strategy : (has(self.promotion) ? self.promotion.strategy : 'patch')) != 'patch')",message="a Kustomization promoted by the patch strategy needs appRef.promotionPath (the field that takes the revision, e.g. spec.postBuild.substitute.version)"
type PipelineSpec struct {
	// AppRef is the app promoted.
	AppRef AppReference `json:"appRef"`

	// Environments, in promotion order: environment N+1 gets the revision every target of
	// environment N is ready at.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	// +listType=map
	// +listMapKey=name
	Environments []Environment `json:"environments"`

	// Promotion is how environments are promoted unless they say otherwise; absent: patch.
	// +optional
	Promotion *Promotion `json:"promotion,omitempty"`

	// Source, when set, promotes a ReleaseStream's accepted payloads into the first environment.
	// +optional
	Source *PipelineSource `json:"source,omitempty"`

	// ServiceAccountName names the ServiceAccount of the pipeline's namespace the controller
	// impersonates on the cluster it runs against: the patch strategy's writes to local
	// targets, and the reads of the kubeconfig Secrets clusterRef names, are allowed as far
	// as RBAC allows that account, and no further. Remote targets are written with their
	// kubeconfig's own identity. Empty: the controller's --default-service-account
	// ("default", the namespace's default account, unless the operator set it otherwise).
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*$')",message="serviceAccountName must be a ServiceAccount name (a DNS subdomain)"
	// +optional
	ServiceAccountName string `json:"serviceAccountName,omitempty"`

	// Suspend stops promotions: while true nothing is promoted, and the status still shows
	// what the targets run.
	// +optional
	Suspend bool `json:"suspend,omitempty"`
}

// TargetStatus is what the controller observed of one target's app.
type TargetStatus struct {
	// Namespace of the target.
	Namespace string `json:"namespace"`
	// ClusterRef is the target's kubeconfig Secret; empty: the local cluster.
	// +optional
	ClusterRef string `json:"clusterRef,omitempty"`
	// Revision the app is at, as its kind reports it.
	// +optional
	Revision string `json:"revision,omitempty"`
	// Ready is true when the app is ready at Revision.
	// +optional
	Ready bool `json:"ready,omitempty"`
	// Message says why the target is not observed or not ready, when known.
	// +optional
	Message string `json:"message,omitempty"`
}

// PromotionRecord is one promotion into an environment.
type PromotionRecord struct {
	// ID identifies the promotion (pipeline UID, environment, revision): the release log's
	// entry and a notification carry it, so a retry is recognised.
	ID string `json:"id"`
	// Revision promoted.
	Revision string `json:"revision"`
	// Strategy that promoted it.
	Strategy string `json:"strategy"`
	// Time of the promotion.
	Time metav1.Time `json:"time"`
	// Approver, when the environment asked for approval: who approved.
	// +optional
	Approver string `json:"approver,omitempty"`
}

// WaitingApproval says an environment waits for the approval of a revision.
type WaitingApproval struct {
	// Revision to approve.
	Revision string `json:"revision"`
	// Since when it waits.
	Since metav1.Time `json:"since"`
}

// MaxUsedApprovalSignatures bounds ApprovalRecord.UsedSignatures (keep it in step with the
// marker): more signed approvals of one environment within the signature window are refused
// until the oldest leaves it.
const MaxUsedApprovalSignatures = 32

// ApprovalRecord is the approvals received of one revision.
type ApprovalRecord struct {
	// Revision approved.
	Revision string `json:"revision"`
	// Approver: the Kubernetes user of a bearer token, or hmac:<secret name> for a signed
	// request; with a policy of several approvers, the one whose approval met it.
	Approver string `json:"approver"`
	// Time of the approval (the last one).
	Time metav1.Time `json:"time"`
	// Approvers are every approval of Revision received, in order.
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	// +optional
	Approvers []Approver `json:"approvers,omitempty"`
	// PolicyMet is when the approvals met the environment's policy; the promotion goes ahead.
	// +optional
	PolicyMet *metav1.Time `json:"policyMet,omitempty"`
	// UsedSignatures are the signed approvals of the environment accepted within the last
	// signature window (5 minutes): every replica of the API server, and one restarted,
	// refuses them again. Entries older than the window are pruned at the next approval.
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=32
	// +optional
	UsedSignatures []UsedSignature `json:"usedSignatures,omitempty"`
}

// Approver is one approval of a revision.
type Approver struct {
	// Name: the Kubernetes user, or hmac:<secret name> (one machine approver).
	Name string `json:"name"`
	// Time of the approval.
	Time metav1.Time `json:"time"`
	// Comment sent with the approval, if any.
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	Comment string `json:"comment,omitempty"`
}

// RejectionRecord is a revision refused for an environment: it is never promoted there.
type RejectionRecord struct {
	// Revision refused.
	Revision string `json:"revision"`
	// By: the Kubernetes user, or hmac:<secret name>.
	By string `json:"by"`
	// Reason given.
	// +kubebuilder:validation:MaxLength=1024
	Reason string `json:"reason"`
	// Time of the rejection.
	Time metav1.Time `json:"time"`
}

// UnpromotableRevision is a revision the pipeline never promotes further: its verification
// failed in Environment and the environment was rolled back.
type UnpromotableRevision struct {
	// Revision that failed.
	Revision string `json:"revision"`
	// Environment it failed in.
	Environment string `json:"environment"`
	// Reason: the verifications that failed.
	// +kubebuilder:validation:MaxLength=1024
	Reason string `json:"reason"`
	// Time it was marked.
	Time metav1.Time `json:"time"`
}

// EnvironmentVerificationStatus is the verification of one revision in an environment.
type EnvironmentVerificationStatus struct {
	// Revision verified.
	Revision string `json:"revision"`
	// State: Pending while the verifications run, then Success or Failure (blocking ones decide).
	State JobState `json:"state"`
	// Verifications, with their runs.
	// +listType=map
	// +listMapKey=name
	// +optional
	Verifications []VerificationStatus `json:"verifications,omitempty"`
	// StartTime is when the revision was ready on every target and the verifications started.
	StartTime metav1.Time `json:"startTime"`
	// CompletionTime is when the state became Success or Failure.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`
}

// RollbackRecord is an environment sent back to an earlier revision.
type RollbackRecord struct {
	// From is the revision that failed its verification.
	From string `json:"from"`
	// To is the last revision that passed there.
	To string `json:"to"`
	// Time of the rollback.
	Time metav1.Time `json:"time"`
}

// FreezeRecord says an environment is frozen and by what.
type FreezeRecord struct {
	// Freeze names the ReleaseFreeze (namespace/name) or ClusterReleaseFreeze (name).
	Freeze string `json:"freeze"`
	// Reason of the freeze.
	Reason string `json:"reason"`
	// Until is when the freeze ends; absent: until it is ended (a stop-the-line).
	// +optional
	Until *metav1.Time `json:"until,omitempty"`
}

// UsedSignature is an approval signature accepted once.
type UsedSignature struct {
	// SHA256 of the signature's HMAC (the 32 bytes of X-Release-Controller-Signature), in hex.
	// +kubebuilder:validation:MinLength=64
	// +kubebuilder:validation:MaxLength=64
	SHA256 string `json:"sha256"`
	// Expires is when the signature's timestamp leaves the window; later it is refused as
	// expired, so the entry may go.
	Expires metav1.Time `json:"expires"`
}

// EnvironmentStatus is what the controller observed of one environment.
type EnvironmentStatus struct {
	// Name of the environment.
	Name string `json:"name"`
	// Revision every target is ready at; empty unless they all are at one.
	// +optional
	Revision string `json:"revision,omitempty"`
	// Ready is true when every target is ready at Revision.
	// +optional
	Ready bool `json:"ready,omitempty"`
	// Targets, in the spec's order.
	// +listType=atomic
	// +optional
	Targets []TargetStatus `json:"targets,omitempty"`
	// LastPromotion into the environment.
	// +optional
	LastPromotion *PromotionRecord `json:"lastPromotion,omitempty"`
	// WaitingApproval is set while a promotion into the environment waits for approval.
	// +optional
	WaitingApproval *WaitingApproval `json:"waitingApproval,omitempty"`
	// Approval is the approvals of the revision waiting (or last promoted); once they meet
	// the policy the promotion goes ahead. The API server's approval route writes it (field
	// manager release-controller-approval), as it writes Rejections; the controller writes the
	// rest of the status (field manager release-controller).
	// +optional
	Approval *ApprovalRecord `json:"approval,omitempty"`
	// Rejections are the revisions refused for the environment, newest last.
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	// +optional
	Rejections []RejectionRecord `json:"rejections,omitempty"`
	// ReadySince is when every target became ready at Revision: the start of its soak.
	// +optional
	ReadySince *metav1.Time `json:"readySince,omitempty"`
	// SoakUntil is when Revision will have soaked minSoak here and the next environment may
	// take it; absent when there is no soak or it is over.
	// +optional
	SoakUntil *metav1.Time `json:"soakUntil,omitempty"`
	// Frozen is set while a freeze covers the environment: nothing is promoted into it.
	// +optional
	Frozen *FreezeRecord `json:"frozen,omitempty"`
	// Verification is the verification of the newest revision rolled out here.
	// +optional
	Verification *EnvironmentVerificationStatus `json:"verification,omitempty"`
	// LastVerified is the last revision that passed the environment's verification: the
	// revision a rollback returns to.
	// +optional
	LastVerified string `json:"lastVerified,omitempty"`
	// LastRollback is the last rollback of the environment.
	// +optional
	LastRollback *RollbackRecord `json:"lastRollback,omitempty"`
}

// PipelineStatus is what the controller observed and did.
type PipelineStatus struct {
	// ObservedGeneration is the generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions: Ready, Reconciling, Stalled, ClusterUnreachable, PromotionFailed.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// Environments, in the spec's order.
	// +listType=map
	// +listMapKey=name
	// +optional
	Environments []EnvironmentStatus `json:"environments,omitempty"`
	// LastHandledReconcileAt is the value of the release-controller.dev/reconcile-requested-at
	// annotation the controller last reconciled.
	// +optional
	LastHandledReconcileAt string `json:"lastHandledReconcileAt,omitempty"`
	// Unpromotable are the revisions never promoted further: each failed its verification in
	// an environment that was rolled back. The oldest go first past the bound.
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	// +optional
	Unpromotable []UnpromotableRevision `json:"unpromotable,omitempty"`
}

// Condition types of a Pipeline.
const (
	// ConditionPipelineReady (the type Ready) is True when every target is observed on a
	// reachable cluster and the last promotion did not fail.
	ConditionPipelineReady = ConditionReady
	// ConditionClusterUnreachable is True while a target cluster cannot be reached (or its
	// kubeconfig Secret is missing or invalid); it is retried with backoff.
	ConditionClusterUnreachable = "ClusterUnreachable"
	// ConditionPromotionFailed is True when the last promotion attempt failed; it is retried
	// with backoff.
	ConditionPromotionFailed = "PromotionFailed"
)

// Condition reasons of a Pipeline.
const (
	// ReasonTargetsObserved (Ready=True): every target's app is observed.
	ReasonTargetsObserved = "TargetsObserved"
	// ReasonTargetsNotObserved (Ready=False): some target's app is missing or its cluster's
	// cache is not synced yet; the message names them.
	ReasonTargetsNotObserved = "TargetsNotObserved"
	// ReasonTargetForbidden (Ready=False): the pipeline's service account may not get the app
	// of a local target (a SubjectAccessReview said so): the target shows no revision or
	// readiness and nothing is promoted from or into it until the account may; the message
	// names the account, the resource, the app and the namespace.
	ReasonTargetForbidden = "TargetForbidden"
	// ReasonClusterUnreachable (Ready=False, ClusterUnreachable=True): a cluster did not answer.
	ReasonClusterUnreachable = "ClusterUnreachable"
	// ReasonKubeconfigInvalid (Ready=False, ClusterUnreachable=True): a clusterRef's Secret is
	// missing, has no key value, does not hold a usable kubeconfig, holds what a kubeconfig
	// from a Secret may not (an exec plugin, a file path, a proxy: the message names the
	// field), or the pipeline's service account may not read it.
	ReasonKubeconfigInvalid = "KubeconfigInvalid"
	// ReasonClustersReachable (ClusterUnreachable=False).
	ReasonClustersReachable = "ClustersReachable"
	// ReasonPromotionFailed (Ready=False, PromotionFailed=True): the strategy failed; the
	// message says how.
	ReasonPromotionFailed = "PromotionFailed"
	// ReasonPromotionSucceeded (PromotionFailed=False).
	ReasonPromotionSucceeded = "PromotionSucceeded"
	// ReasonNoPromotion (PromotionFailed=False): no promotion is due (none yet, or the one
	// that failed is no longer wanted).
	ReasonNoPromotion = "NoPromotion"
)

// Pipeline promotes an app through ordered environments, each with targets on one or more
// clusters.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=pl,categories=release-controller
// +kubebuilder:printcolumn:name="Kind",type=string,JSONPath=`.spec.appRef.kind`
// +kubebuilder:printcolumn:name="App",type=string,JSONPath=`.spec.appRef.name`
// +kubebuilder:printcolumn:name="First",type=string,JSONPath=`.status.environments[0].revision`
// +kubebuilder:printcolumn:name="Last",type=string,JSONPath=`.status.environments[-1:].revision`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Pipeline struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   PipelineSpec   `json:"spec"`
	Status PipelineStatus `json:"status,omitempty"`
}

// PipelineList is a list of Pipelines.
//
// +kubebuilder:object:root=true
type PipelineList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Pipeline `json:"items"`
}

func init() {
	SchemeBuilder.Register(&Pipeline{}, &PipelineList{})
}
