package pipeline

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/eventlog"
)

var t0 = time.Date(2026, 3, 25, 12, 0, 0, 0, time.UTC)

func threeEnvs(approveProd bool) *v1alpha1.Pipeline {
	p := &v1alpha1.Pipeline{Spec: v1alpha1.PipelineSpec{
		AppRef: v1alpha1.AppReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", Container: "web"},
		Environments: []v1alpha1.Environment{
			{Name: "dev", Targets: []v1alpha1.Target{{Namespace: "dev"}}},
			{Name: "staging", Targets: []v1alpha1.Target{{Namespace: "a", ClusterRef: "leaf"}, {Namespace: "b", ClusterRef: "leaf"}}},
			{Name: "prod", Targets: []v1alpha1.Target{{Namespace: "prod", ClusterRef: "leaf"}}},
		},
	}}
	if approveProd {
		p.Spec.Environments[2].Approval = &v1alpha1.Approval{SecretRef: &v1alpha1.SecretKeyReference{Name: "k"}}
	}
	return p
}

func at(rev string, ready bool) TargetObservation {
	return TargetObservation{Observation: Observation{Found: true, Revision: rev, Ready: ready}}
}

func TestPlan(t *testing.T) {
	unreachable := TargetObservation{Unreachable: "connection refused"}
	tests := []struct {
		name     string
		approve  bool
		suspend  bool
		status   []v1alpha1.EnvironmentStatus
		observed [][]TargetObservation
		source   string
		want     []Action
		waiting  map[string]string // env -> waiting revision
	}{
		{name: "all at one revision: nothing to do",
			observed: [][]TargetObservation{{at("1", true)}, {at("1", true), at("1", true)}, {at("1", true)}}},
		{name: "dev ready at a new revision promotes staging",
			observed: [][]TargetObservation{{at("2", true)}, {at("1", true), at("1", true)}, {at("1", true)}},
			want:     []Action{{Env: 1, Revision: "2"}}},
		{name: "dev not ready yet: nothing",
			observed: [][]TargetObservation{{at("2", false)}, {at("1", true), at("1", true)}, {at("1", true)}}},
		{name: "staging half updated: not ready, prod waits; staging has no common revision, but was promoted",
			status:   []v1alpha1.EnvironmentStatus{{Name: "staging", LastPromotion: &v1alpha1.PromotionRecord{Revision: "2"}}},
			observed: [][]TargetObservation{{at("2", true)}, {at("2", true), at("1", true)}, {at("1", true)}}},
		{name: "staging ready at 2 promotes prod",
			observed: [][]TargetObservation{{at("2", true)}, {at("2", true), at("2", true)}, {at("1", true)}},
			want:     []Action{{Env: 2, Revision: "2"}}},
		{name: "already promoted (rolled back by hand): not redone",
			status:   []v1alpha1.EnvironmentStatus{{Name: "staging", LastPromotion: &v1alpha1.PromotionRecord{Revision: "2"}}},
			observed: [][]TargetObservation{{at("2", true)}, {at("1", true), at("1", true)}, {at("1", true)}}},
		{name: "source feeds dev",
			source:   "3",
			observed: [][]TargetObservation{{at("2", true)}, {at("2", true), at("2", true)}, {at("2", true)}},
			want:     []Action{{Env: 0, Revision: "3"}}},
		{name: "source already in dev",
			source:   "2",
			observed: [][]TargetObservation{{at("2", true)}, {at("2", true), at("2", true)}, {at("2", true)}}},
		{name: "prod asks for approval: waits",
			approve:  true,
			observed: [][]TargetObservation{{at("2", true)}, {at("2", true), at("2", true)}, {at("1", true)}},
			waiting:  map[string]string{"prod": "2"}},
		{name: "prod approved: promoted with the approver",
			approve: true,
			status: []v1alpha1.EnvironmentStatus{{Name: "prod", WaitingApproval: &v1alpha1.WaitingApproval{Revision: "2"},
				Approval: &v1alpha1.ApprovalRecord{Revision: "2", Approver: "alice", PolicyMet: &metav1.Time{Time: t0}}}},
			observed: [][]TargetObservation{{at("2", true)}, {at("2", true), at("2", true)}, {at("1", true)}},
			want:     []Action{{Env: 2, Revision: "2", Approver: "alice"}},
			waiting:  map[string]string{"prod": "2"}}, // until the promotion is recorded
		{name: "an approval of another revision does not count",
			approve: true,
			status: []v1alpha1.EnvironmentStatus{{Name: "prod", WaitingApproval: &v1alpha1.WaitingApproval{Revision: "3"},
				Approval: &v1alpha1.ApprovalRecord{Revision: "2", Approver: "alice", PolicyMet: &metav1.Time{Time: t0}}}},
			observed: [][]TargetObservation{{at("3", true)}, {at("3", true), at("3", true)}, {at("2", true)}},
			waiting:  map[string]string{"prod": "3"}},
		{name: "unreachable staging: neither promoted nor promoting",
			observed: [][]TargetObservation{{at("2", true)}, {unreachable, at("1", true)}, {at("1", true)}}},
		{name: "staging not synced yet: not promoted",
			observed: [][]TargetObservation{{at("2", true)}, {{Unknown: true}, at("1", true)}, {at("1", true)}}},
		{name: "unreachable prod target: staging ready, prod not promoted",
			observed: [][]TargetObservation{{at("2", true)}, {at("2", true), at("2", true)}, {unreachable}}},
		{name: "dev hidden from the account: the source is not promoted into it, nor it into staging",
			source:   "3",
			observed: [][]TargetObservation{{{Hidden: "account x may not get"}}, {at("1", true), at("1", true)}, {at("1", true)}}},
		{name: "a hidden target whose app was read anyway: nothing of it counts",
			observed: [][]TargetObservation{{{Hidden: "account x may not get", Observation: Observation{Found: true, Revision: "2", Ready: true}}}, {at("1", true), at("1", true)}, {at("1", true)}}},
		{name: "a staging target hidden: staging neither promoted nor promoting",
			observed: [][]TargetObservation{{at("3", true)}, {{Hidden: "account x may not get"}, at("2", true)}, {at("1", true)}}},
		{name: "two environments due at once",
			observed: [][]TargetObservation{{at("3", true)}, {at("2", true), at("2", true)}, {at("1", true)}},
			want:     []Action{{Env: 1, Revision: "3"}, {Env: 2, Revision: "2"}}},
		{name: "suspended: nothing promoted, from the source or between environments",
			suspend: true, source: "4",
			observed: [][]TargetObservation{{at("3", true)}, {at("2", true), at("2", true)}, {at("1", true)}}},
		{name: "suspended: an approval due is still asked for, and not acted on when given",
			suspend: true, approve: true,
			status: []v1alpha1.EnvironmentStatus{{Name: "prod", WaitingApproval: &v1alpha1.WaitingApproval{Revision: "2"},
				Approval: &v1alpha1.ApprovalRecord{Revision: "2", Approver: "alice", PolicyMet: &metav1.Time{Time: t0}}}},
			observed: [][]TargetObservation{{at("2", true)}, {at("2", true), at("2", true)}, {at("1", true)}},
			waiting:  map[string]string{"prod": "2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := threeEnvs(tt.approve)
			p.Spec.Suspend = tt.suspend
			p.Status.Environments = tt.status
			envs, actions := Plan(p, tt.observed, tt.source, t0)
			if diff := cmp.Diff(tt.want, actions); diff != "" {
				t.Errorf("actions (-want +got):\n%s", diff)
			}
			for _, e := range envs {
				want := tt.waiting[e.Name]
				got := ""
				if e.WaitingApproval != nil {
					got = e.WaitingApproval.Revision
				}
				if got != want {
					t.Errorf("env %s waits for %q, want %q", e.Name, got, want)
				}
			}
		})
	}
}

// A hidden target shows TargetHidden's message and nothing of its app, even what was read.
func TestPlanShowsNothingOfAHiddenTarget(t *testing.T) {
	p := threeEnvs(false)
	p.Status.Environments = []v1alpha1.EnvironmentStatus{{Name: "dev", Revision: "7", Ready: true,
		Targets: []v1alpha1.TargetStatus{{Namespace: "dev", Revision: "7", Ready: true}}}}
	const why = "account system:serviceaccount:a:default may not get deployments.apps web in namespace dev"
	observed := [][]TargetObservation{{{Hidden: why, Observation: Observation{Found: true, Revision: "7", Ready: true, Message: "rolled out"}}}, {at("7", true), at("7", true)}, {at("7", true)}}
	envs, actions := Plan(p, observed, "8", t0)
	if len(actions) != 0 {
		t.Errorf("actions = %+v, want none", actions)
	}
	want := v1alpha1.EnvironmentStatus{Name: "dev", Targets: []v1alpha1.TargetStatus{{Namespace: "dev", Message: why}}}
	if diff := cmp.Diff(want, envs[0]); diff != "" {
		t.Errorf("dev (-want +got):\n%s", diff)
	}
}

func TestPlanKeepsWaitingSinceAndRecords(t *testing.T) {
	p := threeEnvs(true)
	since := metav1.NewTime(t0.Add(-time.Hour))
	p.Status.Environments = []v1alpha1.EnvironmentStatus{{Name: "prod", WaitingApproval: &v1alpha1.WaitingApproval{Revision: "2", Since: since}}}
	observed := [][]TargetObservation{{at("2", true)}, {at("2", true), at("2", true)}, {at("1", true)}}
	envs, _ := Plan(p, observed, "", t0)
	if !envs[2].WaitingApproval.Since.Equal(&since) {
		t.Errorf("waiting since moved: %v", envs[2].WaitingApproval.Since)
	}
	if envs[1].Revision != "2" || !envs[1].Ready || envs[2].Revision != "1" {
		t.Errorf("environment revisions: %+v", envs)
	}
	RecordPromotion(envs, Action{Env: 2, Revision: "2", Approver: "bob"}, "uid/prod/2", v1alpha1.StrategyPatch, t0)
	if envs[2].WaitingApproval != nil || envs[2].LastPromotion.Approver != "bob" || envs[2].LastPromotion.ID != "uid/prod/2" {
		t.Errorf("recorded: %+v", envs[2])
	}
}

func TestSetConditions(t *testing.T) {
	observedAll := []v1alpha1.EnvironmentStatus{{Name: "dev", Targets: []v1alpha1.TargetStatus{{Namespace: "dev", Revision: "1", Ready: true}}}}
	missing := []v1alpha1.EnvironmentStatus{{Name: "dev", Targets: []v1alpha1.TargetStatus{{Namespace: "dev"}}}}
	tests := []struct {
		name     string
		envs     []v1alpha1.EnvironmentStatus
		problems []ClusterProblem
		hidden   []string
		promo    PromotionOutcome
		want     map[string]string // type -> status/reason
	}{
		{"all observed", observedAll, nil, nil, PromotionOutcome{}, map[string]string{
			"Ready": "True/TargetsObserved", "ClusterUnreachable": "False/ClustersReachable", "PromotionFailed": "False/NoPromotion"}},
		{"missing target", missing, nil, nil, PromotionOutcome{}, map[string]string{"Ready": "False/TargetsNotObserved"}},
		{"unreachable", observedAll, []ClusterProblem{{Cluster: "leaf", Message: "refused"}}, nil, PromotionOutcome{}, map[string]string{
			"Ready": "False/ClusterUnreachable", "ClusterUnreachable": "True/ClusterUnreachable"}},
		{"bad kubeconfig wins", observedAll, []ClusterProblem{{Cluster: "a", Message: "x"}, {Cluster: "b", Invalid: true, Message: "no key value"}}, nil, PromotionOutcome{},
			map[string]string{"ClusterUnreachable": "True/KubeconfigInvalid"}},
		{"promotion failed", observedAll, nil, nil, PromotionOutcome{Attempted: true, Err: errors.New("patch refused")}, map[string]string{
			"Ready": "False/PromotionFailed", "PromotionFailed": "True/PromotionFailed"}},
		{"promotion succeeded", observedAll, nil, nil, PromotionOutcome{Attempted: true}, map[string]string{
			"Ready": "True/TargetsObserved", "PromotionFailed": "False/PromotionSucceeded"}},
		{"a target hidden from the account", missing, nil, []string{"account x may not get deployments.apps web in namespace b"}, PromotionOutcome{}, map[string]string{
			"Ready": "False/TargetForbidden", "ClusterUnreachable": "False/ClustersReachable"}},
		{"a hidden target before a failed promotion", observedAll, nil, []string{"account x may not get deployments.apps web in namespace b"},
			PromotionOutcome{Attempted: true, Err: errors.New("patch refused")}, map[string]string{
				"Ready": "False/TargetForbidden", "PromotionFailed": "True/PromotionFailed"}},
		{"an unreachable cluster before a hidden target", observedAll, []ClusterProblem{{Cluster: "leaf", Message: "refused"}}, []string{"account x may not get deployments.apps web in namespace b"},
			PromotionOutcome{}, map[string]string{"Ready": "False/ClusterUnreachable"}},
		{"suspended: PromotionFailed says so, Ready tells the targets", observedAll, nil, nil, PromotionOutcome{Suspended: true}, map[string]string{
			"Ready": "True/TargetsObserved", "PromotionFailed": "False/Suspended"}},
		{"suspended with an unreachable cluster", observedAll, []ClusterProblem{{Cluster: "leaf", Message: "refused"}}, nil, PromotionOutcome{Suspended: true}, map[string]string{
			"Ready": "False/ClusterUnreachable", "PromotionFailed": "False/Suspended"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var conds []metav1.Condition
			SetConditions(&conds, 3, tt.envs, tt.problems, tt.hidden, tt.promo, t0)
			for typ, want := range tt.want {
				c := meta.FindStatusCondition(conds, typ)
				if c == nil {
					t.Fatalf("no %s condition", typ)
				}
				if got := string(c.Status) + "/" + c.Reason; got != want {
					t.Errorf("%s = %s (%s), want %s", typ, got, c.Message, want)
				}
				if c.ObservedGeneration != 3 || c.Message == "" {
					t.Errorf("%s: %+v", typ, c)
				}
			}
		})
	}
	// A success stays (with its transition time) while nothing is due; a failure ends once
	// its promotion is no longer due.
	var conds []metav1.Condition
	SetConditions(&conds, 1, observedAll, nil, nil, PromotionOutcome{Attempted: true}, t0)
	SetConditions(&conds, 1, observedAll, nil, nil, PromotionOutcome{}, t0.Add(time.Minute))
	if c := meta.FindStatusCondition(conds, v1alpha1.ConditionPromotionFailed); c.Reason != v1alpha1.ReasonPromotionSucceeded || !c.LastTransitionTime.Time.Equal(t0) {
		t.Errorf("a success was forgotten: %+v", c)
	}
	SetConditions(&conds, 1, observedAll, nil, nil, PromotionOutcome{Attempted: true, Err: errors.New("x")}, t0)
	SetConditions(&conds, 1, observedAll, nil, nil, PromotionOutcome{}, t0.Add(time.Minute))
	if c := meta.FindStatusCondition(conds, v1alpha1.ConditionPromotionFailed); c.Status != metav1.ConditionFalse || c.Reason != v1alpha1.ReasonNoPromotion {
		t.Errorf("a failure of a promotion no longer due stays: %+v", c)
	}
}

// After a promotion the status shows the patched targets, and the next reconcile, observing
// the same objects from the cache, computes the same status: nothing to write.
func TestReobserveAfterPromotion(t *testing.T) {
	p := threeEnvs(false)
	observed := [][]TargetObservation{{at("2", true)}, {at("1", true), at("1", true)}, {at("1", true)}}
	envs, actions := Plan(p, observed, "", t0)
	if len(actions) != 1 || actions[0].Env != 1 {
		t.Fatalf("actions = %+v, want staging promoted", actions)
	}
	RecordPromotion(envs, actions[0], "uid/staging/2", v1alpha1.StrategyPatch, t0)
	patched := []TargetObservation{at("2", false), at("2", false)}
	Reobserve(envs, p.Spec.Environments[1].Targets, 1, patched)
	staging := envs[1]
	if staging.Revision != "2" || staging.Ready || staging.LastPromotion == nil || staging.LastPromotion.Revision != "2" {
		t.Fatalf("staging after the promotion: %+v", staging)
	}
	for _, ts := range staging.Targets {
		if ts.Revision != "2" || ts.Ready || ts.Namespace == "" || ts.ClusterRef != "leaf" {
			t.Errorf("staging target: %+v", ts)
		}
	}

	p.Status.Environments = envs
	observed[1] = patched
	again, actions := Plan(p, observed, "", t0.Add(time.Second))
	if len(actions) != 0 {
		t.Errorf("the next reconcile promotes again: %+v", actions)
	}
	if diff := cmp.Diff(envs, again); diff != "" {
		t.Errorf("the next reconcile computes another status (-after promotion +next):\n%s", diff)
	}
}

// A promotion into an environment that soaks drops the soak of the revision it ran before:
// the new revision soaks from when every target is ready at it, not from the old one's time.
func TestReobserveStartsANewSoak(t *testing.T) {
	p := threeEnvs(false)
	p.Spec.Environments[1].Promotion = &v1alpha1.Promotion{MinSoak: &metav1.Duration{Duration: time.Hour}}
	observed := [][]TargetObservation{{at("2", true)}, {at("1", true), at("1", true)}, {at("1", true)}}
	envs, _ := Plan(p, observed, "", t0)
	p.Status.Environments = envs
	envs, actions := Plan(p, observed, "", t0.Add(2*time.Hour))
	if envs[1].ReadySince == nil || !envs[1].ReadySince.Time.Equal(t0) || envs[1].SoakUntil != nil {
		t.Fatalf("staging soaked 1 since t0: %+v", envs[1])
	}
	if len(actions) != 1 || actions[0].Env != 1 {
		t.Fatalf("actions = %+v, want staging promoted", actions)
	}
	RecordPromotion(envs, actions[0], "uid/staging/2", v1alpha1.StrategyPatch, t0.Add(2*time.Hour))
	Reobserve(envs, p.Spec.Environments[1].Targets, 1, []TargetObservation{at("2", false), at("2", false)})
	if envs[1].ReadySince != nil || envs[1].SoakUntil != nil {
		t.Errorf("staging, rolling out 2, kept the soak of 1: %+v", envs[1])
	}

	p.Status.Environments = envs
	observed[1] = []TargetObservation{at("2", true), at("2", true)}
	ready := t0.Add(3 * time.Hour)
	envs, actions = Plan(p, observed, "", ready)
	if envs[1].ReadySince == nil || !envs[1].ReadySince.Time.Equal(ready) || envs[1].SoakUntil == nil {
		t.Errorf("staging ready at 2: the soak starts now: %+v", envs[1])
	}
	for _, a := range actions {
		if a.Env == 2 {
			t.Errorf("prod takes 2 before it soaked in staging: %+v", actions)
		}
	}
}

// TestSetProgress: what a reconcile's failures and its promotions' rollouts make of Ready,
// Reconciling and Stalled.
func TestSetProgress(t *testing.T) {
	promoted := &v1alpha1.PromotionRecord{Revision: "2"}
	settled := []v1alpha1.EnvironmentStatus{{Name: "dev", Revision: "2", Ready: true, LastPromotion: promoted,
		Targets: []v1alpha1.TargetStatus{{Namespace: "dev", Revision: "2", Ready: true}}}}
	rolling := []v1alpha1.EnvironmentStatus{{Name: "dev", LastPromotion: promoted,
		Targets: []v1alpha1.TargetStatus{{Namespace: "a", Revision: "2"}, {Namespace: "b", Revision: "1", Ready: true}}}}
	rolledBack := []v1alpha1.EnvironmentStatus{{Name: "dev", Revision: "1", Ready: true, LastPromotion: promoted,
		Targets: []v1alpha1.TargetStatus{{Namespace: "dev", Revision: "1", Ready: true}}}}
	promoteFailed := eventlog.Step(v1alpha1.EventPromotionFailed, "Promote", "promoting 2 to dev", errors.New("patch refused"))
	invalidApp := eventlog.Stall(v1alpha1.EventInvalidApp, "Observe", "reading the pipeline's app", errors.New("no kind"))
	tests := []struct {
		name      string
		envs      []v1alpha1.EnvironmentStatus
		suspended bool
		err       error
		want      map[string]string // type -> status/reason; "" absent
	}{
		{"done", settled, false, nil, map[string]string{"Ready": "True/TargetsObserved", "Reconciling": "", "Stalled": ""}},
		{"a rollout under way", rolling, false, nil, map[string]string{"Reconciling": "True/Progressing", "Stalled": ""}},
		{"a rollout while suspended", rolling, true, nil, map[string]string{"Reconciling": "", "Stalled": ""}},
		{"rolled back by hand: not the controller's work", rolledBack, false, nil, map[string]string{"Reconciling": ""}},
		{"a failed step is retried", settled, false, promoteFailed, map[string]string{
			"Ready": "False/PromotionFailed", "Reconciling": "True/ProgressingWithRetry", "Stalled": ""}},
		{"an API error counts as a failed step", settled, false, errors.New("etcd timeout"), map[string]string{
			"Ready": "False/ReconcileFailed", "Reconciling": "True/ProgressingWithRetry"}},
		{"an invalid app stalls", nil, false, invalidApp, map[string]string{
			"Ready": "False/InvalidApp", "Stalled": "True/InvalidApp", "Reconciling": ""}},
		{"a stall with a retried failure is retried", nil, false, errors.Join(invalidApp, promoteFailed), map[string]string{
			"Ready": "False/InvalidApp", "Stalled": "", "Reconciling": "True/ProgressingWithRetry"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var conds []metav1.Condition
			SetConditions(&conds, 2, tt.envs, nil, nil, PromotionOutcome{}, t0)
			SetProgress(&conds, 2, tt.envs, tt.suspended, tt.err, t0)
			for typ, want := range tt.want {
				c := meta.FindStatusCondition(conds, typ)
				got := ""
				if c != nil {
					got = string(c.Status) + "/" + c.Reason
					if c.Message == "" || c.ObservedGeneration != 2 {
						t.Errorf("%s: %+v", typ, c)
					}
				}
				if got != want {
					t.Errorf("%s = %q, want %q", typ, got, want)
				}
			}
		})
	}
	var conds []metav1.Condition
	SetProgress(&conds, 1, nil, false, promoteFailed, t0)
	if c := meta.FindStatusCondition(conds, v1alpha1.ConditionReady); c.Message != "promoting 2 to dev: patch refused" {
		t.Errorf("Ready's message names the step: %q", c.Message)
	}
}
