package web_test

import (
	"bufio"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/changelog"
	"github.com/release-controller/release-controller/internal/server/catalog"
	"github.com/release-controller/release-controller/internal/server/web"
)

// page is a response as the tests read it.
type page struct {
	code   int
	header http.Header
	body   string
}

func fetch(t *testing.T, method, url string) page {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Redirects are answers to check, not to follow.
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return page{resp.StatusCode, resp.Header, string(body)}
}

// check compares a page with what it must and must not say.
func check(t *testing.T, p page, code int, want, dontWant []string) {
	t.Helper()
	if p.code != code {
		t.Errorf("status %d, want %d", p.code, code)
	}
	for _, w := range want {
		if !strings.Contains(p.body, w) {
			t.Errorf("page lacks %s", w)
		}
	}
	for _, d := range dontWant {
		if strings.Contains(p.body, d) {
			t.Errorf("page has %s", d)
		}
	}
	if t.Failed() {
		t.Logf("page:\n%s", p.body)
	}
}

func checkHTML(t *testing.T, p page) {
	t.Helper()
	if ct := p.header.Get("Content-Type"); ct != "text/html; charset=utf-8" {
		t.Errorf("Content-Type %q", ct)
	}
	if p.header.Get("Content-Security-Policy") == "" {
		t.Errorf("no Content-Security-Policy")
	}
	// Every page links the release log and the index from its header.
	for _, want := range []string{`<a class="brand" href="/">`, `<a href="/releases">Releases</a>`, `<html lang="en">`, `<main id="main"`} {
		if !strings.Contains(p.body, want) {
			t.Errorf("page lacks %s", want)
		}
	}
}

var rowTag = regexp.MustCompile(`<tr data-tag="([^"]*)">`)

// rows returns the tags of a page's payload rows, in page order.
func rows(body string) []string {
	var out []string
	for _, m := range rowTag.FindAllStringSubmatch(body, -1) {
		out = append(out, m[1])
	}
	return out
}

func TestIndexPage(t *testing.T) {
	base := startPages(t, fixture(), web.PageOptions{})
	p := fetch(t, "GET", base+"/")
	checkHTML(t, p)
	check(t, p, 200, []string{
		`<title>Release streams · Release controller</title>`,
		`data-events="/pages/events?view=index"`,
		// The streams, by namespace then name, with links to their pages.
		`<h2 id="heading-demo-nightly"><a href="/namespaces/demo/releasestream/nightly">demo/nightly</a></h2>`,
		`<a href="/namespaces/team/releasestream/ci">team/ci</a>`,
		`5 payloads: 2 accepted, 1 rejected, 1 failed, 1 ready.`,
		// The newest accepted payload, its age and pull spec.
		`Newest accepted: <a class="phase-accepted" href="` + releaseURL("demo", "nightly", tag4) + `">` + tag4 + `</a>, <time datetime="2026-11-22T12:00:00Z" title="2026-11-22 12:00:00 UTC">4 hours ago</time> · <code>` + digestOf(tag4) + `</code>`,
		// maxUnreadyReleases holds the next payload back.
		`Next payload may not start: 1 unready (maxUnreadyReleases is 1), waiting for <a href="` + releaseURL("demo", "nightly", tag5) + `">` + tag5 + `</a>.`,
		`Imported: ComponentsUnresolved — installer: manifest unknown`,
		// Rows: phase colour, age, failed and pending verifications linked to their runs.
		`<a class="phase-ready" href="` + releaseURL("demo", "nightly", tag5) + `">` + tag5 + `</a>`,
		`<span class="phase phase-ready">Ready</span>`,
		`<time datetime="2026-11-22T15:00:00Z" title="2026-11-22 15:00:00 UTC">1 hour ago</time>`,
		`<span class="failed">Failed: <a href="https://ci.example.com/150000-lint-1">lint</a></span>`,
		`<span class="pending">Pending: <a href="https://ci.example.com/150000-e2e-1">e2e</a>, <a href="https://ci.example.com/150000-upgrade-1">upgrade</a></span>`,
		`<span class="failed">Failed: <a href="https://ci.example.com/090000-e2e-3">e2e</a></span>`,
		`<a class="phase-failed" href="` + releaseURL("demo", "nightly", tag1) + `">`,
		`<span class="override" title="Manually accepted: e2e flaked on a known &lt;infra&gt; issue">*`,
		`<span class="keep" title="Kept: never garbage collected">*`,
		// A stream without payloads, and the graph hint.
		`<a href="/namespaces/demo/releasestream/empty">demo/empty</a></h2>`,
		`<p class="empty">No payloads yet.</p>`,
		`oc patch clusterversion/version --patch &#39;{&#34;spec&#34;:{&#34;upstream&#34;:&#34;` + base + `/graph&#34;}}&#39; --type=merge`,
		`<button type="button" class="copy" data-copy="graph-hint-command" hidden>Copy</button>`,
	}, []string{`No release streams yet.`})
	wantRows := []string{ciTag, tag5, tag4, tag3, tag2, tag1, ciTag}
	if got := rows(p.body); !slices.Equal(got, wantRows) {
		t.Errorf("rows %v, want %v", got, wantRows)
	}
}

// A stream with more payloads than the index shows links to all of them.
func TestIndexLinksAllPayloads(t *testing.T) {
	cat := fixture()
	big := bigStream(cat)
	base := startPages(t, cat, web.PageOptions{})
	p := fetch(t, "GET", base+"/")
	check(t, p, 200, []string{`<p class="more"><a href="/namespaces/demo/releasestream/big">All 120 payloads</a> · `}, nil)
	if got := rows(p.body); !slices.Equal(got[:web.IndexRows], big[:web.IndexRows]) || len(got) != web.IndexRows+7 {
		t.Errorf("rows %v", got)
	}
}

func TestIndexEmpty(t *testing.T) {
	base := startPages(t, catalog.New(), web.PageOptions{})
	p := fetch(t, "GET", base+"/")
	checkHTML(t, p)
	check(t, p, 200, []string{`<p class="empty">` + web.EmptyStreams}, []string{"<table", `class="jump"`})
}

// A stream with many payloads, for paging: 120 payloads, every third one accepted.
func bigStream(cat *catalog.Catalog) []string {
	cat.SetStream(newReleaseStream("demo", "big", "4.20.0-0.big", 200))
	start := at("2026-11-10T00:00:00Z")
	var tags []string
	for i := range 120 {
		created := start.Add(time.Duration(i) * time.Hour)
		tag := "4.20.0-0.big-" + created.Format("2006-01-02-150405")
		phase := v1alpha1.PhaseRejected
		if i%3 == 0 {
			phase = v1alpha1.PhaseAccepted
		}
		setPayload(cat, newPayload("demo", "big", tag, phase, created.Format(time.RFC3339)))
		tags = append([]string{tag}, tags...)
	}
	return tags // newest first
}

func TestStreamPage(t *testing.T) {
	cat := fixture()
	big := bigStream(cat)
	var accepted []string
	for i, tag := range big {
		if (119-i)%3 == 0 {
			accepted = append(accepted, tag)
		}
	}
	base := startPages(t, cat, web.PageOptions{})
	bigPath := "/namespaces/demo/releasestream/big"

	tests := []struct {
		name, path string
		code       int
		rows       []string
		want       []string
		dontWant   []string
	}{
		{
			name: "by name", path: "/releasestream/nightly", code: 200,
			rows: []string{tag5, tag4, tag3, tag2, tag1},
			want: []string{
				`<title>demo/nightly · Release controller</title>`,
				`data-events="/pages/events?namespace=demo&amp;stream=nightly&amp;view=stream"`,
				`<p class="summary">5 payloads</p>`,
				`<th scope="col">Upgrades from</th>`,
				// Upgrades into each payload: green some success, red only failures, blue pending, with s/t.
				`<a class="chip upgrade-success" href="` + releaseURL("demo", "nightly", tag4) + `?from=` + tag2 + `" title="Upgrade from ` + tag2 + `: 1/2 succeeded"><span aria-hidden="true">✓</span> 2026-11-21-150000 <span class="counts">1/2</span><span class="visually-hidden"> succeeded</span></a>`,
				`<a class="chip upgrade-failure" href="` + releaseURL("demo", "nightly", tag3) + `?from=` + tag2 + `" title="Upgrade from ` + tag2 + `: 0/2 succeeded">`,
				`<a class="chip upgrade-pending" href="` + releaseURL("demo", "nightly", tag5) + `?from=` + tag4 + `" title="Upgrade from ` + tag4 + `: 0/1 succeeded">`,
				// An upgrade from a payload collected since.
				`title="Upgrade from ` + collected + `: 1/1 succeeded"`,
				`<select id="phase" name="phase"><option value="" selected>Any phase</option>`,
				`<a href="/namespaces/demo/releasestream/nightly/graph">Upgrade graph</a>`,
				`Next payload may not start: 1 unready`,
			},
			dontWant: []string{`class="pager"`},
		},
		{name: "by namespace and name", path: "/namespaces/demo/releasestream/nightly", code: 200, rows: []string{tag5, tag4, tag3, tag2, tag1}},
		{
			name: "filtered by phase", path: "/releasestream/nightly?phase=Accepted", code: 200, rows: []string{tag4, tag2},
			want: []string{`<p class="summary">2 accepted payloads</p>`, `<option value="Accepted" selected>Accepted</option>`,
				`data-events="/pages/events?namespace=demo&amp;phase=Accepted&amp;stream=nightly&amp;view=stream"`},
		},
		{name: "phase in any case", path: "/releasestream/nightly?phase=failed", code: 200, rows: []string{tag1}},
		{
			name: "first of three pages", path: bigPath, code: 200, rows: big[:50],
			want: []string{`<p class="summary">120 payloads, 1 to 50 shown</p>`, `<li aria-current="page">Page 1 of 3</li>`,
				`<a rel="next" href="` + bigPath + `?page=2">`, `<a href="` + bigPath + `?page=3">Oldest</a>`},
			dontWant: []string{`rel="prev"`},
		},
		{
			name: "middle page", path: bigPath + "?page=2", code: 200, rows: big[50:100],
			want: []string{`120 payloads, 51 to 100 shown`, `Page 2 of 3`, `<a rel="prev" href="` + bigPath + `">`, `<a rel="next" href="` + bigPath + `?page=3">`},
		},
		{name: "last page", path: bigPath + "?page=3", code: 200, rows: big[100:], want: []string{`120 payloads, 101 to 120 shown`}, dontWant: []string{`rel="next"`}},
		{
			name: "page of a filter", path: bigPath + "?phase=Accepted", code: 200, rows: accepted,
			want: []string{`<p class="summary">40 accepted payloads</p>`}, dontWant: []string{`class="pager"`},
		},
		{name: "an empty stream", path: "/releasestream/empty", code: 200, want: []string{`<p class="empty">` + web.EmptyStream}, dontWant: []string{"<table"}},
		{name: "no payload in the phase", path: "/releasestream/nightly?phase=Pending", code: 200, want: []string{`<p class="empty">No pending payloads.</p>`}, dontWant: []string{"<table"}},
		{name: "a page number that is not one", path: "/releasestream/nightly?page=two", code: 400, want: []string{`“two” is not a page number`, `<a href="/namespaces/demo/releasestream/nightly">`}},
		{name: "page zero", path: "/releasestream/nightly?page=0", code: 400, want: []string{`“0” is not a page number`}},
		{name: "a negative page", path: "/releasestream/nightly?page=-1", code: 400},
		{name: "a phase that is not one", path: "/releasestream/nightly?phase=Done", code: 400, want: []string{`“Done” is not a phase: pick one of Accepted, Rejected, Failed, Ready, Pending`}},
		{name: "a page past the last", path: bigPath + "?page=4", code: 404, want: []string{`Page 4 does not exist: the list has 3 pages.`, `<a href="` + bigPath + `?page=3">Last page</a>`}},
		{name: "an unknown stream", path: "/releasestream/nope", code: 404, want: []string{`There is no release stream “nope”.`}},
		{name: "an unknown namespace", path: "/namespaces/nope/releasestream/nightly", code: 404, want: []string{`There is no release stream “nightly” in the namespace “nope”.`}},
		{
			name: "a name in two namespaces", path: "/releasestream/ci?phase=Accepted", code: 409,
			want: []string{`The release stream “ci” exists in the namespaces demo and team.`,
				`<a href="/namespaces/demo/releasestream/ci?phase=Accepted">demo/ci</a>`, `<a href="/namespaces/team/releasestream/ci?phase=Accepted">team/ci</a>`},
		},
		{name: "one of those namespaces", path: "/namespaces/team/releasestream/ci", code: 200, rows: []string{ciTag}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := fetch(t, "GET", base+tt.path)
			checkHTML(t, p)
			check(t, p, tt.code, tt.want, tt.dontWant)
			if tt.code == 200 {
				if got := rows(p.body); !slices.Equal(got, tt.rows) {
					t.Errorf("rows %v, want %v", got, tt.rows)
				}
			}
		})
	}
}

func TestReleasePage(t *testing.T) {
	cat := fixture()
	f := &fakeChangeLogs{result: sampleChangeLog, cached: map[string]*changelog.ChangeLog{}}
	s, _ := cat.StreamIn("demo", "nightly")
	entry := func(tag string) *v1alpha1.ReleasePayload { e, _ := s.Entry(tag); return e.Payload }
	// The changelogs computed before: rendered with the page, without waiting.
	f.cached[pairKey(tag2, tag4)] = sampleChangeLog(entry(tag2), entry(tag4))
	f.cached[pairKey(tag3, tag4)] = sampleChangeLog(entry(tag3), entry(tag4))
	f.cached[pairKey(tag4, tag5)] = sampleChangeLog(entry(tag4), entry(tag5))
	base := startPages(t, cat, web.PageOptions{ChangeLogs: f, ArtifactsURL: "https://artifacts.example.com/"})
	rel4 := releaseURL("demo", "nightly", tag4)

	accepted := []string{
		`<title>` + tag4 + ` · Release controller</title>`,
		`<h1>` + tag4 + `</h1>`,
		`data-events="/pages/events?namespace=demo&amp;stream=nightly&amp;tag=` + tag4 + `&amp;view=release"`,
		`Phase <span class="phase phase-accepted">Accepted</span>, created <time datetime="2026-11-22T12:00:00Z"`,
		// The pull spec by digest with its copy button, and the download link.
		`<code id="pullspec">` + digestOf(tag4) + `</code> <button type="button" class="copy" data-copy="pullspec" hidden>Copy</button>`,
		`<a href="https://artifacts.example.com/` + tag4 + `">`,
		// Its platforms' images.
		`<caption>An image index of 2 platforms; a pull picks the image of its own.</caption>`,
		`<tr><td>linux/arm64</td><td><code>registry.example.com/ocp/release@sha256:` + sha('e') + `</code></td></tr>`,
		// Conditions and the creation job.
		`<tr><th scope="row">PayloadAccepted</th><td class="status-True">True</td><td>BlockingJobsSucceeded</td><td class="message">all blocking jobs succeeded</td>`,
		`Creation job: <span class="creation-success">Success</span> (<code>demo/create-120000</code>)`,
		// Audited and signed.
		`<tr><th scope="row">PayloadSigned</th><td class="status-True">True</td><td>Signed</td><td class="message">signed by 0123456789ABCDEF (signature-1)</td>`,
		`<p class="signed">The payload is signed by 0123456789ABCDEF (signature-1): check it with <code>release-controller payload verify</code> and the <a href="/signatures/pubkey.asc">public key</a>.</p>`,
		// Its Sigstore signatures beside them, with the commands that check them.
		`<tr><th scope="row">PayloadSigstoreSigned</th><td class="status-True">True</td><td>Signed</td><td class="message">` + sigstoreSignedMessage + `</td>`,
		`Its image carries Sigstore signatures in its registry: ` + sigstoreSignedMessage + `. Save the <a href="/signatures/cosign.pub">Sigstore public key</a> as <code>cosign.pub</code>`,
		`<code id="cosign-verify">cosign verify --key cosign.pub --insecure-ignore-tlog=true ` + digestOf(tag4) + `</code> <button type="button" class="copy" data-copy="cosign-verify" hidden>Copy</button>`,
		`<code id="cosign-verify-attestation">cosign verify-attestation --key cosign.pub --insecure-ignore-tlog=true --type slsaprovenance1 ` + digestOf(tag4) + `</code>`,
		`<code id="sigstore-payload-verify">release-controller payload verify --format attestation --key cosign.pub ` + digestOf(tag4) + `</code>`,
		// Components by digest.
		`<tr><th scope="row">api</th><td><code>registry.example.com/ocp/api</code></td><td><code class="digest" title="sha256:` + sha('a') + `">`,
		`<code>registry.example.com/ocp/api:latest</code>`,
		// Verifications, blocking then informing, with every run.
		`<h3>Blocking</h3>`, `<h3>Informing</h3>`,
		`<strong>e2e</strong> <span class="state state-success">Success</span> <span class="muted">· up to 2 retries</span>`,
		`<strong>upgrade</strong> <span class="state state-success">Success</span> <span class="muted">upgrade from Previous</span>`,
		`<td><a href="` + releaseURL("demo", "nightly", tag2) + `">` + tag2 + `</a></td>`,
		// Upgrades both ways, with counts and the runs.
		`<a href="` + releaseURL("demo", "nightly", tag2) + `">` + tag2 + `</a> <span class="counts">1/2 succeeded</span> <a href="` + rel4 + `?from=` + tag2 + `">(changes)</a>`,
		`<a class="run state-failure" href="https://ci.example.com/120000-upgrade-0" title="upgrade 120000-upgrade-0: Failed">Failed</a>`,
		`<h3>Upgrades to</h3>`,
		`<li class="upgrade-pending">`,
		`<a href="` + releaseURL("demo", "nightly", tag5) + `?from=` + tag4 + `">(changes)</a>`,
		// The changelog against the previous accepted payload, rendered from the ChangeLog.
		`<option value="` + tag2 + `" selected>` + tag2 + ` (Accepted)</option>`,
		`Changes from <a href="` + releaseURL("demo", "nightly", tag2) + `">` + tag2 + `</a> (created 25 hours ago) to <a href="` + rel4 + `">` + tag4 + `</a>`,
		`<a href="/changelog?format=markdown&amp;from=` + tag2 + `&amp;to=` + tag4 + `">Markdown</a>`,
		`<h3 id="new-images">New images</h3>`,
		`<h4 id="component-api"><a href="https://github.com/example/api">api</a></h4>`,
		`<a href="https://github.com/example/api/compare/` + revOld + `...` + revNew + `">Full changelog</a>`,
		`<li>Fix the &lt;widget&gt; race <a href="https://github.com/example/api/pull/42">#42</a> <a href="https://github.com/example/api/commit/3333333333333333333333333333333333333333"><code>33333333</code></a> <a href="https://issues.example.com/browse/OCPBUGS-7">OCPBUGS-7</a>`,
		// An unreachable repository is said in the section.
		`<p class="banner failure">Could not list the commits: the repository could not be fetched (refused: address is private)</p>`,
	}
	tests := []struct {
		name, path string
		code       int
		want       []string
		dontWant   []string
	}{
		{name: "an accepted payload", path: rel4, code: 200, want: accepted, dontWant: []string{web.LoadingChangeLog, "Manual override"}},
		{name: "by stream name", path: "/releasestream/nightly/release/" + tag4, code: 200, want: accepted},
		{name: "by tag alone", path: "/releasetag/" + tag4, code: 200, want: accepted},
		{
			name: "another base", path: rel4 + "?from=" + tag3, code: 200,
			want: []string{`<option value="` + tag3 + `" selected>`, `Changes from <a href="` + releaseURL("demo", "nightly", tag3) + `">` + tag3 + `</a>`},
		},
		{
			name: "a payload being verified", path: releaseURL("demo", "nightly", tag5), code: 200,
			want: []string{
				`<span class="phase phase-ready">Ready</span>`,
				`<strong>e2e</strong> <span class="state state-pending">Pending</span>`,
				`<td>running for 50m 0s</td>`,
				`<strong>lint</strong> <span class="state state-failure">Failure</span>`,
				`<td>1m 30s</td>`,
				`<p class="message">1 of 1 runs failed</p>`,
				`<tr><th scope="row">PayloadAccepted</th><td class="status-False">False</td><td>BlockingJobsPending</td><td class="message">waiting for e2e, upgrade</td>`,
				`No upgrade from this payload was tested.`,
				`Changes from <a href="` + releaseURL("demo", "nightly", tag4) + `">` + tag4,
			},
		},
		{
			name: "a rejected payload with retries", path: releaseURL("demo", "nightly", tag3), code: 200,
			want: []string{
				`<span class="phase phase-rejected">Rejected</span>`,
				`<strong>e2e</strong> <span class="state state-failure">Failure</span> <span class="muted">· 2 retries of 2 allowed</span>`,
				`<td>3</td><td><a href="https://ci.example.com/090000-e2e-3">090000-e2e-3</a></td>`,
				`<td>31m 5s</td>`,
				// Not started: verifications of the configuration without a status yet.
				`<strong>upgrade</strong> <span class="state state-pending">Not started</span>`,
				// The previous accepted payload, skipping none older than it.
				`<option value="` + tag2 + `" selected>`,
			},
		},
		{
			name: "a manually accepted payload", path: releaseURL("demo", "nightly", tag2), code: 200,
			want: []string{
				`<div class="banner override" role="note"><strong>Manual override: Accepted.</strong> e2e flaked on a known &lt;infra&gt; issue</div>`,
				`<div class="banner failure" role="alert"><strong>The payload failed its audit and is not signed.</strong> check tag-digest failed: the tag was &lt;re-tagged&gt;</div>`,
			},
			dontWant: []string{`<p class="signed">`, `class="sigstore-signed"`, `id="cosign-verify"`},
		},
		{
			name: "a failed payload stops at why", path: releaseURL("demo", "nightly", tag1), code: 200,
			want: []string{
				`<span class="phase phase-failed">Failed</span>`,
				`<h2>This payload failed</h2><p>creation job demo/create-090000 failed: pushing the payload image: manifest unknown</p>`,
				`Creation job: <span class="creation-failed">Failed</span> (<code>demo/create-090000</code>): pushing the payload image: manifest unknown`,
			},
			dontWant: []string{`id="components"`, `id="changelog"`, `id="verifications"`, `id="pullspec"`},
		},
		{
			name: "the oldest payload has nothing to compare with", path: releaseURL("team", "ci", ciTag), code: 200,
			want:     []string{`<p class="changelog-result empty">` + ciTag + ` is the oldest payload of team/ci: there is nothing to compare it with.</p>`},
			dontWant: []string{`<form class="from"`},
		},
		{name: "an unknown from", path: rel4 + "?from=4.0.0", code: 400, want: []string{`cannot compare with “4.0.0”: no payload has that tag`}},
		{name: "from itself", path: rel4 + "?from=" + tag4, code: 400, want: []string{`cannot compare ` + tag4 + ` with itself`}},
		{name: "an unknown tag", path: releaseURL("demo", "nightly", "4.15.0"), code: 404, want: []string{`The stream demo/nightly has no payload tagged “4.15.0”.`}},
		{
			name: "a tag of another stream", path: releaseURL("demo", "nightly", ciTag), code: 404,
			want: []string{`Other streams have one:`, `<a href="` + releaseURL("demo", "ci", ciTag) + `">“` + ciTag + `” in demo/ci</a>`},
		},
		{name: "an unknown tag alone", path: "/releasetag/4.15.0", code: 404, want: []string{`No stream has a payload tagged “4.15.0”.`}},
		{
			name: "a tag in two namespaces", path: "/releasetag/" + ciTag, code: 409,
			want: []string{`The tag “` + ciTag + `” names payloads of the streams demo/ci and team/ci.`, `<a href="` + releaseURL("team", "ci", ciTag) + `">team/ci</a>`},
		},
		{name: "a tag of an ambiguous stream name", path: "/releasestream/ci/release/" + ciTag, code: 409, want: []string{`<a href="` + releaseURL("demo", "ci", ciTag) + `">demo/ci</a>`}},
		{name: "an unknown stream", path: "/releasestream/nope/release/" + tag4, code: 404},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := fetch(t, "GET", base+tt.path)
			checkHTML(t, p)
			check(t, p, tt.code, tt.want, tt.dontWant)
		})
	}
}

// readUntil reads a streamed body until it holds want, and returns what it read.
func readUntil(t *testing.T, r *bufio.Reader, want string) string {
	t.Helper()
	var read strings.Builder
	for !strings.Contains(read.String(), want) {
		line, err := r.ReadString('\n')
		read.WriteString(line)
		if err != nil {
			t.Fatalf("the page ended without %q: %v\n%s", want, err, read.String())
		}
	}
	return read.String()
}

// A changelog not computed yet never holds the page: everything above it comes first, with
// the loading note, and the changelog follows.
func TestReleasePageStreamsTheChangeLog(t *testing.T) {
	f := &fakeChangeLogs{result: sampleChangeLog, release: make(chan struct{}), started: make(chan string, 1)}
	base := startPages(t, fixture(), web.PageOptions{ChangeLogs: f})
	resp, err := http.Get(base + releaseURL("demo", "nightly", tag4))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d", resp.StatusCode)
	}
	body := bufio.NewReader(resp.Body)
	top := readUntil(t, body, web.LoadingChangeLog)
	if pair := <-f.started; pair != pairKey(tag2, tag4) {
		t.Errorf("computing %s, want %s..%s", pair, tag2, tag4)
	}
	for _, want := range []string{`<h2 id="verifications-h">Verifications</h2>`, `<h2 id="upgrades-h">Upgrades</h2>`, `<form class="from"`} {
		if !strings.Contains(top, want) {
			t.Errorf("the page's first part lacks %s", want)
		}
	}
	if strings.Contains(top, "changelog-result") {
		t.Errorf("the changelog came before it was computed:\n%s", top)
	}
	close(f.release)
	rest, err := io.ReadAll(body)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`<div class="changelog-result">`, `<h4 id="component-api">`, `<section id="components"`, `</main>`, `</html>`} {
		if !strings.Contains(string(rest), want) {
			t.Errorf("the rest of the page lacks %s:\n%s", want, rest)
		}
	}
}

// A changelog source that also reads payload images (as changelog.Payloads does) gives the
// components their source repositories and revisions, after the changelog.
func TestReleasePageComponentSources(t *testing.T) {
	withSources := &fakeWithReleases{fakeChangeLogs: &fakeChangeLogs{result: sampleChangeLog}, components: []changelog.Component{
		{Name: "api", Source: "https://github.com/example/api.git", Revision: revNew},
		{Name: "installer", Source: "file:///src/installer", Revision: revOld},
	}}
	base := startPages(t, fixture(), web.PageOptions{ChangeLogs: withSources})
	p := fetch(t, "GET", base+releaseURL("demo", "nightly", tag4))
	check(t, p, 200, []string{
		`<th scope="col">Source repository</th><th scope="col">Revision</th>`,
		`<td><a href="https://github.com/example/api">https://github.com/example/api.git</a></td>`,
		`<td><a href="https://github.com/example/api/commit/` + revNew + `"><code>22222222</code></a></td>`,
		`<td><code>file:///src/installer</code></td>`,
		`<td><code>11111111</code></td>`,
	}, nil)
	if i, j := strings.Index(p.body, `class="changelog-result"`), strings.Index(p.body, `<section id="components"`); i < 0 || j < i {
		t.Errorf("the components come before the changelog")
	}
	if withSources.read != digestOf(tag4) {
		t.Errorf("read the image %q, want %q", withSources.read, digestOf(tag4))
	}

	// What the registry answered is not shown (the log has it).
	unreadable := &fakeWithReleases{fakeChangeLogs: &fakeChangeLogs{result: sampleChangeLog}, err: errors.New("registry.example.com: unauthorized: " + remoteMarker)}
	base = startPages(t, fixture(), web.PageOptions{ChangeLogs: unreadable})
	check(t, fetch(t, "GET", base+releaseURL("demo", "nightly", tag4)), 200,
		[]string{`<p class="note">The components’ source repositories could not be read from the payload image: it failed; the server’s log has the details</p>`, `<th scope="row">api</th>`},
		[]string{`Source repository</th>`, remoteMarker})

	// A payload not built yet has no image to read.
	check(t, fetch(t, "GET", base+releaseURL("demo", "nightly", tag1)), 200, nil, []string{`id="components"`})
}

func TestChangeLogSectionStates(t *testing.T) {
	blocked := func() *fakeChangeLogs { return &fakeChangeLogs{result: sampleChangeLog, release: make(chan struct{})} }
	tests := []struct {
		name     string
		opts     web.PageOptions
		path     string
		want     []string
		dontWant []string
	}{
		{
			name: "no changelog source", opts: web.PageOptions{}, path: releaseURL("demo", "nightly", tag4),
			want: []string{`<p class="changelog-result empty">` + web.NoChangeLogSource + `</p>`}, dontWant: []string{web.LoadingChangeLog},
		},
		{
			// The computation never ends within the wait: the page says so and ends.
			name: "still computing", opts: web.PageOptions{ChangeLogs: blocked(), ChangeLogWait: time.Millisecond}, path: releaseURL("demo", "nightly", tag4),
			want: []string{web.LoadingChangeLog, `<p class="changelog-result banner notice" role="status">` + web.ChangeLogStillBusy + `</p>`, `</html>`},
		},
		{
			// What a remote answered is not shown (the log has it).
			name: "an error", opts: web.PageOptions{ChangeLogs: &fakeChangeLogs{err: errors.New("reading the image of payload x: " + remoteMarker)}}, path: releaseURL("demo", "nightly", tag4),
			want:     []string{`<div class="changelog-result banner failure" role="alert"><p>The changelog could not be computed: it failed; the server’s log has the details</p></div>`, `</html>`},
			dontWant: []string{remoteMarker},
		},
		{
			name: "a fetch that failed", opts: web.PageOptions{ChangeLogs: &fakeChangeLogs{err: &changelog.FetchError{URL: "https://git.example.com/x", Status: "timed out after 5m0s", Err: errors.New(remoteMarker)}}},
			path:     releaseURL("demo", "nightly", tag4),
			want:     []string{`<div class="changelog-result banner failure" role="alert"><p>The changelog could not be computed: the repository could not be fetched (timed out after 5m0s)</p></div>`},
			dontWant: []string{remoteMarker},
		},
		{
			name: "a base not built", opts: web.PageOptions{ChangeLogs: &fakeChangeLogs{result: sampleChangeLog}}, path: releaseURL("demo", "nightly", tag4) + "?from=" + tag1,
			want: []string{tag1 + ` failed before its payload image was built: it has no changelog.`}, dontWant: []string{web.LoadingChangeLog},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base := startPages(t, fixture(), tt.opts)
			p := fetch(t, "GET", base+tt.path)
			checkHTML(t, p)
			check(t, p, 200, tt.want, tt.dontWant)
		})
	}
}

func TestComparePage(t *testing.T) {
	f := &fakeChangeLogs{result: sampleChangeLog}
	base := startPages(t, fixture(), web.PageOptions{ChangeLogs: f})
	tests := []struct {
		name, path string
		code       int
		want       []string
		dontWant   []string
	}{
		{
			name: "the form", path: "/releasestream/nightly/compare", code: 200,
			want: []string{
				`<form class="compare" method="get" action="/namespaces/demo/releasestream/nightly/compare">`,
				`<select id="from" name="from">`, `<option value="` + tag4 + `" selected>` + tag4 + ` (Accepted)</option>`,
				`<select id="to" name="to"><option value="` + tag5 + `" selected>`,
				`Pick the two payloads to compare.`,
			},
			dontWant: []string{web.LoadingChangeLog},
		},
		{
			name: "two payloads", path: "/releasestream/nightly/compare?from=" + tag3 + "&to=" + tag5, code: 200,
			want: []string{
				`<title>Changes from ` + tag3 + ` to ` + tag5 + ` · Release controller</title>`,
				`<option value="` + tag3 + `" selected>`, web.LoadingChangeLog,
				`Changes from <a href="` + releaseURL("demo", "nightly", tag3) + `">` + tag3 + `</a>`,
				`<h4 id="component-api">`,
			},
		},
		{name: "an empty stream", path: "/namespaces/demo/releasestream/empty/compare", code: 200, want: []string{`<p class="empty">` + web.EmptyStream}, dontWant: []string{"<form"}},
		{name: "one payload only", path: "/releasestream/nightly/compare?from=" + tag3, code: 400, want: []string{`Comparing needs two payloads: give both from and to.`}},
		{name: "an unknown from", path: "/releasestream/nightly/compare?from=x&to=" + tag5, code: 400, want: []string{`Cannot compare from “x”: no payload has that tag.`}},
		{name: "an unknown to", path: "/releasestream/nightly/compare?from=" + tag3 + "&to=y", code: 400, want: []string{`Cannot compare to “y”`}},
		{name: "an unknown stream", path: "/releasestream/nope/compare", code: 404},
		{name: "an ambiguous stream", path: "/releasestream/ci/compare", code: 409},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := fetch(t, "GET", base+tt.path)
			checkHTML(t, p)
			check(t, p, tt.code, tt.want, tt.dontWant)
		})
	}
}

func TestChangeLogRoute(t *testing.T) {
	cat := fixture()
	base := startPages(t, cat, web.PageOptions{ChangeLogs: &fakeChangeLogs{result: sampleChangeLog}})
	q := func(kv ...string) string {
		v := url.Values{}
		for i := 0; i < len(kv); i += 2 {
			v.Set(kv[i], kv[i+1])
		}
		return base + web.ChangeLogPath + "?" + v.Encode()
	}

	md := fetch(t, "GET", q("from", tag2, "to", tag4))
	if md.code != 200 || md.header.Get("Content-Type") != "text/plain; charset=utf-8" || md.header.Get("Access-Control-Allow-Origin") != "*" {
		t.Errorf("markdown: status %d, headers %v", md.code, md.header)
	}
	if !strings.HasPrefix(md.body, "# "+tag4+"\n") || !strings.Contains(md.body, "## Changes from "+tag2) || !strings.Contains(md.body, "[#42](https://github.com/example/api/pull/42)") {
		t.Errorf("markdown:\n%s", md.body)
	}
	if same := fetch(t, "GET", q("from", tag2, "to", tag4, "format", "markdown")); same.body != md.body {
		t.Errorf("format=markdown differs from the default")
	}

	js := fetch(t, "GET", q("from", tag2, "to", tag4, "format", "json"))
	if js.code != 200 || js.header.Get("Content-Type") != "application/json" || js.header.Get("Access-Control-Allow-Origin") != "*" {
		t.Errorf("json: status %d, headers %v", js.code, js.header)
	}
	var got changelog.JSONChangeLog
	if err := json.Unmarshal([]byte(js.body), &got); err != nil {
		t.Fatalf("json: %v\n%s", err, js.body)
	}
	if got.From.Name != tag2 || got.To.Name != tag4 || len(got.UpdatedImages) != 2 || got.UpdatedImages[0].Commits[0].PullID != 42 {
		t.Errorf("json: %+v", got)
	}

	html := fetch(t, "GET", q("from", tag2, "to", tag4, "format", "html"))
	checkHTML(t, html)
	check(t, html, 200, []string{
		`<h1>Changes from <a href="` + releaseURL("demo", "nightly", tag2) + `">` + tag2 + `</a> to <a href="` + releaseURL("demo", "nightly", tag4) + `">` + tag4 + `</a></h1>`,
		`<h4 id="component-api">`, `</html>`,
	}, nil)
	if html.header.Get("Access-Control-Allow-Origin") != "*" {
		t.Errorf("html: no CORS header")
	}

	for _, tt := range []struct {
		name string
		url  string
		code int
		want string
	}{
		{"no from", q("to", tag4), 400, "from and to are required"},
		{"no to", q("from", tag4), 400, "from and to are required"},
		{"a bad format", q("from", tag2, "to", tag4, "format", "yaml"), 400, `unsupported format "yaml"`},
		{"an unknown from", q("from", "4.1.0", "to", tag4), 400, "could not find tag: 4.1.0"},
		{"an unknown to", q("from", tag2, "to", "4.1.1"), 400, "could not find tag: 4.1.1"},
		{"a tag in two namespaces", q("from", ciTag, "to", tag4), 409, "tag " + ciTag + " names payloads of the streams demo/ci and team/ci"},
		{"a payload without image", q("from", tag1, "to", tag4), 409, tag1 + " failed before its payload image was built"},
		{"html errors are pages", q("to", tag4, "format", "html"), 400, `<p class="message">from and to are required`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := fetch(t, "GET", tt.url)
			if p.code != tt.code || !strings.Contains(p.body, tt.want) || p.header.Get("Access-Control-Allow-Origin") != "*" {
				t.Errorf("status %d (want %d), CORS %q, body %s", p.code, tt.code, p.header.Get("Access-Control-Allow-Origin"), p.body)
			}
		})
	}

	// Without a changelog source the route says so.
	bare := startPages(t, cat, web.PageOptions{})
	if p := fetch(t, "GET", bare+web.ChangeLogPath+"?from="+tag2+"&to="+tag4); p.code != http.StatusNotImplemented || !strings.Contains(p.body, web.NoChangeLogSource) {
		t.Errorf("without changelogs: %d %s", p.code, p.body)
	}
	// An error computing it is a 500 for the markdown and JSON forms.
	failing := startPages(t, cat, web.PageOptions{ChangeLogs: &fakeChangeLogs{err: errors.New("boom: " + remoteMarker)}})
	if p := fetch(t, "GET", failing+web.ChangeLogPath+"?from="+tag2+"&to="+tag4+"&format=json"); p.code != 500 ||
		!strings.Contains(p.body, "Internal error: computing the changelog: it failed; the server’s log has the details") || strings.Contains(p.body, remoteMarker) {
		t.Errorf("a failing changelog: %d %s", p.code, p.body)
	}
}

// svgDoc is the part of an SVG document the tests read.
type svgDoc struct {
	XMLName xml.Name `xml:"http://www.w3.org/2000/svg svg"`
	Title   string   `xml:"title"`
	// Links are the nodes and the edges.
	Links []struct {
		Href  string  `xml:"href,attr"`
		Class string  `xml:"class,attr"`
		Tag   string  `xml:"data-tag,attr"`
		Path  svgPath `xml:"path"`
	} `xml:"g>a"`
	Collected []struct {
		Tag string `xml:"data-tag,attr"`
	} `xml:"g>g"`
}

type svgPath struct {
	Class  string `xml:"class,attr"`
	Stroke string `xml:"stroke,attr"`
	From   string `xml:"data-from,attr"`
	To     string `xml:"data-to,attr"`
}

func TestGraphPage(t *testing.T) {
	base := startPages(t, fixture(), web.PageOptions{})
	p := fetch(t, "GET", base+"/releasestream/nightly/graph?format=svg")
	if p.code != 200 || p.header.Get("Content-Type") != "image/svg+xml" || p.header.Get("Content-Security-Policy") == "" {
		t.Fatalf("status %d, headers %v", p.code, p.header)
	}
	// Well-formed XML: the decoder reads every token.
	dec := xml.NewDecoder(strings.NewReader(p.body))
	for {
		if _, err := dec.Token(); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("the SVG is not well-formed XML: %v\n%s", err, p.body)
		}
	}
	var doc svgDoc
	if err := xml.Unmarshal([]byte(p.body), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Title != "Upgrade graph of demo/nightly: 6 payloads, 4 upgrades" {
		t.Errorf("title %q", doc.Title)
	}
	// Nodes in version order, each linked to its page; the collected one unlinked.
	var nodes []string
	for _, n := range doc.Links {
		if n.Class == "node" {
			nodes = append(nodes, n.Tag)
			if n.Href != releaseURL("demo", "nightly", n.Tag) {
				t.Errorf("node %s links to %s", n.Tag, n.Href)
			}
		}
	}
	if want := []string{tag5, tag4, tag3, tag2, tag1}; !slices.Equal(nodes, want) {
		t.Errorf("nodes %v, want %v", nodes, want)
	}
	if len(doc.Collected) != 1 || doc.Collected[0].Tag != collected {
		t.Errorf("collected nodes %+v", doc.Collected)
	}
	// Edges coloured by result: green some success, red only failures, blue pending.
	edges := map[string]string{}
	for _, e := range doc.Links {
		if e.Path.Stroke == "" {
			continue // a node
		}
		edges[e.Path.From+" → "+e.Path.To] = e.Path.Stroke + " " + e.Path.Class
		if want := releaseURL("demo", "nightly", e.Path.To) + "?from=" + e.Path.From; e.Href != want {
			t.Errorf("edge %s → %s links to %s, want %s", e.Path.From, e.Path.To, e.Href, want)
		}
	}
	wantEdges := map[string]string{
		collected + " → " + tag2: "#1a7f37 edge upgrade-success",
		tag2 + " → " + tag3:      "#cf222e edge upgrade-failure",
		tag2 + " → " + tag4:      "#1a7f37 edge upgrade-success",
		tag4 + " → " + tag5:      "#0969da edge upgrade-pending",
	}
	if fmt.Sprint(edges) != fmt.Sprint(wantEdges) {
		t.Errorf("edges %v\nwant  %v", edges, wantEdges)
	}

	// The page embeds the same drawing, and lists the upgrades as a table.
	html := fetch(t, "GET", base+"/namespaces/demo/releasestream/nightly/graph")
	checkHTML(t, html)
	svg := strings.TrimSpace(strings.TrimPrefix(p.body, `<?xml version="1.0" encoding="UTF-8"?>`))
	check(t, html, 200, []string{svg, `<th scope="col">From</th><th scope="col">To</th><th scope="col">Result</th>`,
		`<tr><td><a href="` + releaseURL("demo", "nightly", tag2) + `">` + tag2 + `</a></td><td><a href="` + releaseURL("demo", "nightly", tag3) + `">`,
		`<span class="result upgrade-failure"><span aria-hidden="true">✗</span><span class="visually-hidden">failed:</span> 0/2 succeeded</span>`,
		`<a href="/namespaces/demo/releasestream/nightly/graph?format=svg">SVG</a>`}, nil)

	for _, tt := range []struct {
		path string
		code int
		want string
	}{
		{"/releasestream/empty/graph", 200, `<p class="empty">` + web.EmptyStream},
		{"/releasestream/ci/graph", 409, "exists in the namespaces demo and team"},
		{"/namespaces/demo/releasestream/ci/graph", 200, `No upgrades into this stream’s payloads were tested yet.`},
		{"/releasestream/nightly/graph?format=png", 400, `“png” is not a format of this page: use html or svg.`},
		{"/releasestream/nope/graph", 404, "There is no release stream"},
	} {
		p := fetch(t, "GET", base+tt.path)
		if p.code != tt.code || !strings.Contains(p.body, tt.want) {
			t.Errorf("%s: status %d (want %d), body lacks %q:\n%s", tt.path, p.code, tt.code, tt.want, p.body)
		}
	}
}

func TestCandidatesPage(t *testing.T) {
	base := startPages(t, fixture(), web.PageOptions{})
	p := fetch(t, "GET", base+"/releasestream/nightly/candidates")
	checkHTML(t, p)
	check(t, p, 200, []string{
		`<th scope="col">Version</th><th scope="col">Payload</th><th scope="col">Tested upgrades from</th>`,
		`<tr><th scope="row">4.15.0</th><td><a class="phase-accepted" href="` + releaseURL("demo", "nightly", tag4) + `">` + tag4 + `</a></td>`,
		`<td>` + collected + `</td>`,
		`<a href="/namespaces/demo/releasestream/nightly/candidates?format=json">JSON</a>`,
	}, nil)

	js := fetch(t, "GET", base+"/namespaces/demo/releasestream/nightly/candidates?format=json")
	if js.code != 200 || js.header.Get("Content-Type") != "application/json" {
		t.Errorf("json: %d %v", js.code, js.header)
	}
	want := `{
  "nightly": {
    "items": [
      {
        "fromTag": "` + tag4 + `",
        "name": "4.15.0",
        "creationTime": "2026-11-22T12:00:00Z"
      },
      {
        "fromTag": "` + tag2 + `",
        "name": "4.15.0",
        "upgradeFrom": [
          "` + collected + `"
        ],
        "creationTime": "2026-11-21T15:00:00Z"
      }
    ]
  }
}
`
	if js.body != want {
		t.Errorf("json:\n%s\nwant\n%s", js.body, want)
	}
	if p := fetch(t, "GET", base+"/releasestream/empty/candidates?format=json"); p.body != "{\n  \"empty\": {\n    \"items\": []\n  }\n}\n" {
		t.Errorf("no candidates: %s", p.body)
	}
	check(t, fetch(t, "GET", base+"/releasestream/empty/candidates"), 200, []string{`No candidates: the stream has no accepted payload whose tag is a version.`}, []string{"<table"})
	check(t, fetch(t, "GET", base+"/releasestream/nightly/candidates?format=xml"), 400, []string{`“xml” is not a format of this page`}, nil)
	check(t, fetch(t, "GET", base+"/releasestream/nope/candidates"), 404, nil, nil)
}

// Every page answers GET and HEAD, and 405 to other methods.
func TestPageMethods(t *testing.T) {
	base := startPages(t, fixture(), web.PageOptions{ChangeLogs: &fakeChangeLogs{result: sampleChangeLog}})
	paths := []string{
		"/", "/releasestream/nightly", "/namespaces/demo/releasestream/nightly",
		"/releasestream/nightly/release/" + tag4, releaseURL("demo", "nightly", tag4), "/releasetag/" + tag4,
		"/releasestream/nightly/compare", "/namespaces/demo/releasestream/nightly/compare?from=" + tag2 + "&to=" + tag4,
		"/releasestream/nightly/graph", "/releasestream/nightly/candidates", "/namespaces/demo/releasestream/nightly/candidates",
		web.ChangeLogPath + "?from=" + tag2 + "&to=" + tag4, web.PageEventsPath + "?view=index",
		"/releases/demo/nightly/" + tag4, web.PagesStaticPrefix + "pages.css",
	}
	for _, path := range paths {
		head := fetch(t, "HEAD", base+path)
		if head.code != 200 && head.code != http.StatusMovedPermanently || head.body != "" {
			t.Errorf("HEAD %s: status %d, %d bytes", path, head.code, len(head.body))
		}
		for _, method := range []string{"POST", "PUT", "DELETE", "PATCH"} {
			p := fetch(t, method, base+path)
			if p.code != http.StatusMethodNotAllowed || !strings.Contains(p.header.Get("Allow"), "GET") {
				t.Errorf("%s %s: status %d, Allow %q", method, path, p.code, p.header.Get("Allow"))
			}
		}
	}
}

// Release log entries written before the payload pages moved keep working.
func TestOldPayloadLinksRedirect(t *testing.T) {
	base := startPages(t, fixture(), web.PageOptions{})
	p := fetch(t, "GET", base+"/releases/demo/nightly/"+tag4)
	if p.code != http.StatusMovedPermanently || p.header.Get("Location") != releaseURL("demo", "nightly", tag4) {
		t.Errorf("status %d, Location %q", p.code, p.header.Get("Location"))
	}
	if p := fetch(t, "GET", base+"/releases/demo/nightly/"+tag4+"?from="+tag2); p.header.Get("Location") != releaseURL("demo", "nightly", tag4)+"?from="+tag2 {
		t.Errorf("with a query: Location %q", p.header.Get("Location"))
	}
	// The new path is the one the release log writes now.
	resp, err := http.Get(base + "/releases/demo/nightly/" + tag4)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Request.URL.Path != releaseURL("demo", "nightly", tag4) {
		t.Errorf("following the redirect: %d at %s", resp.StatusCode, resp.Request.URL.Path)
	}
}

func TestPageStaticAssets(t *testing.T) {
	base := startPages(t, catalog.New(), web.PageOptions{})
	for path, wantType := range map[string]string{"pages.css": "text/css; charset=utf-8", "pages.js": "text/javascript; charset=utf-8"} {
		p := fetch(t, "GET", base+web.PagesStaticPrefix+path)
		if p.code != 200 || p.header.Get("Content-Type") != wantType || p.header.Get("ETag") == "" || len(p.body) == 0 {
			t.Errorf("%s: status %d, type %q, ETag %q", path, p.code, p.header.Get("Content-Type"), p.header.Get("ETag"))
		}
	}
	if p := fetch(t, "GET", base+web.PagesStaticPrefix+"nothing.js"); p.code != 404 {
		t.Errorf("an unknown asset: %d", p.code)
	}
}

// What people and tools write into payloads is escaped.
func TestPagesEscape(t *testing.T) {
	cat := fixture()
	s, _ := cat.StreamIn("demo", "nightly")
	e, _ := s.Entry(tag5)
	p := e.Payload.DeepCopy()
	p.Status.Verifications[2].Message = `</p><script>alert(1)</script>`
	p.Status.Verifications[2].Runs[0].URL = "javascript:alert(1)"
	p.Spec.PayloadOverride = &v1alpha1.PayloadOverride{Override: v1alpha1.OverrideRejected, Reason: `<img src=x onerror=alert(1)>`}
	setPayload(cat, p)
	base := startPages(t, cat, web.PageOptions{})
	for _, path := range []string{"/", "/releasestream/nightly", releaseURL("demo", "nightly", tag5)} {
		page := fetch(t, "GET", base+path)
		check(t, page, 200, nil, []string{"<script>alert", "<img src=x", `href="javascript:`})
	}
	check(t, fetch(t, "GET", base+releaseURL("demo", "nightly", tag5)), 200, []string{`&lt;/p&gt;&lt;script&gt;alert(1)&lt;/script&gt;`, `&lt;img src=x onerror=alert(1)&gt;`, `href="#ZgotmplZ"`}, nil)
}

// pageUpdate is the data of an update event.
type pageUpdate struct {
	Parts []struct {
		ID      string `json:"id"`
		HTML    string `json:"html"`
		Version string `json:"version"`
	} `json:"parts"`
}

func readUpdate(t *testing.T, r *bufio.Reader) pageUpdate {
	t.Helper()
	ev := readEvent(t, r)
	if ev.name != web.PageUpdateEvent {
		t.Fatalf("event %q (%s), want %q", ev.name, ev.data, web.PageUpdateEvent)
	}
	var u pageUpdate
	if err := json.Unmarshal([]byte(ev.data), &u); err != nil {
		t.Fatal(err)
	}
	return u
}

func openEvents(t *testing.T, url string) *bufio.Reader {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("status %d, type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	return bufio.NewReader(resp.Body)
}

func TestPageEvents(t *testing.T) {
	cat := fixture()
	base := startPages(t, cat, web.PageOptions{})

	// The stream page's parts, as the page has them, then again when a payload changes.
	page := fetch(t, "GET", base+"/releasestream/nightly")
	events := openEvents(t, base+web.PageEventsPath+"?view=stream&namespace=demo&stream=nightly")
	first := readUpdate(t, events)
	if len(first.Parts) != 2 || first.Parts[0].ID != "stream-info" || first.Parts[1].ID != "payloads" {
		t.Fatalf("first event: %+v", first)
	}
	for _, part := range first.Parts {
		if !strings.Contains(page.body, `id="`+part.ID+`" data-version="`+part.Version+`">`+part.HTML+`</div>`) {
			t.Errorf("the page's part %s differs from the stream's", part.ID)
		}
	}
	release := fetch(t, "GET", base+releaseURL("demo", "nightly", tag5))
	relEvents := openEvents(t, base+web.PageEventsPath+"?view=release&namespace=demo&stream=nightly&tag="+tag5)
	relFirst := readUpdate(t, relEvents)
	if len(relFirst.Parts) != 1 || !strings.Contains(release.body, `<div id="status" data-version="`+relFirst.Parts[0].Version+`">`+relFirst.Parts[0].HTML+`</div>`) {
		t.Errorf("the release page's status differs from the stream's: %+v", relFirst)
	}
	index := openEvents(t, base+web.PageEventsPath+"?view=index")
	if u := readUpdate(t, index); len(u.Parts) != 1 || u.Parts[0].ID != "streams" {
		t.Errorf("index: %+v", u)
	}

	// tag5's e2e passes; the payload is accepted.
	s, _ := cat.StreamIn("demo", "nightly")
	e, _ := s.Entry(tag5)
	p := e.Payload.DeepCopy()
	p.Status.Phase = v1alpha1.PhaseAccepted
	p.Status.Verifications[0].State = v1alpha1.JobSuccess
	p.Status.Verifications[0].Runs[0].State = v1alpha1.JobSuccess
	p.Status.Verifications[0].Runs[0].CompletionTime = mt("2026-11-22T15:55:00Z")
	setPayload(cat, p)

	second := readUpdate(t, events)
	var payloads string
	for _, part := range second.Parts {
		if part.ID == "payloads" {
			payloads = part.HTML
		}
	}
	if !strings.Contains(payloads, `<a class="phase-accepted" href="`+releaseURL("demo", "nightly", tag5)+`">`) {
		t.Errorf("second event: %+v", second)
	}
	relSecond := readUpdate(t, relEvents)
	if !strings.Contains(relSecond.Parts[0].HTML, `<strong>e2e</strong> <span class="state state-success">Success</span>`) {
		t.Errorf("release event: %+v", relSecond)
	}
	if u := readUpdate(t, index); !strings.Contains(u.Parts[0].HTML, `Newest accepted: <a class="phase-accepted" href="`+releaseURL("demo", "nightly", tag5)) {
		t.Errorf("index event: %+v", u)
	}

	// The payload goes: its page's stream says so and ends.
	cat.DeletePayload(p)
	if ev := readEvent(t, relEvents); ev.name != web.PageGoneEvent || !strings.Contains(ev.data, "The payload "+tag5+" was deleted.") {
		t.Errorf("after the delete: %+v", ev)
	}
	if rest, err := io.ReadAll(relEvents); err != nil || strings.Contains(string(rest), "event:") {
		t.Errorf("after gone: %q, %v", rest, err)
	}

	for _, tt := range []struct {
		query string
		code  int
	}{
		{"", 400}, {"?view=nope", 400}, {"?view=stream&namespace=demo&stream=nightly&page=x", 400},
		{"?view=stream&namespace=demo&stream=nope", 404}, {"?view=release&namespace=demo&stream=nightly&tag=nope", 404},
	} {
		if p := fetch(t, "GET", base+web.PageEventsPath+tt.query); p.code != tt.code {
			t.Errorf("%q: status %d, want %d", tt.query, p.code, tt.code)
		}
	}
}

// The catalog keeps the payloads' times as metav1 values; a zero creation time shows none.
func TestZeroTimesShowNoAge(t *testing.T) {
	cat := catalog.New()
	cat.SetStream(newReleaseStream("demo", "s", "1.0.0", 1))
	p := newPayload("demo", "s", "1.0.0-1", v1alpha1.PhaseReady, "2026-11-22T10:00:00Z")
	p.CreationTimestamp = metav1.Time{}
	setPayload(cat, p)
	base := startPages(t, cat, web.PageOptions{})
	check(t, fetch(t, "GET", base+"/releasestream/s"), 200, []string{`<td class="age"></td>`}, []string{"0001-01-01"})
}

// remoteMarker stands for what a registry or git server answered: the pages never show it.
const remoteMarker = "MARKER-7d1e-remote-error-body"
