package web

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"k8s.io/utils/clock"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/changelog"
	"github.com/release-controller/release-controller/internal/server"
	"github.com/release-controller/release-controller/internal/server/catalog"
)

// Paths of the stream pages (the stream routes also exist under /namespaces/{namespace}/).
const (
	IndexPath      = "/"
	ChangeLogPath  = "/changelog"
	PageEventsPath = "/pages/events"
	// PagesStaticPrefix is where the one stylesheet and script of every page are served,
	// the Releases page's too.
	PagesStaticPrefix = StaticPrefix + "pages/"
)

// Sizes of the pages.
const (
	// PageSize is how many payloads a stream page lists.
	PageSize = 50
	// IndexRows is how many of a stream's newest payloads the index lists.
	IndexRows = 10
	// DefaultChangeLogWait is how long a page waits for a changelog being computed.
	DefaultChangeLogWait = 30 * time.Second
	// maxTagOptions bounds the tags a select of the release and compare pages offers (the
	// chosen ones are always offered).
	maxTagOptions = 200
	// maxListed bounds the job names and upgrade sources a table cell names.
	maxListed = 3
)

// Texts of the pages' states, which tests and people look for.
const (
	EmptyStreams       = "No release streams yet."
	EmptyStream        = "No payloads yet."
	LoadingChangeLog   = "Loading changelog…"
	NoChangeLogSource  = "This server computes no changelogs: it was started without a changelog source."
	ChangeLogStillBusy = "The changelog is still being computed: the first changelog of a payload clones or fetches every component’s repository, which can take minutes. Reload the page in a while to see it."
)

// PageOptions configure the stream pages.
type PageOptions struct {
	// ChangeLogs computes the changelogs of the release and compare pages and of /changelog;
	// nil leaves them out (the pages say so).
	ChangeLogs changelog.PayloadChangeLogs
	// ArtifactsURL is the base of the payloads' download links (ArtifactsURL/TAG); empty
	// leaves them out.
	ArtifactsURL string
	// Clock tells the time for relative ages; nil is the real clock (tests inject a fake one).
	Clock clock.PassiveClock
	// ChangeLogWait bounds how long a page waits for a changelog being computed before it
	// says to reload; the computation goes on. Zero means DefaultChangeLogWait.
	ChangeLogWait time.Duration
}

func (o PageOptions) withDefaults() PageOptions {
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.ChangeLogWait <= 0 {
		o.ChangeLogWait = DefaultChangeLogWait
	}
	o.ArtifactsURL = strings.TrimSuffix(o.ArtifactsURL, "/")
	return o
}

// pageTemplates are the templates of every page, the Releases page's included: one set, with
// its functions.
var pageTemplates = template.Must(template.New("pages").Funcs(template.FuncMap{
	"plural": plural,
	"link":   func(text, url string) link { return link{Text: text, URL: url} },
}).ParseFS(files, "templates/pages/*.html"))

// site serves the stream pages from the catalog's snapshots.
type site struct {
	cat   *catalog.Catalog
	opts  PageOptions
	parts *partCache
}

// RegisterPages serves the pages of streams and payloads on s, read from cat: the index
// (/), a stream's payloads, a payload (also found by tag alone), the changelog and compare
// pages, the upgrade graph, the release candidates, a stream's health (pagehealth.go), the
// pipeline pages (pagepipelines.go), their live updates, the pages' stylesheet and script, and
// a redirect from the payload links of older release log entries.
func RegisterPages(s *server.Server, cat *catalog.Catalog, opts PageOptions) {
	p := &site{cat: cat, opts: opts.withDefaults(), parts: newPartCache()}
	s.Handle("GET /{$}", http.HandlerFunc(p.index))
	for _, prefix := range []string{"/releasestream/{stream}", "/namespaces/{namespace}/releasestream/{stream}"} {
		s.Handle("GET "+prefix, http.HandlerFunc(p.streamPage))
		s.Handle("GET "+prefix+"/release/{tag}", http.HandlerFunc(p.releasePage))
		s.Handle("GET "+prefix+"/compare", http.HandlerFunc(p.comparePage))
		s.Handle("GET "+prefix+"/graph", http.HandlerFunc(p.graphPage))
		s.Handle("GET "+prefix+"/candidates", http.HandlerFunc(p.candidatesPage))
		s.Handle("GET "+prefix+"/health", http.HandlerFunc(p.healthPage))
	}
	s.Handle("GET /releasetag/{tag}", http.HandlerFunc(p.releaseTagPage))
	s.Handle("GET "+ChangeLogPath, http.HandlerFunc(p.changeLogRoute))
	s.Handle("GET "+PageEventsPath, http.HandlerFunc(p.events), server.EventStream())
	s.Handle("GET /releases/{namespace}/{stream}/{tag}", http.HandlerFunc(redirectPayloadLink))
	s.Handle("GET "+PagesStaticPrefix, staticHandler())
	p.registerPipelines(s)
}

// Paths of the pages. Links always name the namespace, so they stay valid when a stream of
// the same name appears in another namespace.
func streamPath(namespace, name string) string {
	return "/namespaces/" + url.PathEscape(namespace) + "/releasestream/" + url.PathEscape(name)
}

func releasePath(namespace, stream, tag string) string {
	return streamPath(namespace, stream) + "/release/" + url.PathEscape(tag)
}

func entryPath(s *catalog.Stream, tag string) string { return releasePath(s.Namespace, s.Name, tag) }

func withQuery(path string, kv ...string) string {
	q := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] != "" {
			q.Set(kv[i], kv[i+1])
		}
	}
	if len(q) == 0 {
		return path
	}
	return path + "?" + q.Encode()
}

// redirectPayloadLink moves the payload links of release log entries written before the
// payload pages existed (/releases/NAMESPACE/STREAM/TAG) to the payload page.
func redirectPayloadLink(w http.ResponseWriter, r *http.Request) {
	target := releasePath(r.PathValue("namespace"), r.PathValue("stream"), r.PathValue("tag"))
	if r.URL.RawQuery != "" {
		target += "?" + r.URL.RawQuery
	}
	http.Redirect(w, r, target, http.StatusMovedPermanently)
}

// link is a labelled URL.
type link struct {
	Text, URL string
}

// pageBase is what every page's layout renders.
type pageBase struct {
	Title string
	// Crumbs lead from the index to the page's parent.
	Crumbs []link
	// Events is the URL of the page's live updates; empty for a page without them.
	Events string
	// TypeColors links the stylesheet of the release log's entry types (the Releases page).
	TypeColors bool
}

// errorPage explains a request the pages cannot answer.
type errorPage struct {
	pageBase
	Message string
	Links   []link
}

// fail renders an error page.
func (p *site) fail(w http.ResponseWriter, code int, title, message string, links ...link) {
	data := errorPage{pageBase: pageBase{Title: title, Crumbs: []link{{"Streams", IndexPath}}}, Message: message, Links: links}
	renderPage(w, code, "error", data)
}

// renderPage executes a page into a buffer first, so a failure gives a clean 500 and never
// half a page.
func renderPage(w http.ResponseWriter, code int, name string, data any) {
	buf := getBuffer()
	defer putBuffer(buf)
	if err := pageTemplates.ExecuteTemplate(buf, name, data); err != nil {
		http.Error(w, "rendering the page: "+err.Error(), http.StatusInternalServerError)
		return
	}
	writeHTMLHeaders(w)
	w.WriteHeader(code)
	_, _ = w.Write(buf.Bytes())
}

// writeHTMLHeaders sets a page's type; the server sets the security headers (CSP) of every
// response.
func writeHTMLHeaders(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
}

// part renders a live part of a page: the page embeds it, the live updates send it again
// when its version changes.
func part(name string, data any) (fragment, error) {
	buf := getBuffer()
	defer putBuffer(buf)
	if err := pageTemplates.ExecuteTemplate(buf, name, data); err != nil {
		return fragment{}, fmt.Errorf("rendering %s: %w", name, err)
	}
	sum := sha256.Sum256(buf.Bytes())
	// The HTML comes from html/template, which escaped every value in it.
	return fragment{HTML: template.HTML(buf.String()), Version: hex.EncodeToString(sum[:8])}, nil
}

// stream finds the request's stream: by namespace and name under /namespaces/, by name
// otherwise. It answers 404 for an unknown stream and 409 for a name found in two
// namespaces, and then returns false.
func (p *site) stream(w http.ResponseWriter, r *http.Request) (*catalog.Stream, bool) {
	name, namespace := r.PathValue("stream"), r.PathValue("namespace")
	var s *catalog.Stream
	var err error
	if namespace != "" {
		s, err = p.cat.StreamIn(namespace, name)
	} else {
		s, err = p.cat.Stream(name)
	}
	var ambiguous *catalog.AmbiguousError
	switch {
	case err == nil:
		return s, true
	case errors.As(err, &ambiguous):
		// The same page in each namespace.
		rest := strings.TrimPrefix(r.URL.Path, "/releasestream/"+name)
		var links []link
		for _, ns := range ambiguous.Namespaces {
			u := streamPath(ns, name) + rest
			if r.URL.RawQuery != "" {
				u += "?" + r.URL.RawQuery
			}
			links = append(links, link{ns + "/" + name, u})
		}
		p.fail(w, http.StatusConflict, "Stream name in several namespaces",
			fmt.Sprintf("The release stream “%s” exists in the namespaces %s. Pick one:", name, strings.Join(ambiguous.Namespaces, " and ")), links...)
	case namespace != "":
		p.fail(w, http.StatusNotFound, "No such stream", fmt.Sprintf("There is no release stream “%s” in the namespace “%s”.", name, namespace))
	default:
		p.fail(w, http.StatusNotFound, "No such stream", fmt.Sprintf("There is no release stream “%s”.", name))
	}
	return nil, false
}

// index is the list of streams with their newest payloads.
func (p *site) index(w http.ResponseWriter, r *http.Request) {
	streams, err := p.indexPart(p.cat.Streams())
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	renderPage(w, http.StatusOK, "index", indexPage{
		pageBase:  pageBase{Title: "Release streams", Events: withQuery(PageEventsPath, "view", "index")},
		GraphHint: graphHint(r),
		Streams:   streams,
	})
}

// graphHint is the command that points an OpenShift cluster's update client at /graph.
func graphHint(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil || r.Header.Get("X-Forwarded-Proto") == "https" {
		scheme = "https"
	}
	upstream, _ := json.Marshal(map[string]any{"spec": map[string]string{"upstream": scheme + "://" + r.Host + "/graph"}})
	return "oc patch clusterversion/version --patch '" + string(upstream) + "' --type=merge"
}

// streamQuery is a stream page's page number and phase filter.
type streamQuery struct {
	Page  int
	Phase v1alpha1.PayloadPhase
}

// parseStreamQuery reads page and phase; a malformed one is an error meant for people.
func parseStreamQuery(q url.Values) (streamQuery, error) {
	sq := streamQuery{Page: 1}
	if v := q.Get("page"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return sq, fmt.Errorf("“%s” is not a page number: pages are numbered from 1", v)
		}
		sq.Page = n
	}
	if v := q.Get("phase"); v != "" {
		phase, ok := parsePhase(v)
		if !ok {
			return sq, fmt.Errorf("“%s” is not a phase: pick one of %s", v, strings.Join(phaseNames(), ", "))
		}
		sq.Phase = phase
	}
	return sq, nil
}

var phases = []v1alpha1.PayloadPhase{v1alpha1.PhaseAccepted, v1alpha1.PhaseRejected, v1alpha1.PhaseFailed, v1alpha1.PhaseReady, v1alpha1.PhasePending}

func phaseNames() []string {
	out := make([]string, len(phases))
	for i, ph := range phases {
		out[i] = string(ph)
	}
	return out
}

func parsePhase(s string) (v1alpha1.PayloadPhase, bool) {
	for _, ph := range phases {
		if strings.EqualFold(s, string(ph)) {
			return ph, true
		}
	}
	return "", false
}

// streamPage lists a stream's payloads, newest first, a page at a time.
func (p *site) streamPage(w http.ResponseWriter, r *http.Request) {
	s, ok := p.stream(w, r)
	if !ok {
		return
	}
	sq, err := parseStreamQuery(r.URL.Query())
	if err != nil {
		p.fail(w, http.StatusBadRequest, "Bad request", err.Error(), link{"All payloads of " + s.Namespace + "/" + s.Name, streamPath(s.Namespace, s.Name)})
		return
	}
	view, err := p.streamParts(s, sq)
	if errors.Is(err, errNoSuchPage) {
		p.fail(w, http.StatusNotFound, "No such page", fmt.Sprintf("Page %d does not exist: the list has %s.", sq.Page, plural(view.pages, "page")),
			link{"Last page", streamPath(s.Namespace, s.Name) + pageQuery(view.pages, sq.Phase)})
		return
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	renderPage(w, http.StatusOK, "stream", streamPage{
		pageBase: pageBase{
			Title:  s.Namespace + "/" + s.Name,
			Crumbs: []link{{"Streams", IndexPath}},
			Events: withQuery(PageEventsPath, "view", "stream", "namespace", s.Namespace, "stream", s.Name,
				"page", pageNumber(sq.Page), "phase", string(sq.Phase)),
		},
		Stream:  streamLinks(s),
		Filter:  phaseOptions(sq.Phase),
		Phase:   string(sq.Phase),
		Info:    view.info,
		Entries: view.payloads,
	})
}

func pageNumber(n int) string {
	if n <= 1 {
		return ""
	}
	return strconv.Itoa(n)
}

func pageQuery(page int, phase v1alpha1.PayloadPhase) string {
	return withQuery("", "phase", string(phase), "page", pageNumber(page))
}

// releaseTagPage is the payload page found by tag alone.
func (p *site) releaseTagPage(w http.ResponseWriter, r *http.Request) {
	tag := r.PathValue("tag")
	found := p.cat.FindTag(tag)
	switch len(found) {
	case 0:
		p.fail(w, http.StatusNotFound, "No such payload", fmt.Sprintf("No stream has a payload tagged “%s”.", tag))
		return
	case 1:
		p.release(w, r, found[0].Stream, found[0].Entry)
		return
	}
	var links []link
	var where []string
	for _, l := range found {
		where = append(where, l.Stream.Namespace+"/"+l.Stream.Name)
		links = append(links, link{l.Stream.Namespace + "/" + l.Stream.Name, withQuery(entryPath(l.Stream, tag), "from", r.URL.Query().Get("from"))})
	}
	p.fail(w, http.StatusConflict, "Tag in several streams",
		fmt.Sprintf("The tag “%s” names payloads of the streams %s. Pick one:", tag, strings.Join(where, " and ")), links...)
}

// releasePage is the payload page of a stream's tag.
func (p *site) releasePage(w http.ResponseWriter, r *http.Request) {
	s, ok := p.stream(w, r)
	if !ok {
		return
	}
	tag := r.PathValue("tag")
	e, ok := s.Entry(tag)
	if !ok {
		var links []link
		for _, l := range p.cat.FindTag(tag) {
			links = append(links, link{"“" + tag + "” in " + l.Stream.Namespace + "/" + l.Stream.Name, entryPath(l.Stream, tag)})
		}
		msg := fmt.Sprintf("The stream %s/%s has no payload tagged “%s”.", s.Namespace, s.Name, tag)
		if len(links) > 0 {
			msg += " Other streams have one:"
		}
		links = append(links, link{"All payloads of " + s.Namespace + "/" + s.Name, streamPath(s.Namespace, s.Name)})
		p.fail(w, http.StatusNotFound, "No such payload", msg, links...)
		return
	}
	p.release(w, r, s, e)
}

// release renders a payload page, streaming it when the changelog has to be computed.
func (p *site) release(w http.ResponseWriter, r *http.Request, s *catalog.Stream, e catalog.Entry) {
	from, err := p.changeLogBase(s, e, r.URL.Query().Get("from"))
	if err != nil {
		p.fail(w, http.StatusBadRequest, "Bad request", err.Error(), link{"This payload against its previous one", entryPath(s, e.Tag())})
		return
	}
	page, err := p.releaseView(s, e, from)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	if page.Failed {
		// A failed payload's page ends with why it failed.
		p.streamChangeLog(w, r, "release-top", "release-bottom", page, changeLogJob{}, nil)
		return
	}
	var job changeLogJob
	if from.Entry.Payload == nil {
		job.section = noChangeLog(fmt.Sprintf("%s is the oldest payload of %s/%s: there is nothing to compare it with.", e.Tag(), s.Namespace, s.Name))
	} else {
		job = p.prepareChangeLog(from, catalog.Located{Stream: s, Entry: e})
	}
	p.streamChangeLog(w, r, "release-top", "release-bottom", page, job, &componentsJob{rows: page.Components, image: e.Payload.Status.PayloadImage})
}

// changeLogBase is the payload a payload page compares with: from when given (a tag of the
// stream, or of another stream of the namespace), else the previous one.
func (p *site) changeLogBase(s *catalog.Stream, e catalog.Entry, from string) (catalog.Located, error) {
	if from == "" {
		prev, ok := s.Previous(e.Tag())
		if !ok {
			return catalog.Located{}, nil
		}
		return catalog.Located{Stream: s, Entry: prev}, nil
	}
	l, err := p.findTag(s, from)
	if err != nil {
		return catalog.Located{}, fmt.Errorf("cannot compare with “%s”: %w", from, err)
	}
	if l.Stream == s && l.Entry.Tag() == e.Tag() {
		return catalog.Located{}, fmt.Errorf("cannot compare %s with itself: pick an older payload", from)
	}
	return l, nil
}

var errNoTag = errors.New("no payload has that tag")

// findTag looks tag up in s first, then in the other streams of its namespace, then
// anywhere.
func (p *site) findTag(s *catalog.Stream, tag string) (catalog.Located, error) {
	if e, ok := s.Entry(tag); ok {
		return catalog.Located{Stream: s, Entry: e}, nil
	}
	found := p.cat.FindTag(tag)
	var same []catalog.Located
	for _, l := range found {
		if l.Stream.Namespace == s.Namespace {
			same = append(same, l)
		}
	}
	if len(same) > 0 {
		found = same
	}
	switch len(found) {
	case 0:
		return catalog.Located{}, errNoTag
	case 1:
		return found[0], nil
	}
	return catalog.Located{}, errors.New("several streams have a payload with that tag")
}

// comparePage compares two payloads of a stream.
func (p *site) comparePage(w http.ResponseWriter, r *http.Request) {
	s, ok := p.stream(w, r)
	if !ok {
		return
	}
	q := r.URL.Query()
	fromTag, toTag := q.Get("from"), q.Get("to")
	page := comparePage{
		pageBase: pageBase{Title: "Compare payloads of " + s.Namespace + "/" + s.Name,
			Crumbs: []link{{"Streams", IndexPath}, {s.Namespace + "/" + s.Name, streamPath(s.Namespace, s.Name)}}},
		Stream: streamLinks(s),
		Action: streamPath(s.Namespace, s.Name) + "/compare",
	}
	var from, to catalog.Located
	switch {
	case fromTag == "" && toTag == "":
		// The form alone, with the newest payload and its previous one chosen.
		if len(s.Entries) == 0 {
			page.Empty = EmptyStream
			renderPage(w, http.StatusOK, "compare", page)
			return
		}
		toTag = s.Entries[0].Tag()
		if prev, ok := s.Previous(toTag); ok {
			fromTag = prev.Tag()
		}
		page.FromOptions, page.ToOptions = tagOptions(s, 0, fromTag), tagOptions(s, 0, toTag)
		page.ChangeLog = changeLogSection{State: "none", Message: "Pick the two payloads to compare."}
		renderPage(w, http.StatusOK, "compare", page)
		return
	case fromTag == "" || toTag == "":
		p.fail(w, http.StatusBadRequest, "Bad request", "Comparing needs two payloads: give both from and to.", link{"Compare payloads", page.Action})
		return
	}
	var err error
	if from, err = p.findTag(s, fromTag); err != nil {
		p.fail(w, http.StatusBadRequest, "Bad request", fmt.Sprintf("Cannot compare from “%s”: %v.", fromTag, err), link{"Compare payloads", page.Action})
		return
	}
	if to, err = p.findTag(s, toTag); err != nil {
		p.fail(w, http.StatusBadRequest, "Bad request", fmt.Sprintf("Cannot compare to “%s”: %v.", toTag, err), link{"Compare payloads", page.Action})
		return
	}
	page.Title = "Changes from " + fromTag + " to " + toTag
	page.FromOptions, page.ToOptions = tagOptions(s, 0, fromTag), tagOptions(s, 0, toTag)
	job := p.prepareChangeLog(from, to)
	p.streamChangeLog(w, r, "compare-top", "compare-bottom", page, job, nil)
}

// tagOptions are the options of a tag select: the stream's payloads from index start on,
// at most maxTagOptions, with chosen among them.
func tagOptions(s *catalog.Stream, start int, chosen string) []option {
	var out []option
	seen := false
	for i := start; i < len(s.Entries) && len(out) < maxTagOptions; i++ {
		e := s.Entries[i]
		out = append(out, option{Value: e.Tag(), Label: e.Tag() + " (" + string(e.Phase()) + ")", Selected: e.Tag() == chosen})
		seen = seen || e.Tag() == chosen
	}
	if !seen && chosen != "" {
		out = append([]option{{Value: chosen, Label: chosen, Selected: true}}, out...)
	}
	return out
}

// candidatesPage lists the payloads that could be promoted, as a table or OSRC's JSON.
func (p *site) candidatesPage(w http.ResponseWriter, r *http.Request) {
	s, ok := p.stream(w, r)
	if !ok {
		return
	}
	format := r.URL.Query().Get("format")
	if format != "" && format != "html" && format != "json" {
		p.fail(w, http.StatusBadRequest, "Bad request", fmt.Sprintf("“%s” is not a format of this page: use html or json.", format))
		return
	}
	candidates := s.Candidates()
	if format == "json" {
		type item struct {
			FromTag      string   `json:"fromTag"`
			Name         string   `json:"name"`
			UpgradeFrom  []string `json:"upgradeFrom,omitempty"`
			CreationTime string   `json:"creationTime,omitempty"`
		}
		items := make([]item, 0, len(candidates))
		for _, c := range candidates {
			it := item{FromTag: c.Entry.Tag(), Name: c.Name, UpgradeFrom: c.UpgradeFrom}
			if t := c.Entry.Payload.CreationTimestamp; !t.IsZero() {
				it.CreationTime = t.UTC().Format(time.RFC3339)
			}
			items = append(items, it)
		}
		writeJSON(w, map[string]any{s.Name: map[string]any{"items": items}})
		return
	}
	now := p.now()
	page := candidatesPage{
		pageBase: pageBase{Title: "Release candidates of " + s.Namespace + "/" + s.Name,
			Crumbs: []link{{"Streams", IndexPath}, {s.Namespace + "/" + s.Name, streamPath(s.Namespace, s.Name)}}},
		Stream: streamLinks(s),
		JSON:   streamPath(s.Namespace, s.Name) + "/candidates?format=json",
	}
	for _, c := range candidates {
		row := candidateRow{Name: c.Name, Tag: c.Entry.Tag(), Link: entryPath(s, c.Entry.Tag()), Created: stampOf(now, c.Entry.Payload.CreationTimestamp.Time)}
		for _, from := range c.UpgradeFrom {
			l := link{Text: from}
			if _, ok := s.Entry(from); ok {
				l.URL = withQuery(entryPath(s, c.Entry.Tag()), "from", from)
			}
			row.UpgradeFrom = append(row.UpgradeFrom, l)
		}
		page.Rows = append(page.Rows, row)
	}
	renderPage(w, http.StatusOK, "candidates", page)
}

// writeJSON writes v indented, with a trailing newline, as OSRC does.
func writeJSON(w http.ResponseWriter, v any) {
	body, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	_, _ = w.Write(append(body, '\n'))
}

// writeText writes a plain-text answer (the errors of /changelog's markdown and json).
func writeText(w http.ResponseWriter, code int, text string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	_, _ = io.WriteString(w, text+"\n")
}
