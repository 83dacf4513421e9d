//go:build !unit

package web_test

import (
	"context"
	"iter"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/changelog"
	"github.com/release-controller/release-controller/internal/releaselog"
	"github.com/release-controller/release-controller/internal/server/web"
	"github.com/release-controller/release-controller/internal/testbrowser"
)

// The browser helpers of internal/testbrowser, under short local names.
func newBrowser(t *testing.T) context.Context { return testbrowser.New(t) }

func do(t *testing.T, ctx context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	testbrowser.Do(t, ctx, what, steps...)
}

func eval[T any](t *testing.T, ctx context.Context, expression string) T {
	t.Helper()
	return testbrowser.Eval[T](t, ctx, expression)
}

// badge is a type badge as the browser draws it.
type badge struct {
	Text  string `json:"text"`
	Color string `json:"color"`
}

func rowVersions(t *testing.T, ctx context.Context) []string {
	t.Helper()
	return eval[[]string](t, ctx, `Array.from(document.querySelectorAll("#entries tbody td.version"), (td) => td.textContent.trim())`)
}

func badges(t *testing.T, ctx context.Context) []badge {
	t.Helper()
	return eval[[]badge](t, ctx, `Array.from(document.querySelectorAll("#entries tbody .badge"),
		(b) => ({text: b.textContent.trim(), color: getComputedStyle(b).borderLeftColor}))`)
}

func TestReleasesPageInBrowser(t *testing.T) {
	store := filledStore()
	base := serve(t, store, options())
	ctx := newBrowser(t)
	// Collect what the page writes to the console from the start: errors there (a script
	// error, a blocked resource, a CSP violation) fail the test at the end.
	console := chromedp.Console(ctx)

	do(t, ctx, "loading /releases",
		chromedp.Navigate(base+"/releases"),
		chromedp.WaitVisible(chromedp.CSS(`main[data-day="2026-11-22"] #entries tbody tr`)),
	)
	if got, want := rowVersions(t, ctx), []string{"4.18.1", "4.18.0-rc.1", "4.18.2"}; !slices.Equal(got, want) {
		t.Errorf("the latest day shows %v, want time order %v", got, want)
	}
	wantBadges := []badge{{"promotion", "rgb(0, 0, 255)"}, {"rejected", "rgb(255, 0, 0)"}, {"release", "rgb(0, 128, 0)"}}
	if got := badges(t, ctx); !slices.Equal(got, wantBadges) {
		t.Errorf("badges %v, want %v", got, wantBadges)
	}
	if got := eval[string](t, ctx, `document.title`); got != "Releases on 2026-11-22 · Release controller" {
		t.Errorf("title %q", got)
	}
	if got := eval[[]string](t, ctx, `["min", "max", "value"].map((a) => document.getElementById("day")[a])`); !slices.Equal(got, []string{"2026-11-13", "2026-11-22", "2026-11-22"}) {
		t.Errorf("date picker min, max, value = %v", got)
	}

	// Previous and next day by the links.
	do(t, ctx, "following the previous-day link",
		chromedp.Click(chromedp.CSS(`#day-nav a[rel="prev"]`)),
		chromedp.WaitVisible(chromedp.CSS(`main[data-day="2026-11-20"] #entries tbody tr`)),
	)
	if got := rowVersions(t, ctx); !slices.Equal(got, []string{"4.17.9"}) {
		t.Errorf("2026-11-20 shows %v", got)
	}
	if got := badges(t, ctx); !slices.Equal(got, []badge{{"security", "rgb(106, 27, 154)"}}) {
		t.Errorf("2026-11-20 badges %v", got)
	}
	do(t, ctx, "following the next-day link",
		chromedp.Click(chromedp.CSS(`#day-nav a[rel="next"]`)),
		chromedp.WaitVisible(chromedp.CSS(`main[data-day="2026-11-22"] #entries tbody tr`)),
	)

	// The same by the date picker, through a day without a log.
	do(t, ctx, "picking 2026-11-21",
		chromedp.SetValue(chromedp.CSS(`#day`), "2026-11-21"),
		chromedp.Click(chromedp.CSS(`form.picker button`)),
		chromedp.WaitVisible(chromedp.CSS(`main[data-day="2026-11-21"] #entries p.summary.empty`)),
	)
	if got := eval[string](t, ctx, `document.querySelector("#entries .summary").textContent`); got != web.EmptyDay {
		t.Errorf("2026-11-21 shows %q", got)
	}
	do(t, ctx, "picking 2026-11-22",
		chromedp.SetValue(chromedp.CSS(`#day`), "2026-11-22"),
		chromedp.Click(chromedp.CSS(`form.picker button`)),
		chromedp.WaitVisible(chromedp.CSS(`main[data-day="2026-11-22"] #entries tbody tr`)),
	)

	// A new entry for the day shown appears without a reload: the marker set on this
	// document survives.
	eval[string](t, ctx, `window.__marker = "same document"`)
	store.Set("2026-11-22", append(store.Entries("2026-11-22"), releaselog.Entry{
		ID: "live-1", Type: "hotfix", Version: "4.18.1-hotfix.1", Origin: "cli", Date: at("2026-11-22T12:00:00Z"), Author: "carol", Message: "Hot fix",
	}))
	do(t, ctx, "waiting for the new entry", chromedp.WaitVisible(chromedp.CSS(`#entries tr[data-key="live-1"]`)))
	if got := eval[string](t, ctx, `window.__marker`); got != "same document" {
		t.Errorf("the page was reloaded: marker %q", got)
	}
	if got, want := rowVersions(t, ctx), []string{"4.18.1", "4.18.0-rc.1", "4.18.1-hotfix.1", "4.18.2"}; !slices.Equal(got, want) {
		t.Errorf("after the live update the day shows %v, want %v", got, want)
	}
	if got := eval[[]string](t, ctx, `Array.from(document.querySelectorAll("#entries tr.new"), (tr) => tr.dataset.key)`); !slices.Equal(got, []string{"live-1"}) {
		t.Errorf("rows marked new: %v, want only the added one", got)
	}
	if got := eval[string](t, ctx, `document.getElementById("live").textContent`); got != "Updated: 4 releases" {
		t.Errorf("status region says %q", got)
	}

	// A newer day appears in the navigation, still without a reload.
	store.Set("2026-11-23", []releaselog.Entry{{Type: "release", Version: "4.18.3", Origin: "cli", Date: at("2026-11-23T01:00:00Z")}})
	do(t, ctx, "waiting for the next-day link", chromedp.WaitVisible(chromedp.CSS(`#day-nav a[rel="next"][href="/releases?day=2026-11-23"]`)))
	if got := eval[string](t, ctx, `window.__marker`); got != "same document" {
		t.Errorf("the page was reloaded: marker %q", got)
	}

	checkConsole(t, ctx, console)
}

func checkConsole(t *testing.T, ctx context.Context, console iter.Seq2[chromedp.ConsoleMessage, error]) {
	t.Helper()
	testbrowser.CheckConsole(t, ctx, console)
}

// An empty log shows today; today's first entry appears live.
func TestEmptyLogFillsInBrowser(t *testing.T) {
	store := releaselog.NewStore()
	base := serve(t, store, options())
	ctx := newBrowser(t)
	do(t, ctx, "loading /releases",
		chromedp.Navigate(base+"/releases"),
		chromedp.WaitVisible(chromedp.CSS(`main[data-day="2026-11-22"] #entries p.summary.empty`)),
	)
	if got := eval[string](t, ctx, `document.querySelector("#entries .summary").textContent`); got != web.EmptyLog {
		t.Errorf("an empty log shows %q", got)
	}
	eval[string](t, ctx, `window.__marker = "same document"`)
	store.Set("2026-11-22", []releaselog.Entry{{ID: "first", Type: "release", Version: "4.19.0", Origin: "release-controller", Date: at("2026-11-22T15:30:00Z")}})
	do(t, ctx, "waiting for the first entry", chromedp.WaitVisible(chromedp.CSS(`#entries tr[data-key="first"]`)))
	if got := eval[string](t, ctx, `window.__marker + " / " + document.querySelector("#entries .summary").textContent`); got != "same document / 1 release" {
		t.Errorf("after the first entry: %q", got)
	}
}

// A person's walk through the stream pages: the index, a stream, a payload and its changelog
// against another base, the compare page, and the upgrade graph; then a payload being
// verified is accepted while its page is open.
func TestStreamPagesInBrowser(t *testing.T) {
	cat := fixture()
	// Changelogs are computed on request (not cached), so the payload pages are streamed.
	logs := &fakeWithReleases{fakeChangeLogs: &fakeChangeLogs{result: sampleChangeLog},
		components: []changelog.Component{{Name: "api", Source: "https://github.com/example/api.git", Revision: revNew}}}
	base := startPages(t, cat, web.PageOptions{ChangeLogs: logs})
	ctx := newBrowser(t)
	console := chromedp.Console(ctx)
	text := func(selector string) string {
		t.Helper()
		return eval[string](t, ctx, `document.querySelector(`+strconv.Quote(selector)+`).textContent.trim()`)
	}
	texts := func(selector string) []string {
		t.Helper()
		return eval[[]string](t, ctx, `Array.from(document.querySelectorAll(`+strconv.Quote(selector)+`), (e) => e.textContent.trim())`)
	}

	// The index.
	do(t, ctx, "loading the index",
		chromedp.Navigate(base+"/"),
		chromedp.WaitVisible(chromedp.CSS(`#stream-demo-nightly table.payloads tbody tr`)),
	)
	if got := eval[string](t, ctx, `document.title`); got != "Release streams · Release controller" {
		t.Errorf("title %q", got)
	}
	if got, want := texts(`#streams section.stream h2`), []string{"demo/ci", "demo/empty", "demo/nightly", "team/ci"}; !slices.Equal(got, want) {
		t.Errorf("streams %v, want %v", got, want)
	}
	if got, want := texts(`#stream-demo-nightly tbody th.tag a`), []string{tag5, tag4, tag3, tag2, tag1}; !slices.Equal(got, want) {
		t.Errorf("nightly's payloads %v, want %v", got, want)
	}
	if got := text(`#stream-demo-nightly .throttle`); !strings.HasPrefix(got, "Next payload may not start: 1 unready") {
		t.Errorf("throttle line %q", got)
	}
	if got := text(`#stream-demo-nightly tr[data-tag="` + tag5 + `"] td.jobs`); got != "Failed: lint\nPending: e2e, upgrade" && got != "Failed: lintPending: e2e, upgrade" {
		t.Errorf("tag5's verifications %q", got)
	}
	// Phase colours come with the words.
	if got := eval[string](t, ctx, `getComputedStyle(document.querySelector('#stream-demo-nightly tr[data-tag="`+tag3+`"] .phase')).color`); got != "rgb(207, 34, 46)" {
		t.Errorf("Rejected is drawn %s", got)
	}
	if got := eval[bool](t, ctx, `document.querySelector('button[data-copy="graph-hint-command"]').hidden`); got {
		t.Errorf("the script did not show the graph hint's copy button")
	}
	if got := text(`#stream-demo-empty p.empty`); got != web.EmptyStream {
		t.Errorf("the empty stream shows %q", got)
	}

	// The stream page.
	do(t, ctx, "following the stream's link",
		chromedp.Click(chromedp.CSS(`#heading-demo-nightly a`)),
		chromedp.WaitVisible(chromedp.CSS(`main[data-events*="view=stream"] #payloads tbody tr`)),
	)
	if got := text(`main h1`); got != "demo/nightly" {
		t.Errorf("stream page h1 %q", got)
	}
	if got, want := texts(`#payloads td.upgrades a.chip`), []string{"… 2026-11-22-120000 0/1 pending", "✓ 2026-11-21-150000 1/2 succeeded", "✗ 2026-11-21-150000 0/2 failed", "✓ 2026-11-20-090000 1/1 succeeded"}; !slices.Equal(got, want) {
		t.Errorf("upgrade chips %q, want %q", got, want)
	}
	do(t, ctx, "filtering the accepted payloads",
		chromedp.SetValue(chromedp.CSS(`#phase`), "Accepted"),
		chromedp.Click(chromedp.CSS(`form.filter button`)),
		chromedp.WaitVisible(chromedp.CSS(`main[data-events*="phase=Accepted"] #payloads tbody tr`)),
	)
	if got, want := texts(`#payloads tbody th.tag a`), []string{tag4, tag2}; !slices.Equal(got, want) {
		t.Errorf("accepted payloads %v, want %v", got, want)
	}

	// A payload page, streamed: the changelog replaces the loading note.
	do(t, ctx, "following a payload's link",
		chromedp.Click(chromedp.CSS(`#payloads tbody tr[data-tag="`+tag4+`"] th.tag a`)),
		chromedp.WaitVisible(chromedp.CSS(`#changelog .changelog-result`)),
	)
	if got := text(`main h1`); got != tag4 {
		t.Errorf("payload page h1 %q", got)
	}
	if got := text(`#pullspec`); got != digestOf(tag4) {
		t.Errorf("pull spec %q", got)
	}
	if got := eval[bool](t, ctx, `(() => { const l = document.querySelector(".changelog-loading"); return !!l && getComputedStyle(l).display === "none"; })()`); !got {
		t.Errorf("the loading note is still shown beside the changelog")
	}
	if got, want := texts(`#verifications h3`), []string{"Blocking", "Informing"}; !slices.Equal(got, want) {
		t.Errorf("verification groups %v", got)
	}
	if got := text(`#changelog .changelog-result p`); !strings.HasPrefix(got, "Changes from "+tag2+" (created 25 hours ago) to "+tag4) {
		t.Errorf("changelog starts %q", got)
	}
	if got := text(`#component-installer ~ .banner.failure`); !strings.Contains(got, "refused: address is private") {
		t.Errorf("the unreachable repository says %q", got)
	}
	if got := texts(`#components tbody tr:first-child td`); len(got) != 5 || got[3] != "https://github.com/example/api.git" || got[4] != "22222222" {
		t.Errorf("the api component shows %q", got)
	}
	// Its Sigstore signatures: the condition beside PayloadSigned, the key to fetch and the
	// cosign command for this payload, which copies like the pull spec.
	if got, want := texts(`table.conditions tbody th`), []string{"PayloadCreated", "PayloadAccepted", "PayloadAudited", "PayloadSigned", "PayloadSigstoreSigned"}; !slices.Equal(got, want) {
		t.Errorf("conditions %v, want %v", got, want)
	}
	if got := text(`p.sigstore`); !strings.Contains(got, sigstoreSignedMessage) || !strings.Contains(got, "Sigstore public key") {
		t.Errorf("the Sigstore line reads %q", got)
	}
	if got := eval[string](t, ctx, `document.querySelector("p.sigstore a").getAttribute("href")`); got != "/signatures/cosign.pub" {
		t.Errorf("the Sigstore public key link is %q", got)
	}
	if got, want := text(`#cosign-verify`), "cosign verify --key cosign.pub --insecure-ignore-tlog=true "+digestOf(tag4); got != want {
		t.Errorf("the cosign command is %q, want %q", got, want)
	}
	do(t, ctx, "copying the cosign command",
		chromedp.WaitVisible(chromedp.CSS(`button.copy[data-copy="cosign-verify"]`)),
		chromedp.Click(chromedp.CSS(`button.copy[data-copy="cosign-verify"]`)),
	)
	waitFor(t, ctx, "the cosign command's copy to be confirmed", `document.querySelector('button.copy[data-copy="cosign-verify"]').textContent === "Copied"`)
	do(t, ctx, "copying the pull spec",
		chromedp.WaitVisible(chromedp.CSS(`button.copy[data-copy="pullspec"]`)),
		chromedp.Click(chromedp.CSS(`button.copy[data-copy="pullspec"]`)),
	)
	waitFor(t, ctx, "the copy to be confirmed", `document.querySelector('button.copy[data-copy="pullspec"]').textContent === "Copied"`)
	do(t, ctx, "choosing another base",
		chromedp.SetValue(chromedp.CSS(`#from`), tag3),
		chromedp.Click(chromedp.CSS(`form.from button`)),
		chromedp.WaitVisible(chromedp.CSS(`#changelog .changelog-result a[href$="`+tag3+`"]`)),
	)
	if got := eval[string](t, ctx, `location.search`); got != "?from="+tag3 {
		t.Errorf("location %q", got)
	}

	// The compare page, from the payload page's stream navigation.
	do(t, ctx, "opening the compare page",
		chromedp.Navigate(base+"/releasestream/nightly/compare"),
		chromedp.WaitVisible(chromedp.CSS(`form.compare`)),
	)
	if got := eval[[]string](t, ctx, `[document.getElementById("from").value, document.getElementById("to").value]`); !slices.Equal(got, []string{tag4, tag5}) {
		t.Errorf("compare preselects %v", got)
	}
	do(t, ctx, "comparing two payloads",
		chromedp.SetValue(chromedp.CSS(`#from`), tag2),
		chromedp.SetValue(chromedp.CSS(`#to`), tag3),
		chromedp.Click(chromedp.CSS(`form.compare button`)),
		chromedp.WaitVisible(chromedp.CSS(`#changelog .changelog-result #component-api`)),
	)
	if got := eval[string](t, ctx, `document.title`); got != "Changes from "+tag2+" to "+tag3+" · Release controller" {
		t.Errorf("compare title %q", got)
	}

	// The upgrade graph, and from a node to its payload.
	do(t, ctx, "opening the upgrade graph",
		chromedp.Click(chromedp.CSS(`nav.stream-nav a[href$="/graph"]`)),
		chromedp.WaitVisible(chromedp.CSS(`svg.upgrade-graph`)),
	)
	if got := eval[int](t, ctx, `document.querySelectorAll("svg.upgrade-graph a.node").length`); got != 5 {
		t.Errorf("%d linked nodes, want 5", got)
	}
	if got, want := eval[[]string](t, ctx, `Array.from(document.querySelectorAll("svg.upgrade-graph path.edge"), (p) => getComputedStyle(p).stroke)`),
		[]string{"rgb(26, 127, 55)", "rgb(207, 34, 46)", "rgb(26, 127, 55)", "rgb(9, 105, 218)"}; !slices.Equal(got, want) {
		t.Errorf("edge colours %v, want %v", got, want)
	}
	do(t, ctx, "following a node",
		chromedp.Click(chromedp.CSS(`svg.upgrade-graph a.node[data-tag="`+tag5+`"] circle`)),
		chromedp.WaitVisible(chromedp.CSS(`#status #verifications`)),
	)
	if got := text(`main h1`); got != tag5 {
		t.Errorf("the node led to %q", got)
	}

	// tag5 is accepted while its page is open: the page follows without a reload.
	eval[string](t, ctx, `window.__marker = "same document"`)
	s, _ := cat.StreamIn("demo", "nightly")
	e, _ := s.Entry(tag5)
	p := e.Payload.DeepCopy()
	p.Status.Phase = v1alpha1.PhaseAccepted
	for i := range p.Status.Verifications[:2] {
		p.Status.Verifications[i].State = v1alpha1.JobSuccess
		p.Status.Verifications[i].Runs[0].State = v1alpha1.JobSuccess
	}
	setPayload(cat, p)
	do(t, ctx, "waiting for the phase to change", chromedp.WaitVisible(chromedp.CSS(`#status .phase.phase-accepted`)))
	if got := eval[string](t, ctx, `window.__marker + " / " + document.getElementById("live").textContent`); got != "same document / Updated" {
		t.Errorf("after the live update: %q", got)
	}
	checkConsole(t, ctx, console)
}

// waitFor waits until a JavaScript expression is true in the page, bounded by testbrowser.StepWait.
func waitFor(t *testing.T, ctx context.Context, what, expression string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, testbrowser.StepWait)
	defer cancel()
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](expression)); err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}
