package web_test

import (
	"context"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/release-controller/release-controller/internal/releaselog"
	"github.com/release-controller/release-controller/internal/server/web"
)

// chromiumPath is where Debian's chromium package installs the browser.
const chromiumPath = "/usr/bin/chromium"

// browserWait bounds each browser step; steps wait for what they look for, never for a time.
const browserWait = 60 * time.Second

// ensureChromium installs Debian's chromium when it is missing. The tests run as root on the
// project's machines; a failed install fails the test, so a missing browser is never mistaken
// for a pass.
func ensureChromium(t *testing.T) {
	t.Helper()
	if _, err := os.Stat(chromiumPath); err == nil {
		return
	}
	t.Logf("%s is missing: installing Debian's chromium with apt-get", chromiumPath)
	for _, args := range [][]string{{"update"}, {"install", "-y", "chromium"}} {
		cmd := exec.CommandContext(t.Context(), "apt-get", args...)
		cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		cmd.Stdout, cmd.Stderr = t.Output(), t.Output()
		if err := cmd.Run(); err != nil {
			t.Fatalf("apt-get %s failed: %v (its output is above); install chromium to run the browser tests", strings.Join(args, " "), err)
		}
	}
	if _, err := os.Stat(chromiumPath); err != nil {
		t.Fatalf("apt-get installed chromium, but %v", err)
	}
}

// newBrowser starts headless Chromium with a fresh profile and returns a tab's context. The
// flags keep Chromium from reaching out to the network, which this machine does not have
// and on which Chromium would otherwise stall.
func newBrowser(t *testing.T) context.Context {
	t.Helper()
	ensureChromium(t)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(t.Context(),
		chromedp.ExecPath(chromiumPath),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true), // the tests run as root
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 900),
	)
	t.Cleanup(cancelAlloc)
	ctx, cancel := chromedp.NewContext(allocCtx)
	t.Cleanup(cancel)
	// The first action starts the browser; it must not run under a step's timeout, which
	// would end the browser with the step.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("starting %s: %v", chromiumPath, err)
	}
	return ctx
}

// do runs browser steps, bounded by browserWait.
func do(t *testing.T, ctx context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, browserWait)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// eval evaluates a JavaScript expression in the page.
func eval[T any](t *testing.T, ctx context.Context, expression string) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, browserWait)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expression))
	if err != nil {
		t.Fatalf("evaluating %s: %v", expression, err)
	}
	return v
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

	// The console, up to a line written now; the iterator keeps the order of the messages.
	eval[any](t, ctx, `console.log("end of test")`)
	for m, err := range console {
		if err != nil {
			t.Fatalf("reading the console: %v", err)
		}
		if m.Text == "end of test" {
			break
		}
		if m.Type == chromedp.ConsoleError || m.IsException() {
			t.Errorf("console: %s (%s:%d)", m, m.URL, m.Line+1)
		}
	}
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
