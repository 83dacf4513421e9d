package pipeline

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/release-controller/release-controller/api/v1alpha1"
)

func TestApprovalMet(t *testing.T) {
	met := metav1.NewTime(t0)
	alice := v1alpha1.Approver{Name: "alice", Time: met}
	for _, tt := range []struct {
		name string
		rec  *v1alpha1.ApprovalRecord
		want bool
	}{
		{"none", nil, false},
		{"of another revision", &v1alpha1.ApprovalRecord{Revision: "1", Approver: "alice", Approvers: []v1alpha1.Approver{alice}, PolicyMet: &met}, false},
		{"one of two approvers: not yet", &v1alpha1.ApprovalRecord{Revision: "2", Approver: "alice", Approvers: []v1alpha1.Approver{alice}}, false},
		{"the policy met", &v1alpha1.ApprovalRecord{Revision: "2", Approver: "bob", Approvers: []v1alpha1.Approver{alice, {Name: "bob"}}, PolicyMet: &met}, true},
		{"a record of the route before policies (one approval, no approvers): approve again", &v1alpha1.ApprovalRecord{Revision: "2", Approver: "hmac:prod"}, false},
	} {
		if got := ApprovalMet(tt.rec, "2"); got != tt.want {
			t.Errorf("%s: ApprovalMet = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// Plan never promotes a revision into an environment that rejected it, and lets an approved
// one in only once the environment's policy is met.
func TestPlanRejectionsAndApprovalPolicy(t *testing.T) {
	met := metav1.NewTime(t0)
	rejected := []v1alpha1.RejectionRecord{{Revision: "2", By: "alice", Reason: "breaks checkout", Time: met}}
	at2 := [][]TargetObservation{{at("2", true)}, {at("2", true), at("2", true)}, {at("1", true)}}
	for _, tt := range []struct {
		name     string
		status   []v1alpha1.EnvironmentStatus
		observed [][]TargetObservation
		want     []Action
		waiting  string // prod waits for
	}{
		{name: "staging rejected 2: dev at 2 is not promoted there",
			status:   []v1alpha1.EnvironmentStatus{{Name: "staging", Rejections: rejected}},
			observed: [][]TargetObservation{{at("2", true)}, {at("1", true), at("1", true)}, {at("1", true)}}},
		{name: "dev moves on to 3: staging takes 3",
			status:   []v1alpha1.EnvironmentStatus{{Name: "staging", Rejections: rejected}},
			observed: [][]TargetObservation{{at("3", true)}, {at("1", true), at("1", true)}, {at("1", true)}},
			want:     []Action{{Env: 1, Revision: "3"}}},
		{name: "a rejection of another environment does not hold this one",
			status:   []v1alpha1.EnvironmentStatus{{Name: "dev", Rejections: rejected}},
			observed: [][]TargetObservation{{at("2", true)}, {at("1", true), at("1", true)}, {at("1", true)}},
			want:     []Action{{Env: 1, Revision: "2"}}},
		{name: "prod asks for approval: it waits",
			observed: at2, waiting: "2"},
		{name: "one approver of a policy of two: it still waits",
			status: []v1alpha1.EnvironmentStatus{{Name: "prod", WaitingApproval: &v1alpha1.WaitingApproval{Revision: "2", Since: met},
				Approval: &v1alpha1.ApprovalRecord{Revision: "2", Approver: "alice", Approvers: []v1alpha1.Approver{{Name: "alice", Time: met}}}}},
			observed: at2, waiting: "2"},
		{name: "the policy met: promoted, the approver who met it named",
			status: []v1alpha1.EnvironmentStatus{{Name: "prod", WaitingApproval: &v1alpha1.WaitingApproval{Revision: "2", Since: met},
				Approval: &v1alpha1.ApprovalRecord{Revision: "2", Approver: "bob", Approvers: []v1alpha1.Approver{{Name: "alice"}, {Name: "bob"}}, PolicyMet: &met}}},
			observed: at2, want: []Action{{Env: 2, Revision: "2", Approver: "bob"}}, waiting: "2"},
		{name: "approved, then rejected: never promoted, no longer waiting",
			status: []v1alpha1.EnvironmentStatus{{Name: "prod", WaitingApproval: &v1alpha1.WaitingApproval{Revision: "2", Since: met}, Rejections: rejected,
				Approval: &v1alpha1.ApprovalRecord{Revision: "2", Approver: "bob", Approvers: []v1alpha1.Approver{{Name: "bob"}}, PolicyMet: &met}}},
			observed: at2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := threeEnvs(true)
			p.Status.Environments = tt.status
			envs, actions := Plan(p, tt.observed, "", t0)
			if diff := cmp.Diff(tt.want, actions); diff != "" {
				t.Errorf("actions (-want +got):\n%s", diff)
			}
			got := ""
			if w := envs[2].WaitingApproval; w != nil {
				got = w.Revision
			}
			if got != tt.waiting {
				t.Errorf("prod waits for %q, want %q", got, tt.waiting)
			}
			for i, e := range envs {
				for _, s := range tt.status {
					if s.Name == e.Name && !cmp.Equal(s.Rejections, e.Rejections) {
						t.Errorf("%s's rejections %v, want them kept: %v", envs[i].Name, e.Rejections, s.Rejections)
					}
				}
			}
		})
	}
}
