package v1alpha1

// MaxRejections bounds EnvironmentStatus.Rejections (keep it in step with the marker): past
// it the oldest rejection goes.
const MaxRejections = 16

// Reasons of the Events the API server's approval route records on a Pipeline.
const (
	// EventApproved (Normal): an approval of a revision was recorded; the note names the
	// approver, the environment and how many approvals the policy still needs.
	EventApproved = "Approved"
	// EventApprovalPolicyMet (Normal): the approvals of a revision met the environment's
	// policy; the note names every approver. The controller promotes it.
	EventApprovalPolicyMet = "ApprovalPolicyMet"
	// EventRevisionRejected (Warning): a revision was rejected for an environment; the note
	// names who rejected it and why. It is never promoted there.
	EventRevisionRejected = "RevisionRejected"
)
