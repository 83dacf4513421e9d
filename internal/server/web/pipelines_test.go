package web_test

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/server/catalog"
	"github.com/release-controller/release-controller/internal/server/web"
)

// webPipeline promotes the Deployment web through dev, staging (two targets, one on the
// cluster of the Secret leaf) and prod, which waits for the approval of revision.
func webPipeline(namespace, name, revision string) *v1alpha1.Pipeline {
	promoted := metav1.NewTime(at("2026-11-22T15:00:00Z"))
	since := metav1.NewTime(at("2026-11-22T15:30:00Z"))
	approval := &v1alpha1.Approval{SecretRef: &v1alpha1.SecretKeyReference{Name: "prod-key"}}
	return &v1alpha1.Pipeline{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Generation: 1},
		Spec: v1alpha1.PipelineSpec{
			AppRef: v1alpha1.AppReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", Container: "web"},
			Source: &v1alpha1.PipelineSource{ReleaseStream: "nightly"},
			Environments: []v1alpha1.Environment{
				{Name: "dev", Targets: []v1alpha1.Target{{Namespace: "web-dev"}}},
				{Name: "staging", Targets: []v1alpha1.Target{{Namespace: "web-staging"}, {Namespace: "web-staging", ClusterRef: "leaf"}}},
				{Name: "prod", Targets: []v1alpha1.Target{{Namespace: "web-prod", ClusterRef: "leaf"}}, Approval: approval},
			},
		},
		Status: v1alpha1.PipelineStatus{
			ObservedGeneration: 1,
			Conditions: []metav1.Condition{
				{Type: v1alpha1.ConditionPipelineReady, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonTargetsObserved, LastTransitionTime: promoted},
				{Type: v1alpha1.ConditionPromotionFailed, Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonPromotionSucceeded, LastTransitionTime: promoted},
			},
			Environments: []v1alpha1.EnvironmentStatus{
				{Name: "dev", Revision: revision, Ready: true, Targets: []v1alpha1.TargetStatus{{Namespace: "web-dev", Revision: revision, Ready: true}},
					LastPromotion: &v1alpha1.PromotionRecord{ID: "dev-" + revision, Revision: revision, Strategy: "patch", Time: promoted}},
				{Name: "staging", Revision: revision, Ready: true, Targets: []v1alpha1.TargetStatus{
					{Namespace: "web-staging", Revision: revision, Ready: true}, {Namespace: "web-staging", ClusterRef: "leaf", Revision: revision, Ready: true}},
					LastPromotion: &v1alpha1.PromotionRecord{ID: "staging-" + revision, Revision: revision, Strategy: "patch", Time: since}},
				{Name: "prod", Targets: []v1alpha1.TargetStatus{{Namespace: "web-prod", ClusterRef: "leaf", Revision: "1.0.0", Message: "0 of 1 replicas updated"}},
					WaitingApproval: &v1alpha1.WaitingApproval{Revision: revision, Since: since}},
			},
		},
	}
}

// policyPipeline promotes the Deployment web through dev (verified after each rollout: 1.0.4
// failed smoke and was rolled back to 1.0.3), staging (a 2h soak of 1.0.3, 38 minutes left)
// and prod (two approvers, alice or bob or the release managers, not staging's; frozen by
// apps/release-day; 1.0.2 waits with one approval; 1.0.0 was rejected).
func policyPipeline(namespace, name string) *v1alpha1.Pipeline {
	mt := func(s string) metav1.Time { return metav1.NewTime(at(s)) }
	mtp := func(s string) *metav1.Time { t := mt(s); return &t }
	p := webPipeline(namespace, name, "1.0.3")
	dev, staging, prod := &p.Spec.Environments[0], &p.Spec.Environments[1], &p.Spec.Environments[2]
	dev.Verification = &v1alpha1.EnvironmentVerification{OnFailure: v1alpha1.OnFailureRollback,
		Verifications: []v1alpha1.Verification{{Name: "smoke"}, {Name: "load", Type: v1alpha1.Informing}}}
	staging.Promotion = &v1alpha1.Promotion{MinSoak: &metav1.Duration{Duration: 2 * time.Hour}}
	prod.Approval = &v1alpha1.Approval{MinApprovers: 2, Users: []string{"alice", "bob"}, Groups: []string{"release-managers"}, SeparationOfDuties: true}

	devSt, stagingSt, prodSt := &p.Status.Environments[0], &p.Status.Environments[1], &p.Status.Environments[2]
	devSt.Verification = &v1alpha1.EnvironmentVerificationStatus{Revision: "1.0.4", State: v1alpha1.JobFailure,
		StartTime: mt("2026-11-22T15:20:00Z"), CompletionTime: mtp("2026-11-22T15:35:00Z"),
		Verifications: []v1alpha1.VerificationStatus{
			{Name: "smoke", Type: v1alpha1.Blocking, State: v1alpha1.JobFailure, Message: "2 of 2 runs failed", Runs: []v1alpha1.JobRun{
				{Attempt: 1, Name: "web-smoke-1", URL: "https://ci.example.com/web-smoke-1", State: v1alpha1.JobFailure, Message: "GET /health: 503"},
				{Attempt: 2, Name: "web-smoke-2", URL: "https://ci.example.com/web-smoke-2", State: v1alpha1.JobFailure, Message: "GET /health: 503"},
			}},
			{Name: "load", Type: v1alpha1.Informing, State: v1alpha1.JobSuccess, Runs: []v1alpha1.JobRun{
				{Attempt: 1, Name: "web-load-1", URL: "https://ci.example.com/web-load-1", State: v1alpha1.JobSuccess},
			}},
		}}
	devSt.LastVerified = "1.0.3"
	devSt.LastRollback = &v1alpha1.RollbackRecord{From: "1.0.4", To: "1.0.3", Time: mt("2026-11-22T15:36:00Z")}
	p.Status.Unpromotable = []v1alpha1.UnpromotableRevision{
		{Revision: "1.0.4", Environment: "dev", Reason: "blocking verifications failed: smoke", Time: mt("2026-11-22T15:35:00Z")}}
	stagingSt.ReadySince, stagingSt.SoakUntil = mtp("2026-11-22T14:38:00Z"), mtp("2026-11-22T16:38:00Z")
	prodSt.Revision, prodSt.Ready = "1.0.1", true
	prodSt.Targets[0] = v1alpha1.TargetStatus{Namespace: "web-prod", ClusterRef: "leaf", Revision: "1.0.1", Ready: true}
	prodSt.WaitingApproval = &v1alpha1.WaitingApproval{Revision: "1.0.2", Since: mt("2026-11-22T15:00:00Z")}
	prodSt.Approval = &v1alpha1.ApprovalRecord{Revision: "1.0.2", Approver: "alice", Time: mt("2026-11-22T15:20:00Z"),
		Approvers: []v1alpha1.Approver{{Name: "alice", Time: mt("2026-11-22T15:20:00Z"), Comment: "staging looked fine"}}}
	prodSt.Rejections = []v1alpha1.RejectionRecord{
		{Revision: "1.0.0", By: "carol", Reason: "breaks the login <script>alert(1)</script>", Time: mt("2026-11-22T12:00:00Z")}}
	prodSt.Frozen = &v1alpha1.FreezeRecord{Freeze: "apps/release-day", Reason: "quarterly release: no changes", Until: mtp("2026-11-22T18:00:00Z")}
	return p
}

// policyFreezes are the freeze of prod in policyPipeline, a holiday freeze of every
// namespace to come, and one of another namespace.
func policyFreezes(cat *catalog.Catalog) {
	cat.SetReleaseFreeze(&v1alpha1.ReleaseFreeze{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "release-day"},
		Spec: v1alpha1.ReleaseFreezeSpec{Reason: "quarterly release: no changes", Environments: []string{"prod"},
			Start: &metav1.Time{Time: at("2026-11-22T14:00:00Z")}, End: &metav1.Time{Time: at("2026-11-22T18:00:00Z")}},
		Status: v1alpha1.ReleaseFreezeStatus{Conditions: []metav1.Condition{{Type: v1alpha1.ConditionFreezeActive, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonInWindow}},
			ActiveSince: &metav1.Time{Time: at("2026-11-22T14:00:00Z")}, ActiveUntil: &metav1.Time{Time: at("2026-11-22T18:00:00Z")}}})
	cat.SetClusterReleaseFreeze(&v1alpha1.ClusterReleaseFreeze{ObjectMeta: metav1.ObjectMeta{Name: "holidays"},
		Spec: v1alpha1.ReleaseFreezeSpec{Reason: "end-of-year holidays",
			Schedule: &v1alpha1.FreezeSchedule{Cron: "0 18 24 12 *", Duration: metav1.Duration{Duration: 8 * 24 * time.Hour}, TimeZone: "Europe/Berlin"}},
		Status: v1alpha1.ReleaseFreezeStatus{Conditions: []metav1.Condition{{Type: v1alpha1.ConditionFreezeActive, Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonOutsideWindow}},
			NextStart: &metav1.Time{Time: at("2026-12-24T17:00:00Z")}}})
	cat.SetReleaseFreeze(&v1alpha1.ReleaseFreeze{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "theirs"},
		Spec: v1alpha1.ReleaseFreezeSpec{Reason: "another team's"}})
}

func httpGet(t *testing.T, method, url string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

func TestPipelinePages(t *testing.T) {
	cat := catalog.New()
	base := startPages(t, cat, web.PageOptions{})
	if code, body := httpGet(t, http.MethodGet, base+"/pipelines"); code != http.StatusOK || !strings.Contains(body, web.EmptyPipelines) {
		t.Fatalf("empty /pipelines: %d\n%s", code, body)
	}
	// A revision a shell would misread is quoted in the command; markup is escaped.
	cat.SetPipeline(webPipeline("apps", "web", "1.2.0 <b>$(x)'"))
	code, body := httpGet(t, http.MethodGet, base+"/pipelines/apps/web")
	if code != http.StatusOK {
		t.Fatalf("GET /pipelines/apps/web: %d\n%s", code, body)
	}
	if want := `release-controller pipeline approve --server ` + base + ` apps/web prod &#39;1.2.0 &lt;b&gt;$(x)&#39;\&#39;&#39;&#39;`; !strings.Contains(body, want) {
		t.Errorf("the page lacks the approve command %s:\n%s", want, body)
	}
	if strings.Contains(body, "<b>$") {
		t.Error("the revision is not escaped")
	}
	if got := web.ApproveCommand("https://rc.example.com", "apps", "web", "prod", "v1.2.0+build.1"); got != "release-controller pipeline approve --server https://rc.example.com apps/web prod v1.2.0+build.1" {
		t.Errorf("ApproveCommand = %q", got)
	}
	for path, want := range map[string]int{
		"/pipelines/apps/nope": http.StatusNotFound, "/pipelines/team/web": http.StatusNotFound,
		"/pages/events?view=pipeline&namespace=apps&name=nope": http.StatusNotFound,
	} {
		if code, _ := httpGet(t, http.MethodGet, base+path); code != want {
			t.Errorf("GET %s: %d, want %d", path, code, want)
		}
	}
	for _, method := range []string{http.MethodPost, http.MethodPut, http.MethodDelete} {
		for _, path := range []string{"/pipelines", "/pipelines/apps/web"} {
			if code, _ := httpGet(t, method, base+path); code != http.StatusMethodNotAllowed {
				t.Errorf("%s %s: %d, want 405", method, path, code)
			}
		}
	}
}

// The page of a pipeline says each environment's policy: the soak, the freeze, the
// verification after rollout with its runs and rollback, the approvals and rejections, with
// the commands that approve and reject; tenants' text is escaped.
func TestPipelinePolicyPage(t *testing.T) {
	cat := catalog.New()
	cat.SetPipeline(policyPipeline("apps", "web"))
	policyFreezes(cat)
	base := startPages(t, cat, web.PageOptions{})
	code, body := httpGet(t, http.MethodGet, base+"/pipelines/apps/web")
	if code != http.StatusOK {
		t.Fatalf("GET /pipelines/apps/web: %d\n%s", code, body)
	}
	for _, want := range []string{
		// Soak.
		"A revision soaks 2 h here before prod takes it.",
		"prod takes 1.0.3 at 16:38 UTC at the earliest, once approved (soaking in staging, 38 min left)",
		// Freeze, and the freezes that cover the pipeline (not another namespace's).
		"frozen by apps/release-day until 18:00 UTC: quarterly release: no changes",
		`<tr data-freeze="apps/release-day">`, `<tr data-freeze="holidays">`, "next window at Dec 24 17:00 UTC",
		`every &#34;0 18 24 12 *&#34; (Europe/Berlin) for 8 d`,
		// Verification after rollout, its runs, the rollback and the revision never promoted further.
		"Runs smoke, load after each rollout; on failure: rollback. Last revision verified: <code>1.0.3</code>.",
		`<a class="run state-failure" href="https://ci.example.com/web-smoke-2" title="attempt 2, web-smoke-2: Failed — GET /health: 503">2 Failed</a>`,
		"Rolled back from <code>1.0.4</code> to <code>1.0.3</code>",
		"never promoted further: failed its verification in dev (blocking verifications failed: smoke)",
		// Approvals.
		"Policy: 2 distinct approvers; users alice, bob; groups release-managers; not who approved it for staging.",
		"1 of 2 approvals, 1 more needed", "staging looked fine",
		"release-controller pipeline reject --server " + base + " apps/web prod 1.0.2 --reason REASON",
		// Rejections.
		"breaks the login &lt;script&gt;alert(1)&lt;/script&gt; <span class=\"failed\">(never promoted here)</span>",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	for _, absent := range []string{"<script>alert", "another team&#39;s", "theirs"} {
		if strings.Contains(body, absent) {
			t.Errorf("the page shows %q", absent)
		}
	}
	// The list says what holds each environment in a word.
	code, body = httpGet(t, http.MethodGet, base+"/pipelines")
	if code != http.StatusOK {
		t.Fatalf("GET /pipelines: %d", code)
	}
	for _, want := range []string{`<span class="env-policy pending">soaking</span>`, `<span class="env-policy failed">frozen</span>`} {
		if !strings.Contains(body, want) {
			t.Errorf("the list lacks %q:\n%s", want, body)
		}
	}
}
