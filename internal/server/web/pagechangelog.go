package web

import (
	"context"
	"fmt"
	"html/template"
	"net/http"
	"strings"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/changelog"
	"github.com/release-controller/release-controller/internal/server/catalog"
)

// The changelog on the payload, compare and /changelog pages. A changelog computed before
// is rendered with the page; otherwise the page is streamed: everything above the changelog
// is sent at once with "Loading changelog…", and the changelog follows when it is computed,
// or a note to reload when that takes longer than PageOptions.ChangeLogWait. The changelog
// is rendered from the ChangeLog value itself, not from its Markdown.

// Changelog section states.
const (
	sectionNone    = "none"
	sectionReady   = "ready"
	sectionTimeout = "timeout"
	sectionError   = "error"
)

// changeLogSection is the changelog part of a page in one of its states; the zero value
// renders nothing.
type changeLogSection struct {
	State   string
	Message string
	View    *changeLogView
}

func noChangeLog(message string) changeLogSection {
	return changeLogSection{State: sectionNone, Message: message}
}

// changeLogJob is the changelog a page shows: section when it is known at once, or the
// pair to compute.
type changeLogJob struct {
	from, to catalog.Located
	compute  bool
	section  changeLogSection
}

// prepareChangeLog decides what a page shows of the changelog from one payload to another
// without waiting: the cached changelog, why there is none, or that it must be computed.
func (p *site) prepareChangeLog(from, to catalog.Located) changeLogJob {
	job := changeLogJob{from: from, to: to}
	if p.opts.ChangeLogs == nil {
		job.section = noChangeLog(NoChangeLogSource)
		return job
	}
	for _, l := range []catalog.Located{to, from} {
		if l.Entry.Payload.Status.PayloadImage == "" {
			job.section = noChangeLog(unbuilt(l.Entry))
			return job
		}
	}
	if cl, ok := p.opts.ChangeLogs.Cached(from.Entry.Payload, to.Entry.Payload); ok && cl != nil {
		job.section = p.readySection(cl, from, to)
		return job
	}
	job.compute = true
	return job
}

func unbuilt(e catalog.Entry) string {
	if e.Phase() == v1alpha1.PhaseFailed {
		return fmt.Sprintf("%s failed before its payload image was built: it has no changelog.", e.Tag())
	}
	return fmt.Sprintf("%s has no payload image yet (it is %s): the changelog can be computed once it is built.", e.Tag(), e.Phase())
}

// computeChangeLog waits for the changelog at most ChangeLogWait.
func (p *site) computeChangeLog(ctx context.Context, job changeLogJob) changeLogSection {
	wait, cancel := context.WithTimeout(ctx, p.opts.ChangeLogWait)
	defer cancel()
	cl, err := p.opts.ChangeLogs.ChangeLog(wait, job.from.Entry.Payload, job.to.Entry.Payload)
	switch {
	case err == nil && cl != nil:
		return p.readySection(cl, job.from, job.to)
	case ctx.Err() != nil:
		return changeLogSection{State: sectionError, Message: "The request ended before the changelog was computed."}
	case wait.Err() != nil:
		return changeLogSection{State: sectionTimeout, Message: ChangeLogStillBusy}
	case err == nil:
		err = fmt.Errorf("the changelog source returned nothing")
	}
	return changeLogSection{State: sectionError, Message: "The changelog could not be computed: " + publicMessage(ctx, err, "computing a changelog")}
}

// publicMessage is what the public pages say of err (changelog.PublicMessage: never what a
// registry or git server answered); the whole error goes to the log.
func publicMessage(ctx context.Context, err error, what string) string {
	log.FromContext(ctx).Info(what+" failed", "error", err.Error())
	return changelog.PublicMessage(err)
}

// releaseReader is what a changelog source may also do (changelog.Payloads does): read what
// a payload image records about its components. Payload pages use it for the components'
// source repositories and revisions.
type releaseReader interface {
	Release(ctx context.Context, pullSpec string) (changelog.Release, error)
}

var _ releaseReader = (*changelog.Payloads)(nil)

// componentsJob is the components section of a payload page: the payload's components, and
// its image, to read their sources from.
type componentsJob struct {
	rows  []componentRow
	image string
}

// componentsSection is what the components section shows.
type componentsSection struct {
	Rows []componentRow
	// Sources says the rows carry what the image records of their sources.
	Sources bool
	Note    string
}

// readSources adds to the components what the payload image records of their sources,
// waiting at most ChangeLogWait (the changelog just computed read the image already, so
// this is usually answered from memory).
func (p *site) readSources(ctx context.Context, job *componentsJob) componentsSection {
	sec := componentsSection{Rows: job.rows}
	reader, ok := p.opts.ChangeLogs.(releaseReader)
	if !ok || job.image == "" || len(job.rows) == 0 {
		return sec
	}
	wait, cancel := context.WithTimeout(ctx, p.opts.ChangeLogWait)
	defer cancel()
	rel, err := reader.Release(wait, job.image)
	switch {
	case err == nil:
	case ctx.Err() != nil:
		return sec
	case wait.Err() != nil:
		sec.Note = "The components’ source repositories are still being read from the payload image; reload the page in a while to see them."
		return sec
	default:
		sec.Note = "The components’ source repositories could not be read from the payload image: " + publicMessage(ctx, err, "reading a payload image")
		return sec
	}
	byName := make(map[string]changelog.Component, len(rel.Components))
	for _, c := range rel.Components {
		byName[c.Name] = c
	}
	sec.Rows, sec.Sources = make([]componentRow, len(job.rows)), true
	for i, row := range job.rows {
		if c, ok := byName[row.Name]; ok {
			row.SourceRepo, row.Revision = c.Source, shortSHA(c.Revision)
			if web, ok := changelog.ParseWebRepo(c.Source); ok {
				row.SourceURL = web.Base()
				if c.Revision != "" {
					row.RevisionURL = web.CommitURL(c.Revision)
				}
			}
		}
		sec.Rows[i] = row
	}
	return sec
}

// streamChangeLog writes a page whose changelog may take long: the top template, the
// changelog section, the components section of a payload page (components, when not nil),
// then the bottom template. When the changelog must be computed, or the components' sources
// read, what comes before is flushed first (with a loading note for the changelog).
func (p *site) streamChangeLog(w http.ResponseWriter, r *http.Request, top, bottom string, data any, job changeLogJob, components *componentsJob) {
	buf := getBuffer()
	defer putBuffer(buf)
	if err := pageTemplates.ExecuteTemplate(buf, top, data); err != nil {
		http.Error(w, "rendering the page: "+err.Error(), http.StatusInternalServerError)
		return
	}
	writeHTMLHeaders(w)
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		// No body, so nothing to compute.
		return
	}
	section := job.section
	if job.compute {
		if err := pageTemplates.ExecuteTemplate(buf, "changelog-loading", nil); err != nil {
			buf.WriteString(err.Error())
		}
		if _, err := w.Write(buf.Bytes()); err != nil {
			return
		}
		if err := http.NewResponseController(w).Flush(); err != nil {
			return
		}
		buf.Reset()
		section = p.computeChangeLog(r.Context(), job)
		if r.Context().Err() != nil {
			return
		}
	}
	execute := func(name string, data any) {
		if err := pageTemplates.ExecuteTemplate(buf, name, data); err != nil {
			// The status is sent: say it in the page.
			fmt.Fprintf(buf, "<p class=\"error\">Rendering the page failed: %s</p>", template.HTMLEscapeString(err.Error()))
		}
	}
	execute("changelog", section)
	if components != nil {
		if _, ok := p.opts.ChangeLogs.(releaseReader); ok && components.image != "" {
			if _, err := w.Write(buf.Bytes()); err != nil {
				return
			}
			if err := http.NewResponseController(w).Flush(); err != nil {
				return
			}
			buf.Reset()
		}
		sources := p.readSources(r.Context(), components)
		if r.Context().Err() != nil {
			return
		}
		execute("release-components", sources)
	}
	execute(bottom, data)
	_, _ = w.Write(buf.Bytes())
}

// changeLogPage is the page of /changelog?format=html.
type changeLogPage struct {
	pageBase
	From, To       link
	Markdown, JSON string
}

// changeLogRoute serves /changelog: the changelog between two tags of any streams, as
// Markdown (the default, text/plain), JSON (OSRC's ChangeLog shape) or an HTML page.
func (p *site) changeLogRoute(w http.ResponseWriter, r *http.Request) {
	// Browser tools of other origins read it (OSRC's OCPCRT-290).
	w.Header().Set("Access-Control-Allow-Origin", "*")
	q := r.URL.Query()
	format := q.Get("format")
	isHTML := format == "html"
	fail := func(code int, msg string) {
		if isHTML {
			p.fail(w, code, http.StatusText(code), msg)
			return
		}
		writeText(w, code, msg)
	}
	switch format {
	case "", "markdown", "html", "json":
	default:
		writeText(w, http.StatusBadRequest, fmt.Sprintf("unsupported format %q: use markdown, html or json", format))
		return
	}
	fromTag, toTag := q.Get("from"), q.Get("to")
	if fromTag == "" || toTag == "" {
		fail(http.StatusBadRequest, "from and to are required: /changelog?from=TAG&to=TAG")
		return
	}
	var sides [2]catalog.Located
	for i, tag := range []string{fromTag, toTag} {
		found := p.cat.FindTag(tag)
		switch len(found) {
		case 0:
			fail(http.StatusBadRequest, "could not find tag: "+tag)
			return
		case 1:
			sides[i] = found[0]
		default:
			var where []string
			for _, l := range found {
				where = append(where, l.Stream.Namespace+"/"+l.Stream.Name)
			}
			fail(http.StatusConflict, fmt.Sprintf("tag %s names payloads of the streams %s", tag, strings.Join(where, " and ")))
			return
		}
	}
	from, to := sides[0], sides[1]
	if p.opts.ChangeLogs == nil {
		fail(http.StatusNotImplemented, NoChangeLogSource)
		return
	}
	for _, l := range []catalog.Located{to, from} {
		if l.Entry.Payload.Status.PayloadImage == "" {
			fail(http.StatusConflict, unbuilt(l.Entry))
			return
		}
	}
	if isHTML {
		page := changeLogPage{
			pageBase: pageBase{Title: "Changes from " + fromTag + " to " + toTag, Crumbs: []link{{"Streams", IndexPath}}},
			From:     link{fromTag, entryPath(from.Stream, fromTag)},
			To:       link{toTag, entryPath(to.Stream, toTag)},
			Markdown: withQuery(ChangeLogPath, "from", fromTag, "to", toTag, "format", "markdown"),
			JSON:     withQuery(ChangeLogPath, "from", fromTag, "to", toTag, "format", "json"),
		}
		p.streamChangeLog(w, r, "changelog-top", "changelog-bottom", page, p.prepareChangeLog(from, to), nil)
		return
	}
	if r.Method == http.MethodHead {
		if format == "json" {
			w.Header().Set("Content-Type", "application/json")
		} else {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		}
		return
	}
	cl, err := p.opts.ChangeLogs.ChangeLog(r.Context(), from.Entry.Payload, to.Entry.Payload)
	if err != nil || cl == nil {
		if r.Context().Err() != nil {
			return
		}
		if err == nil {
			err = fmt.Errorf("the changelog source returned nothing")
		}
		writeText(w, http.StatusInternalServerError, "Internal error: computing the changelog: "+publicMessage(r.Context(), err, "computing a changelog"))
		return
	}
	if format == "json" {
		writeJSON(w, cl)
		return
	}
	writeText(w, http.StatusOK, strings.TrimRight(cl.Markdown(), "\n"))
}

// changeLogView is a changelog as the pages show it.
type changeLogView struct {
	From, To       changeSide
	Sections       []imageSection
	Updated        []imageView
	Unchanged      bool
	Markdown, JSON string
}

type changeSide struct {
	Name, Link, Digest, PromotedFrom string
	Created                          stamp
}

type imageSection struct {
	ID, Title string
	Images    []imageView
}

type imageView struct {
	Name                          string
	Repo, RepoURL                 string
	Revision, RevisionURL         string
	FromRevision, FromRevisionURL string
	CompareURL                    string
	Digest, FromDigest            string
	Note, Error                   string
	ForcePushed, Truncated        bool
	Commits                       []commitView
}

type commitView struct {
	Title, SHA, URL string
	PullRequest     int
	PullURL         string
	Issues          []link
	Author          string
	When            stamp
}

func (p *site) readySection(cl *changelog.ChangeLog, from, to catalog.Located) changeLogSection {
	return changeLogSection{State: sectionReady, View: p.changeLogView(cl, from, to)}
}

func (p *site) changeLogView(cl *changelog.ChangeLog, from, to catalog.Located) *changeLogView {
	now := p.now()
	side := func(info changelog.ReleaseInfo, l catalog.Located) changeSide {
		name := info.Name
		if name == "" {
			name = l.Entry.Tag()
		}
		return changeSide{Name: name, Link: entryPath(l.Stream, l.Entry.Tag()), Digest: info.Digest, PromotedFrom: info.PromotedFrom, Created: stampOf(now, info.Created)}
	}
	v := &changeLogView{
		From: side(cl.From, from), To: side(cl.To, to),
		Markdown: withQuery(ChangeLogPath, "from", from.Entry.Tag(), "to", to.Entry.Tag(), "format", "markdown"),
		JSON:     withQuery(ChangeLogPath, "from", from.Entry.Tag(), "to", to.Entry.Tag(), "format", "json"),
	}
	images := func(ics []changelog.ImageChange) []imageView {
		out := make([]imageView, 0, len(ics))
		for _, ic := range ics {
			out = append(out, imageOf(cl, ic, now))
		}
		return out
	}
	for _, sec := range []struct {
		id, title string
		ics       []changelog.ImageChange
	}{
		{"new-images", "New images", cl.NewImages},
		{"removed-images", "Removed images", cl.RemovedImages},
		{"rebuilt-images", "Rebuilt images without code change", cl.RebuiltImages},
	} {
		if len(sec.ics) > 0 {
			v.Sections = append(v.Sections, imageSection{ID: sec.id, Title: sec.title, Images: images(sec.ics)})
		}
	}
	v.Updated = images(cl.UpdatedImages)
	v.Unchanged = len(v.Sections) == 0 && len(v.Updated) == 0
	return v
}

func imageOf(cl *changelog.ChangeLog, ic changelog.ImageChange, now time.Time) imageView {
	iv := imageView{
		Name: ic.Name, Repo: ic.Source, Revision: shortSHA(ic.Revision), FromRevision: shortSHA(ic.FromRevision),
		Digest: digestOf(ic.Image), FromDigest: digestOf(ic.FromImage),
		Note: ic.Note, Error: ic.Error, ForcePushed: ic.ForcePushed, Truncated: ic.Truncated,
	}
	if web, ok := changelog.ParseWebRepo(ic.Source); ok {
		iv.RepoURL = web.Base()
		if ic.Revision != "" {
			iv.RevisionURL = web.CommitURL(ic.Revision)
		}
		if ic.FromRevision != "" {
			iv.FromRevisionURL = web.CommitURL(ic.FromRevision)
		}
		if ic.Revision != "" && ic.FromRevision != "" && ic.Revision != ic.FromRevision && ic.Error == "" {
			iv.CompareURL = web.CompareURL(ic.FromRevision, ic.Revision)
		}
	}
	for _, c := range ic.Commits {
		cv := commitView{Title: c.Title, SHA: shortSHA(c.SHA), URL: c.URL, PullRequest: c.PullRequest, PullURL: c.PullURL, Author: c.Author, When: stampOf(now, c.Time)}
		if cv.Title == "" {
			cv.Title = c.Subject
		}
		for _, k := range c.Issues {
			l := link{Text: k}
			if cl.IssueURLPrefix != "" {
				l.URL = cl.IssueURLPrefix + k
			}
			cv.Issues = append(cv.Issues, l)
		}
		iv.Commits = append(iv.Commits, cv)
	}
	return iv
}

func shortSHA(sha string) string {
	if len(sha) > 8 {
		return sha[:8]
	}
	return sha
}

func digestOf(pullSpec string) string {
	if _, d, ok := strings.Cut(pullSpec, "@"); ok {
		return d
	}
	return pullSpec
}
