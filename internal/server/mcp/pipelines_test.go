package mcp_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/releaselog"
	"github.com/release-controller/release-controller/internal/server/approval"
	"github.com/release-controller/release-controller/internal/server/catalog"
	"github.com/release-controller/release-controller/internal/server/mcp"
	"github.com/release-controller/release-controller/internal/server/web"
	"github.com/release-controller/release-controller/internal/shellquote/shtest"
)

// webPipeline promotes the Deployment web through dev and prod (prod on a remote cluster and
// after approval); dev is at 1.2.0 and ready, prod waits for the approval of 1.2.0.
func webPipeline(namespace, name string) *v1alpha1.Pipeline {
	promoted := metav1.NewTime(at("2026-11-22T10:00:00Z"))
	waiting := metav1.NewTime(at("2026-11-22T10:05:00Z"))
	return &v1alpha1.Pipeline{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Generation: 2},
		Spec: v1alpha1.PipelineSpec{
			AppRef: v1alpha1.AppReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", Container: "web"},
			Source: &v1alpha1.PipelineSource{ReleaseStream: "nightly"},
			Environments: []v1alpha1.Environment{
				{Name: "dev", Targets: []v1alpha1.Target{{Namespace: "web-dev"}}},
				{Name: "prod", Targets: []v1alpha1.Target{{Namespace: "web-prod", ClusterRef: "leaf"}},
					Promotion: &v1alpha1.Promotion{Strategy: v1alpha1.StrategyNotification, Notification: &v1alpha1.NotificationPromotion{URL: "https://hooks.example.com/"}},
					Approval:  &v1alpha1.Approval{SecretRef: &v1alpha1.SecretKeyReference{Name: "prod-key"}}},
			},
		},
		Status: v1alpha1.PipelineStatus{
			ObservedGeneration: 2,
			Conditions: []metav1.Condition{{Type: v1alpha1.ConditionPipelineReady, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonTargetsObserved,
				LastTransitionTime: promoted}},
			Environments: []v1alpha1.EnvironmentStatus{
				{Name: "dev", Revision: "1.2.0", Ready: true, Targets: []v1alpha1.TargetStatus{{Namespace: "web-dev", Revision: "1.2.0", Ready: true}},
					LastPromotion: &v1alpha1.PromotionRecord{ID: "uid/dev/1.2.0", Revision: "1.2.0", Strategy: v1alpha1.StrategyPatch, Time: promoted}},
				{Name: "prod", Revision: "1.1.0", Ready: true, Targets: []v1alpha1.TargetStatus{{Namespace: "web-prod", ClusterRef: "leaf", Revision: "1.1.0", Ready: true}},
					WaitingApproval: &v1alpha1.WaitingApproval{Revision: "1.2.0", Since: waiting}},
			},
		},
	}
}

func TestListAndGetPipeline(t *testing.T) {
	c := catalog.New()
	c.SetPipeline(webPipeline("apps", "web"))
	c.SetPipeline(webPipeline("team", "web"))
	c.SetPipeline(webPipeline("apps", "api"))
	session := serveAll(t, releaselog.NewStore(), releaselog.Options{}, c, nil)

	var list mcp.ListPipelinesOutput
	text, isError := call(t, session, mcp.ToolListPipelines, nil, &list)
	if isError {
		t.Fatalf("error: %s", text)
	}
	var names []string
	for _, p := range list.Pipelines {
		names = append(names, p.Namespace+"/"+p.Name)
	}
	if want := []string{"apps/api", "apps/web", "team/web"}; !slices.Equal(names, want) {
		t.Fatalf("pipelines = %v, want %v", names, want)
	}
	want := mcp.PipelineSummary{Namespace: "apps", Name: "web", App: mcp.AppRef{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
		Source: "nightly", Ready: "True", Link: "/pipelines/apps/web", Environments: []mcp.EnvironmentSummary{
			{Name: "dev", Revision: "1.2.0", Ready: true}, {Name: "prod", Revision: "1.1.0", Ready: true, WaitingApproval: "1.2.0"}}}
	got, _ := json.Marshal(list.Pipelines[1])
	if wantJSON, _ := json.Marshal(want); string(got) != string(wantJSON) {
		t.Errorf("apps/web = %s\nwant %s", got, wantJSON)
	}
	// The text is the JSON.
	if !strings.Contains(text, `"waiting_approval":"1.2.0"`) {
		t.Errorf("text lacks the waiting approval: %s", text)
	}

	var p mcp.Pipeline
	if text, isError := call(t, session, mcp.ToolGetPipeline, map[string]any{"name": "web", "namespace": "apps"}, &p); isError {
		t.Fatalf("error: %s", text)
	}
	if p.Namespace != "apps" || p.Source != "nightly" || p.Generation != 2 || p.ObservedGeneration != 2 || len(p.Environments) != 2 ||
		len(p.Conditions) != 1 || p.Conditions[0].Type != "Ready" || p.Conditions[0].Since != "2026-11-22T10:00:00Z" {
		t.Fatalf("get_pipeline = %+v", p)
	}
	dev, prod := p.Environments[0], p.Environments[1]
	if dev.Strategy != "patch" || dev.RequiresApproval || dev.LastPromotion == nil || dev.LastPromotion.Revision != "1.2.0" ||
		dev.LastPromotion.Time != "2026-11-22T10:00:00Z" || dev.Targets[0] != (mcp.PipelineTarget{Namespace: "web-dev", Revision: "1.2.0", Ready: true, Observed: true}) {
		t.Errorf("dev = %+v", dev)
	}
	if prod.Strategy != "notification" || !prod.RequiresApproval || prod.WaitingApproval == nil || prod.WaitingApproval.Revision != "1.2.0" ||
		prod.WaitingApproval.Command != "release-controller pipeline approve apps/web prod 1.2.0" || prod.Targets[0].ClusterRef != "leaf" {
		t.Errorf("prod = %+v (waiting %+v)", prod, prod.WaitingApproval)
	}

	for args, wantErr := range map[string]string{
		`{"name":"web"}`:                    "exists in namespaces apps, team",
		`{"name":"nope"}`:                   `no pipeline "nope"`,
		`{"name":"api","namespace":"team"}`: `no pipeline "api" in namespace team`,
		`{"name":""}`:                       "name is required",
	} {
		var in map[string]any
		if err := json.Unmarshal([]byte(args), &in); err != nil {
			t.Fatal(err)
		}
		if text, isError := call(t, session, mcp.ToolGetPipeline, in, nil); !isError || !strings.Contains(text, wantErr) {
			t.Errorf("get_pipeline(%s) = %q (error %v), want an error with %q", args, text, isError, wantErr)
		}
	}

	empty := serveAll(t, releaselog.NewStore(), releaselog.Options{}, catalog.New(), nil)
	if text, isError := call(t, empty, mcp.ToolListPipelines, nil, &list); isError || len(list.Pipelines) != 0 {
		t.Errorf("empty catalog: %+v %v %q", list, isError, text)
	}
}

// The approve command get_pipeline prints is quoted for the shell as the pages' is (one
// function): names and a revision full of shell metacharacters come out of sh as the very
// arguments meant, and a revision that looks like a flag follows "--". Before, the words were
// joined unquoted, so a revision such as "$(…)" ran in the shell of whoever pasted it.
func TestApproveCommandIsQuotedForTheShell(t *testing.T) {
	for _, tt := range []struct{ namespace, name, env, revision string }{
		{"apps", "web", "prod", "1.2.0"},
		{"apps", "web;id", "prod $(touch /tmp/pwned)", "1.2.0'; rm -rf / #"},
		{"a b", "`id`", "p|q&r", "$HOME\n*"},
		{"apps", "web", "prod", "--token=stolen"},
	} {
		p := webPipeline(tt.namespace, tt.name)
		p.Spec.Environments[1].Name = tt.env
		p.Status.Environments[1].Name = tt.env
		p.Status.Environments[1].WaitingApproval.Revision = tt.revision
		c := catalog.New()
		c.SetPipeline(p)
		session := serveAll(t, releaselog.NewStore(), releaselog.Options{}, c, nil)
		var got mcp.Pipeline
		if text, isError := call(t, session, mcp.ToolGetPipeline, map[string]any{"name": tt.name, "namespace": tt.namespace}, &got); isError {
			t.Fatalf("get_pipeline: %s", text)
		}
		w := got.Environments[1].WaitingApproval
		if w == nil {
			t.Fatalf("%+v waits for no approval", got.Environments[1])
		}
		want := []string{"release-controller", "pipeline", "approve", tt.namespace + "/" + tt.name, tt.env, tt.revision}
		if strings.HasPrefix(tt.revision, "-") {
			want = slices.Insert(want, 3, "--")
		}
		if argv := shtest.Argv(t, w.Command); !slices.Equal(argv, want) {
			t.Errorf("the command %s is, to sh, %q; want %q", w.Command, argv, want)
		}
		if page := web.ApproveCommand("", tt.namespace, tt.name, tt.env, tt.revision); w.Command != page {
			t.Errorf("MCP's command %s is not the page's %s", w.Command, page)
		}
	}
}

// get_pipeline says what the pipeline page says of each environment's policy, structured
// and in text: prod soaks before it takes 1.2.0 (dev had a failed verification, rolled back
// and never promoted further), prod's freeze, approval policy, approvals and rejections, the
// commands that approve and reject, and the freezes that cover the pipeline.
func TestGetPipelinePolicy(t *testing.T) {
	mt := func(s string) metav1.Time { return metav1.NewTime(at(s)) }
	mtp := func(s string) *metav1.Time { t := mt(s); return &t }
	p := webPipeline("apps", "web")
	dev, prod := &p.Status.Environments[0], &p.Status.Environments[1]
	p.Spec.Environments[0].Promotion = &v1alpha1.Promotion{MinSoak: &metav1.Duration{Duration: time.Hour}}
	p.Spec.Environments[0].Verification = &v1alpha1.EnvironmentVerification{OnFailure: v1alpha1.OnFailureRollback, Verifications: []v1alpha1.Verification{{Name: "smoke"}}}
	p.Spec.Environments[1].Approval = &v1alpha1.Approval{MinApprovers: 2, Groups: []string{"release"}}
	dev.ReadySince, dev.SoakUntil = mtp("2026-11-22T11:50:00Z"), mtp("2026-11-22T12:50:00Z")
	dev.Verification = &v1alpha1.EnvironmentVerificationStatus{Revision: "1.2.1", State: v1alpha1.JobFailure, StartTime: mt("2026-11-22T11:00:00Z"),
		Verifications: []v1alpha1.VerificationStatus{{Name: "smoke", Type: v1alpha1.Blocking, State: v1alpha1.JobFailure,
			Runs: []v1alpha1.JobRun{{Attempt: 1, Name: "smoke-1", URL: "https://ci.example.com/smoke-1", State: v1alpha1.JobFailure}}}}}
	dev.LastVerified = "1.2.0"
	dev.LastRollback = &v1alpha1.RollbackRecord{From: "1.2.1", To: "1.2.0", Time: mt("2026-11-22T11:40:00Z")}
	p.Status.Unpromotable = []v1alpha1.UnpromotableRevision{{Revision: "1.2.1", Environment: "dev", Reason: "blocking verifications failed: smoke", Time: mt("2026-11-22T11:40:00Z")}}
	prod.Frozen = &v1alpha1.FreezeRecord{Freeze: "stop", Reason: "incident 7"}
	prod.Approval = &v1alpha1.ApprovalRecord{Revision: "1.2.0", Approver: "alice", Time: mt("2026-11-22T10:10:00Z"),
		Approvers: []v1alpha1.Approver{{Name: "alice", Time: mt("2026-11-22T10:10:00Z")}}}
	prod.Rejections = []v1alpha1.RejectionRecord{{Revision: "1.1.9", By: "carol", Reason: "slow", Time: mt("2026-11-22T09:00:00Z")}}
	c := catalog.New()
	c.SetPipeline(p)
	c.SetClusterReleaseFreeze(&v1alpha1.ClusterReleaseFreeze{ObjectMeta: metav1.ObjectMeta{Name: "stop"}, Spec: v1alpha1.ReleaseFreezeSpec{Reason: "incident 7"},
		Status: v1alpha1.ReleaseFreezeStatus{Conditions: []metav1.Condition{{Type: v1alpha1.ConditionFreezeActive, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonInWindow}}}})
	session := serveAll(t, releaselog.NewStore(), releaselog.Options{Clock: clocktesting.NewFakePassiveClock(at("2026-11-22T12:30:00Z"))}, c, nil)

	var got mcp.Pipeline
	text, isError := call(t, session, mcp.ToolGetPipeline, map[string]any{"name": "web", "namespace": "apps"}, &got)
	if isError {
		t.Fatalf("error: %s", text)
	}
	// The structured result holds the catalog's description, the page's facts.
	want := catalog.DescribePipeline(p, c.Freezes(), at("2026-11-22T12:30:00Z"))
	for i, e := range got.Environments {
		if diff := cmp.Diff(want.Environments[i], e.Policy); diff != "" {
			t.Errorf("%s's policy (-want +got):\n%s", e.Name, diff)
		}
	}
	if diff := cmp.Diff(want.Freezes, got.Freezes); diff != "" {
		t.Errorf("freezes (-want +got):\n%s", diff)
	}
	if got.Environments[1].Policy.Soak != nil || got.Environments[0].Policy.Soak == nil {
		t.Errorf("soaks %+v, %+v", got.Environments[0].Policy.Soak, got.Environments[1].Policy.Soak)
	}
	w := got.Environments[1].WaitingApproval
	if page := approval.RejectCommand("", "apps", "web", "prod", "1.2.0"); w == nil || w.RejectCommand != page {
		t.Errorf("the reject command %+v is not the page's %s", w, page)
	}

	for _, line := range []string{
		"- dev: at 1.2.0, ready; promoted by patch; soaking\n",
		"  prod takes 1.2.0 at 12:50 UTC at the earliest, once approved (soaking in dev, 20 min left)\n",
		"  verification after rollout: smoke; on failure rollback; last verified 1.2.0\n",
		"    smoke: Failure\n    - run 1 Failure <https://ci.example.com/smoke-1>\n",
		"  rolled back from 1.2.1 to 1.2.0 at 2026-11-22T11:40:00Z\n",
		"  1.2.1: never promoted further: failed its verification in dev (blocking verifications failed: smoke)\n",
		"- prod: at 1.1.0, ready; promoted by notification; frozen\n",
		"  frozen by stop until it is ended: incident 7\n",
		"  approval policy: 2 distinct approvers; groups release\n",
		"  approvals of 1.2.0: 1 of 2 approvals, 1 more needed\n    alice at 2026-11-22T10:10:00Z\n",
		"  approve: release-controller pipeline approve apps/web prod 1.2.0\n  reject: release-controller pipeline reject apps/web prod 1.2.0 --reason REASON\n",
		"  rejected 1.1.9 by carol at 2026-11-22T09:00:00Z (never promoted here): slow\n",
		"Freeze stop (dev, prod): active until it is ended; from its creation until it is ended: incident 7\n",
	} {
		if !strings.Contains(text, line) {
			t.Errorf("the text lacks %q:\n%s", line, text)
		}
	}

	var list mcp.ListPipelinesOutput
	if text, isError := call(t, session, mcp.ToolListPipelines, nil, &list); isError {
		t.Fatalf("error: %s", text)
	}
	if states := []string{list.Pipelines[0].Environments[0].State, list.Pipelines[0].Environments[1].State}; !slices.Equal(states, []string{"soaking", "frozen"}) {
		t.Errorf("states %q, want soaking, frozen", states)
	}
}
