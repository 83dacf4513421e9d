package pipeline

import (
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/release-controller/release-controller/api/v1alpha1"
)

func TestTargetHidden(t *testing.T) {
	const tenant = "system:serviceaccount:team-a:default"
	deployments := schema.GroupResource{Group: "apps", Resource: "deployments"}
	local := v1alpha1.Target{Namespace: "team-b"}
	remote := v1alpha1.Target{Namespace: "team-b", ClusterRef: "leaf"}
	for _, tc := range []struct {
		name   string
		tenant string
		target v1alpha1.Target
		res    schema.GroupResource
		answer *AppAccess
		want   []string // parts of the message; none: the target is shown
	}{
		{name: "the controller's own rights: no review, shown", target: local, res: deployments},
		{name: "the controller's own rights, even when denied", target: local, res: deployments, answer: &AppAccess{}},
		{name: "a remote target: read with its kubeconfig's identity, shown", tenant: tenant, target: remote, res: deployments, answer: &AppAccess{}},
		{name: "a local target the account may get: shown", tenant: tenant, target: local, res: deployments, answer: &AppAccess{Allowed: true}},
		{
			name: "a local target the account may not get: hidden", tenant: tenant, target: local, res: deployments, answer: &AppAccess{},
			want: []string{"account " + tenant + " may not get deployments.apps web in namespace team-b;", "not shown or promoted", "grant it get, and patch to promote, on deployments.apps in team-b"},
		},
		{
			name: "the authorizer's reason is given", tenant: tenant, target: local, res: deployments, answer: &AppAccess{Reason: "denied by policy x"},
			want: []string{"may not get deployments.apps web in namespace team-b (denied by policy x)"},
		},
		{
			name: "a core kind is named without a group", tenant: tenant, target: local, res: schema.GroupResource{Resource: "configmaps"}, answer: &AppAccess{},
			want: []string{"may not get configmaps web in namespace team-b"},
		},
		{
			name: "a local target never reviewed: hidden", tenant: tenant, target: local, res: deployments,
			want: []string{"may not get deployments.apps web in namespace team-b: not checked"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := TargetHidden(tc.tenant, tc.target, tc.res, "web", tc.answer)
			if len(tc.want) == 0 {
				if got != "" {
					t.Errorf("hidden: %q, want shown", got)
				}
				return
			}
			for _, part := range tc.want {
				if !strings.Contains(got, part) {
					t.Errorf("got %q, want it to contain %q", got, part)
				}
			}
		})
	}
}

func TestServiceAccountGroups(t *testing.T) {
	for user, want := range map[string][]string{
		"system:serviceaccount:team-a:deployer": {"system:serviceaccounts", "system:serviceaccounts:team-a", "system:authenticated"},
		"alice":                                 {"system:authenticated"},
		"system:serviceaccount:team-a":          {"system:authenticated"},
	} {
		if got := ServiceAccountGroups(user); !slices.Equal(got, want) {
			t.Errorf("ServiceAccountGroups(%q) = %q, want %q", user, got, want)
		}
	}
}

func TestNewlyHidden(t *testing.T) {
	const why, other = "account x may not get deployments.apps web in namespace b", "account x may not get deployments.apps web in namespace c"
	before := &v1alpha1.PipelineStatus{Environments: []v1alpha1.EnvironmentStatus{
		{Name: "dev", Targets: []v1alpha1.TargetStatus{{Namespace: "b", Message: why}}},
		{Name: "prod", Targets: []v1alpha1.TargetStatus{{Namespace: "c", Revision: "1", Ready: true}}},
	}}
	for _, tc := range []struct {
		name   string
		hidden []HiddenTarget
		want   []string
	}{
		{name: "none hidden"},
		{name: "hidden already: no new event", hidden: []HiddenTarget{{Env: 0, Target: 0, Message: why}}},
		{name: "a target shown before: an event", hidden: []HiddenTarget{{Env: 1, Target: 0, Message: other}}, want: []string{other}},
		{name: "a target the status did not have yet", hidden: []HiddenTarget{{Env: 2, Target: 0, Message: other}}, want: []string{other}},
		{name: "one message once", hidden: []HiddenTarget{{Env: 1, Target: 0, Message: other}, {Env: 2, Target: 0, Message: other}}, want: []string{other}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := NewlyHidden(before, tc.hidden); !slices.Equal(got, tc.want) {
				t.Errorf("NewlyHidden = %q, want %q", got, tc.want)
			}
		})
	}
}
