package osrc

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"k8s.io/utils/clock"

	"github.com/release-controller/release-controller/internal/changelog"
	"github.com/release-controller/release-controller/internal/server"
	"github.com/release-controller/release-controller/internal/server/catalog"
)

// DefaultChangeLogWait is how long release info waits for a changelog that is not cached
// yet, as OSRC (15 s after a first half second).
const DefaultChangeLogWait = 15 * time.Second

// Options configure the routes.
type Options struct {
	// ChangeLogs computes the changelogs of release info; nil answers without them.
	ChangeLogs changelog.PayloadChangeLogs
	// ArtifactsURL is the base of download links: <ArtifactsURL>/<tag>. Empty leaves
	// downloadURL empty and the download routes answer 404.
	ArtifactsURL string
	// ChangeLogWait is how long release info waits for a changelog before answering
	// without it (default DefaultChangeLogWait). The computation goes on, so a client that
	// asks again later gets it from the cache.
	ChangeLogWait time.Duration
	// PublicURL is where clients reach the server (https://release.example.com, checked by
	// ParsePublicURL): /graph's nodes link to their payload's page under it (metadata "url").
	// Empty: no links.
	PublicURL string
	// Clock tells the time channel membership and tombstones are read at; nil is the real
	// clock (tests inject a fake one).
	Clock clock.PassiveClock
}

// Texts of OSRC's errors, kept word for word: clients and people grep for them.
const (
	textStreamNotFound = "no release configuration exists with the requested name"
	textNoTag          = "no tags exist within the release that satisfy the request"
	textLatestFormat   = "error: Must specify one of '', 'json', 'pullSpec', 'name', or 'downloadURL"
	textNoArtifacts    = "No artifacts download URL is configured, cannot show download link"
)

// Path prefixes of the per-stream routes: without and with a namespace.
var (
	apiPrefixes  = []string{"/api/v1/releasestream/{stream}", "/api/v1/namespaces/{namespace}/releasestream/{stream}"}
	pagePrefixes = []string{"/releasestream/{stream}", "/namespaces/{namespace}/releasestream/{stream}"}
)

type handler struct {
	cat       *catalog.Catalog
	opts      Options
	artifacts string
	// public is the public URL, without a trailing slash.
	public string
	now    func() time.Time
	// cache keeps the releasestreams answers, read from the whole catalog.
	cache versionCache
	// models keeps the update service's model of the catalog, graphs the /graph answers.
	models modelCache
	graphs versionCache
	// streamCache keeps the answers read from one stream (tags).
	streamCache snapshotCache
}

// Register adds the OSRC routes to s, reading streams and payloads from cat.
func Register(s *server.Server, cat *catalog.Catalog, opts Options) {
	if opts.ChangeLogWait <= 0 {
		opts.ChangeLogWait = DefaultChangeLogWait
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	h := &handler{
		cat: cat, opts: opts, artifacts: strings.TrimRight(opts.ArtifactsURL, "/"), public: strings.TrimRight(opts.PublicURL, "/"),
		now: opts.Clock.Now, graphs: versionCache{maxBodies: maxCachedGraphs, maxBytes: maxCachedGraphBytes},
	}
	for _, p := range apiPrefixes {
		s.Handle("GET "+p+"/latest", http.HandlerFunc(h.latest))
		s.Handle("GET "+p+"/tags", http.HandlerFunc(h.tags))
		s.Handle("GET "+p+"/release/{tag}", http.HandlerFunc(h.releaseInfo))
		s.Handle("GET "+p+"/candidate", http.HandlerFunc(h.candidate))
		s.Handle("GET "+p+"/config", http.HandlerFunc(h.config))
	}
	for _, p := range pagePrefixes {
		s.Handle("GET "+p+"/latest", http.HandlerFunc(h.latestRedirect))
		s.Handle("GET "+p+"/latest/download", http.HandlerFunc(h.latestDownload))
		s.Handle("GET "+p+"/release/{tag}/download", http.HandlerFunc(h.releaseDownload))
	}
	for _, prefix := range []string{"/api/v1/releasestreams/", "/api/v1/namespaces/{namespace}/releasestreams/"} {
		for _, list := range streamLists {
			s.Handle("GET "+prefix+list.path, h.streams(list.phase))
		}
	}
	s.Handle("GET /graph", http.HandlerFunc(h.graph))
	s.Handle("GET /archive/graph", http.HandlerFunc(h.archiveGraph))
}

// stream finds the route's {stream}, in its {namespace} when the route has one.
func (h *handler) stream(r *http.Request) (*catalog.Stream, error) {
	name := r.PathValue("stream")
	if ns := r.PathValue("namespace"); ns != "" {
		return h.cat.StreamIn(ns, name)
	}
	return h.cat.Stream(name)
}

// streamError answers a failed stream lookup: 409 for a name in two namespaces, else 404
// with notFound.
func streamError(w http.ResponseWriter, err error, notFound string) {
	var amb *catalog.AmbiguousError
	if errors.As(err, &amb) {
		http.Error(w, amb.Error(), http.StatusConflict)
		return
	}
	http.Error(w, notFound, http.StatusNotFound)
}

// downloadURL is where a tag's artifacts are, "" when no artifacts URL is configured.
func (h *handler) downloadURL(tag string) string {
	if h.artifacts == "" {
		return ""
	}
	return h.artifacts + "/" + url.PathEscape(tag)
}

// pagePrefix is the page path of stream, under /namespaces/{namespace} when the request
// named one.
func pagePrefix(r *http.Request, s *catalog.Stream) string {
	if r.PathValue("namespace") != "" {
		return "/namespaces/" + url.PathEscape(s.Namespace) + "/releasestream/" + url.PathEscape(s.Name)
	}
	return "/releasestream/" + url.PathEscape(s.Name)
}

// writeJSON writes v as OSRC does: indented by two spaces, with a trailing newline.
func writeJSON(w http.ResponseWriter, v any) {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	data = append(data, '\n')
	writeBody(w, "application/json", data)
}

func writeBody(w http.ResponseWriter, contentType string, data []byte) {
	w.Header().Set("Content-Type", contentType)
	w.Header().Set("Content-Length", strconv.Itoa(len(data)))
	_, _ = w.Write(data)
}

// apiTag is OSRC's APITag.
type apiTag struct {
	Name        string `json:"name"`
	Phase       string `json:"phase"`
	PullSpec    string `json:"pullSpec"`
	DownloadURL string `json:"downloadURL"`
}

func (h *handler) apiTag(s *catalog.Stream, e catalog.Entry) apiTag {
	return apiTag{Name: e.Tag(), Phase: string(e.Phase()), PullSpec: s.PullSpec(e), DownloadURL: h.downloadURL(e.Tag())}
}
