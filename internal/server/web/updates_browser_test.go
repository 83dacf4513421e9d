//go:build !unit

package web_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/server/web"
	"github.com/release-controller/release-controller/internal/testbrowser"
)

// screenshot saves the page as a PNG into $SCREENSHOT_DIR (when set) under name, for people
// to look at.
func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, testbrowser.StepWait)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("taking a screenshot: %v", err)
	}
	if !bytes.HasPrefix(png, []byte("\x89PNG")) {
		t.Fatalf("the screenshot is not a PNG")
	}
	if dir := os.Getenv("SCREENSHOT_DIR"); dir != "" {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, png, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("screenshot: %s", path)
	}
}

// A person reads what the update service does: a payload's risks (and one declared while
// the page is open), the graph's dashed risky edge and its legend, the health page's risk
// lines; nothing breaks the Content-Security-Policy.
func TestUpdateServiceInBrowser(t *testing.T) {
	cat := riskFixture()
	base := startPages(t, cat, web.PageOptions{})
	ctx := newBrowser(t)
	console := chromedp.Console(ctx)
	texts := func(selector string) []string {
		t.Helper()
		return eval[[]string](t, ctx, `Array.from(document.querySelectorAll(`+strconv.Quote(selector)+`), (e) => e.textContent.trim().replace(/\s+/g, " "))`)
	}

	// The release page of tag4: the risk section.
	do(t, ctx, "loading tag4's page",
		chromedp.Navigate(base+releaseURL("demo", "nightly", tag4)),
		chromedp.WaitVisible(chromedp.CSS(`#update-service li.risk`)),
	)
	if got := texts(`#update-service .risk-summary`); len(got) != 1 || !strings.HasPrefix(got[0], "1 upgrade path into this release carries a risk: OldBootImages (from ") {
		t.Errorf("summary %q", got)
	}
	if got, want := eval[[]string](t, ctx, `Array.from(document.querySelectorAll("#update-service li.risk"), (li) => li.dataset.risk)`), []string{"OldBootImages", "UpgradeTestFlaky"}; !slices.Equal(got, want) {
		t.Errorf("risks %v, want %v", got, want)
	}
	if got, want := texts(`#update-service li[data-risk="OldBootImages"] .risk-rules li`), []string{"PromQL: " + oldBootQuery, "Always"}; !slices.Equal(got, want) {
		t.Errorf("rules %q, want %q", got, want)
	}
	if got := texts(`#update-service li[data-risk="UpgradeTestFlaky"] .risk-source`); len(got) != 1 || !strings.HasPrefix(got[0], "Detected by the controller") {
		t.Errorf("the detected risk's source %q", got)
	}
	// A conditional risk is framed amber, and the frame is not all it says.
	if got := eval[string](t, ctx, `getComputedStyle(document.querySelector('#update-service li[data-risk="OldBootImages"]')).borderLeftColor`); got != "rgb(212, 167, 44)" {
		t.Errorf("a conditional risk's frame is %s", got)
	}
	if got := texts(`#update-service .channels`); len(got) != 1 || !strings.HasPrefix(got[0], "In the channels candidate since") {
		t.Errorf("channels %q", got)
	}
	screenshot(t, ctx, "release-page-risks.png")

	// Another risk is declared while the page is open: it appears without a reload.
	eval[string](t, ctx, `window.__marker = "same document"`)
	cat.SetRisk(upgradeRisk("demo", "late", v1alpha1.UpgradeRiskSpec{To: tag4, Name: "LateRisk", Message: "Found late.", URL: "https://issues.example.com/late",
		MatchingRules: []v1alpha1.MatchingRule{{Type: v1alpha1.MatchingRulePromQL, PromQL: &v1alpha1.PromQLRule{PromQL: "cluster_late_risk"}}}}))
	do(t, ctx, "waiting for the new risk", chromedp.WaitVisible(chromedp.CSS(`#update-service li.risk-conditional[data-risk="LateRisk"]`)))
	if got := eval[string](t, ctx, `window.__marker`); got != "same document" {
		t.Errorf("the page was reloaded: marker %q", got)
	}
	if got, want := eval[[]string](t, ctx, `Array.from(document.querySelectorAll("#update-service li.risk"), (li) => li.dataset.risk)`), []string{"LateRisk", "OldBootImages", "UpgradeTestFlaky"}; !slices.Equal(got, want) {
		t.Errorf("after the new risk: %v, want %v", got, want)
	}

	// The tombstoned payload says it is withdrawn.
	do(t, ctx, "loading tag5's page",
		chromedp.Navigate(base+releaseURL("demo", "nightly", tag5)),
		chromedp.WaitVisible(chromedp.CSS(`#tombstone`)),
	)
	if got := texts(`#tombstone strong`); !slices.Equal(got, []string{web.Withdrawn}) {
		t.Errorf("tombstone notice %q", got)
	}

	// The graph: the risky upgrade dashed in amber, named in its title; the legend.
	do(t, ctx, "opening the upgrade graph",
		chromedp.Navigate(base+"/namespaces/demo/releasestream/nightly/graph"),
		chromedp.WaitVisible(chromedp.CSS(`svg.upgrade-graph path[data-served="conditional"]`)),
	)
	risky := `document.querySelector('svg.upgrade-graph path[data-served="conditional"]')`
	if got := eval[[]string](t, ctx, `[getComputedStyle(`+risky+`).strokeDasharray, getComputedStyle(`+risky+`).stroke, `+risky+`.dataset.to]`); !slices.Equal(got, []string{"7px, 4px", "rgb(154, 103, 0)", tag4}) {
		t.Errorf("the risky edge is drawn %v", got)
	}
	if got := eval[string](t, ctx, risky+`.parentElement.querySelector("title").textContent`); !strings.HasSuffix(got, "; conditional: LateRisk, OldBootImages, UpgradeTestFlaky") {
		t.Errorf("the risky edge's title %q does not name its risks", got)
	}
	if got := eval[[]string](t, ctx, `Array.from(document.querySelectorAll("svg.upgrade-graph path.edge"), (p) => p.dataset.served)`); !slices.Equal(got, []string{"offered", "blocked", "conditional", "withdrawn"}) {
		t.Errorf("edges served %v", got)
	}
	screenshot(t, ctx, "graph-page-risks.png")
	// A risk that blocks its upgrades is framed red.
	if got := eval[string](t, ctx, `getComputedStyle(document.querySelector('#stream-risks li[data-risk="BrokenIngress"]')).borderLeftColor`); got != "rgb(207, 34, 46)" {
		t.Errorf("a blocking risk's frame is %s", got)
	}
	if got := texts(`ul.graph-legend li`); len(got) != 3 || !strings.HasPrefix(got[1], "dashed amber: conditional") {
		t.Errorf("legend %q", got)
	}
	if got := eval[bool](t, ctx, `(() => { const r = document.querySelector("ul.graph-legend").getBoundingClientRect(); return r.width > 0 && r.height > 0; })()`); !got {
		t.Errorf("the legend is not shown")
	}
	if got := eval[[]string](t, ctx, `Array.from(document.querySelectorAll("#stream-risks li.risk"), (li) => li.dataset.risk)`); !slices.Contains(got, "OldBootImages") || !slices.Contains(got, "LateRisk") {
		t.Errorf("the stream's risks %v", got)
	}

	// The health page: the counts and a line per risk into the newest accepted payloads.
	do(t, ctx, "opening the health page",
		chromedp.Navigate(base+"/namespaces/demo/releasestream/nightly/health"),
		chromedp.WaitVisible(chromedp.CSS(`#health-risks`)),
	)
	if got := texts(`#health-risks`); !slices.Equal(got, []string{"Update service: 3 risks declared, 2 detected; 3 lead into the newest accepted payloads."}) {
		t.Errorf("health risks %q", got)
	}
	if got := eval[[]string](t, ctx, `Array.from(document.querySelectorAll("#health-risk-lines li"), (li) => li.dataset.risk)`); !slices.Equal(got, []string{"LateRisk", "OldBootImages", "UpgradeTestFlaky"}) {
		t.Errorf("health risk lines %v", got)
	}
	checkConsole(t, ctx, console)
}
