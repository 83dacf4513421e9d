//go:build !unit

// Package demo runs `release-controller dev` as a user starts it (`make run`), lets its demo
// accept and reject payloads (published with `dev bump`, as the README says), and walks the
// release pages in headless Chromium: index → stream → release → compare → graph → health,
// checking what a person sees; then follows the demo pipeline to prod with the two approval
// commands dev printed (checking on the way that dev's /metrics serves every metric the
// shipped alerts and dashboard name), holds it with a freeze, rejects a payload for prod and
// sees a payload that fails dev's smoke check rolled back, on the pipeline's page too. It also checks what the demo's two platforms give a
// consumer: an image index of both, a signature of each platform's image, a Cincinnati graph
// per architecture, and a stream that refuses a component built for one platform only; and
// that the cosign CLI, run as dev printed it, verifies the Sigstore signature and each
// attestation of the newest accepted payload and refuses another key. The
// REST API is read with a plain HTTP client to know when the demo is far enough along;
// nothing waits for a fixed time.
package demo

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/go-logr/logr"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	ocitypes "github.com/google/go-containerregistry/pkg/v1/types"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/release-controller/release-controller/api/v1alpha1"
	devdemo "github.com/release-controller/release-controller/internal/devenv/demo"
	"github.com/release-controller/release-controller/internal/manager"
	"github.com/release-controller/release-controller/internal/monitoring"
	"github.com/release-controller/release-controller/internal/registryclient"
	"github.com/release-controller/release-controller/internal/releaseimage"
	"github.com/release-controller/release-controller/internal/server/catalog"
	"github.com/release-controller/release-controller/internal/testbinary"
	"github.com/release-controller/release-controller/internal/testbrowser"
	"github.com/release-controller/release-controller/internal/testenv"
)

// demoWait bounds each wait for the demo: a payload is built, verified and judged in well
// under a minute on an idle machine; shared CI machines get ten.
const demoWait = 10 * time.Minute

func TestDemoPagesInBrowser(t *testing.T) {
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

	first, flaky := waitAccepted(t, dev, base, binary, dataDir, 1, 0)
	bump(t, binary, dataDir, "api")
	second, _ := waitAccepted(t, dev, base, binary, dataDir, 2, flaky)
	bump(t, binary, dataDir, "web", "--break", "e2e")
	rejected := waitBroken(t, dev, base)
	t.Logf("demo: accepted %s then %s, rejected %s", first, second, rejected)

	ctx := testbrowser.New(t)
	console := chromedp.Console(ctx)

	// The index lists the demo stream with its newest payloads and the /graph hint.
	testbrowser.Do(t, ctx, "opening the index", chromedp.Navigate(base+"/"),
		chromedp.WaitVisible(chromedp.CSS(`section.stream table.payloads tbody tr`)))
	text := testbrowser.Eval[string](t, ctx, `document.querySelector("main").innerText`)
	for _, want := range []string{"Release streams", "demo/nightly", second, rejected, "Newest accepted: " + second, "/graph"} {
		if !strings.Contains(text, want) {
			t.Errorf("the index does not show %q:\n%s", want, text)
		}
	}

	// Stream page: every payload, newest first, the upgrade into the second one tested.
	testbrowser.Do(t, ctx, "following the stream link", chromedp.Click(chromedp.CSS(`section.stream h2 a`)),
		chromedp.WaitVisible(chromedp.CSS(`table.payloads tbody tr`)))
	if got := testbrowser.Eval[string](t, ctx, `location.pathname`); got != "/namespaces/demo/releasestream/nightly" {
		t.Errorf("the stream link led to %s", got)
	}
	tags := testbrowser.Eval[[]string](t, ctx, `Array.from(document.querySelectorAll("table.payloads tbody tr"), (tr) => tr.dataset.tag)`)
	if len(tags) < 3 || tags[0] != rejected {
		t.Errorf("the stream page lists %v, want the rejected %s first and at least 3 payloads", tags, rejected)
	}
	text = testbrowser.Eval[string](t, ctx, `document.querySelector("table.payloads").innerText`)
	if !strings.Contains(text, "succeeded") {
		t.Errorf("the stream page shows no tested upgrade:\n%s", text)
	}

	// Release page of the second accepted payload: pull spec by digest, verifications, the
	// upgrade from the first, components with their revisions and the changelog of api.
	testbrowser.Do(t, ctx, "opening the second accepted payload", chromedp.Click(chromedp.CSS(fmt.Sprintf(`table.payloads a[href$="/release/%s"]`, second))),
		chromedp.WaitVisible(chromedp.CSS(`#verifications`)))
	if got := testbrowser.Eval[string](t, ctx, `document.querySelector("h1").innerText`); !strings.Contains(got, second) {
		t.Errorf("the release page's heading is %q, want %s", got, second)
	}
	if got := testbrowser.Eval[string](t, ctx, `document.getElementById("pullspec").innerText`); !strings.Contains(got, "/demo/release@sha256:") {
		t.Errorf("pull spec %q is not by digest", got)
	}
	// The page streams until its changelog is in; the script (which shows the copy button)
	// runs once the page is complete.
	testbrowser.Do(t, ctx, "waiting for the changelog and the copy button",
		chromedp.WaitVisible(chromedp.CSS(`#changelog .changelog-result`)),
		chromedp.WaitVisible(chromedp.CSS(`button.copy[data-copy=pullspec]`)))
	text = testbrowser.Eval[string](t, ctx, `document.querySelector("main").innerText`)
	for _, want := range []string{"Accepted", "upgrade", "e2e", first, "Changelog", "api", "web", "worker", "operator"} {
		if !strings.Contains(text, want) {
			t.Errorf("the release page does not show %q:\n%s", want, text)
		}
	}
	if got := testbrowser.Eval[string](t, ctx, `document.querySelector("#changelog").innerText`); !strings.Contains(got, "api") || strings.Contains(got, "Could not") ||
		strings.Contains(got, "not fetched") || strings.Contains(got, "unavailable") {
		// (dev allows its own file:// repositories, and no other folder)
		t.Errorf("the changelog does not list the api change:\n%s", got)
	}

	// Audited and signed: the page says by which key once the audit controller got to it
	// (live, over SSE), and the printed verify command checks the signature as a consumer.
	testbrowser.Do(t, ctx, "waiting for the signature", chromedp.WaitVisible(chromedp.CSS(`p.signed`)))
	signedLine := testbrowser.Eval[string](t, ctx, `document.querySelector("p.signed").innerText`)
	pullSpec := testbrowser.Eval[string](t, ctx, `document.getElementById("pullspec").innerText`)
	checkSignature(t, dev, binary, pullSpec, signedLine)
	checkSigstore(t, ctx, dev, binary, dataDir, pullSpec)
	checkPlatforms(t, dev, base, binary, pullSpec, first, second, rejected)

	// Compare: pick the first and the rejected payload in the selects.
	testbrowser.Do(t, ctx, "opening compare", chromedp.Navigate(base+"/releasestream/nightly/compare"),
		chromedp.WaitVisible(chromedp.CSS(`form.compare select#from`)),
		chromedp.SetValue(chromedp.CSS(`select#from`), first),
		chromedp.SetValue(chromedp.CSS(`select#to`), rejected),
		chromedp.Submit(chromedp.CSS(`form.compare`)),
		chromedp.WaitVisible(chromedp.CSS(`#changelog .changelog-result`)))
	if got := testbrowser.Eval[string](t, ctx, `location.search`); !strings.Contains(got, "from="+first) || !strings.Contains(got, "to="+rejected) {
		t.Errorf("compare submitted %q", got)
	}
	if got := testbrowser.Eval[string](t, ctx, `document.querySelector("#changelog").innerText`); !strings.Contains(got, "web") || !strings.Contains(got, "api") {
		t.Errorf("the comparison does not list api and web:\n%s", got)
	}

	// The first accepted payload had nothing to upgrade from: its upgrade check is Skipped.
	testbrowser.Do(t, ctx, "opening the first accepted payload", chromedp.Navigate(base+"/releasetag/"+first),
		chromedp.WaitVisible(chromedp.CSS(`#verification-upgrade`)))
	if got := testbrowser.Eval[string](t, ctx, `document.getElementById("verification-upgrade").innerText`); !strings.Contains(got, "Skipped") || !strings.Contains(got, "no earlier accepted payload") {
		t.Errorf("the first payload's upgrade check reads:\n%s", got)
	}

	// Graph: an SVG with a node per payload and a green edge for the tested upgrade.
	testbrowser.Do(t, ctx, "opening the graph", chromedp.Navigate(base+"/releasestream/nightly/graph"),
		chromedp.WaitVisible(chromedp.CSS(`svg.upgrade-graph`)))
	nodes := testbrowser.Eval[[]string](t, ctx, `Array.from(document.querySelectorAll("svg.upgrade-graph .node"), (n) => n.getAttribute("data-tag"))`)
	for _, tag := range []string{first, second, rejected} {
		if !slices.Contains(nodes, tag) {
			t.Errorf("the graph has nodes %v, not %s", nodes, tag)
		}
	}
	if n := testbrowser.Eval[int](t, ctx, fmt.Sprintf(`document.querySelectorAll('svg.upgrade-graph path.edge[data-from="%s"][data-to="%s"]').length`, first, second)); n != 1 {
		t.Errorf("the graph draws %d edges from %s to %s, want 1", n, first, second)
	}

	checkHealth(t, ctx, base)

	checkPipeline(t, ctx, dev, base, binary, dataDir, second)

	testbrowser.CheckConsole(t, ctx, console)

	checkMissingPlatform(t, dev, binary, dataDir)
}

// checkHealth opens the stream's health page from the stream page: both charts drawn, the
// figures those of its JSON, and the rejection laid at e2e's door, with web — the component
// whose broken build the test published — its suspect.
func checkHealth(t *testing.T, ctx context.Context, base string) {
	t.Helper()
	testbrowser.Do(t, ctx, "opening the health page from the stream page", chromedp.Navigate(base+"/releasestream/nightly"),
		chromedp.WaitVisible(chromedp.CSS(`nav.stream-nav a[href$="/health"]`)),
		chromedp.Click(chromedp.CSS(`nav.stream-nav a[href$="/health"]`)),
		chromedp.WaitVisible(chromedp.CSS(`svg#verdict-time-chart`)))
	body, err := testbinary.Get(context.Background(), base+"/releasestream/nightly/health?format=json")
	if err != nil {
		t.Fatal(err)
	}
	var h catalog.Health
	if err := json.Unmarshal([]byte(body), &h); err != nil {
		t.Fatalf("health: %v\n%s", err, body)
	}
	if h.Accepted < 2 || h.Rejected < 1 || h.VerdictP50 <= 0 {
		t.Errorf("health figures: %+v", h)
	}
	judged := 0 // days with a verdict: each has a bar and two points
	for _, d := range h.Days {
		if d.Verdicts > 0 {
			judged++
		}
	}
	if n := testbrowser.Eval[int](t, ctx, `document.querySelectorAll("svg#acceptance-chart rect").length`); n != judged || judged == 0 {
		t.Errorf("the acceptance chart draws %d bars for %d days with verdicts", n, judged)
	}
	if n := testbrowser.Eval[int](t, ctx, `document.querySelectorAll("svg#verdict-time-chart circle").length`); n != 2*judged {
		t.Errorf("the time-to-verdict chart draws %d points for p50 and p90 of %d days", n, judged)
	}
	summary := testbrowser.Eval[string](t, ctx, `document.getElementById("health-acceptance").textContent`)
	if want := fmt.Sprintf("%d rejected, %d failed, %d waiting for a verdict.", h.Rejected, h.Failed, h.Waiting); !strings.Contains(summary, want) {
		t.Errorf("the page says %q; its JSON %q", summary, want)
	}
	// The demo runs e2e once per platform (e2e-amd64, e2e-arm64); the broken build fails them.
	i := slices.IndexFunc(h.Verifications, func(v catalog.VerificationHealth) bool { return strings.HasPrefix(v.Name, "e2e") && v.Rejected > 0 })
	if i < 0 {
		t.Fatalf("no e2e check rejected a payload: %+v", h.Verifications)
	}
	e2e := h.Verifications[i]
	if !slices.ContainsFunc(e2e.Suspects, func(s catalog.Suspect) bool { return s.Component == "web" }) {
		t.Errorf("%s: suspects %+v; want web among them", e2e.Name, e2e.Suspects)
	}
	row := testbrowser.Eval[string](t, ctx, `Array.from(document.querySelectorAll("#health-verifications tbody tr")).find((tr) => tr.querySelector("th").textContent.startsWith(`+strconv.Quote(e2e.Name+" ")+`)).textContent`)
	if !strings.Contains(row, "web (") {
		t.Errorf("the page's %s row does not name web: %q", e2e.Name, row)
	}
}

// checkMetrics scrapes dev's /metrics (the controllers' and the API server's, one process)
// while prod waits for approval: every metric the shipped alerts and dashboard name is
// served, but the counters of failures that have not happened, which appear with their first
// one (internal/monitoring checks that the binary registers them).
func checkMetrics(t *testing.T, base string) {
	t.Helper()
	root, err := testenv.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	exprs, err := monitoring.Expressions(root)
	if err != nil {
		t.Fatal(err)
	}
	names, err := monitoring.MetricNames(exprs)
	if err != nil {
		t.Fatal(err)
	}
	body, err := testbinary.Get(context.Background(), base+"/metrics")
	if err != nil {
		t.Fatal(err)
	}
	served, err := testbinary.ParseMetrics(body)
	if err != nil {
		t.Fatal(err)
	}
	notYet := map[string]bool{"release_controller_import_errors_total": true, "release_controller_stream_step_failures_total": true}
	for _, name := range names {
		family := monitoring.Family(name, func(n string) bool { return served[n] != nil })
		if served[family] == nil && !notYet[family] {
			t.Errorf("the alerts or the dashboard name %s; dev's /metrics has no %s", name, family)
		}
	}
}

// checkPipeline follows the demo pipeline with the commands dev printed: the newest accepted
// payload passes dev's smoke check and reaches staging (on the "remote" cluster), prod waits
// for two approvers and the two approval commands promote it; a stop-the-line holds the next
// payload out of dev until it ends; the reject command refuses that payload for prod; and a
// payload whose component breaks smoke is rolled back in dev and never promoted further. The
// pipeline's page shows each of these.
func checkPipeline(t *testing.T, ctx context.Context, dev *testbinary.Process, base, binary, dataDir, accepted string) {
	t.Helper()
	cmds := pipelineCommands(t, dev)
	if !strings.Contains(cmds.approveKey, "--key-file "+filepath.Join(dataDir, "prod-approval-key")) ||
		!strings.Contains(cmds.approveToken, "--token-file "+filepath.Join(dataDir, "release-manager-token")) {
		t.Fatalf("dev printed no approval commands with the key and the release manager's token: %+v", cmds)
	}
	c := demoClient(t, dataDir)
	waitPipeline := func(what string, done func(p *v1alpha1.Pipeline, envs []v1alpha1.EnvironmentStatus) bool) {
		t.Helper()
		waitFor(t, dev, "the demo pipeline getting to "+what, func() (bool, string) {
			var p v1alpha1.Pipeline
			err := c.Get(context.Background(), types.NamespacedName{Namespace: "demo", Name: "nightly"}, &p)
			return err == nil && len(p.Status.Environments) == 3 && done(&p, p.Status.Environments), fmt.Sprintf("%v: %+v", err, p.Status)
		})
	}
	at := func(e v1alpha1.EnvironmentStatus, rev string) bool { return e.Revision == rev && e.Ready }
	verified := func(e v1alpha1.EnvironmentStatus, rev string) bool {
		return e.LastVerified == rev && e.Verification != nil && e.Verification.Revision == rev && e.Verification.State == v1alpha1.JobSuccess
	}
	waiting := func(e v1alpha1.EnvironmentStatus, rev string) bool {
		return e.WaitingApproval != nil && e.WaitingApproval.Revision == rev
	}
	waitPipeline(accepted+" verified in dev, in staging, prod waiting", func(_ *v1alpha1.Pipeline, envs []v1alpha1.EnvironmentStatus) bool {
		return at(envs[0], accepted) && verified(envs[0], accepted) && at(envs[1], accepted) && waiting(envs[2], accepted)
	})
	checkMetrics(t, base)
	// The printed commands, as a user pastes them: kubectl reads the waiting revision. The
	// signed key is one approver of the two the policy needs; the release manager the other.
	if out, err := paste(binary, cmds.approveKey); err != nil || !strings.Contains(string(out), "approved "+accepted) || !strings.Contains(string(out), "1 of 2 approvals") {
		t.Fatalf("%s: %v\n%s", cmds.approveKey, err, out)
	}
	if out, err := paste(binary, cmds.approveToken); err != nil || !strings.Contains(string(out), "the approval policy is met (2 of 2: hmac:prod-approvals, system:serviceaccount:demo:release-manager)") {
		t.Fatalf("%s: %v\n%s", cmds.approveToken, err, out)
	}
	waitPipeline(accepted+" in prod", func(_ *v1alpha1.Pipeline, envs []v1alpha1.EnvironmentStatus) bool {
		return at(envs[2], accepted) && envs[2].LastPromotion != nil && envs[2].LastPromotion.Approver == "system:serviceaccount:demo:release-manager"
	})

	// bumpAccepted publishes a build and returns the payload of it the stream accepted.
	bumpAccepted := func(args ...string) string {
		t.Helper()
		n, rejected := len(waitTags(t, dev, base, "Accepted", 0)), len(waitTags(t, dev, base, "Rejected", 0))
		bump(t, binary, dataDir, args...)
		tag, _ := waitAccepted(t, dev, base, binary, dataDir, n+1, rejected)
		return tag
	}

	// A stop-the-line holds the next payload out of dev.
	if out, err := paste(binary, cmds.freezeStart); err != nil {
		t.Fatalf("%s: %v\n%s", cmds.freezeStart, err, out)
	}
	waitPipeline("frozen", func(p *v1alpha1.Pipeline, envs []v1alpha1.EnvironmentStatus) bool {
		return meta.IsStatusConditionTrue(p.Status.Conditions, v1alpha1.ConditionFrozen) && envs[0].Frozen != nil
	})
	// (web's next build repairs the e2e breakage published above.)
	third := bumpAccepted("web")
	var p v1alpha1.Pipeline
	if err := c.Get(context.Background(), types.NamespacedName{Namespace: "demo", Name: "nightly"}, &p); err != nil {
		t.Fatal(err)
	}
	if d := p.Status.Environments[0]; d.Revision != accepted || d.Frozen == nil || d.Frozen.Freeze != "demo/incident" {
		t.Errorf("%s was accepted during the freeze; dev is at %s, frozen %+v", third, d.Revision, d.Frozen)
	}
	if out, err := paste(binary, cmds.freezeEnd); err != nil {
		t.Fatalf("%s: %v\n%s", cmds.freezeEnd, err, out)
	}
	waitPipeline(third+" verified in dev, in staging, prod waiting, once the freeze ended", func(p *v1alpha1.Pipeline, envs []v1alpha1.EnvironmentStatus) bool {
		return meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ConditionFrozen) == nil &&
			verified(envs[0], third) && at(envs[1], third) && waiting(envs[2], third)
	})

	// Rejected for prod: it is never promoted there.
	if out, err := paste(binary, cmds.reject); err != nil || !strings.Contains(string(out), "rejected "+third) {
		t.Fatalf("%s: %v\n%s", cmds.reject, err, out)
	}
	waitPipeline(third+" rejected for prod", func(_ *v1alpha1.Pipeline, envs []v1alpha1.EnvironmentStatus) bool {
		r := envs[2].Rejections
		return envs[2].WaitingApproval == nil && len(r) == 1 && r[0].Revision == third && r[0].By == "hmac:prod-approvals" && at(envs[2], accepted)
	})

	// The stream accepts a payload whose web breaks smoke; dev's smoke check fails, and dev
	// goes back to the last revision that passed there.
	broken := bumpAccepted("web", "--break", "smoke")
	waitPipeline(broken+" rolled back in dev", func(p *v1alpha1.Pipeline, envs []v1alpha1.EnvironmentStatus) bool {
		rb := envs[0].LastRollback
		return rb != nil && rb.From == broken && rb.To == third && at(envs[0], third) && at(envs[1], third) &&
			slices.ContainsFunc(p.Status.Unpromotable, func(u v1alpha1.UnpromotableRevision) bool { return u.Revision == broken && u.Environment == "dev" })
	})

	testbrowser.Do(t, ctx, "opening the pipeline's page", chromedp.Navigate(base+"/pipelines/demo/nightly"),
		chromedp.WaitVisible(chromedp.CSS(`ol.environments`)))
	envText := func(env string) string {
		return testbrowser.Eval[string](t, ctx, `document.querySelector('li.environment[data-env="`+env+`"]').innerText`)
	}
	for env, wants := range map[string][]string{
		"dev": {"Runs smoke after each rollout; on failure: rollback.", "Last revision verified: " + third,
			"Rolled back from " + broken + " to " + third, broken + ":"},
		"staging": {"A revision soaks 1 min here before prod takes it."},
		"prod":    {"2 distinct approvers", third + " by hmac:prod-approvals", "(never promoted here)"},
	} {
		text := envText(env)
		for _, want := range wants {
			if !strings.Contains(text, want) {
				t.Errorf("the pipeline's page does not show %q in %s:\n%s", want, env, text)
			}
		}
	}
}

// bannerPipeline is what dev printed to approve, reject and freeze.
type bannerPipeline struct {
	approveKey, approveToken, reject, freezeStart, freezeEnd string
}

// pipelineCommands reads the pipeline's commands dev printed.
func pipelineCommands(t *testing.T, dev *testbinary.Process) bannerPipeline {
	t.Helper()
	log, err := os.ReadFile(dev.LogPath)
	if err != nil {
		t.Fatal(err)
	}
	var cmds bannerPipeline
	for _, line := range strings.Split(string(log), "\n") {
		line = strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(line, "release-controller pipeline approve demo/nightly prod ") && strings.Contains(line, "--key-file"):
			cmds.approveKey = line
		case strings.HasPrefix(line, "release-controller pipeline approve demo/nightly prod ") && strings.Contains(line, "--token-file"):
			cmds.approveToken = line
		case strings.HasPrefix(line, "release-controller pipeline reject demo/nightly prod "):
			cmds.reject = line
		case strings.HasPrefix(line, "release-controller freeze start incident -n demo "):
			cmds.freezeStart = line
		case strings.HasPrefix(line, "release-controller freeze end incident -n demo "):
			cmds.freezeEnd = line
		}
	}
	if cmds.approveKey == "" || cmds.approveToken == "" || cmds.reject == "" || cmds.freezeStart == "" || cmds.freezeEnd == "" {
		t.Fatalf("dev did not print every pipeline command: %+v", cmds)
	}
	return cmds
}

// checkSignature runs the verify command dev printed on the payload pullSpec (by digest, as
// the page shows it), and checks that it names the key the page names.
func checkSignature(t *testing.T, dev *testbinary.Process, binary, pullSpec, signedLine string) {
	t.Helper()
	repository, _, _ := strings.Cut(pullSpec, "@")
	command := strings.Replace(verifyCommand(t, dev), repository+":TAG", pullSpec, 1)
	out, err := paste(binary, command)
	if err != nil || !strings.Contains(string(out), "verified") {
		t.Fatalf("%s: %v\n%s", command, err, out)
	}
	keyID := strings.Fields(strings.TrimPrefix(signedLine, "The payload is signed by "))[0]
	if !strings.Contains(string(out), "signed by "+keyID) {
		t.Errorf("verify says %q; the page says %q", out, signedLine)
	}
}

// verifyCommand is the verify command dev printed, for the payload REPOSITORY:TAG.
func verifyCommand(t *testing.T, dev *testbinary.Process) string {
	t.Helper()
	log, err := os.ReadFile(dev.LogPath)
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(log), "Check a payload's signature as a consumer would:\n")
	verify, _, _ := strings.Cut(strings.TrimSpace(after), "\n")
	if !ok || !strings.HasPrefix(verify, "release-controller payload verify ") || !strings.Contains(verify, "/demo/release:TAG") {
		t.Fatalf("dev printed no verify command: %q", verify)
	}
	return verify
}

// paste runs a command dev printed as a user pastes it into a shell, with the built binary
// first on the PATH, and returns its output.
func paste(binary, command string) ([]byte, error) {
	cmd := exec.Command("sh", "-c", command)
	cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(binary)+string(os.PathListSeparator)+os.Getenv("PATH"))
	return cmd.CombinedOutput()
}

// checkPlatforms checks what the demo's two platforms give a consumer of the accepted payload
// (whose image index pullSpec is, as its release page shows it; first is the accepted payload
// before it, rejected the payload e2e rejected): the payload's tag is an OCI image index of an
// image per platform, each image of its platform; the printed verify command with --platform
// linux/arm64 verifies the arm64 image's signature; and the Cincinnati graph of the demo's
// candidate channel (every accepted payload, at once) offers arm64 clusters the arm64 image
// and multi-architecture clusters the index, and never the rejected payload.
func checkPlatforms(t *testing.T, dev *testbinary.Process, base, binary, pullSpec, first, accepted, rejected string) {
	t.Helper()
	ctx := context.Background()
	repository, indexDigest, _ := strings.Cut(pullSpec, "@")
	tagRef := repository + ":" + accepted

	// The image index, read as `crane manifest` reads it.
	ref, err := name.ParseReference(tagRef)
	if err != nil {
		t.Fatal(err)
	}
	desc, err := remote.Get(ref, registryclient.New().Options(ctx)...)
	if err != nil {
		t.Fatalf("reading %s: %v", tagRef, err)
	}
	if desc.MediaType != ocitypes.OCIImageIndex || desc.Digest.String() != indexDigest {
		t.Fatalf("%s is a %s of digest %s; want an OCI image index, %s as the release page says", tagRef, desc.MediaType, desc.Digest, pullSpec)
	}
	images, err := releaseimage.ImagesByPlatform(desc)
	if err != nil {
		t.Fatal(err)
	}
	platforms := releaseimage.PlatformNames(images)
	if !slices.Equal(slices.Sorted(slices.Values(platforms)), slices.Sorted(slices.Values(devdemo.Platforms))) {
		t.Fatalf("the index %s has images of %v; want one of each of %v", tagRef, platforms, devdemo.Platforms)
	}
	index, err := desc.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	digests := map[string]v1.Hash{}
	for _, im := range images {
		digests[im.Platform] = im.Digest
		img, err := index.Image(im.Digest)
		if err != nil {
			t.Fatalf("the %s image of %s: %v", im.Platform, tagRef, err)
		}
		config, err := img.ConfigFile()
		if err != nil {
			t.Fatalf("the %s image of %s: %v", im.Platform, tagRef, err)
		}
		if got := config.OS + "/" + config.Architecture; got != im.Platform {
			t.Errorf("the index lists %s for %s; its configuration says %s", im.Digest, im.Platform, got)
		}
	}
	arm64Image := repository + "@" + digests["linux/arm64"].String()

	// The printed verify command, by tag, for a consumer that pulls linux/arm64: the
	// signature of that platform's image.
	command := strings.Replace(verifyCommand(t, dev), repository+":TAG", tagRef, 1) + " --platform linux/arm64"
	if out, err := paste(binary, command); err != nil || !strings.Contains(string(out), "verified: "+arm64Image+" signed by ") {
		t.Errorf("%s: %v; want %s verified\n%s", command, err, arm64Image, out)
	}

	// The graph per architecture: arm64 clusters get the arm64 image, with the tested upgrade
	// from the payload before; multi-architecture clusters get the index. The demo stream
	// declares its channels, so /graph answers for those names only.
	arm64 := cincinnatiGraph(t, base, "channel=candidate&arch=arm64")
	if got := arm64.payload(accepted); got != arm64Image {
		t.Errorf("graph?arch=arm64 offers %s as %q; want its arm64 image %s", accepted, got, arm64Image)
	}
	if !arm64.hasEdge(first, accepted) {
		t.Errorf("graph?arch=arm64 has no edge %s → %s: %+v", first, accepted, arm64)
	}
	if got := cincinnatiGraph(t, base, "channel=candidate&arch=multi").payload(accepted); got != pullSpec {
		t.Errorf("graph?arch=multi offers %s as %q; want its index %s", accepted, got, pullSpec)
	}
	// The channel takes accepted payloads only: the rejected one is no node of it, and no
	// edge leads into it.
	candidate := cincinnatiGraph(t, base, "channel=candidate")
	if candidate.payload(rejected) != "" || len(candidate.into(rejected)) > 0 {
		t.Errorf("graph?channel=candidate offers the rejected %s (edges from %v)", rejected, candidate.into(rejected))
	}
	if !candidate.hasEdge(first, accepted) {
		t.Errorf("graph?channel=candidate has no edge %s → %s: %+v", first, accepted, candidate)
	}
}

// cincinnati is a /graph answer.
type cincinnati struct {
	Nodes []struct {
		Version string `json:"version"`
		Payload string `json:"payload"`
	} `json:"nodes"`
	Edges [][2]int `json:"edges"`
	// ConditionalEdges are the edges offered with a risk: the demo's sample UpgradeRisk and
	// the risks its stream detects.
	ConditionalEdges []struct {
		Edges []struct {
			From string `json:"from"`
			To   string `json:"to"`
		} `json:"edges"`
	} `json:"conditionalEdges"`
}

// cincinnatiGraph reads /graph?query.
func cincinnatiGraph(t *testing.T, base, query string) cincinnati {
	t.Helper()
	body, err := testbinary.Get(context.Background(), base+"/graph?"+query)
	if err != nil {
		t.Fatal(err)
	}
	var g cincinnati
	if err := json.Unmarshal([]byte(body), &g); err != nil {
		t.Fatalf("graph?%s: %v\n%s", query, err, body)
	}
	for _, e := range g.Edges {
		if min(e[0], e[1]) < 0 || max(e[0], e[1]) >= len(g.Nodes) {
			t.Fatalf("graph?%s has an edge %v between %d nodes", query, e, len(g.Nodes))
		}
	}
	return g
}

// payload is the payload of the node of version, "" without one.
func (g cincinnati) payload(version string) string {
	for _, n := range g.Nodes {
		if n.Version == version {
			return n.Payload
		}
	}
	return ""
}

// into lists the versions the edges into version come from, plain or conditional.
func (g cincinnati) into(version string) []string {
	var from []string
	for _, e := range g.Edges {
		if g.Nodes[e[1]].Version == version {
			from = append(from, g.Nodes[e[0]].Version)
		}
	}
	for _, c := range g.ConditionalEdges {
		for _, e := range c.Edges {
			if e.To == version {
				from = append(from, e.From)
			}
		}
	}
	return from
}

// hasEdge reports whether an edge leads from version from to version to.
func (g cincinnati) hasEdge(from, to string) bool {
	return slices.Contains(g.into(to), from)
}

// checkMissingPlatform publishes a build of operator for linux/amd64 only, as `dev bump
// --break platform` does, and waits until the stream's Imported condition refuses it for
// lacking linux/arm64.
func checkMissingPlatform(t *testing.T, dev *testbinary.Process, binary, dataDir string) {
	t.Helper()
	c := demoClient(t, dataDir)
	bump(t, binary, dataDir, "operator", "--break", "platform")
	const missing = "linux/arm64"
	waitFor(t, dev, "the stream refusing operator built without "+missing, func() (bool, string) {
		var s v1alpha1.ReleaseStream
		if err := c.Get(context.Background(), types.NamespacedName{Namespace: "demo", Name: "nightly"}, &s); err != nil {
			return false, err.Error()
		}
		cond := meta.FindStatusCondition(s.Status.Conditions, v1alpha1.ConditionImported)
		if cond == nil {
			return false, "no Imported condition"
		}
		return cond.Status == metav1.ConditionFalse && strings.Contains(cond.Message, "operator (") &&
			strings.Contains(cond.Message, "lacks platform "+missing+" of the stream"), fmt.Sprintf("%s: %s", cond.Status, cond.Message)
	})
}

// demoClient is a client of dev's API server, through the kubeconfig dev wrote.
func demoClient(t *testing.T, dataDir string) client.Client {
	t.Helper()
	ctrl.SetLogger(logr.Discard())
	cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(dataDir, "kubeconfig"))
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg, client.Options{Scheme: manager.NewScheme()})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// waitFor polls done every second until it holds, for at most demoWait; done also says what
// it saw, for the failure.
func waitFor(t *testing.T, dev *testbinary.Process, what string, done func() (bool, string)) {
	t.Helper()
	limit := time.Now().Add(demoWait)
	for {
		ok, saw := done()
		if ok {
			return
		}
		if time.Now().After(limit) {
			t.Fatalf("%s: not after %s (last: %s); the end of the dev log:\n%s", what, demoWait, saw, dev.Tail(40))
		}
		time.Sleep(time.Second)
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

// waitAccepted waits until the demo stream has n accepted payloads and returns the newest, and
// how many payloads it rejected by then. The demo's flaky check can fail every retry (about 4%
// of payloads): a payload rejected beyond the rejected already known gets a fresh build, as a
// user would bump a component, since the build system publishes only every 24h here.
func waitAccepted(t *testing.T, dev *testbinary.Process, base, binary, dataDir string, n, rejected int) (string, int) {
	t.Helper()
	limit := time.Now().Add(demoWait)
	for {
		if tags := waitTags(t, dev, base, "Accepted", 0); len(tags) >= n {
			return tags[0], len(waitTags(t, dev, base, "Rejected", 0))
		}
		if now := len(waitTags(t, dev, base, "Rejected", 0)); now > rejected {
			t.Logf("the demo rejected a payload on its flaky check; bumping worker for another")
			rejected = now
			bump(t, binary, dataDir, "worker")
		}
		if time.Now().After(limit) {
			t.Fatalf("the demo had fewer than %d accepted payloads after %s; the end of the dev log:\n%s", n, demoWait, dev.Tail(40))
		}
		time.Sleep(time.Second)
	}
}

// waitBroken polls the REST API until the newest rejected payload is one that e2e failed
// (a worker bump for a flaky rejection may itself be rejected by the flaky check) and none of
// its verifications is pending: the verdict comes with the first blocking failure, the other
// platform's e2e ends later, and the health page counts only ended checks.
func waitBroken(t *testing.T, dev *testbinary.Process, base string) string {
	t.Helper()
	limit := time.Now().Add(demoWait)
	for {
		tag := waitTags(t, dev, base, "Rejected", 1)[0]
		body, err := testbinary.Get(context.Background(), base+"/api/v1/releasestream/nightly/release/"+tag)
		if err == nil {
			var info struct {
				Results struct {
					Blocking map[string]struct{ State string } `json:"blockingJobs"`
					Pending  map[string]json.RawMessage        `json:"pendingJobs"`
				} `json:"results"`
			}
			if err := json.Unmarshal([]byte(body), &info); err != nil {
				t.Fatalf("release info: %v\n%s", err, body)
			}
			e2eFailed := false
			for name, job := range info.Results.Blocking {
				e2eFailed = e2eFailed || strings.HasPrefix(name, "e2e") && job.State == "Failed"
			}
			if e2eFailed && len(info.Results.Pending) == 0 {
				return tag
			}
		}
		if time.Now().After(limit) {
			t.Fatalf("no payload rejected by e2e with every check ended after %s (last: %s, %v); the end of the dev log:\n%s", demoWait, tag, err, dev.Tail(40))
		}
		time.Sleep(time.Second)
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
