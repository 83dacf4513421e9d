//go:build !unit

package web_test

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/server/catalog"
	"github.com/release-controller/release-controller/internal/server/web"
)

// A person opens the pipelines, then one pipeline: environments left to right, each target,
// the approval prod waits for with the command that approves it; prod's promotion arrives
// live; nothing breaks the Content-Security-Policy.
func TestPipelinePagesInBrowser(t *testing.T) {
	cat := catalog.New()
	cat.SetPipeline(webPipeline("apps", "web", "1.2.0"))
	cat.SetPipeline(webPipeline("apps", "api", "2.0.0"))
	base := startPages(t, cat, web.PageOptions{})
	ctx := newBrowser(t)
	console := chromedp.Console(ctx)
	texts := func(selector string) []string {
		t.Helper()
		return eval[[]string](t, ctx, `Array.from(document.querySelectorAll(`+strconv.Quote(selector)+`), (e) => e.textContent.trim())`)
	}

	do(t, ctx, "loading /pipelines",
		chromedp.Navigate(base+"/pipelines"),
		chromedp.WaitVisible(chromedp.CSS(`table.pipelines tbody tr`)),
	)
	if got, want := texts(`table.pipelines tbody th a`), []string{"apps/api", "apps/web"}; !slices.Equal(got, want) {
		t.Errorf("pipelines %v, want %v", got, want)
	}
	if got := texts(`tr[data-pipeline="apps/web"] td.waiting`); len(got) != 1 || got[0] != "prod: 1.2.0" {
		t.Errorf("waiting approvals %q", got)
	}
	if got := texts(`header.site nav a`); !slices.Contains(got, "Pipelines") {
		t.Errorf("the site's navigation %v lacks Pipelines", got)
	}

	do(t, ctx, "opening apps/web",
		chromedp.Click(chromedp.CSS(`a[href="/pipelines/apps/web"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#pipeline-state li.environment`)),
	)
	if got, want := texts(`li.environment h3`), []string{"dev", "staging", "prod"}; !slices.Equal(got, want) {
		t.Errorf("environments %v, want %v", got, want)
	}
	// Left to right, in promotion order.
	lefts := eval[[]float64](t, ctx, `Array.from(document.querySelectorAll("li.environment"), (e) => e.getBoundingClientRect().left)`)
	if len(lefts) != 3 || !(lefts[0] < lefts[1] && lefts[1] < lefts[2]) {
		t.Errorf("environments are not left to right: %v", lefts)
	}
	if got, want := texts(`li[data-env="staging"] table.targets tbody td:first-child`), []string{web.LocalCluster, "leaf"}; !slices.Equal(got, want) {
		t.Errorf("staging's clusters %v, want %v", got, want)
	}
	want := "release-controller pipeline approve --server " + base + " apps/web prod 1.2.0"
	if got := texts(`li[data-env="prod"] code.approve-command`); len(got) != 1 || got[0] != want {
		t.Errorf("approve command %q, want %q", got, want)
	}
	if got := eval[bool](t, ctx, `!document.querySelector('li[data-env="prod"] button.copy').hidden`); !got {
		t.Error("the copy button is hidden")
	}
	if got, want := texts(`table.promotions tbody td:first-child`), []string{"staging", "dev"}; !slices.Equal(got, want) {
		t.Errorf("promotions %v, want %v", got, want)
	}
	if got, want := texts(`table.conditions tbody th`), []string{"Ready", "PromotionFailed"}; !slices.Equal(got, want) {
		t.Errorf("conditions %v, want %v", got, want)
	}

	// prod is approved and promoted while the page is open.
	eval[string](t, ctx, `window.__marker = "same document"`)
	p := webPipeline("apps", "web", "1.2.0")
	prod := &p.Status.Environments[2]
	prod.WaitingApproval = nil
	prod.Revision, prod.Ready = "1.2.0", true
	prod.Targets[0] = v1alpha1.TargetStatus{Namespace: "web-prod", ClusterRef: "leaf", Revision: "1.2.0", Ready: true}
	prod.LastPromotion = &v1alpha1.PromotionRecord{ID: "prod-1.2.0", Revision: "1.2.0", Strategy: "patch", Time: metav1.NewTime(at("2026-11-22T15:45:00Z")), Approver: "alice"}
	cat.SetPipeline(p)
	waitFor(t, ctx, "prod's promotion", `document.querySelector('table.promotions tbody tr[data-env="prod"]') !== null`)
	if got := eval[string](t, ctx, `window.__marker + " / " + document.getElementById("live").textContent`); got != "same document / Updated" {
		t.Errorf("after the live update: %q", got)
	}
	if got := texts(`li[data-env="prod"] code.approve-command`); len(got) != 0 {
		t.Errorf("the approve command is still shown: %q", got)
	}
	if got := texts(`li[data-env="prod"] .env-state`); len(got) != 1 || !strings.Contains(got[0], "1.2.0") || !strings.Contains(got[0], "ready") {
		t.Errorf("prod's state %q", got)
	}
	checkConsole(t, ctx, console)
}

// A person reads a pipeline's promotion policy: staging's soak and when prod takes the
// revision, prod's freeze and the freezes that cover the pipeline, dev's verification after
// rollout with links to its runs, its rollback and the revision never promoted further,
// prod's approval policy, approvals and rejections with the commands that approve and reject;
// prod's policy is met and its freeze ends while the page is open.
func TestPipelinePolicyInBrowser(t *testing.T) {
	cat := catalog.New()
	cat.SetPipeline(policyPipeline("apps", "web"))
	policyFreezes(cat)
	base := startPages(t, cat, web.PageOptions{})
	ctx := newBrowser(t)
	console := chromedp.Console(ctx)
	texts := func(selector string) []string { t.Helper(); return textsOf(t, ctx, selector) }
	one := func(selector string) string {
		t.Helper()
		got := texts(selector)
		if len(got) != 1 {
			t.Errorf("%s: %q, want one", selector, got)
			return ""
		}
		return got[0]
	}
	visible := func(selector string) bool {
		t.Helper()
		return eval[bool](t, ctx, `(() => { const e = document.querySelector(`+strconv.Quote(selector)+`); return e !== null && e.checkVisibility(); })()`)
	}

	do(t, ctx, "loading /pipelines",
		chromedp.Navigate(base+"/pipelines"),
		chromedp.WaitVisible(chromedp.CSS(`table.pipelines tbody tr`)),
	)
	if got, want := texts(`tr[data-pipeline="apps/web"] .env-policy`), []string{"soaking", "frozen"}; !slices.Equal(got, want) {
		t.Errorf("the environments' states on the list %q, want %q", got, want)
	}

	do(t, ctx, "opening apps/web",
		chromedp.Click(chromedp.CSS(`a[href="/pipelines/apps/web"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#pipeline-state li.environment`)),
	)
	// Soak.
	if got, want := one(`li[data-env="staging"] .env-soak`), "prod takes 1.0.3 at 16:38 UTC at the earliest, once approved (soaking in staging, 38 min left)"; got != want {
		t.Errorf("staging's soak %q, want %q", got, want)
	}
	if !visible(`li[data-env="staging"] .env-soak`) {
		t.Error("staging's soak is not visible")
	}
	// Freeze: the card says it first letter up; the table lists the freezes, the active first.
	if got, want := one(`li[data-env="prod"] .env-frozen`), "frozen by apps/release-day until 18:00 UTC: quarterly release: no changes"; got != want {
		t.Errorf("prod's freeze %q, want %q", got, want)
	}
	if got, want := texts(`table.freezes tbody th`), []string{"apps/release-day (ReleaseFreeze)", "holidays (ClusterReleaseFreeze)"}; !slices.Equal(got, want) {
		t.Errorf("freezes %q, want %q", got, want)
	}
	// Verification after rollout, with links to the runs; the rollback; never promoted further.
	if got, want := texts(`li[data-env="dev"] .env-verifications a.run`), []string{"1 Failed", "2 Failed", "1 Success"}; !slices.Equal(got, want) {
		t.Errorf("dev's runs %q, want %q", got, want)
	}
	if got := eval[string](t, ctx, `document.querySelector('li[data-env="dev"] [data-verification="smoke"] a.run:last-of-type').href`); got != "https://ci.example.com/web-smoke-2" {
		t.Errorf("smoke's last run links %q", got)
	}
	if got := one(`li[data-env="dev"] .verification-head`); got != "Revision 1.0.4: Failure in 15m 0s" {
		t.Errorf("dev's verification %q", got)
	}
	if got := one(`li[data-env="dev"] .env-rollback`); !strings.HasPrefix(got, "Rolled back from 1.0.4 to 1.0.3") {
		t.Errorf("dev's rollback %q", got)
	}
	if got := one(`li[data-env="dev"] .env-unpromotable li`); !strings.HasPrefix(got, "1.0.4: never promoted further: failed its verification in dev (blocking verifications failed: smoke)") {
		t.Errorf("dev's unpromotable revision %q", got)
	}
	// Approvals and rejections, with both commands and their copy buttons.
	if got := one(`li[data-env="prod"] .approval-policy`); got != "Policy: 2 distinct approvers; users alice, bob; groups release-managers; not who approved it for staging." {
		t.Errorf("prod's policy %q", got)
	}
	if got := one(`li[data-env="prod"] .approval-progress`); got != "Approvals of 1.0.2: 1 of 2 approvals, 1 more needed." {
		t.Errorf("prod's approvals %q", got)
	}
	if got := texts(`li[data-env="prod"] ol.approvers li`); len(got) != 1 || !strings.HasPrefix(got[0], "alice,") || !strings.HasSuffix(got[0], ": staging looked fine") {
		t.Errorf("prod's approvers %q", got)
	}
	if got, want := one(`li[data-env="prod"] code.reject-command`), "release-controller pipeline reject --server "+base+" apps/web prod 1.0.2 --reason REASON"; got != want {
		t.Errorf("reject command %q, want %q", got, want)
	}
	if got := eval[int](t, ctx, `document.querySelectorAll('li[data-env="prod"] section.waiting-approval button.copy:not([hidden])').length`); got != 2 {
		t.Errorf("%d copy buttons shown, want 2", got)
	}
	if got := one(`li[data-env="prod"] ol.rejections li`); !strings.HasPrefix(got, "1.0.0 by carol,") || !strings.HasSuffix(got, "breaks the login <script>alert(1)</script> (never promoted here)") {
		t.Errorf("prod's rejection %q", got)
	}
	screenshot(t, ctx, "pipeline-policy.png")

	// bob approves: the policy is met; the freeze ends.
	p := policyPipeline("apps", "web")
	prod := &p.Status.Environments[2]
	met := metav1.NewTime(at("2026-11-22T15:55:00Z"))
	prod.Approval.Approver, prod.Approval.PolicyMet = "bob", &met
	prod.Approval.Approvers = append(prod.Approval.Approvers, v1alpha1.Approver{Name: "bob", Time: met})
	prod.Frozen = nil
	cat.SetPipeline(p)
	cat.DeleteReleaseFreeze(&v1alpha1.ReleaseFreeze{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "release-day"}})
	waitFor(t, ctx, "the policy met and the freeze ended",
		`document.querySelector('li[data-env="prod"] .approval-progress .state-success') !== null && document.querySelector('tr[data-freeze="apps/release-day"]') === null`)
	if got := one(`li[data-env="prod"] .approval-progress`); !strings.HasPrefix(got, "Approvals of 1.0.2: policy met by bob (2 of 2 approvals),") {
		t.Errorf("prod's approvals %q", got)
	}
	if got := texts(`li[data-env="prod"] .env-frozen`); len(got) != 0 {
		t.Errorf("prod is still shown frozen: %q", got)
	}
	checkConsole(t, ctx, console)
}

// textsOf is the text of each element selector finds, its white space collapsed.
func textsOf(t *testing.T, ctx context.Context, selector string) []string {
	t.Helper()
	return eval[[]string](t, ctx, `Array.from(document.querySelectorAll(`+strconv.Quote(selector)+`), (e) => e.textContent.trim().replace(/\s+/g, " "))`)
}
