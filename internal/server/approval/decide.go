package approval

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/pipeline/signature"
)

// MaxReasonLength bounds a rejection's reason, in characters (the schema's bound of
// status.environments[].rejections[].reason).
const MaxReasonLength = 1024

// Identity is who approves or rejects.
type Identity struct {
	// Name is the Kubernetes user of a bearer token, or hmac:<secret name> for a signed
	// request.
	Name string
	// Groups are the user's groups, as the TokenReview reported them; none for a signed
	// request.
	Groups []string
	// Signed is set for a request signed with the environment's shared key: one machine
	// approver, whoever sent it.
	Signed bool
}

// SignedIdentity is the machine approver of the requests signed with the key of Secret
// secret.
func SignedIdentity(secret string) Identity {
	return Identity{Name: "hmac:" + secret, Signed: true}
}

// MinApprovers is how many distinct approvers policy needs (the schema defaults it to 1).
func MinApprovers(policy v1alpha1.Approval) int {
	return max(1, int(policy.MinApprovers))
}

// Permit checks that who may approve or reject in environment env under policy: a signed
// request needs the environment's key (approval.secretRef) and a policy that names nobody (a
// machine is not a person); a user must be named in approval.users or be a member of a group
// in approval.groups when the policy names any. RBAC was checked before.
func Permit(policy v1alpha1.Approval, env string, who Identity) error {
	namesPeople := len(policy.Users) > 0 || len(policy.Groups) > 0
	switch {
	case who.Signed && policy.SecretRef == nil:
		return fail(http.StatusForbidden, "environment %q has no approval.secretRef, so it takes no signed (HMAC) requests: send a bearer token (Authorization: Bearer)", env)
	case who.Signed && namesPeople:
		return fail(http.StatusForbidden, "the approval policy of environment %q names users or groups (approval.users, approval.groups): a signed (HMAC) request is a machine, never one of them; send the bearer token of a user the policy names", env)
	case who.Signed, !namesPeople, slices.Contains(policy.Users, who.Name),
		slices.ContainsFunc(who.Groups, func(g string) bool { return slices.Contains(policy.Groups, g) }):
		return nil
	}
	return fail(http.StatusForbidden, "user %q is neither in approval.users of environment %q nor a member of one of its approval.groups", who.Name, env)
}

// Decide records the approval of revision by who in the environment whose status is current
// (never nil: at least its name), under policy; previous is the status of the environment
// before it (nil for the first), for separation of duties. It returns the environment's new
// approval record: who appended to the approvers of revision (a new record when the current
// one is of another revision), and, once the approvers are policy's minApprovers distinct
// ones, policyMet and approver set (who met it). Its used signatures are the current
// record's; the route adds the request's. It is pure.
//
// Refusals: who is not permitted (Permit: 403); the revision was rejected (409); the
// environment does not wait for it (409); it is approved already (409); who approved it
// already (409: each approver counts once, a signed request as the one machine approver of
// its key); separation of duties and who approved it for the previous environment (403).
func Decide(policy v1alpha1.Approval, current, previous *v1alpha1.EnvironmentStatus, who Identity, revision string, now time.Time) (*v1alpha1.ApprovalRecord, error) {
	env := current.Name
	if err := Permit(policy, env, who); err != nil {
		return nil, err
	}
	if r := rejection(current.Rejections, revision); r != nil {
		return nil, fail(http.StatusConflict, "revision %s was rejected for environment %q by %s at %s (%s): it is never promoted there",
			revision, env, r.By, r.Time.UTC().Format(time.RFC3339), r.Reason)
	}
	if err := waiting(current, revision); err != nil {
		return nil, err
	}
	rec := pending(current.Approval, revision)
	need := MinApprovers(policy)
	if rec.PolicyMet != nil {
		return nil, fail(http.StatusConflict, "revision %s of environment %q is approved already: its approval policy was met at %s (approvers: %s)",
			revision, env, rec.PolicyMet.UTC().Format(time.RFC3339), strings.Join(approverNames(rec), ", "))
	}
	if i := slices.IndexFunc(rec.Approvers, func(a v1alpha1.Approver) bool { return a.Name == who.Name }); i >= 0 {
		return nil, fail(http.StatusConflict, "%s", approvedAlready(env, rec, i, who, need))
	}
	if policy.SeparationOfDuties && previous != nil && slices.Contains(approvedBy(previous, revision), who.Name) {
		return nil, fail(http.StatusForbidden, "separation of duties (approval.separationOfDuties of environment %q): %s approved revision %s for the previous environment %q, so someone else must approve it here",
			env, who.Name, revision, previous.Name)
	}
	at := metav1.NewTime(now.UTC().Truncate(time.Second))
	rec.Approvers = append(rec.Approvers, v1alpha1.Approver{Name: who.Name, Time: at})
	rec.Time = at
	if len(rec.Approvers) >= need {
		rec.PolicyMet = &at
		rec.Approver = who.Name
	}
	return rec, nil
}

// approvedAlready says that who, the approver i of rec, approved rec's revision already: each
// approver counts once, and every request signed with one key is the one machine approver.
func approvedAlready(env string, rec *v1alpha1.ApprovalRecord, i int, who Identity, need int) string {
	machine := ""
	if who.Signed {
		machine = " (every request signed with one key is one machine approver)"
	}
	msg := fmt.Sprintf("%s approved revision %s of environment %q already, at %s%s: the policy needs %d distinct approvers, it has %d",
		who.Name, rec.Revision, env, rec.Approvers[i].Time.UTC().Format(time.RFC3339), machine, need, len(rec.Approvers))
	if rec.PolicyMet != nil {
		msg += fmt.Sprintf(", and was met at %s", rec.PolicyMet.UTC().Format(time.RFC3339))
	}
	return msg
}

// Repeated answers a signed request whose signature was accepted before (409). A signature
// covers the method, the path, the timestamp (in seconds) and the body, so a second approval
// signed with one key within the same second is that very request again, as a replay is: it
// is answered with what the first recorded, which rec (the environment's approval record)
// and rejections hold. Who approved the revision already is told so, as Decide tells a second
// signed approval in another second: one key is one machine approver. A revision rejected is
// told so. Otherwise (the record was cleared since) the signature was used. It is pure.
func Repeated(env, revision string, who Identity, rec *v1alpha1.ApprovalRecord, rejections []v1alpha1.RejectionRecord, need int) error {
	const repeat = "; this request repeats that one: " + replayed
	if rec != nil && rec.Revision == revision {
		if i := slices.IndexFunc(rec.Approvers, func(a v1alpha1.Approver) bool { return a.Name == who.Name }); i >= 0 {
			return fail(http.StatusConflict, "%s%s", approvedAlready(env, rec, i, who, need), repeat)
		}
	}
	if r := rejection(rejections, revision); r != nil {
		return fail(http.StatusConflict, "revision %s was rejected for environment %q already, by %s at %s (%s)%s",
			revision, env, r.By, r.Time.UTC().Format(time.RFC3339), r.Reason, repeat)
	}
	return signatureError(signature.ErrReplayed)
}

// replayed is the words of signature.ErrReplayed that a repeated request's answer ends with,
// so that whoever looks for them finds them.
const replayed = "this signature was used already"

// Rejection is what a rejection changes in an environment's status.
type Rejection struct {
	// Rejections are the environment's rejections, the new one last.
	Rejections []v1alpha1.RejectionRecord
	// Approval is the environment's approval record: without the approvals of the rejected
	// revision (nil, or the used signatures under no revision, when they were its).
	Approval *v1alpha1.ApprovalRecord
	// Withdrawn are the approvers of the rejected revision whose approvals were cleared.
	Withdrawn []string
}

// DecideRejection records the rejection of revision by who, for reason, in the environment
// whose status is current (never nil), under policy. The revision need not be waiting: one
// may be rejected before it reaches the environment. The rejections keep the newest
// v1alpha1.MaxRejections; approvals recorded of the revision are cleared (what is left of the
// record is its used signatures, under no revision). It is pure.
//
// Refusals: who is not permitted (Permit: 403); no reason, or one too long (400); the
// revision was rejected already (409); the environment runs it or was promoted to it already
// (409: a rejection keeps a revision out, it does not roll one back).
func DecideRejection(policy v1alpha1.Approval, current *v1alpha1.EnvironmentStatus, who Identity, revision, reason string, now time.Time) (Rejection, error) {
	env := current.Name
	if err := Permit(policy, env, who); err != nil {
		return Rejection{}, err
	}
	switch {
	case strings.TrimSpace(reason) == "":
		return Rejection{}, fail(http.StatusBadRequest, `a rejection needs a reason: send {"reason": "..."}`)
	case !utf8.ValidString(reason):
		return Rejection{}, fail(http.StatusBadRequest, "the reason is not UTF-8 text")
	case utf8.RuneCountInString(reason) > MaxReasonLength:
		return Rejection{}, fail(http.StatusBadRequest, "the reason has %d characters, more than the %d a rejection keeps", utf8.RuneCountInString(reason), MaxReasonLength)
	}
	if r := rejection(current.Rejections, revision); r != nil {
		return Rejection{}, fail(http.StatusConflict, "revision %s was rejected for environment %q already, by %s at %s (%s)",
			revision, env, r.By, r.Time.UTC().Format(time.RFC3339), r.Reason)
	}
	if lp := current.LastPromotion; lp != nil && lp.Revision == revision {
		return Rejection{}, fail(http.StatusConflict, "environment %q was promoted to %s already, at %s: a rejection keeps a revision out, it does not roll one back",
			env, revision, lp.Time.UTC().Format(time.RFC3339))
	}
	if current.Revision == revision {
		return Rejection{}, fail(http.StatusConflict, "environment %q runs %s already: a rejection keeps a revision out, it does not roll one back", env, revision)
	}
	at := metav1.NewTime(now.UTC().Truncate(time.Second))
	out := Rejection{Rejections: append(slices.Clone(current.Rejections), v1alpha1.RejectionRecord{Revision: revision, By: who.Name, Reason: reason, Time: at})}
	if n := len(out.Rejections); n > v1alpha1.MaxRejections {
		out.Rejections = out.Rejections[n-v1alpha1.MaxRejections:]
	}
	rec := current.Approval
	switch {
	case rec == nil || rec.Revision != revision:
		out.Approval = rec.DeepCopy()
	default:
		out.Withdrawn = recordedNames(rec)
		if len(rec.UsedSignatures) > 0 {
			// The signatures stay refused within their window, in a record of no revision:
			// nothing reads it as an approval of the rejected one.
			out.Approval = &v1alpha1.ApprovalRecord{Time: rec.Time, UsedSignatures: slices.Clone(rec.UsedSignatures)}
		}
	}
	return out, nil
}

// waiting checks that s waits for the approval of revision.
func waiting(s *v1alpha1.EnvironmentStatus, revision string) error {
	switch {
	case s.WaitingApproval == nil:
		if s.LastPromotion != nil && s.LastPromotion.Revision == revision {
			return fail(http.StatusConflict, "environment %q was promoted to %s already", s.Name, revision)
		}
		return fail(http.StatusConflict, "environment %q is not waiting for an approval", s.Name)
	case s.WaitingApproval.Revision != revision:
		return fail(http.StatusConflict, "environment %q waits for the approval of revision %s, not %s", s.Name, s.WaitingApproval.Revision, revision)
	}
	return nil
}

// pending is a copy of the approval record rec when it is of revision, else a new record of
// revision (with rec's used signatures, which are the environment's). A record written before
// approval policies (an approver, no approvers, no policyMet) holds no approval that counts:
// the controller promotes on policyMet only, so the revision is approved again.
func pending(rec *v1alpha1.ApprovalRecord, revision string) *v1alpha1.ApprovalRecord {
	switch {
	case rec == nil:
		return &v1alpha1.ApprovalRecord{Revision: revision}
	case rec.Revision != revision:
		return &v1alpha1.ApprovalRecord{Revision: revision, UsedSignatures: slices.Clone(rec.UsedSignatures)}
	}
	out := rec.DeepCopy()
	if out.PolicyMet == nil {
		out.Approver = ""
	}
	return out
}

// approvedBy are the approvers of revision an environment's status records: its approval
// record's, and its last promotion's approver.
func approvedBy(s *v1alpha1.EnvironmentStatus, revision string) []string {
	var names []string
	if s.Approval != nil && s.Approval.Revision == revision {
		names = recordedNames(s.Approval)
	}
	if lp := s.LastPromotion; lp != nil && lp.Revision == revision && lp.Approver != "" {
		names = append(names, lp.Approver)
	}
	return names
}

// recordedNames are everyone rec names as an approver: its approvers, and its approver (of a
// record written before approval policies, the only one).
func recordedNames(rec *v1alpha1.ApprovalRecord) []string {
	names := approverNames(rec)
	if rec.Approver != "" && !slices.Contains(names, rec.Approver) {
		names = append(names, rec.Approver)
	}
	return names
}

func approverNames(rec *v1alpha1.ApprovalRecord) []string {
	names := make([]string, len(rec.Approvers))
	for i, a := range rec.Approvers {
		names[i] = a.Name
	}
	return names
}

// rejection is the rejection of revision among rs, if any.
func rejection(rs []v1alpha1.RejectionRecord, revision string) *v1alpha1.RejectionRecord {
	for i := range rs {
		if rs[i].Revision == revision {
			return &rs[i]
		}
	}
	return nil
}
