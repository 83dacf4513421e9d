package releaselog

// The types of the entries the API server's approval route writes (AddControllerEntry, past
// the allowlist): a pipeline's approval of a revision for an environment, and a rejection.
const (
	TypeApproval  = "approval"
	TypeRejection = "rejection"
)
