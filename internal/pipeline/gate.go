package pipeline

import (
	"slices"

	"github.com/release-controller/release-controller/api/v1alpha1"
)

// Rejected reports whether revision was refused for the environment (its rejections, which
// the API server's approval route records): it is never promoted there. It is pure.
func Rejected(rejections []v1alpha1.RejectionRecord, revision string) bool {
	return slices.ContainsFunc(rejections, func(r v1alpha1.RejectionRecord) bool { return r.Revision == revision })
}

// ApprovalMet reports whether the approvals recorded of an environment (rec, nil: none) let
// revision in: they are of that revision and met the environment's policy (policyMet, which
// the approval route sets once enough distinct, allowed approvers approved). A record without
// policyMet, one approver of several or one written before approval policies, does not. It is
// pure.
func ApprovalMet(rec *v1alpha1.ApprovalRecord, revision string) bool {
	return rec != nil && rec.Revision == revision && rec.PolicyMet != nil
}
