package approval_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/server/approval"
)

var (
	now     = time.Date(2026, 3, 25, 12, 0, 0, 0, time.UTC)
	earlier = metav1.NewTime(now.Add(-time.Hour))
	key     = &v1alpha1.SecretKeyReference{Name: "prod-approvals"}
)

func user(name string, groups ...string) approval.Identity {
	return approval.Identity{Name: name, Groups: groups}
}

// waitingFor is prod's status while it waits for revision, with the approvals given so far.
func waitingFor(revision string, approvers ...string) *v1alpha1.EnvironmentStatus {
	s := &v1alpha1.EnvironmentStatus{Name: "prod", WaitingApproval: &v1alpha1.WaitingApproval{Revision: revision, Since: earlier}}
	if len(approvers) > 0 {
		s.Approval = &v1alpha1.ApprovalRecord{Revision: revision, Time: earlier}
		for _, a := range approvers {
			s.Approval.Approvers = append(s.Approval.Approvers, v1alpha1.Approver{Name: a, Time: earlier})
		}
	}
	return s
}

func TestDecide(t *testing.T) {
	two := v1alpha1.Approval{MinApprovers: 2}
	staging := func(mutate func(*v1alpha1.EnvironmentStatus)) *v1alpha1.EnvironmentStatus {
		s := &v1alpha1.EnvironmentStatus{Name: "staging", Revision: "1.0.3", Ready: true}
		mutate(s)
		return s
	}
	tests := []struct {
		name     string
		policy   v1alpha1.Approval
		current  *v1alpha1.EnvironmentStatus
		previous *v1alpha1.EnvironmentStatus
		who      approval.Identity
		revision string

		wantApprovers []string
		wantMet       bool   // policyMet set, now, and approver who
		wantCode      int    // a refusal
		wantMsg       string // in the refusal
	}{
		{name: "the first of two approvers", policy: two, current: waitingFor("1.0.3"), who: user("alice"), revision: "1.0.3",
			wantApprovers: []string{"alice"}},
		{name: "two distinct approvers meet the policy", policy: two, current: waitingFor("1.0.3", "alice"), who: user("bob"), revision: "1.0.3",
			wantApprovers: []string{"alice", "bob"}, wantMet: true},
		{name: "the same person twice", policy: two, current: waitingFor("1.0.3", "alice"), who: user("alice"), revision: "1.0.3",
			wantCode: http.StatusConflict, wantMsg: `alice approved revision 1.0.3 of environment "prod" already`},
		{name: "one approver by default", policy: v1alpha1.Approval{}, current: waitingFor("1.0.3"), who: user("alice"), revision: "1.0.3",
			wantApprovers: []string{"alice"}, wantMet: true},
		{name: "a user the policy names", policy: v1alpha1.Approval{Users: []string{"alice"}}, current: waitingFor("1.0.3"), who: user("alice"), revision: "1.0.3",
			wantApprovers: []string{"alice"}, wantMet: true},
		{name: "a user outside the list", policy: v1alpha1.Approval{Users: []string{"alice"}, Groups: []string{"release-managers"}},
			current: waitingFor("1.0.3"), who: user("mallory", "system:authenticated"), revision: "1.0.3",
			wantCode: http.StatusForbidden, wantMsg: `user "mallory" is neither in approval.users of environment "prod" nor a member of one of its approval.groups`},
		{name: "a member of a group the policy names", policy: v1alpha1.Approval{Users: []string{"alice"}, Groups: []string{"release-managers"}},
			current: waitingFor("1.0.3"), who: user("carol", "system:authenticated", "release-managers"), revision: "1.0.3",
			wantApprovers: []string{"carol"}, wantMet: true},
		{name: "a signed approval under a policy naming people", policy: v1alpha1.Approval{SecretRef: key, Groups: []string{"release-managers"}},
			current: waitingFor("1.0.3"), who: approval.SignedIdentity("prod-approvals"), revision: "1.0.3",
			wantCode: http.StatusForbidden, wantMsg: "a signed (HMAC) request is a machine, never one of them"},
		{name: "a signed approval without a key", policy: v1alpha1.Approval{},
			current: waitingFor("1.0.3"), who: approval.SignedIdentity("prod-approvals"), revision: "1.0.3",
			wantCode: http.StatusForbidden, wantMsg: `environment "prod" has no approval.secretRef`},
		{name: "a signed approval is one machine approver", policy: v1alpha1.Approval{SecretRef: key, MinApprovers: 2},
			current: waitingFor("1.0.3"), who: approval.SignedIdentity("prod-approvals"), revision: "1.0.3",
			wantApprovers: []string{"hmac:prod-approvals"}},
		{name: "a second signed approval is the same machine", policy: v1alpha1.Approval{SecretRef: key, MinApprovers: 2},
			current: waitingFor("1.0.3", "hmac:prod-approvals"), who: approval.SignedIdentity("prod-approvals"), revision: "1.0.3",
			wantCode: http.StatusConflict, wantMsg: "one machine approver"},
		{name: "a person and the machine are two approvers", policy: v1alpha1.Approval{SecretRef: key, MinApprovers: 2},
			current: waitingFor("1.0.3", "hmac:prod-approvals"), who: user("alice"), revision: "1.0.3",
			wantApprovers: []string{"hmac:prod-approvals", "alice"}, wantMet: true},
		{name: "separation of duties: the previous environment's approver", policy: v1alpha1.Approval{SeparationOfDuties: true},
			current: waitingFor("1.0.3"), who: user("alice"), revision: "1.0.3",
			previous: staging(func(s *v1alpha1.EnvironmentStatus) {
				s.Approval = &v1alpha1.ApprovalRecord{Revision: "1.0.3", Approver: "bob", Time: earlier, PolicyMet: &earlier,
					Approvers: []v1alpha1.Approver{{Name: "alice", Time: earlier}, {Name: "bob", Time: earlier}}}
			}),
			wantCode: http.StatusForbidden, wantMsg: `alice approved revision 1.0.3 for the previous environment "staging"`},
		{name: "separation of duties: the previous environment's promotion's approver", policy: v1alpha1.Approval{SeparationOfDuties: true},
			current: waitingFor("1.0.3"), who: user("alice"), revision: "1.0.3",
			previous: staging(func(s *v1alpha1.EnvironmentStatus) {
				s.LastPromotion = &v1alpha1.PromotionRecord{ID: "x", Revision: "1.0.3", Strategy: "patch", Time: earlier, Approver: "alice"}
			}),
			wantCode: http.StatusForbidden, wantMsg: "separation of duties (approval.separationOfDuties"},
		{name: "separation of duties: someone else", policy: v1alpha1.Approval{SeparationOfDuties: true},
			current: waitingFor("1.0.3"), who: user("carol"), revision: "1.0.3",
			previous: staging(func(s *v1alpha1.EnvironmentStatus) {
				s.LastPromotion = &v1alpha1.PromotionRecord{ID: "x", Revision: "1.0.3", Strategy: "patch", Time: earlier, Approver: "alice"}
			}),
			wantApprovers: []string{"carol"}, wantMet: true},
		{name: "separation of duties: an approver of another revision there", policy: v1alpha1.Approval{SeparationOfDuties: true},
			current: waitingFor("1.0.3"), who: user("alice"), revision: "1.0.3",
			previous: staging(func(s *v1alpha1.EnvironmentStatus) {
				s.LastPromotion = &v1alpha1.PromotionRecord{ID: "x", Revision: "1.0.2", Strategy: "patch", Time: earlier, Approver: "alice"}
			}),
			wantApprovers: []string{"alice"}, wantMet: true},
		{name: "without separation of duties, the previous environment's approver", policy: v1alpha1.Approval{},
			current: waitingFor("1.0.3"), who: user("alice"), revision: "1.0.3",
			previous: staging(func(s *v1alpha1.EnvironmentStatus) {
				s.LastPromotion = &v1alpha1.PromotionRecord{ID: "x", Revision: "1.0.3", Strategy: "patch", Time: earlier, Approver: "alice"}
			}),
			wantApprovers: []string{"alice"}, wantMet: true},
		{name: "a new revision starts a new record", policy: two, who: user("alice"), revision: "1.0.3",
			current: func() *v1alpha1.EnvironmentStatus {
				s := waitingFor("1.0.3")
				s.Approval = &v1alpha1.ApprovalRecord{Revision: "1.0.2", Approver: "bob", Time: earlier, PolicyMet: &earlier,
					Approvers: []v1alpha1.Approver{{Name: "alice", Time: earlier}, {Name: "bob", Time: earlier}}}
				return s
			}(),
			wantApprovers: []string{"alice"}},
		{name: "approved already", policy: two, who: user("carol"), revision: "1.0.3",
			current: func() *v1alpha1.EnvironmentStatus {
				s := waitingFor("1.0.3", "alice", "bob")
				s.Approval.PolicyMet, s.Approval.Approver = &earlier, "bob"
				return s
			}(),
			wantCode: http.StatusConflict, wantMsg: "is approved already: its approval policy was met at 2026-03-25T11:00:00Z (approvers: alice, bob)"},
		{name: "a record written before approval policies does not count", policy: v1alpha1.Approval{}, who: user("alice"), revision: "1.0.3",
			current: func() *v1alpha1.EnvironmentStatus {
				s := waitingFor("1.0.3")
				s.Approval = &v1alpha1.ApprovalRecord{Revision: "1.0.3", Approver: "alice", Time: earlier}
				return s
			}(),
			wantApprovers: []string{"alice"}, wantMet: true},
		{name: "separation of duties: the previous environment's approver, recorded before approval policies", policy: v1alpha1.Approval{SeparationOfDuties: true},
			current: waitingFor("1.0.3"), who: user("alice"), revision: "1.0.3",
			previous: staging(func(s *v1alpha1.EnvironmentStatus) {
				s.Approval = &v1alpha1.ApprovalRecord{Revision: "1.0.3", Approver: "alice", Time: earlier}
			}),
			wantCode: http.StatusForbidden, wantMsg: "separation of duties"},
		{name: "a rejected revision", policy: two, who: user("alice"), revision: "1.0.3",
			current: func() *v1alpha1.EnvironmentStatus {
				s := waitingFor("1.0.3")
				s.Rejections = []v1alpha1.RejectionRecord{{Revision: "1.0.3", By: "bob", Reason: "CVE-2026-1234", Time: earlier}}
				return s
			}(),
			wantCode: http.StatusConflict, wantMsg: `revision 1.0.3 was rejected for environment "prod" by bob at 2026-03-25T11:00:00Z (CVE-2026-1234)`},
		{name: "not waiting", policy: two, current: &v1alpha1.EnvironmentStatus{Name: "prod"}, who: user("alice"), revision: "1.0.3",
			wantCode: http.StatusConflict, wantMsg: `environment "prod" is not waiting for an approval`},
		{name: "promoted already", policy: two, who: user("alice"), revision: "1.0.3",
			current:  &v1alpha1.EnvironmentStatus{Name: "prod", LastPromotion: &v1alpha1.PromotionRecord{ID: "x", Revision: "1.0.3", Strategy: "patch", Time: earlier}},
			wantCode: http.StatusConflict, wantMsg: `environment "prod" was promoted to 1.0.3 already`},
		{name: "waiting for another revision", policy: two, current: waitingFor("1.0.4"), who: user("alice"), revision: "1.0.3",
			wantCode: http.StatusConflict, wantMsg: `environment "prod" waits for the approval of revision 1.0.4, not 1.0.3`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := tt.current.DeepCopy()
			got, err := approval.Decide(tt.policy, tt.current, tt.previous, tt.who, tt.revision, now.Add(500*time.Millisecond))
			if !equality.Semantic.DeepEqual(before, tt.current) {
				t.Errorf("Decide changed the status it was given")
			}
			if refused(t, err, tt.wantCode, tt.wantMsg) {
				return
			}
			if got.Revision != tt.revision {
				t.Errorf("the record is of revision %s, want %s", got.Revision, tt.revision)
			}
			var names []string
			for _, a := range got.Approvers {
				names = append(names, a.Name)
			}
			if fmt.Sprint(names) != fmt.Sprint(tt.wantApprovers) {
				t.Errorf("approvers %v, want %v", names, tt.wantApprovers)
			}
			last := got.Approvers[len(got.Approvers)-1]
			if !last.Time.Time.Equal(now) || !got.Time.Time.Equal(now) {
				t.Errorf("the approval is recorded at %v (record %v), want %v (whole seconds)", last.Time, got.Time, now)
			}
			switch {
			case tt.wantMet && (got.PolicyMet == nil || !got.PolicyMet.Time.Equal(now) || got.Approver != tt.who.Name):
				t.Errorf("policyMet %v by %q, want now by %q", got.PolicyMet, got.Approver, tt.who.Name)
			case !tt.wantMet && (got.PolicyMet != nil || got.Approver != ""):
				t.Errorf("policyMet %v by %q, want neither while approvals are missing", got.PolicyMet, got.Approver)
			}
		})
	}
}

func TestDecideRejection(t *testing.T) {
	used := []v1alpha1.UsedSignature{{SHA256: strings.Repeat("a", 64), Expires: metav1.NewTime(now.Add(time.Minute))}}
	rejected := func(n int) []v1alpha1.RejectionRecord {
		var out []v1alpha1.RejectionRecord
		for i := range n {
			out = append(out, v1alpha1.RejectionRecord{Revision: fmt.Sprintf("0.%d", i), By: "bob", Reason: "old", Time: earlier})
		}
		return out
	}
	with := func(s *v1alpha1.EnvironmentStatus, mutate func(*v1alpha1.EnvironmentStatus)) *v1alpha1.EnvironmentStatus {
		mutate(s)
		return s
	}
	tests := []struct {
		name     string
		policy   v1alpha1.Approval
		current  *v1alpha1.EnvironmentStatus
		who      approval.Identity
		revision string
		reason   string

		wantRejections []string // revisions, in order
		wantApproval   *v1alpha1.ApprovalRecord
		wantWithdrawn  []string
		wantCode       int
		wantMsg        string
	}{
		{name: "the waiting revision, its approvals withdrawn", current: waitingFor("1.0.3", "alice"), who: user("bob"), revision: "1.0.3", reason: "CVE-2026-1234",
			wantRejections: []string{"1.0.3"}, wantWithdrawn: []string{"alice"}},
		{name: "the used signatures stay refused", who: user("bob"), revision: "1.0.3", reason: "CVE",
			current:        with(waitingFor("1.0.3", "hmac:prod-approvals"), func(s *v1alpha1.EnvironmentStatus) { s.Approval.UsedSignatures = used }),
			wantRejections: []string{"1.0.3"}, wantWithdrawn: []string{"hmac:prod-approvals"},
			wantApproval: &v1alpha1.ApprovalRecord{Time: earlier, UsedSignatures: used}},
		{name: "the approver of a record written before approval policies is withdrawn", who: user("bob"), revision: "1.0.3", reason: "CVE",
			current: with(waitingFor("1.0.3"), func(s *v1alpha1.EnvironmentStatus) {
				s.Approval = &v1alpha1.ApprovalRecord{Revision: "1.0.3", Approver: "alice", Time: earlier}
			}),
			wantRejections: []string{"1.0.3"}, wantWithdrawn: []string{"alice"}},
		{name: "a revision not there yet, the pending approvals of another kept", current: waitingFor("1.0.3", "alice"), who: user("bob"), revision: "1.0.4", reason: "CVE",
			wantRejections: []string{"1.0.4"}, wantApproval: waitingFor("1.0.3", "alice").Approval},
		{name: "the oldest rejection goes past the bound", current: with(waitingFor("1.0.3"), func(s *v1alpha1.EnvironmentStatus) { s.Rejections = rejected(v1alpha1.MaxRejections) }),
			who: user("bob"), revision: "1.0.3", reason: "CVE",
			wantRejections: append(revisions(rejected(v1alpha1.MaxRejections)[1:]), "1.0.3")},
		{name: "a reason of the longest length", current: waitingFor("1.0.3"), who: user("bob"), revision: "1.0.3", reason: strings.Repeat("é", approval.MaxReasonLength),
			wantRejections: []string{"1.0.3"}},
		{name: "no reason", current: waitingFor("1.0.3"), who: user("bob"), revision: "1.0.3", reason: "  \n",
			wantCode: http.StatusBadRequest, wantMsg: "a rejection needs a reason"},
		{name: "a reason too long", current: waitingFor("1.0.3"), who: user("bob"), revision: "1.0.3", reason: strings.Repeat("é", approval.MaxReasonLength+1),
			wantCode: http.StatusBadRequest, wantMsg: "the reason has 1025 characters, more than the 1024"},
		{name: "rejected already", current: with(waitingFor("1.0.3"), func(s *v1alpha1.EnvironmentStatus) {
			s.Rejections = []v1alpha1.RejectionRecord{{Revision: "1.0.3", By: "carol", Reason: "flaky", Time: earlier}}
		}), who: user("bob"), revision: "1.0.3", reason: "CVE",
			wantCode: http.StatusConflict, wantMsg: "was rejected for environment \"prod\" already, by carol"},
		{name: "promoted already", current: &v1alpha1.EnvironmentStatus{Name: "prod",
			LastPromotion: &v1alpha1.PromotionRecord{ID: "x", Revision: "1.0.3", Strategy: "patch", Time: earlier}},
			who: user("bob"), revision: "1.0.3", reason: "CVE",
			wantCode: http.StatusConflict, wantMsg: "it does not roll one back"},
		{name: "running already", current: &v1alpha1.EnvironmentStatus{Name: "prod", Revision: "1.0.3", Ready: true},
			who: user("bob"), revision: "1.0.3", reason: "CVE",
			wantCode: http.StatusConflict, wantMsg: `environment "prod" runs 1.0.3 already`},
		{name: "a user outside the policy", policy: v1alpha1.Approval{Groups: []string{"release-managers"}}, current: waitingFor("1.0.3"),
			who: user("mallory"), revision: "1.0.3", reason: "CVE",
			wantCode: http.StatusForbidden, wantMsg: `user "mallory" is neither in approval.users`},
		{name: "a signed rejection under a policy naming people", policy: v1alpha1.Approval{SecretRef: key, Users: []string{"alice"}}, current: waitingFor("1.0.3"),
			who: approval.SignedIdentity("prod-approvals"), revision: "1.0.3", reason: "CVE",
			wantCode: http.StatusForbidden, wantMsg: "signed (HMAC)"},
		{name: "a signed rejection", policy: v1alpha1.Approval{SecretRef: key}, current: waitingFor("1.0.3"),
			who: approval.SignedIdentity("prod-approvals"), revision: "1.0.3", reason: "the canary failed",
			wantRejections: []string{"1.0.3"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := tt.current.DeepCopy()
			got, err := approval.DecideRejection(tt.policy, tt.current, tt.who, tt.revision, tt.reason, now.Add(500*time.Millisecond))
			if !equality.Semantic.DeepEqual(before, tt.current) {
				t.Errorf("DecideRejection changed the status it was given")
			}
			if refused(t, err, tt.wantCode, tt.wantMsg) {
				return
			}
			if fmt.Sprint(revisions(got.Rejections)) != fmt.Sprint(tt.wantRejections) {
				t.Errorf("rejections %v, want %v", revisions(got.Rejections), tt.wantRejections)
			}
			newest := got.Rejections[len(got.Rejections)-1]
			if newest.By != tt.who.Name || newest.Reason != tt.reason || !newest.Time.Time.Equal(now) {
				t.Errorf("the rejection is %+v, want by %s for %q at %v", newest, tt.who.Name, tt.reason, now)
			}
			if fmt.Sprint(got.Withdrawn) != fmt.Sprint(tt.wantWithdrawn) {
				t.Errorf("withdrawn %v, want %v", got.Withdrawn, tt.wantWithdrawn)
			}
			if !equality.Semantic.DeepEqual(got.Approval, tt.wantApproval) {
				t.Errorf("approval record %+v, want %+v", got.Approval, tt.wantApproval)
			}
		})
	}
}

func revisions(rs []v1alpha1.RejectionRecord) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.Revision
	}
	return out
}

// refused checks err against the refusal wanted (wantCode 0: none) and says whether there was
// one.
func refused(t *testing.T, err error, wantCode int, wantMsg string) bool {
	t.Helper()
	switch {
	case wantCode == 0 && err != nil:
		t.Fatal(err)
	case wantCode == 0:
		return false
	case err == nil:
		t.Fatalf("accepted; want a refusal %d %q", wantCode, wantMsg)
	}
	if code := approval.StatusOf(err); code != wantCode {
		t.Errorf("refused with %d (%v), want %d", code, err, wantCode)
	}
	if !strings.Contains(err.Error(), wantMsg) {
		t.Errorf("refusal %q does not say %q", err, wantMsg)
	}
	return true
}

// A signed request sent again (two approvals signed with one key in the same second are one
// request, as a replay is) is answered with what the first recorded: the machine approver
// approved already, as Decide answers a second signed approval in another second, or the
// revision was rejected; the signature was used when the status no longer says either.
func TestRepeated(t *testing.T) {
	machine := approval.SignedIdentity("prod-approvals")
	met := metav1.NewTime(now)
	rejected := []v1alpha1.RejectionRecord{{Revision: "1.0.3", By: "hmac:prod-approvals", Reason: "the canary failed", Time: earlier}}
	metBy := func(rec *v1alpha1.ApprovalRecord) *v1alpha1.ApprovalRecord {
		rec.PolicyMet, rec.Approver = &met, "hmac:prod-approvals"
		return rec
	}
	tests := []struct {
		name       string
		rec        *v1alpha1.ApprovalRecord
		rejections []v1alpha1.RejectionRecord
		need       int
		want       string
	}{
		{name: "the machine approved, one more needed", rec: waitingFor("1.0.3", "hmac:prod-approvals").Approval, need: 2,
			want: `hmac:prod-approvals approved revision 1.0.3 of environment "prod" already, at 2026-03-25T11:00:00Z ` +
				`(every request signed with one key is one machine approver): the policy needs 2 distinct approvers, it has 1; ` +
				`this request repeats that one: this signature was used already`},
		{name: "the machine met the policy", rec: metBy(waitingFor("1.0.3", "alice", "hmac:prod-approvals").Approval), need: 2,
			want: `hmac:prod-approvals approved revision 1.0.3 of environment "prod" already, at 2026-03-25T11:00:00Z ` +
				`(every request signed with one key is one machine approver): the policy needs 2 distinct approvers, it has 2, ` +
				`and was met at 2026-03-25T12:00:00Z; this request repeats that one: this signature was used already`},
		{name: "the machine rejected it", rejections: rejected,
			want: `revision 1.0.3 was rejected for environment "prod" already, by hmac:prod-approvals at 2026-03-25T11:00:00Z (the canary failed); ` +
				`this request repeats that one: this signature was used already`},
		{name: "rejected after the machine approved it", rec: waitingFor("1.0.4", "hmac:prod-approvals").Approval, rejections: rejected, need: 2,
			want: `revision 1.0.3 was rejected for environment "prod" already`},
		{name: "the approval was cleared since", rec: waitingFor("1.0.3", "alice").Approval, need: 2,
			want: "this signature was used already: sign every request anew"},
		{name: "no record", need: 1, want: "this signature was used already: sign every request anew"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := approval.Repeated("prod", "1.0.3", machine, tt.rec, tt.rejections, tt.need)
			refused(t, err, http.StatusConflict, tt.want)
		})
	}

	// The first approval signed in a second is recorded; the second, in another second, is
	// refused by Decide with the same words (without the repeat's).
	policy := v1alpha1.Approval{SecretRef: key, MinApprovers: 2}
	rec, err := approval.Decide(policy, waitingFor("1.0.3"), nil, machine, "1.0.3", earlier.Time)
	if err != nil {
		t.Fatal(err)
	}
	current := waitingFor("1.0.3")
	current.Approval = rec
	_, decided := approval.Decide(policy, current, nil, machine, "1.0.3", now)
	repeated := approval.Repeated("prod", "1.0.3", machine, rec, nil, 2)
	if decided == nil || repeated == nil || !strings.HasPrefix(repeated.Error(), decided.Error()+"; ") {
		t.Errorf("Decide: %v\nRepeated: %v", decided, repeated)
	}
}
