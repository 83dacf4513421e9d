package approval

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/conditions"
	"github.com/release-controller/release-controller/internal/releaselog"
)

// logTimeout bounds the write of a release log entry: the approval or rejection is recorded
// already, and the caller waits for the answer.
const logTimeout = 30 * time.Second

// maxLogMessage bounds an entry's message (the schema's bound, in characters; a byte bound is
// below it).
const maxLogMessage = 1024

// ApprovalNote says what an approval did: who approved revision for env, and how far the
// policy is; once met, every approver. The Event's note and the release log entry's message.
func ApprovalNote(env string, rec *v1alpha1.ApprovalRecord, who string, need int) string {
	if rec.PolicyMet != nil {
		return fmt.Sprintf("%s approved %s for %s: the approval policy is met (%d of %d: %s)",
			who, rec.Revision, env, len(rec.Approvers), need, strings.Join(approverNames(rec), ", "))
	}
	return fmt.Sprintf("%s approved %s for %s: %d of %d approvals, %d more needed",
		who, rec.Revision, env, len(rec.Approvers), need, need-len(rec.Approvers))
}

// RejectionNote says what a rejection did: who rejected the revision for env, why, and whose
// approvals it withdrew.
func RejectionNote(env string, r v1alpha1.RejectionRecord, withdrawn []string) string {
	note := fmt.Sprintf("%s rejected %s for %s: %s", r.By, r.Revision, env, r.Reason)
	if len(withdrawn) > 0 {
		note += fmt.Sprintf(" (the approvals of %s are withdrawn)", strings.Join(withdrawn, ", "))
	}
	return note
}

// reportApproval records the approval rec of req as an Event on p and a release log entry.
// It returns the warnings of the answer: what could not be reported.
func (h *Handler) reportApproval(ctx context.Context, p *v1alpha1.Pipeline, req *request, rec *v1alpha1.ApprovalRecord, need int) []string {
	note := ApprovalNote(req.env, rec, req.who.Name, need)
	reason := v1alpha1.EventApproved
	if rec.PolicyMet != nil {
		reason = v1alpha1.EventApprovalPolicyMet
	}
	h.Report.Eventf(ctx, p, nil, reason, "Approve", "%s", note)
	return h.log(ctx, p, req, releaselog.TypeApproval, rec.Time.Time, note)
}

// reportRejection records the rejection r of req as a Warning Event on p and a release log
// entry.
func (h *Handler) reportRejection(ctx context.Context, p *v1alpha1.Pipeline, req *request, r v1alpha1.RejectionRecord, withdrawn []string) []string {
	note := RejectionNote(req.env, r, withdrawn)
	h.Report.Warningf(ctx, p, nil, v1alpha1.EventRevisionRejected, "Reject", "%s", note)
	return h.log(ctx, p, req, releaselog.TypeRejection, r.Time.Time, note)
}

// log writes the release log entry of an approval or a rejection, as the API server wrote it
// for an authenticated sender: the author is the approver (sealed, so shown verified), the
// version the revision. It goes on when the caller went away: the status holds the approval
// already. A failure is logged and returned as the answer's warning.
func (h *Handler) log(ctx context.Context, p *v1alpha1.Pipeline, req *request, typ string, at time.Time, note string) []string {
	if h.Log == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), logTimeout)
	defer cancel()
	_, err := h.Log.AddControllerEntry(ctx, releaselog.Entry{
		ID: LogID(typ, string(p.UID), req.env, req.revision, req.who.Name, at), Type: typ, Version: req.revision,
		Origin: releaselog.ControllerOrigin, Author: req.who.Name, Date: at,
		Message: conditions.Truncate(fmt.Sprintf("pipeline %s/%s: %s", p.Namespace, p.Name, note), maxLogMessage),
	})
	if err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "writing the release log entry", "pipeline", req.key, "environment", req.env, "revision", req.revision, "type", typ)
		return []string{fmt.Sprintf("the %s is recorded in the pipeline's status, but its release log entry was not written: %v", typ, err)}
	}
	return nil
}

// LogID is the id of a release log entry of an approval or a rejection (typ) of revision in
// env of the pipeline uid by who at: a hash, as the parts may be longer than an id may.
func LogID(typ, uid, env, revision, who string, at time.Time) string {
	sum := sha256.Sum256([]byte(strings.Join([]string{uid, env, revision, who, at.UTC().Format(time.RFC3339)}, "\x00")))
	return typ + "/" + hex.EncodeToString(sum[:16])
}
