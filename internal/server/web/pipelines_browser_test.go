//go:build !unit

package web_test

import (
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
