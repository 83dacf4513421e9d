//go:build !unit

package web_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/release-controller/release-controller/internal/server/web"
)

func TestReleasesPageFilters(t *testing.T) {
	base := serve(t, filledStore(), options())
	for _, tc := range []struct {
		name, query  string
		wantVersions []string
		want         []string
	}{
		{"by type", "?day=2026-11-22&type=release", []string{"4.18.2"}, []string{
			`<p class="summary">1 of 3 releases match the filter.</p>`,
			`<option selected>release</option>`,
			// The counts and the day links keep the filter.
			`<a href="/releases?day=2026-11-20&amp;type=release">2026-11-20</a></th><td>0</td>`,
			`<a rel="prev" href="/releases?day=2026-11-20&amp;type=release">`,
			`>Matching entries per day</title>`,
			`<a href="/releases?day=2026-11-22">Clear</a>`,
			`data-events="/releases/events?day=2026-11-22&amp;type=release"`,
		}},
		{"by stream, from the payload links", "?day=2026-11-22&stream=4.18", []string{"4.18.2"}, []string{`<option selected>4.18</option>`}},
		{"by text", "?day=2026-11-22&q=STABLE", []string{"4.18.1"}, []string{`value="STABLE"`}},
		{"nothing matches", "?day=2026-11-22&q=nope", nil, []string{`<p class="summary empty">0 of 3 releases match the filter.</p>`, `No entries match the filter in the days the log keeps.`}},
		{"no filter: every entry, and the counts of every day", "?day=2026-11-22", []string{"4.18.1", "4.18.0-rc.1", "4.18.2"}, []string{
			`>Entries per day</title>`,
			`<tr><th scope="row"><a href="/releases?day=2026-11-20">2026-11-20</a></th><td>1</td></tr>`,
			`<tr><th scope="row"><span aria-current="date">2026-11-22</span></th><td>3</td></tr>`,
			`<svg xmlns="http://www.w3.org/2000/svg" class="chart" id="day-counts-chart"`,
			`<a href="/releases?day=2026-11-20"><rect`,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, body := get(t, base+web.ReleasesPath+tc.query)
			if code != 200 {
				t.Errorf("status %d", code)
			}
			if got := versions(body); !slices.Equal(got, tc.wantVersions) {
				t.Errorf("versions %v, want %v", got, tc.wantVersions)
			}
			for _, want := range tc.want {
				if !strings.Contains(body, want) {
					t.Errorf("page lacks %s", want)
				}
			}
			if t.Failed() {
				t.Logf("page:\n%s", body)
			}
		})
	}
	code, _, body := get(t, base+web.ReleasesPath+"?q="+strings.Repeat("x", 201))
	if code != 400 || !strings.Contains(body, "the q filter is longer than 200 characters.") {
		t.Errorf("a long filter: %d\n%s", code, body)
	}
	if code, _, _ := get(t, base+web.EventsPath+"?day=2026-11-22&type="+strings.Repeat("x", 201)); code != 400 {
		t.Errorf("a long filter of the event stream: %d", code)
	}
}

// The filters in a browser: picking a type narrows the day, the chart of counts per day is
// drawn, and its table opens; nothing is written to the console.
func TestReleasesFiltersInBrowser(t *testing.T) {
	base := serve(t, filledStore(), options())
	ctx := newBrowser(t)
	console := chromedp.Console(ctx)
	do(t, ctx, "filtering the latest day by type",
		chromedp.Navigate(base+"/releases"),
		chromedp.WaitVisible(chromedp.CSS(`svg#day-counts-chart`)),
		chromedp.SetValue(chromedp.CSS(`#filter-type`), "promotion"),
		chromedp.Click(chromedp.CSS(`form.filter button[type="submit"]`)),
		chromedp.WaitVisible(chromedp.CSS(`main[data-events$="type=promotion"] #entries tbody tr`)),
	)
	if got := rowVersions(t, ctx); !slices.Equal(got, []string{"4.18.1"}) {
		t.Errorf("rows %v, want the promotion only", got)
	}
	box := eval[[]float64](t, ctx, `(() => { const r = document.getElementById("day-counts-chart").getBoundingClientRect(); return [r.width, r.height]; })()`)
	if box[0] < 100 || box[1] < 50 {
		t.Errorf("the chart is drawn %v", box)
	}
	if n := eval[int](t, ctx, `document.querySelectorAll("#day-counts-chart rect").length`); n != 10 {
		t.Errorf("%d bars, want one for each of the 10 days kept", n)
	}
	do(t, ctx, "opening the counts table", chromedp.Click(chromedp.CSS(`details.counts summary`)), chromedp.WaitVisible(chromedp.CSS(`#day-counts-table`)))
	checkConsole(t, ctx, console)
}
