package web_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"maps"
	"net"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/release-controller/release-controller/internal/releaselog"
	"github.com/release-controller/release-controller/internal/server"
	"github.com/release-controller/release-controller/internal/server/web"
)

func at(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

// now is the tests' clock: the middle of the latest day of the filled store.
var now = at("2026-11-22T16:00:00Z")

func options() releaselog.Options {
	return releaselog.Options{
		TTL:   10 * 24 * time.Hour,
		Types: append(releaselog.DefaultTypes(), releaselog.TypeConfig{Name: "security", Color: "#6a1b9a"}),
		Clock: clocktesting.NewFakePassiveClock(now),
	}
}

// latestDay and the other days of filledStore are entries written through the release
// controller (verified); TestDirectlyWrittenEntries has the others.
var latestDay = []releaselog.Entry{
	{Type: "release", Version: "4.18.2", Origin: "release-controller", Date: at("2026-11-22T15:00:00Z"),
		Author: "release-controller", Message: "Accepted", Link: "/releases/ocp/4.18/4.18.2", Verified: true},
	{Type: "promotion", Version: "4.18.1", Origin: "cli", Date: at("2026-11-22T09:30:00Z"),
		Author: "alice", Message: "Promoted to stable", Link: "https://example.com/4.18.1", Verified: true},
	{Type: "rejected", Version: "4.18.0-rc.1", Origin: "release-controller", Date: at("2026-11-22T11:00:00Z"),
		Author: "release-controller", Verified: true},
}

func filledStore() *releaselog.Store {
	store := releaselog.NewStore()
	store.Set("2026-11-22", latestDay)
	store.Set("2026-11-20", []releaselog.Entry{
		{ID: "hotfix-1", Type: "security", Version: "4.17.9", Origin: "cli", Date: at("2026-11-20T08:00:00Z"), Author: "ci-bot", ReportedAuthor: "bob", Verified: true},
	})
	// A day whose object exists but holds no entries.
	store.Set("2026-11-18", nil)
	return store
}

// serve runs the real HTTP server with the pages on a loopback port and returns its base
// URL. At the end it shuts the server down and fails the test if that does not finish within
// the grace period, which is what happens when an event stream ignores its request's end.
func serve(t *testing.T, store *releaselog.Store, opts releaselog.Options) string {
	t.Helper()
	base, shutdown := start(t, store, opts)
	t.Cleanup(func() {
		if err := shutdown(); err != nil {
			t.Errorf("server shutdown: %v", err)
		}
	})
	return base
}

// start is serve for tests that shut the server down themselves.
func start(t *testing.T, store *releaselog.Store, opts releaselog.Options) (base string, shutdown func() error) {
	t.Helper()
	s := server.New()
	web.Register(s, store, opts)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- s.Serve(ctx, l, 20*time.Second) }()
	return "http://" + l.Addr().String(), sync.OnceValue(func() error {
		stop()
		return <-served
	})
}

func get(t *testing.T, url string) (int, http.Header, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, string(body)
}

var versionCell = regexp.MustCompile(`<td class="version">(?:<a href="[^"]*">)?([^<]*)`)

// versions returns the versions of the table's rows, in page order.
func versions(body string) []string {
	var v []string
	for _, m := range versionCell.FindAllStringSubmatch(body, -1) {
		v = append(v, m[1])
	}
	return v
}

func TestReleasesPage(t *testing.T) {
	base := serve(t, filledStore(), options())

	tests := []struct {
		name         string
		query        string
		wantCode     int
		wantVersions []string
		want         []string
		dontWant     []string
	}{
		{
			name: "latest day by default", wantCode: 200,
			wantVersions: []string{"4.18.1", "4.18.0-rc.1", "4.18.2"},
			want: []string{
				`<html lang="en">`,
				`<main id="main" data-day="2026-11-22" data-events="/releases/events?day=2026-11-22">`,
				`<h1>Releases on <time datetime="2026-11-22">Sunday, 22 November 2026</time></h1>`,
				`<nav id="day-nav" aria-label="Days"`,
				`<a rel="prev" href="/releases?day=2026-11-20">`,
				`<label for="day">Go to day</label>`,
				`<input type="date" id="day" name="day" value="2026-11-22" min="2026-11-13" max="2026-11-22" required>`,
				`<p class="summary">3 releases</p>`,
				`<th scope="col">Time (UTC)</th>`,
				`<td class="time"><time datetime="2026-11-22T09:30:00Z">09:30:00</time></td>`,
				`<span class="badge ` + typeClass(options().Types, "promotion") + `">promotion</span>`,
				`<a href="https://example.com/4.18.1">4.18.1</a>`,
				`<td class="author">alice</td>`,
				`<td class="message">Promoted to stable</td>`,
				`<td class="origin">cli</td>`,
				`<a href="/releases/ocp/4.18/4.18.2">4.18.2</a>`,
				`<link rel="stylesheet" href="/static/pages/pages.css">`,
				`<link rel="stylesheet" href="/releases/types.css">`,
				`keeps each day for 10 days`,
			},
			dontWant: []string{`rel="next"`, `Latest day`},
		},
		{
			name: "an older day", query: "?day=2026-11-20", wantCode: 200,
			wantVersions: []string{"4.17.9"},
			want: []string{
				`<main id="main" data-day="2026-11-20"`,
				`<a rel="prev" href="/releases?day=2026-11-18">`,
				`<a rel="next" href="/releases?day=2026-11-22">`,
				`<p class="summary">1 release</p>`,
				`<tr data-key="hotfix-1">`,
				`<span class="badge ` + typeClass(options().Types, "security") + `">security</span>`,
				`<td class="author">ci-bot <span class="reported" title="as the writer reported; not verified">for bob</span></td>`,
				`<td class="version">4.17.9</td>`,
			},
			// The next day is the latest: one link is enough.
			dontWant: []string{`Latest day`},
		},
		{
			name: "a day without a log shows the empty state with navigation", query: "?day=2026-11-21", wantCode: 200,
			want: []string{
				`<h1>Releases on <time datetime="2026-11-21">Saturday, 21 November 2026</time></h1>`,
				`<p class="summary empty">No releases recorded for this day.</p>`,
				`<a rel="prev" href="/releases?day=2026-11-20">`,
				`<a rel="next" href="/releases?day=2026-11-22">`,
				`value="2026-11-21"`,
			},
			dontWant: []string{`<table class="releases"`},
		},
		{
			name: "a day whose log holds no entries", query: "?day=2026-11-18", wantCode: 200,
			want: []string{
				`<p class="summary empty">No releases recorded for this day.</p>`,
				`<a rel="next" href="/releases?day=2026-11-20">`,
				`<a href="/releases">Latest day <span class="day">2026-11-22</span></a>`,
			},
			dontWant: []string{`<table class="releases"`, `rel="prev"`},
		},
		{
			name: "a malformed day", query: "?day=22-11-2026", wantCode: 400,
			want: []string{
				`<title>Not a day · Release controller</title>`,
				`<h1>Not a day</h1>`,
				`“22-11-2026” is not a day. Pick one below, or give it as YYYY-MM-DD, e.g. 2026-11-22.`,
				`<a href="/releases">Latest day</a>`,
				`<input type="date" id="day" name="day" min="2026-11-13" max="2026-11-22" required>`,
			},
			dontWant: []string{`data-events`},
		},
		{
			name: "a date that does not exist", query: "?day=2026-02-30", wantCode: 400,
			want: []string{`“2026-02-30” is not a day.`},
		},
		{
			name: "markup in the day is escaped", query: "?day=%3Cscript%3E", wantCode: 400,
			want:     []string{`“&lt;script&gt;” is not a day.`},
			dontWant: []string{`<script>`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, header, body := get(t, base+web.ReleasesPath+tt.query)
			if code != tt.wantCode {
				t.Errorf("status %d, want %d", code, tt.wantCode)
			}
			if ct := header.Get("Content-Type"); ct != "text/html; charset=utf-8" {
				t.Errorf("Content-Type %q", ct)
			}
			if header.Get("Content-Security-Policy") == "" {
				t.Errorf("no Content-Security-Policy")
			}
			if got := versions(body); !slices.Equal(got, tt.wantVersions) {
				t.Errorf("versions %v, want %v", got, tt.wantVersions)
			}
			for _, want := range tt.want {
				if !strings.Contains(body, want) {
					t.Errorf("page lacks %s", want)
				}
			}
			for _, dontWant := range tt.dontWant {
				if strings.Contains(body, dontWant) {
					t.Errorf("page has %s", dontWant)
				}
			}
			if t.Failed() {
				t.Logf("page:\n%s", body)
			}
		})
	}
}

func TestEmptyLog(t *testing.T) {
	base := serve(t, releaselog.NewStore(), options())
	code, _, body := get(t, base+web.ReleasesPath)
	if code != 200 {
		t.Errorf("status %d", code)
	}
	// The page shows today, so today's first entries can appear live.
	for _, want := range []string{
		`<p class="summary empty">The release log is empty.</p>`,
		`data-events="/releases/events?day=2026-11-22"`,
		`value="2026-11-22" min="2026-11-13" max="2026-11-22"`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("page lacks %s:\n%s", want, body)
		}
	}
	if strings.Contains(body, "<table") || strings.Contains(body, `rel="prev"`) {
		t.Errorf("an empty log shows a table or navigation:\n%s", body)
	}
}

// Entries come from writers: their text is escaped, and only safe link schemes are linked.
func TestEntriesAreEscaped(t *testing.T) {
	store := releaselog.NewStore()
	store.Set("2026-11-22", []releaselog.Entry{{
		Type: `x" onmouseover="alert(1)`, Version: "<b>1</b>", Origin: "cli", Date: at("2026-11-22T10:00:00Z"),
		Author: "<img src=x>", Message: "</td><script>alert(1)</script>", Link: "javascript:alert(1)",
	}})
	base := serve(t, store, options())
	_, _, body := get(t, base+web.ReleasesPath)
	for _, dontWant := range []string{"<script>alert", "<img src=x>", "<b>1</b>", `href="javascript:`, `" onmouseover="`} {
		if strings.Contains(body, dontWant) {
			t.Errorf("page has %s:\n%s", dontWant, body)
		}
	}
	for _, want := range []string{"&lt;script&gt;alert(1)&lt;/script&gt;", "&lt;img src=x&gt;", `href="#ZgotmplZ"`} {
		if !strings.Contains(body, want) {
			t.Errorf("page lacks %s:\n%s", want, body)
		}
	}
}

func TestStaticAssets(t *testing.T) {
	base := serve(t, releaselog.NewStore(), options())
	for path, wantType := range map[string]string{"pages/pages.css": "text/css; charset=utf-8", "pages/pages.js": "text/javascript; charset=utf-8"} {
		code, header, body := get(t, base+web.StaticPrefix+path)
		if code != 200 || header.Get("Content-Type") != wantType || len(body) == 0 {
			t.Errorf("%s: status %d, type %q, %d bytes", path, code, header.Get("Content-Type"), len(body))
		}
		etag := header.Get("ETag")
		if etag == "" || header.Get("Cache-Control") != "no-cache" {
			t.Errorf("%s: ETag %q, Cache-Control %q; want revalidation", path, etag, header.Get("Cache-Control"))
		}
		req, _ := http.NewRequest(http.MethodGet, base+web.StaticPrefix+path, nil)
		req.Header.Set("If-None-Match", etag)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotModified {
			t.Errorf("%s with its ETag: status %d, want 304", path, resp.StatusCode)
		}
	}
	for _, path := range []string{"", "nothing.css", "../templates/pages/releases.html", "releases.css"} {
		if code, _, _ := get(t, base+web.StaticPrefix+path); code != http.StatusNotFound {
			t.Errorf("%q: status %d, want 404", path, code)
		}
	}
}

// typeClass is the class of the entry type name: the types (the default ones and those
// configured) are numbered in the order of their names.
func typeClass(configured []releaselog.TypeConfig, name string) string {
	names := map[string]bool{}
	for _, t := range append(releaselog.DefaultTypes(), configured...) {
		names[t.Name] = true
	}
	return "type-" + strconv.Itoa(slices.Index(slices.Sorted(maps.Keys(names)), name))
}

// The type colours are rules of a stylesheet of their own (the CSP allows no inline style);
// a colour that could break out of its declaration is left out.
func TestTypesStylesheet(t *testing.T) {
	opts := options()
	opts.Types = append(opts.Types,
		releaselog.TypeConfig{Name: "rollback", Color: "rgb(10 20 30 / 50%)"},
		releaselog.TypeConfig{Name: "evil", Color: "red; } body { display: none"})
	base := serve(t, releaselog.NewStore(), opts)
	code, header, body := get(t, base+web.TypesStylesheetPath)
	if code != 200 || header.Get("Content-Type") != "text/css; charset=utf-8" || header.Get("ETag") == "" {
		t.Errorf("status %d, type %q, ETag %q", code, header.Get("Content-Type"), header.Get("ETag"))
	}
	for _, want := range []string{
		".badge." + typeClass(opts.Types, "hotfix") + " { --type-color: orange; }",
		".badge." + typeClass(opts.Types, "promotion") + " { --type-color: blue; }",
		".badge." + typeClass(opts.Types, "rollback") + " { --type-color: rgb(10 20 30 / 50%); }",
		".badge." + typeClass(opts.Types, "security") + " { --type-color: #6a1b9a; }",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the stylesheet lacks %s:\n%s", want, body)
		}
	}
	if strings.Contains(body, "display") || strings.Contains(body, typeClass(opts.Types, "evil")+" ") {
		t.Errorf("the stylesheet has the unsafe colour:\n%s", body)
	}
	for color, ok := range map[string]bool{
		"green": true, "#1a7f37": true, "rgb(0, 128, 0)": true, "hsl(120 100% 25% / .5)": true,
		"": false, "red;": false, "red}": false, `"red"`: false, "url(x)": false, "color-mix(in srgb, red 50%, blue)": true, "rgb(0,0,0": false, "a\nb": false,
	} {
		if got := web.ValidColor(color); got != ok {
			t.Errorf("ValidColor(%q) = %v, want %v", color, got, ok)
		}
	}
}

// sseEvent is one server-sent event.
type sseEvent struct {
	name string
	data string
}

// readEvent reads the next event of a stream, skipping comments and the retry field.
func readEvent(t *testing.T, r *bufio.Reader) sseEvent {
	t.Helper()
	var ev sseEvent
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("reading the event stream: %v", err)
		}
		line = strings.TrimSuffix(line, "\n")
		switch {
		case line == "" && ev.name != "":
			return ev
		case strings.HasPrefix(line, "event: "):
			ev.name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			ev.data += strings.TrimPrefix(line, "data: ")
		}
	}
}

// dayEvent is an update of the Releases page: its parts by id; a part the update does not
// carry (unchanged) is nil.
type dayEvent struct {
	Nav, Entries, Counts *livePart
	Announce             string
}

type livePart struct {
	ID       string `json:"id"`
	HTML     string `json:"html"`
	Version  string `json:"version"`
	Announce string `json:"announce"`
}

func decode(t *testing.T, ev sseEvent) dayEvent {
	t.Helper()
	if ev.name != web.PageUpdateEvent {
		t.Fatalf("event %q, want %q", ev.name, web.PageUpdateEvent)
	}
	var update struct{ Parts []livePart }
	if err := json.Unmarshal([]byte(ev.data), &update); err != nil {
		t.Fatalf("event data %s: %v", ev.data, err)
	}
	var d dayEvent
	for i := range update.Parts {
		p := &update.Parts[i]
		switch p.ID {
		case "day-nav":
			d.Nav = p
		case "entries":
			d.Entries, d.Announce = p, p.Announce
		case "day-counts":
			d.Counts = p
		default:
			t.Errorf("unknown part %q", p.ID)
		}
	}
	return d
}

func TestEvents(t *testing.T) {
	store := filledStore()
	base := serve(t, store, options())

	// The page and the stream render the same parts.
	_, _, page := get(t, base+web.ReleasesPath+"?day=2026-11-22")

	resp, err := http.Get(base + web.EventsPath + "?day=2026-11-22")
	if err != nil {
		t.Fatal(err)
	}
	// Closing the body before the server shuts down is the client leaving; the server's
	// shutdown in serve's cleanup then checks that no stream is left behind.
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("status %d, type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	stream := bufio.NewReader(resp.Body)

	first := decode(t, readEvent(t, stream))
	if first.Nav == nil || first.Entries == nil {
		t.Fatalf("the first event lacks a part: %+v", first)
	}
	if first.Announce != "Updated: 3 releases" || !slices.Equal(versions(first.Entries.HTML), []string{"4.18.1", "4.18.0-rc.1", "4.18.2"}) {
		t.Errorf("first event: %+v", first)
	}
	if !strings.Contains(page, `data-version="`+first.Entries.Version+`">`+first.Entries.HTML+`</div>`) ||
		!strings.Contains(page, `data-version="`+first.Nav.Version+`">`+first.Nav.HTML+`</nav>`) {
		t.Errorf("the page's parts differ from the stream's:\npage %s\nevent %+v", page, first)
	}

	// A change to another day that does not change this day's navigation sends its count
	// per day only; the next event is the one for the entry added to this day.
	store.Set("2026-11-20", append(store.Entries("2026-11-20"), releaselog.Entry{Type: "hotfix", Version: "4.17.10", Origin: "cli", Date: at("2026-11-20T09:00:00Z")}))
	other := decode(t, readEvent(t, stream))
	if other.Nav != nil || other.Entries != nil || other.Counts == nil || !strings.Contains(other.Counts.HTML, `<a href="/releases?day=2026-11-20">2026-11-20</a></th><td>2</td>`) {
		t.Fatalf("the event of another day's change: %+v", other)
	}
	store.Set("2026-11-22", append(slices.Clone(latestDay), releaselog.Entry{Type: "hotfix", Version: "4.18.1-hotfix", Origin: "cli", Date: at("2026-11-22T10:00:00Z")}))
	second := decode(t, readEvent(t, stream))
	if second.Entries == nil || second.Announce != "Updated: 4 releases" || !slices.Equal(versions(second.Entries.HTML), []string{"4.18.1", "4.18.1-hotfix", "4.18.0-rc.1", "4.18.2"}) {
		t.Fatalf("second event: %+v", second)
	}
	if second.Nav != nil || second.Entries.Version == first.Entries.Version {
		t.Errorf("the second event: nav %+v (want none: unchanged), entries %s → %s (want changed)", second.Nav, first.Entries.Version, second.Entries.Version)
	}

	// A newer day changes the navigation.
	store.Set("2026-11-23", []releaselog.Entry{{Type: "release", Version: "4.18.3", Origin: "cli", Date: at("2026-11-23T01:00:00Z")}})
	third := decode(t, readEvent(t, stream))
	if third.Nav == nil || !strings.Contains(third.Nav.HTML, `<a rel="next" href="/releases?day=2026-11-23">`) || third.Entries != nil {
		t.Errorf("third event: %+v, want the navigation only", third)
	}
}

// A stream still open when the server shuts down ends with the request's context, so the
// shutdown completes within its grace period instead of failing at its end.
func TestEventsEndOnShutdown(t *testing.T) {
	base, shutdown := start(t, filledStore(), options())
	defer shutdown() //nolint:errcheck // checked below; this only covers an early Fatal
	resp, err := http.Get(base + web.EventsPath + "?day=2026-11-21")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	stream := bufio.NewReader(resp.Body)
	first := decode(t, readEvent(t, stream))
	if first.Entries == nil || first.Announce != "Updated: "+web.EmptyDay || strings.Contains(first.Entries.HTML, "<table") {
		t.Errorf("first event of a day without a log: %+v", first)
	}

	if err := shutdown(); err != nil {
		t.Fatalf("shutdown with an open event stream: %v", err)
	}
	// The server ended the stream.
	if rest, err := io.ReadAll(stream); err != nil {
		t.Errorf("after shutdown the stream ends with %v (read %q), want EOF", err, rest)
	}
}

func TestEventsNeedADay(t *testing.T) {
	base := serve(t, filledStore(), options())
	// HEAD answers with the stream's headers and no stream.
	resp, err := http.Head(base + web.EventsPath + "?day=2026-11-22")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Errorf("HEAD: status %d, type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	for _, query := range []string{"", "?day=", "?day=tomorrow", "?day=2026-13-01"} {
		if code, _, body := get(t, base+web.EventsPath+query); code != http.StatusBadRequest {
			t.Errorf("%q: status %d, want 400: %s", query, code, body)
		}
	}
}
