package web_test

import (
	"encoding/xml"
	"fmt"
	"strings"
	"testing"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/server/web"
)

// section is the part of a page from the element with id to the end of its section.
func section(t *testing.T, body, id string) string {
	t.Helper()
	start := strings.Index(body, `<section id="`+id+`"`)
	if start < 0 {
		t.Fatalf("the page has no section %s:\n%s", id, body)
	}
	end := strings.Index(body[start:], "</section>")
	return body[start : start+end]
}

// A payload's page says what the update service does with it: the risks on the upgrades
// into it (declared and detected, with their rules, source and the upgrades they are on),
// its channels, the promotion to come, its tombstone.
func TestReleasePageUpdateService(t *testing.T) {
	base := startPages(t, riskFixture(), web.PageOptions{})
	unparsable := "UpgradeRisk demo/unparsable is left out: error parsing regexp: missing closing ): `^4\\.15\\.($`"

	p := fetch(t, "GET", base+releaseURL("demo", "nightly", tag4))
	checkHTML(t, p)
	us := section(t, p.body, "update-service")
	check(t, page{code: 200, body: us}, 200, []string{
		`<p class="risk-summary">1 upgrade path into this release carries a risk: OldBootImages (from ^4\.15\.0-0\.nightly-2026-11-21-.*$), UpgradeTestFlaky (from 2026-11-21-150000).</p>`,
		`<li class="risk risk-conditional" data-risk="OldBootImages">`,
		`<a href="https://issues.example.com/browse/OCPBUGS-101"><strong>OldBootImages</strong></a> <span class="risk-effect">` + web.RiskConditional + `</span>`,
		`<dd class="risk-from">versions matching <code>^4\.15\.0-0\.nightly-2026-11-21-.*$</code></dd>`,
		`<dd class="risk-upgrades"><a href="` + releaseURL("demo", "nightly", tag4) + `?from=` + tag2 + `">2026-11-21-150000</a></dd>`,
		// The rules in order, the query escaped.
		`<dd class="risk-rules"><ol><li>PromQL: <code>topk(1, cluster_infrastructure_provider{type=&#34;AWS&#34;}) * on() group_left() (node_boot_image_age_days &gt; 365)</code></li><li>Always</li></ol></dd>`,
		`<dd class="risk-fixed">4.15.1</dd>`,
		`<dd class="risk-source">Declared by the UpgradeRisk demo/old-boot-images, <time datetime="2026-11-22T14:00:00Z"`,
		`<li class="risk risk-conditional" data-risk="UpgradeTestFlaky">`,
		`<span class="risk-effect">` + web.RiskEveryCluster + `</span>`,
		`failed in 1 of 2 runs (120000-upgrade-0)`,
		`<dd class="risk-from">` + tag2 + `</dd>`,
		`<dd class="risk-source">Detected by the controller in the stream’s own results (detectRisks)</dd>`,
		`<p class="channels">In the channels <strong>candidate</strong> since <time datetime="2026-11-22T13:00:00Z"`,
		`<p class="warning">` + unparsable + `</p>`,
	}, []string{"Elsewhere", "Unparsable", `class="pending"`, `id="tombstone"`})

	// Blocked for everyone.
	p = fetch(t, "GET", base+releaseURL("demo", "nightly", tag3))
	check(t, page{code: p.code, body: section(t, p.body, "update-service")}, 200, []string{
		`<p class="risk-summary">1 upgrade path into this release carries a risk: BrokenIngress (from every version). It is blocked for every cluster.</p>`,
		`<li class="risk risk-blocks" data-risk="BrokenIngress">`,
		`<span class="risk-effect">` + web.RiskBlocks + `</span>`,
		`<dd class="risk-rules">none: the upgrades are removed for every cluster</dd>`,
	}, nil)

	// No risk; in candidate, and stable follows once the feeder's delay is over.
	p = fetch(t, "GET", base+releaseURL("demo", "nightly", tag2))
	check(t, page{code: p.code, body: section(t, p.body, "update-service")}, 200, []string{
		`<p class="channels">In the channels <strong>candidate</strong> since <time datetime="2026-11-21T16:00:00Z"`,
		`<li>Enters <strong>stable</strong> <time datetime="2026-11-22T16:38:00Z">at 16:38 UTC</time>, 38 minutes from now (fed from candidate).</li>`,
	}, []string{"risk-summary", `class="risks"`})

	// Tombstoned: withdrawn, the reason escaped; in no channel (never accepted).
	p = fetch(t, "GET", base+releaseURL("demo", "nightly", tag5))
	check(t, p, 200, []string{
		`<div class="banner failure" id="tombstone" role="note"><strong>` + web.Withdrawn + `</strong> The payload was tombstoned <time datetime="2026-11-22T15:30:00Z" title="2026-11-22 15:30:00 UTC">30 minutes ago</time>: “breaks &lt;ingress&gt; on upgrade”.`,
		`<li class="risk risk-conditional" data-risk="InformingLintFailed">`,
		`<p class="channels">In none of the stream’s channels.</p>`,
	}, []string{tombstoneText})

	// A stream without channels or risks (team has none into it): no section at all.
	p = fetch(t, "GET", base+releaseURL("team", "ci", ciTag))
	check(t, p, 200, nil, []string{`id="update-service"`, `id="tombstone"`})
}

// The risks a payload's page lists are bounded.
func TestReleasePageRisksBounded(t *testing.T) {
	cat := riskFixture()
	manyRisks(cat, web.MaxRisksListed+10, tag2)
	base := startPages(t, cat, web.PageOptions{})
	p := fetch(t, "GET", base+releaseURL("demo", "nightly", tag2))
	us := section(t, p.body, "update-service")
	if n := strings.Count(us, `<li class="risk `); n != web.MaxRisksListed {
		t.Errorf("%d risks listed, want %d", n, web.MaxRisksListed)
	}
	check(t, page{code: p.code, body: us}, 200, []string{
		`<p class="note">and 10 more risks</p>`,
		// The sentence names five and counts the others.
		`1 upgrade path into this release carries a risk: Many000 (from every version), Many001 (from every version), Many002 (from every version), Many003 (from every version), Many004 (from every version) and 55 more.`,
	}, nil)
}

// A risk declared while a payload's page is open reaches it over the live updates.
func TestReleasePageRiskArrivesLive(t *testing.T) {
	cat := riskFixture()
	base := startPages(t, cat, web.PageOptions{})
	events := openEvents(t, base+web.PageEventsPath+"?view=release&namespace=demo&stream=nightly&tag="+tag2)
	if first := readUpdate(t, events); len(first.Parts) != 1 || strings.Contains(first.Parts[0].HTML, "risk-summary") {
		t.Fatalf("first event: %+v", first)
	}
	cat.SetRisk(upgradeRisk("demo", "late", v1alpha1.UpgradeRiskSpec{To: tag2, Name: "LateRisk", Message: "Found late.", URL: "https://issues.example.com/late"}))
	second := readUpdate(t, events)
	if len(second.Parts) != 1 || !strings.Contains(second.Parts[0].HTML, `<li class="risk risk-blocks" data-risk="LateRisk">`) {
		t.Errorf("after the risk: %+v", second)
	}
}

// The graph draws how the update service serves each upgrade, with a legend, and lists the
// stream's risks below.
func TestGraphPageUpdateService(t *testing.T) {
	base := startPages(t, riskFixture(), web.PageOptions{})
	p := fetch(t, "GET", base+"/releasestream/nightly/graph?format=svg")
	var doc struct {
		Edges []struct {
			Title string `xml:"title"`
			Path  struct {
				Stroke string `xml:"stroke,attr"`
				Dash   string `xml:"stroke-dasharray,attr"`
				From   string `xml:"data-from,attr"`
				To     string `xml:"data-to,attr"`
				Served string `xml:"data-served,attr"`
			} `xml:"path"`
		} `xml:"g>a"`
	}
	if err := xml.Unmarshal([]byte(p.body), &doc); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, e := range doc.Edges {
		if e.Path.From != "" {
			got[e.Path.From+" → "+e.Path.To] = fmt.Sprintf("%s %s %q: %s", e.Path.Served, e.Path.Stroke, e.Path.Dash, e.Title[strings.Index(e.Title, "; ")+2:])
		}
	}
	want := map[string]string{
		collected + " → " + tag2: `offered #1a7f37 "": offered to every cluster`,
		tag2 + " → " + tag3:      `blocked #6b7280 "2 4": blocked for every cluster by BrokenIngress`,
		tag2 + " → " + tag4:      `conditional #9a6700 "7 4": conditional: OldBootImages, UpgradeTestFlaky`,
		tag4 + " → " + tag5:      `withdrawn #6b7280 "2 4": withdrawn: ` + tag5 + ` is tombstoned`,
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("edges\n%v\nwant\n%v", got, want)
	}
	if !strings.Contains(p.body, `<tspan fill="#6b7280">Ready · tombstoned</tspan>`) {
		t.Errorf("the tombstoned node does not say so:\n%s", p.body)
	}

	html := fetch(t, "GET", base+"/namespaces/demo/releasestream/nightly/graph")
	checkHTML(t, html)
	check(t, html, 200, []string{
		`<ul class="graph-legend" aria-label="How the update service serves each upgrade">`,
		`stroke="#9a6700" stroke-width="2" stroke-dasharray="7 4"/></svg>dashed amber: conditional, carries a risk</li>`,
		`<th scope="col">Update service</th>`,
		`<td class="served-conditional">conditional: OldBootImages, UpgradeTestFlaky</td>`,
		`<td class="served-blocked">blocked for every cluster by BrokenIngress</td>`,
		`<li class="risk risk-blocks" data-risk="BrokenIngress">`,
		`<dd class="risk-to">versions matching <code>^4\.15\.0-0\.nightly-2026-11-22-09.*$</code></dd>`,
		`<dd class="risk-to">` + tag4 + `</dd>`,
		`<span class="muted">1 upgrade drawn carries it.</span>`,
		`<li class="risk risk-conditional" data-risk="InformingLintFailed">`,
		"<p class=\"warning\">UpgradeRisk demo/unparsable is left out",
	}, []string{"Elsewhere"})

	// A stream without risks says so.
	check(t, fetch(t, "GET", base+"/namespaces/team/releasestream/ci/graph"), 200, []string{`<p class="empty">No upgrade risk applies to this stream.</p>`}, nil)
}

// The health page counts the stream's risks and lists those into its newest accepted
// payloads.
func TestHealthPageRisks(t *testing.T) {
	base := startPages(t, riskFixture(), web.PageOptions{})
	p := fetch(t, "GET", base+"/namespaces/demo/releasestream/nightly/health")
	check(t, p, 200, []string{
		`<li id="health-risks">Update service: 2 risks declared, 2 detected; 2 lead into the newest accepted payloads.</li>`,
		`<li class="risk risk-conditional" data-risk="OldBootImages"><a href="https://issues.example.com/browse/OCPBUGS-101"><strong>OldBootImages</strong></a> <span class="risk-effect">conditional</span> into <a href="` + releaseURL("demo", "nightly", tag4) + `">` + tag4 + `</a>: Clusters installed`,
		`<li class="risk risk-conditional" data-risk="UpgradeTestFlaky">`,
	}, []string{`data-risk="BrokenIngress"`, `data-risk="InformingLintFailed"`}) // into payloads not accepted
	check(t, fetch(t, "GET", base+"/namespaces/team/releasestream/ci/health"), 200,
		[]string{`<li id="health-risks">Update service: 0 risks declared, 0 detected; none leads into the newest accepted payloads.</li>`}, []string{`id="health-risk-lines"`})
}
