//go:build !unit

package web_test

import (
	"encoding/json"
	"encoding/xml"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/release-controller/release-controller/internal/changelog"

	"github.com/release-controller/release-controller/internal/server/catalog"
	"github.com/release-controller/release-controller/internal/server/web"
)

func TestHealthPage(t *testing.T) {
	cat := fixture()
	// The changelog of e2e's break (tag2 to tag3) was computed before: the page names its
	// commits.
	nightly, err := cat.StreamIn("demo", "nightly")
	if err != nil {
		t.Fatal(err)
	}
	e2, _ := nightly.Entry(tag2)
	e3, _ := nightly.Entry(tag3)
	logs := &fakeChangeLogs{result: sampleChangeLog, cached: map[string]*changelog.ChangeLog{pairKey(tag2, tag3): sampleChangeLog(e2.Payload, e3.Payload)}}
	base := startPages(t, cat, web.PageOptions{ChangeLogs: logs})
	p := fetch(t, "GET", base+"/releasestream/nightly/health")
	checkHTML(t, p)
	check(t, p, 200, []string{
		`<a href="/namespaces/demo/releasestream/nightly/health">Health</a>`,
		`Last accepted payload: <a href="` + releaseURL("demo", "nightly", tag4) + `">` + tag4 + `</a>`,
		`2 payloads of 4 verdicts accepted (50%); 1 rejected, 1 failed, 1 waiting for a verdict.`,
		// Verdicts after 5m, 1h, 1h 42m 5s and 1h.
		`From creation to verdict: 1h 0m at the median, 1h 42m at the 90th percentile.`,
		`<svg xmlns="http://www.w3.org/2000/svg" class="chart" id="acceptance-chart" role="img"`,
		`<svg xmlns="http://www.w3.org/2000/svg" class="chart" id="verdict-time-chart" role="img"`,
		`<title>2026-11-22: 1 of 2 verdicts accepted (50%)</title>`,
		`<tr><th scope="row">2026-11-21</th><td>2</td><td>1 of 2 (50%)</td><td>5m 0s</td><td>1h 0m</td></tr>`,
		`<tr><th scope="row">2026-11-22</th><td>3</td><td>1 of 2 (50%)</td><td>1h 0m</td><td>1h 42m</td></tr>`,
		// e2e rejected tag3 after passing on tag2: the most harmful, with its last failure.
		`<tr><th scope="row">e2e <span class="muted">blocking</span></th><td>1: rejected 1 payload, delayed 0</td><td>2 of 3 (67%)</td>`,
		`<a href="` + releaseURL("demo", "nightly", tag3) + `">` + tag3 + `</a> (<a href="https://ci.example.com/090000-e2e-3">090000-e2e-3</a>`,
		`<a href="/namespaces/demo/releasestream/nightly/health?days=14&amp;format=json&amp;payloads=200">JSON</a>`,
		// Its break: the components are the same images (no suspect), the changelog names a commit.
		`<td><span class="muted">none</span><br>broke in <a href="` + releaseURL("demo", "nightly", tag3) + `?from=` + tag2 + `">` + tag3 + `</a> <span class="commits">(api: “Fix the &lt;widget&gt; race”)</span></td>`,
	}, nil)
	if logs.calls != 0 {
		t.Errorf("the health page computed %d changelogs; it reads the cache only", logs.calls)
	}
	// The charts are well-formed SVG.
	for _, id := range []string{"acceptance-chart", "verdict-time-chart"} {
		start := strings.Index(p.body, `<svg xmlns="http://www.w3.org/2000/svg" class="chart" id="`+id)
		end := strings.Index(p.body[start:], "</svg>")
		if start < 0 || end < 0 {
			t.Fatalf("no chart %s", id)
		}
		if err := xml.Unmarshal([]byte(p.body[start:start+end+len("</svg>")]), new(struct{})); err != nil {
			t.Errorf("chart %s is not well-formed: %v", id, err)
		}
	}

	// The JSON is the catalog's report itself.
	js := fetch(t, "GET", base+"/namespaces/demo/releasestream/nightly/health?format=json&days=30&payloads=4")
	if js.code != 200 || js.header.Get("Content-Type") != "application/json" {
		t.Fatalf("json: %d %v", js.code, js.header)
	}
	var got catalog.Health
	if err := json.Unmarshal([]byte(js.body), &got); err != nil {
		t.Fatal(err)
	}
	s, err := cat.StreamIn("demo", "nightly")
	if err != nil {
		t.Fatal(err)
	}
	want := s.Health(catalog.HealthWindow{Payloads: 4, Days: 30, Now: now})
	wantJSON, _ := json.Marshal(want)
	var wantBack catalog.Health
	_ = json.Unmarshal(wantJSON, &wantBack)
	if !reflect.DeepEqual(got, wantBack) {
		t.Errorf("json:\n%s\nwant\n%s", js.body, wantJSON)
	}
	if got.Payloads != 4 || got.Window.Payloads != 4 || got.Window.Days != 30 {
		t.Errorf("window: %+v", got)
	}

	check(t, fetch(t, "GET", base+"/releasestream/empty/health"), 200, []string{"No payload was created in the last 14 days.", "The stream has no accepted payload."}, []string{"<svg"})
	check(t, fetch(t, "GET", base+"/releasestream/nightly/health?days=0"), 400, []string{`“0” is not a number of days: give one from 1 to 365.`}, nil)
	check(t, fetch(t, "GET", base+"/releasestream/nightly/health?payloads=x"), 400, []string{`“x” is not a number of payloads`}, nil)
	check(t, fetch(t, "GET", base+"/releasestream/nightly/health?format=svg"), 400, []string{`“svg” is not a format of this page`}, nil)
	check(t, fetch(t, "GET", base+"/releasestream/nope/health"), 404, nil, nil)
	check(t, fetch(t, "GET", base+"/releasestream/ci/health"), 409, nil, nil)
}

// The health page in a browser: both charts are drawn (with a size, bars and lines), the
// table beside them has every day, the stream page links the page, and nothing is written
// to the console.
func TestHealthPageInBrowser(t *testing.T) {
	base := startPages(t, fixture(), web.PageOptions{})
	ctx := newBrowser(t)
	console := chromedp.Console(ctx)
	do(t, ctx, "following the stream page's Health link",
		chromedp.Navigate(base+"/releasestream/nightly"),
		chromedp.WaitVisible(chromedp.CSS(`nav.stream-nav a[href$="/health"]`)),
		chromedp.Click(chromedp.CSS(`nav.stream-nav a[href$="/health"]`)),
		chromedp.WaitVisible(chromedp.CSS(`svg#verdict-time-chart`)),
	)
	type drawn struct {
		Width, Height     float64
		Bars, Lines, Dots int
		Title             string
	}
	charts := eval[[]drawn](t, ctx, `Array.from(document.querySelectorAll("svg.chart"), (svg) => {
		const box = svg.getBoundingClientRect();
		return {Width: box.width, Height: box.height, Bars: svg.querySelectorAll("rect[height]:not([height='10'])").length,
			Lines: svg.querySelectorAll("polyline").length, Dots: svg.querySelectorAll("circle").length,
			Title: svg.querySelector("title").textContent};
	})`)
	if len(charts) != 2 {
		t.Fatalf("charts %+v, want two", charts)
	}
	for _, c := range charts {
		if c.Width < 100 || c.Height < 50 {
			t.Errorf("chart %q is drawn %vx%v", c.Title, c.Width, c.Height)
		}
	}
	if charts[0].Title != "Acceptance rate per day" || charts[0].Bars != 2 {
		t.Errorf("acceptance chart %+v: want a bar for each of the two days", charts[0])
	}
	if charts[1].Title != "Time from creation to verdict per day" || charts[1].Lines != 2 || charts[1].Dots != 4 {
		t.Errorf("verdict time chart %+v: want p50 and p90 over two days", charts[1])
	}
	days := eval[[]string](t, ctx, `Array.from(document.querySelectorAll("#health-days tbody th"), (th) => th.textContent)`)
	if !slices.Equal(days, []string{"2026-11-21", "2026-11-22"}) {
		t.Errorf("days table %v", days)
	}
	checkConsole(t, ctx, console)
}
