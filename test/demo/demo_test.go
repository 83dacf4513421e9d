// Package demo runs `release-controller dev` as a user starts it (`make run`), lets its demo
// accept and reject payloads (published with `dev bump`, as the README says), and walks the
// release pages in headless Chromium: index → stream → release → compare → graph, checking
// what a person sees. The REST API is read with a plain HTTP client to know when the demo is
// far enough along; nothing waits for a fixed time.
package demo

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/release-controller/release-controller/internal/testbinary"
)

// chromiumPath is where Debian's chromium package installs the browser (the Makefile's test
// prerequisites install it).
const chromiumPath = "/usr/bin/chromium"

// demoWait bounds each wait for the demo: a payload is built, verified and judged in well
// under a minute on an idle machine; shared CI machines get ten.
const demoWait = 10 * time.Minute

// browserWait bounds each browser step.
const browserWait = 2 * time.Minute

func TestDemoPagesInBrowser(t *testing.T) {
	if _, err := os.Stat(chromiumPath); err != nil {
		t.Fatalf("%s: %v (make test installs Debian's chromium)", chromiumPath, err)
	}
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		t.Fatal("KUBEBUILDER_ASSETS is unset: run `make test`, which builds the control plane")
	}
	dir := t.TempDir()
	binary := filepath.Join(dir, "release-controller")
	if err := testbinary.Build(binary); err != nil {
		t.Fatal(err)
	}
	dataDir := filepath.Join(dir, "data")
	addr, err := testbinary.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	// The build system publishes rarely, so the test decides which builds come.
	dev, err := testbinary.Start(binary, filepath.Join(dir, "dev.log"), "dev", "--data-dir", dataDir,
		"--listen", addr, "--control-plane-bin", assets, "--build-interval", "24h")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dev.Stop(30 * time.Second) })
	base := "http://" + addr

	first := waitTags(t, dev, base, "Accepted", 1)[0]
	bump(t, binary, dataDir, "api")
	second := waitTags(t, dev, base, "Accepted", 2)[0]
	bump(t, binary, dataDir, "web", "--break", "e2e")
	rejected := waitTags(t, dev, base, "Rejected", 1)[0]
	t.Logf("demo: accepted %s then %s, rejected %s", first, second, rejected)

	ctx := newBrowser(t)
	console := chromedp.Console(ctx)

	// The index lists the demo stream with its newest payloads and the /graph hint.
	do(t, ctx, "opening the index", chromedp.Navigate(base+"/"),
		chromedp.WaitVisible(chromedp.CSS(`section.stream table.payloads tbody tr`)))
	text := eval[string](t, ctx, `document.querySelector("main").innerText`)
	for _, want := range []string{"Release streams", "demo/nightly", second, rejected, "Newest accepted: " + second, "/graph"} {
		if !strings.Contains(text, want) {
			t.Errorf("the index does not show %q:\n%s", want, text)
		}
	}

	// Stream page: every payload, newest first, the upgrade into the second one tested.
	do(t, ctx, "following the stream link", chromedp.Click(chromedp.CSS(`section.stream h2 a`)),
		chromedp.WaitVisible(chromedp.CSS(`table.payloads tbody tr`)))
	if got := eval[string](t, ctx, `location.pathname`); got != "/namespaces/demo/releasestream/nightly" {
		t.Errorf("the stream link led to %s", got)
	}
	tags := eval[[]string](t, ctx, `Array.from(document.querySelectorAll("table.payloads tbody tr"), (tr) => tr.dataset.tag)`)
	if len(tags) < 3 || tags[0] != rejected {
		t.Errorf("the stream page lists %v, want the rejected %s first and at least 3 payloads", tags, rejected)
	}
	text = eval[string](t, ctx, `document.querySelector("table.payloads").innerText`)
	if !strings.Contains(text, "succeeded") {
		t.Errorf("the stream page shows no tested upgrade:\n%s", text)
	}

	// Release page of the second accepted payload: pull spec by digest, verifications, the
	// upgrade from the first, components with their revisions and the changelog of api.
	do(t, ctx, "opening the second accepted payload", chromedp.Click(chromedp.CSS(fmt.Sprintf(`table.payloads a[href$="/release/%s"]`, second))),
		chromedp.WaitVisible(chromedp.CSS(`#verifications`)))
	if got := eval[string](t, ctx, `document.querySelector("h1").innerText`); !strings.Contains(got, second) {
		t.Errorf("the release page's heading is %q, want %s", got, second)
	}
	if got := eval[string](t, ctx, `document.getElementById("pullspec").innerText`); !strings.Contains(got, "/demo/release@sha256:") {
		t.Errorf("pull spec %q is not by digest", got)
	}
	if !eval[bool](t, ctx, `!!document.querySelector("button.copy[data-copy=pullspec]:not([hidden])")`) {
		t.Error("the pull spec has no visible copy button")
	}
	do(t, ctx, "waiting for the changelog", chromedp.WaitVisible(chromedp.CSS(`#changelog .changelog-result`)))
	text = eval[string](t, ctx, `document.querySelector("main").innerText`)
	for _, want := range []string{"Accepted", "upgrade", "e2e", first, "Changelog", "api", "web", "worker", "operator"} {
		if !strings.Contains(text, want) {
			t.Errorf("the release page does not show %q:\n%s", want, text)
		}
	}
	if got := eval[string](t, ctx, `document.querySelector("#changelog").innerText`); !strings.Contains(got, "api") || strings.Contains(got, "Could not") {
		t.Errorf("the changelog does not list the api change:\n%s", got)
	}

	// Compare: pick the first and the rejected payload in the selects.
	do(t, ctx, "opening compare", chromedp.Navigate(base+"/releasestream/nightly/compare"),
		chromedp.WaitVisible(chromedp.CSS(`form.compare select#from`)),
		chromedp.SetValue(chromedp.CSS(`select#from`), first),
		chromedp.SetValue(chromedp.CSS(`select#to`), rejected),
		chromedp.Submit(chromedp.CSS(`form.compare`)),
		chromedp.WaitVisible(chromedp.CSS(`#changelog .changelog-result`)))
	if got := eval[string](t, ctx, `location.search`); !strings.Contains(got, "from="+first) || !strings.Contains(got, "to="+rejected) {
		t.Errorf("compare submitted %q", got)
	}
	if got := eval[string](t, ctx, `document.querySelector("#changelog").innerText`); !strings.Contains(got, "web") || !strings.Contains(got, "api") {
		t.Errorf("the comparison does not list api and web:\n%s", got)
	}

	// Graph: an SVG with a node per payload and a green edge for the tested upgrade.
	do(t, ctx, "opening the graph", chromedp.Navigate(base+"/releasestream/nightly/graph"),
		chromedp.WaitVisible(chromedp.CSS(`svg.upgrade-graph`)))
	nodes := eval[[]string](t, ctx, `Array.from(document.querySelectorAll("svg.upgrade-graph .node"), (n) => n.getAttribute("data-tag"))`)
	for _, tag := range []string{first, second, rejected} {
		if !slices.Contains(nodes, tag) {
			t.Errorf("the graph has nodes %v, not %s", nodes, tag)
		}
	}
	if n := eval[int](t, ctx, fmt.Sprintf(`document.querySelectorAll('svg.upgrade-graph path.edge[data-from="%s"][data-to="%s"]').length`, first, second)); n != 1 {
		t.Errorf("the graph draws %d edges from %s to %s, want 1", n, first, second)
	}

	// Errors the pages wrote to the console (a script error, a blocked resource, a CSP
	// violation) up to a line written now.
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


// bump publishes a new build of a demo component, as the README tells users to.
func bump(t *testing.T, binary, dataDir string, args ...string) {
	t.Helper()
	cmd := exec.Command(binary, append([]string{"dev", "bump", "--data-dir", dataDir}, args...)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("dev bump %v: %v\n%s", args, err, out)
	}
}

// waitTags polls the REST API until the demo stream has at least n payloads in phase and
// returns their tags, newest first.
func waitTags(t *testing.T, dev *testbinary.Process, base, phase string, n int) []string {
	t.Helper()
	limit := time.Now().Add(demoWait)
	for {
		if !dev.Running() {
			t.Fatalf("dev exited: %s; the end of its log:\n%s", dev.ExitStatus(), dev.Tail(40))
		}
		body, err := testbinary.Get(context.Background(), base+"/api/v1/releasestream/nightly/tags?phase="+phase)
		if err == nil {
			var answer struct {
				Tags []struct{ Name string } `json:"tags"`
			}
			if err := json.Unmarshal([]byte(body), &answer); err != nil {
				t.Fatalf("tags: %v\n%s", err, body)
			}
			if len(answer.Tags) >= n {
				tags := make([]string, len(answer.Tags))
				for i, tag := range answer.Tags {
					tags[i] = tag.Name
				}
				return tags
			}
		}
		if time.Now().After(limit) {
			t.Fatalf("the demo had fewer than %d %s payloads after %s (last: %v); the end of the dev log:\n%s", n, phase, demoWait, err, dev.Tail(40))
		}
		time.Sleep(time.Second)
	}
}

// newBrowser starts headless Chromium with a fresh profile; the flags keep it off the
// network, which the test machines do not have.
func newBrowser(t *testing.T) context.Context {
	t.Helper()
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(t.Context(),
		chromedp.ExecPath(chromiumPath),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("no-first-run", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 900),
	)
	t.Cleanup(cancelAlloc)
	ctx, cancel := chromedp.NewContext(allocCtx)
	t.Cleanup(cancel)
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("starting %s: %v", chromiumPath, err)
	}
	return ctx
}

func do(t *testing.T, ctx context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, browserWait)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

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

