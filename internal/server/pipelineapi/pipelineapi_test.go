package pipelineapi_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/server"
	"github.com/release-controller/release-controller/internal/server/catalog"
	"github.com/release-controller/release-controller/internal/server/pipelineapi"
)

var now = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)

func ago(d time.Duration) metav1.Time { return metav1.NewTime(now.Add(-d)) }

// shop promotes through dev (verified after rollout, rolled back from 1.0.4), staging (soaks
// an hour, 1.0.3 ready 22 minutes ago) and prod (frozen, two approvers, 1.0.3 approved once,
// 1.0.1 rejected).
func shop() *v1alpha1.Pipeline {
	hour := metav1.Duration{Duration: time.Hour}
	frozenUntil := metav1.NewTime(now.Add(3 * time.Hour))
	return &v1alpha1.Pipeline{
		ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "shop", Generation: 3, Labels: map[string]string{"tier": "web"}},
		Spec: v1alpha1.PipelineSpec{
			AppRef: v1alpha1.AppReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "shop", Container: "shop"},
			Source: &v1alpha1.PipelineSource{ReleaseStream: "nightly"},
			Environments: []v1alpha1.Environment{
				{Name: "dev", Targets: []v1alpha1.Target{{Namespace: "shop-dev"}},
					Verification: &v1alpha1.EnvironmentVerification{OnFailure: v1alpha1.OnFailureRollback,
						Verifications: []v1alpha1.Verification{{Name: "smoke"}}}},
				{Name: "staging", Targets: []v1alpha1.Target{{Namespace: "shop-staging"}, {Namespace: "shop-staging", ClusterRef: "east"}},
					Promotion: &v1alpha1.Promotion{MinSoak: &hour}},
				{Name: "prod", Targets: []v1alpha1.Target{{Namespace: "shop", ClusterRef: "west"}},
					Approval: &v1alpha1.Approval{MinApprovers: 2, Groups: []string{"release-managers"}}},
			},
		},
		Status: v1alpha1.PipelineStatus{
			ObservedGeneration: 3,
			Conditions: []metav1.Condition{{Type: v1alpha1.ConditionPipelineReady, Status: metav1.ConditionTrue,
				Reason: v1alpha1.ReasonTargetsObserved, LastTransitionTime: ago(time.Hour)}},
			Environments: []v1alpha1.EnvironmentStatus{
				{Name: "dev", Revision: "1.0.3", Ready: true, Targets: []v1alpha1.TargetStatus{{Namespace: "shop-dev", Revision: "1.0.3", Ready: true}},
					LastVerified: "1.0.3",
					Verification: &v1alpha1.EnvironmentVerificationStatus{Revision: "1.0.4", State: v1alpha1.JobFailure, StartTime: ago(50 * time.Minute),
						CompletionTime: ptr(ago(45 * time.Minute)),
						Verifications: []v1alpha1.VerificationStatus{{Name: "smoke", Type: v1alpha1.Blocking, State: v1alpha1.JobFailure,
							Runs: []v1alpha1.JobRun{{Kind: "Job", Namespace: "shop-dev", Name: "smoke-1", Attempt: 1, State: v1alpha1.JobFailure,
								URL: "https://ci.example/smoke-1", Message: "exit 1"}}}}},
					LastRollback: &v1alpha1.RollbackRecord{From: "1.0.4", To: "1.0.3", Time: ago(44 * time.Minute)},
					LastPromotion: &v1alpha1.PromotionRecord{ID: "uid/dev/1.0.3", Revision: "1.0.3", Strategy: v1alpha1.StrategyPatch,
						Time: ago(44 * time.Minute)}},
				{Name: "staging", Revision: "1.0.3", Ready: true, ReadySince: ptr(ago(22 * time.Minute)),
					SoakUntil: ptr(metav1.NewTime(now.Add(38 * time.Minute))),
					Targets:   []v1alpha1.TargetStatus{{Namespace: "shop-staging", Revision: "1.0.3", Ready: true}}},
				{Name: "prod", Revision: "1.0.2", Ready: true,
					Frozen:          &v1alpha1.FreezeRecord{Freeze: "apps/holidays", Reason: "holidays", Until: &frozenUntil},
					WaitingApproval: &v1alpha1.WaitingApproval{Revision: "1.0.3", Since: ago(10 * time.Minute)},
					Approval: &v1alpha1.ApprovalRecord{Revision: "1.0.3", Time: ago(5 * time.Minute),
						Approvers: []v1alpha1.Approver{{Name: "alice", Time: ago(5 * time.Minute)}}},
					Rejections: []v1alpha1.RejectionRecord{{Revision: "1.0.1", By: "bob", Reason: "CVE-2026-1", Time: ago(2 * time.Hour)}}},
			},
			Unpromotable: []v1alpha1.UnpromotableRevision{{Revision: "1.0.4", Environment: "dev", Reason: "blocking verifications failed: smoke",
				Time: ago(44 * time.Minute)}},
		},
	}
}

func ptr[T any](v T) *T { return &v }

func serve(t *testing.T) (*httptest.Server, *catalog.Catalog) {
	t.Helper()
	c := catalog.New()
	c.SetPipeline(shop())
	other := shop()
	other.Namespace, other.Name = "team", "cart"
	c.SetPipeline(other)
	c.SetReleaseFreeze(&v1alpha1.ReleaseFreeze{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "holidays"},
		Spec: v1alpha1.ReleaseFreezeSpec{Reason: "holidays", End: ptr(metav1.NewTime(now.Add(3 * time.Hour))), Environments: []string{"prod"}},
		Status: v1alpha1.ReleaseFreezeStatus{ActiveSince: ptr(ago(time.Hour)), ActiveUntil: ptr(metav1.NewTime(now.Add(3 * time.Hour))),
			Conditions: []metav1.Condition{{Type: v1alpha1.ConditionFreezeActive, Status: metav1.ConditionTrue, Reason: "Active", LastTransitionTime: ago(time.Hour)}}}})
	s := server.New()
	pipelineapi.Register(s, c, clocktesting.NewFakeClock(now))
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	return srv, c
}

func get(t *testing.T, srv *httptest.Server, method, path string) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest(method, srv.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, string(body)
}

// One pipeline over HTTP: each environment's soak, freeze, verification runs, rollback,
// approvals and rejections, the unpromotable revisions, the freezes covering it: the
// catalog's description, which the pages and MCP show.
func TestGetPipeline(t *testing.T) {
	srv, c := serve(t)
	code, header, body := get(t, srv, http.MethodGet, "/api/v1/namespaces/apps/pipelines/shop")
	if code != http.StatusOK || header.Get("Content-Type") != "application/json" || !strings.HasSuffix(body, "}\n") {
		t.Fatalf("%d %s: %s", code, header.Get("Content-Type"), body)
	}
	var got pipelineapi.Pipeline
	if err := json.Unmarshal([]byte(body), &got); err != nil {
		t.Fatal(err)
	}
	p, _ := c.Pipeline("apps", "shop")
	if diff := cmp.Diff(pipelineapi.Describe(p, c.Freezes(), now), got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	policy := catalog.DescribePipeline(p, c.Freezes(), now)
	for i, e := range got.Environments {
		if diff := cmp.Diff(policy.Environments[i], e.EnvironmentPolicy); diff != "" {
			t.Errorf("%s's policy is not the catalog's (-want +got):\n%s", e.Name, diff)
		}
	}

	// What a script reads, by the names it reads it with.
	for _, want := range []string{
		`"minSoak": "1 h"`,
		`"readySince": "2026-11-22T11:38:00Z"`,
		`"until": "2026-11-22T12:38:00Z"`,
		`"remainingSeconds": 2280`,
		`"text": "prod takes 1.0.3 at 12:38 UTC at the earliest, once approved (soaking in staging, 38 min left)"`,
		`"text": "frozen by apps/holidays until 15:00 UTC: holidays"`,
		`"state": "frozen"`,
		`"url": "https://ci.example/smoke-1"`,
		`"lastRollback": {`,
		`"from": "1.0.4"`,
		`"lastVerified": "1.0.3"`,
		`"progress": "1 of 2 approvals, 1 more needed"`,
		`"policy": "2 distinct approvers; groups release-managers"`,
		`"reason": "CVE-2026-1"`,
		`"rejectCommand": "release-controller pipeline reject apps/shop prod 1.0.3 --reason REASON"`,
		`"command": "release-controller pipeline approve apps/shop prod 1.0.3"`,
		`"name": "apps/holidays"`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the body has no %s:\n%s", want, body)
		}
	}
	if len(got.Unpromotable) != 1 || got.Unpromotable[0] != (pipelineapi.Unpromotable{Revision: "1.0.4", Environment: "dev",
		Reason: "blocking verifications failed: smoke", Time: now.Add(-44 * time.Minute)}) {
		t.Errorf("unpromotable %+v", got.Unpromotable)
	}
	dev, staging, prod := got.Environments[0], got.Environments[1], got.Environments[2]
	// Rolled back to 1.0.3: the failed verification no longer holds dev.
	if dev.State != "" || len(dev.Unpromotable) != 1 || dev.Verification == nil || len(dev.Verification.Verifications[0].Runs) != 1 {
		t.Errorf("dev %+v", dev)
	}
	if staging.Soak == nil || staging.Soak.Next != "prod" || staging.ReadySince == nil || len(staging.Targets) != 2 ||
		!staging.Targets[0].Observed || staging.Targets[1].Observed {
		t.Errorf("staging %+v", staging)
	}
	if prod.Approval == nil || prod.Approval.PolicyMet != nil || len(prod.Approval.Approvers) != 1 || prod.Approval.Needed != 1 ||
		len(prod.Rejections) != 1 || prod.Frozen == nil || !prod.RequiresApproval || prod.Strategy != v1alpha1.StrategyPatch {
		t.Errorf("prod %+v", prod)
	}
	if len(got.Freezes) != 1 || !got.Freezes[0].Active {
		t.Errorf("freezes %+v", got.Freezes)
	}

	// HEAD answers as GET, without the body; other methods 405.
	if code, _, body := get(t, srv, http.MethodHead, "/api/v1/namespaces/apps/pipelines/shop"); code != http.StatusOK || body != "" {
		t.Errorf("HEAD: %d %q", code, body)
	}
	if code, _, _ := get(t, srv, http.MethodPost, "/api/v1/namespaces/apps/pipelines/shop"); code != http.StatusMethodNotAllowed {
		t.Errorf("POST: %d", code)
	}
}

func TestGetPipelineNotFound(t *testing.T) {
	srv, _ := serve(t)
	for path, want := range map[string]string{
		"/api/v1/namespaces/apps/pipelines/nope":        "pipeline apps/nope not found\n",
		"/api/v1/namespaces/team/pipelines/shop":        "pipeline team/shop not found\n",
		"/api/v1/namespaces/Apps%3Cb%3E/pipelines/shop": "no such pipeline: a namespace is a DNS label and a name a DNS subdomain\n",
	} {
		code, _, body := get(t, srv, http.MethodGet, path)
		if code != http.StatusNotFound || body != want {
			t.Errorf("%s: %d %q, want 404 %q", path, code, body, want)
		}
	}
}

func TestListPipelines(t *testing.T) {
	srv, _ := serve(t)
	for path, want := range map[string][]string{
		"/api/v1/pipelines":                  {"apps/shop", "team/cart"},
		"/api/v1/namespaces/team/pipelines":  {"team/cart"},
		"/api/v1/namespaces/other/pipelines": {},
	} {
		code, _, body := get(t, srv, http.MethodGet, path)
		var got pipelineapi.List
		if err := json.Unmarshal([]byte(body), &got); code != http.StatusOK || err != nil || got.Pipelines == nil {
			t.Fatalf("%s: %d %v %s", path, code, err, body)
		}
		names := []string{}
		for _, p := range got.Pipelines {
			names = append(names, p.Namespace+"/"+p.Name)
		}
		if !cmp.Equal(names, want) {
			t.Errorf("%s: %v, want %v", path, names, want)
		}
	}
	_, _, body := get(t, srv, http.MethodGet, "/api/v1/namespaces/apps/pipelines")
	var got pipelineapi.List
	if err := json.Unmarshal([]byte(body), &got); err != nil {
		t.Fatal(err)
	}
	want := pipelineapi.Summary{Namespace: "apps", Name: "shop",
		App:    pipelineapi.App{APIVersion: "apps/v1", Kind: "Deployment", Name: "shop"},
		Source: "nightly", Ready: "True", URL: "/api/v1/namespaces/apps/pipelines/shop", Page: "/pipelines/apps/shop",
		Environments: []pipelineapi.EnvironmentSummary{
			{Name: "dev", Revision: "1.0.3", Ready: true},
			{Name: "staging", Revision: "1.0.3", Ready: true, State: catalog.EnvSoaking},
			{Name: "prod", Revision: "1.0.2", Ready: true, WaitingApproval: "1.0.3", State: catalog.EnvFrozen},
		}}
	if diff := cmp.Diff([]pipelineapi.Summary{want}, got.Pipelines); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
