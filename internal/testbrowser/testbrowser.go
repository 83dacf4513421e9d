// Package testbrowser drives headless Chromium (Debian's chromium package, which `make test`
// installs) for the tests that check pages the way a person sees them. Steps wait for what
// they look for, never for a time; each is bounded so a broken page fails instead of hanging.
package testbrowser

import (
	"context"
	"iter"
	"os"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// ChromiumPath is where Debian's chromium package installs the browser.
const ChromiumPath = "/usr/bin/chromium"

// StepWait bounds each browser step.
const StepWait = 2 * time.Minute

// New starts headless Chromium with a fresh profile and returns a tab's context; the browser
// ends with the test. The flags keep Chromium off the network, which the test machines do not
// have and on which it would otherwise stall.
func New(t *testing.T) context.Context {
	t.Helper()
	if _, err := os.Stat(ChromiumPath); err != nil {
		t.Fatalf("%v: run `make chromium` (make test does) to install Debian's chromium", err)
	}
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(t.Context(),
		chromedp.ExecPath(ChromiumPath),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true), // the tests may run as root
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
		t.Fatalf("starting %s: %v", ChromiumPath, err)
	}
	return ctx
}

// Do runs browser steps, bounded by StepWait; what names them in the failure.
func Do(t *testing.T, ctx context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, StepWait)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// Eval evaluates a JavaScript expression in the page.
func Eval[T any](t *testing.T, ctx context.Context, expression string) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, StepWait)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expression))
	if err != nil {
		t.Fatalf("evaluating %s: %v", expression, err)
	}
	return v
}

// CheckConsole fails the test for the errors the pages wrote to the console (a script error,
// a blocked resource, a CSP violation) up to a line it writes now; console is
// chromedp.Console(ctx), taken before the first page loaded.
func CheckConsole(t *testing.T, ctx context.Context, console iter.Seq2[chromedp.ConsoleMessage, error]) {
	t.Helper()
	Eval[any](t, ctx, `console.log("end of test")`)
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
