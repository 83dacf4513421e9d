package osrc

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/blang/semver/v4"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/server/catalog"
)

// latestQuery is what latest's query asks for.
type latestQuery struct {
	in     semver.Range
	rel    int
	prefix string
}

// parseLatestQuery reads in, rel and prefix; it answers 400 itself and returns false when one
// is bad. OSRC checks them before looking the stream up.
func parseLatestQuery(w http.ResponseWriter, r *http.Request) (latestQuery, bool) {
	var q latestQuery
	query := r.URL.Query()
	if in := query.Get("in"); in != "" {
		rng, err := semver.ParseRange(in)
		if err != nil {
			http.Error(w, fmt.Sprintf("error: ?in must be a valid semantic version range: %v", err), http.StatusBadRequest)
			return q, false
		}
		q.in = rng
	}
	if rel := query.Get("rel"); rel != "" {
		i, err := strconv.Atoi(rel)
		if err != nil {
			http.Error(w, fmt.Sprintf("error: ?rel must be non-negative integer: %v", err), http.StatusBadRequest)
			return q, false
		}
		if i < 0 {
			http.Error(w, "error: ?rel must be non-negative integer", http.StatusBadRequest)
			return q, false
		}
		q.rel = i
	}
	q.prefix = query.Get("prefix")
	return q, true
}

// locateLatest finds the tag latest answers with: the stream's Accepted tags in semver
// order, those starting with prefix and satisfying in, skipping rel of them. It answers the
// errors itself.
func (h *handler) locateLatest(w http.ResponseWriter, r *http.Request) (*catalog.Stream, catalog.Entry, bool) {
	q, ok := parseLatestQuery(w, r)
	if !ok {
		return nil, catalog.Entry{}, false
	}
	s, err := h.stream(r)
	if err != nil {
		streamError(w, err, textStreamNotFound)
		return nil, catalog.Entry{}, false
	}
	rel := q.rel
	for _, e := range s.Entries {
		if e.Phase() != v1alpha1.PhaseAccepted || !strings.HasPrefix(e.Tag(), q.prefix) {
			continue
		}
		if q.in != nil && (e.Version == nil || !q.in(*e.Version)) {
			continue
		}
		if rel > 0 {
			rel--
			continue
		}
		return s, e, true
	}
	http.Error(w, textNoTag, http.StatusNotFound)
	return nil, catalog.Entry{}, false
}

// latest is /api/v1/releasestream/{stream}/latest.
func (h *handler) latest(w http.ResponseWriter, r *http.Request) {
	s, e, ok := h.locateLatest(w, r)
	if !ok {
		return
	}
	tag := h.apiTag(s, e)
	switch r.URL.Query().Get("format") {
	case "", "json":
		writeJSON(w, tag)
	case "pullSpec":
		writeBody(w, "text/plain", []byte(tag.PullSpec+"\n"))
	case "downloadURL":
		writeBody(w, "text/plain", []byte(tag.DownloadURL+"\n"))
	case "name":
		writeBody(w, "text/plain", []byte(tag.Name+"\n"))
	default:
		http.Error(w, textLatestFormat, http.StatusBadRequest)
	}
}

// phases a tags filter may name: ours, and OSRC's Unknown (which no payload has).
var phases = []string{
	string(v1alpha1.PhasePending), string(v1alpha1.PhaseReady), string(v1alpha1.PhaseAccepted),
	string(v1alpha1.PhaseRejected), string(v1alpha1.PhaseFailed), "Unknown",
}

// tags is /api/v1/releasestream/{stream}/tags.
func (h *handler) tags(w http.ResponseWriter, r *http.Request) {
	s, err := h.stream(r)
	if err != nil {
		streamError(w, err, fmt.Sprintf("Unable to find release %s", r.PathValue("stream")))
		return
	}
	query := r.URL.Query()
	filter := query["phase"]
	for _, p := range filter {
		if !slices.Contains(phases, p) {
			http.Error(w, fmt.Sprintf("error: unknown phase %q: must be one of %s", p, strings.Join(phases, ", ")), http.StatusBadRequest)
			return
		}
	}
	switch query.Get("format") {
	case "", "json":
	default:
		http.Error(w, "error: format must be '' or 'json'", http.StatusBadRequest)
		return
	}
	keep := func(e catalog.Entry) bool { return len(filter) == 0 || slices.Contains(filter, string(e.Phase())) }
	body := h.streamCache.get(s, "tags?"+strings.Join(filter, ","), func() []byte { return h.encodeTags(nil, s, keep) })
	writeBody(w, "application/json", body)
}

// candidate is OSRC's ReleasePromoteJobParameters.
type candidate struct {
	FromTag     string   `json:"fromTag"`
	Name        string   `json:"name"`
	UpgradeFrom []string `json:"upgradeFrom,omitempty"`
}

// candidate is /api/v1/releasestream/{stream}/candidate.
func (h *handler) candidate(w http.ResponseWriter, r *http.Request) {
	s, err := h.stream(r)
	if err != nil {
		streamError(w, err, textStreamNotFound)
		return
	}
	resp := map[string]*candidate{"candidate": nil}
	if cs := s.Candidates(); len(cs) > 0 {
		resp["candidate"] = &candidate{FromTag: cs[0].Entry.Tag(), Name: cs[0].Name, UpgradeFrom: cs[0].UpgradeFrom}
	}
	writeJSON(w, resp)
}

// releaseVerification is a verification in the shape of OSRC's ReleaseVerification, with
// ours in full under "verification".
type releaseVerification struct {
	Disabled           bool                    `json:"disabled"`
	Optional           bool                    `json:"optional"`
	Upgrade            bool                    `json:"upgrade"`
	UpgradeFrom        string                  `json:"upgradeFrom"`
	UpgradeFromRelease *struct{}               `json:"upgradeFromRelease"`
	ProwJob            *prowJobVerification    `json:"prowJob"`
	MaxRetries         int32                   `json:"maxRetries,omitempty"`
	AggregatedProwJob  *aggregatedVerification `json:"aggregatedProwJob,omitempty"`
	MultiJobAnalysis   bool                    `json:"multiJobAnalysis"`
	Verification       v1alpha1.Verification   `json:"verification"`
}

type prowJobVerification struct {
	Name string `json:"name"`
}

type aggregatedVerification struct {
	ProwJob          *prowJobVerification `json:"prowJob,omitempty"`
	AnalysisJobCount int32                `json:"analysisJobCount,omitempty"`
}

// osrcVerification maps one of our verifications to OSRC's shape: Informing is optional,
// an upgradeFrom makes it an upgrade, a ProwJob backend names its Prow job, an aggregation
// is an aggregated job with runs as its analysis job count. Nothing is ever disabled.
func osrcVerification(v v1alpha1.Verification) releaseVerification {
	out := releaseVerification{
		Optional: !v.IsBlocking(), Upgrade: v.UpgradeFrom != "", UpgradeFrom: string(v.UpgradeFrom),
		MaxRetries: v.MaxRetries, Verification: v,
	}
	if v.ProwJob != nil {
		out.ProwJob = &prowJobVerification{Name: v.ProwJob.Spec.Job}
	}
	if v.Aggregation != nil {
		out.AggregatedProwJob = &aggregatedVerification{ProwJob: out.ProwJob, AnalysisJobCount: v.Aggregation.Runs}
	}
	return out
}

// config is /api/v1/releasestream/{stream}/config: the stream's spec, or with jobType a map
// of its verifications by name in OSRC's shape.
func (h *handler) config(w http.ResponseWriter, r *http.Request) {
	s, err := h.stream(r)
	if err != nil {
		var amb *catalog.AmbiguousError
		if errors.As(err, &amb) {
			http.Error(w, amb.Error(), http.StatusConflict)
			return
		}
		http.Error(w, fmt.Sprintf("error: unknown release stream specified: %s", r.PathValue("stream")), http.StatusBadRequest)
		return
	}
	jobType := r.URL.Query().Get("jobType")
	var keep func(v v1alpha1.Verification) bool
	switch jobType {
	case "":
		writeJSON(w, s.Object.Spec)
		return
	case "informing":
		keep = func(v v1alpha1.Verification) bool { return !v.IsBlocking() }
	case "blocking":
		keep = func(v v1alpha1.Verification) bool { return v.IsBlocking() }
	case "disabled", "periodic":
		keep = func(v1alpha1.Verification) bool { return false }
	default:
		http.Error(w, "error: jobType must be one of '', 'informing', 'blocking', 'disabled' or 'periodic'", http.StatusBadRequest)
		return
	}
	out := map[string]releaseVerification{}
	for _, v := range s.Object.Spec.Verification {
		if keep(v) {
			out[v.Name] = osrcVerification(v)
		}
	}
	writeJSON(w, out)
}

// streamLists are the /api/v1/releasestreams/… routes and the phase each keeps ("" all).
var streamLists = []struct{ path, phase string }{
	{"accepted", string(v1alpha1.PhaseAccepted)},
	{"rejected", string(v1alpha1.PhaseRejected)},
	{"ready", string(v1alpha1.PhaseReady)},
	{"all", ""},
}

// streams answers /api/v1/releasestreams/{list}: {stream: [tag…]} for every stream, tags in
// semver order, null for a stream with none. A name found in two namespaces is keyed
// namespace/name in both. Under /api/v1/namespaces/{namespace}/ only that namespace counts.
// Answers are kept until the catalog changes.
func (h *handler) streams(phase string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ns := r.PathValue("namespace")
		body := h.cache.get(h.cat.Changed(), "releasestreams/"+ns+"/"+phase, func() []byte {
			return encodeStreamLists(nil, h.streamLists(ns, phase))
		})
		writeBody(w, "application/json", body)
	})
}

// streamLists are the lists of the releasestreams answer, sorted by key.
func (h *handler) streamLists(ns, phase string) []streamList {
	all := h.cat.Streams()
	if ns != "" {
		all = slices.DeleteFunc(all, func(s *catalog.Stream) bool { return s.Namespace != ns })
	}
	names := make(map[string]int, len(all))
	for _, s := range all {
		names[s.Name]++
	}
	lists := make([]streamList, 0, len(all))
	for _, s := range all {
		key := s.Name
		if names[s.Name] > 1 {
			key = s.Namespace + "/" + s.Name
		}
		var tags []string
		for _, e := range s.Entries {
			if phase == "" || string(e.Phase()) == phase {
				tags = append(tags, e.Tag())
			}
		}
		lists = append(lists, streamList{key: key, tags: tags})
	}
	slices.SortFunc(lists, func(a, b streamList) int { return strings.Compare(a.key, b.key) })
	return lists
}

// latestRedirect is /releasestream/{stream}/latest: 302 to the latest tag's page.
func (h *handler) latestRedirect(w http.ResponseWriter, r *http.Request) {
	s, e, ok := h.locateLatest(w, r)
	if !ok {
		return
	}
	http.Redirect(w, r, pagePrefix(r, s)+"/release/"+url.PathEscape(e.Tag()), http.StatusFound)
}

// latestDownload is /releasestream/{stream}/latest/download: 302 to the latest tag's
// artifacts.
func (h *handler) latestDownload(w http.ResponseWriter, r *http.Request) {
	_, e, ok := h.locateLatest(w, r)
	if !ok {
		return
	}
	h.redirectDownload(w, r, e.Tag())
}

// releaseDownload is /releasestream/{stream}/release/{tag}/download: 302 to the tag's
// artifacts.
func (h *handler) releaseDownload(w http.ResponseWriter, r *http.Request) {
	tag := r.PathValue("tag")
	if _, _, ok := h.locateTag(w, r, "Unable to find release tag %s, it may have been deleted", "Release tag %s does not belong to release %s"); !ok {
		return
	}
	h.redirectDownload(w, r, tag)
}

func (h *handler) redirectDownload(w http.ResponseWriter, r *http.Request, tag string) {
	u := h.downloadURL(tag)
	if u == "" {
		http.Error(w, textNoArtifacts, http.StatusNotFound)
		return
	}
	http.Redirect(w, r, u, http.StatusFound)
}

// locateTag finds the route's {tag} in its {stream}. It answers the errors itself, as OSRC
// words them: missing (naming the tag) when the tag is nowhere, notInStream (naming the tag
// and the stream) when it is only in other streams, 409 for an ambiguous stream name.
func (h *handler) locateTag(w http.ResponseWriter, r *http.Request, missing, notInStream string) (*catalog.Stream, catalog.Entry, bool) {
	tag, name := r.PathValue("tag"), r.PathValue("stream")
	s, err := h.stream(r)
	if err != nil {
		var amb *catalog.AmbiguousError
		if errors.As(err, &amb) {
			http.Error(w, amb.Error(), http.StatusConflict)
			return nil, catalog.Entry{}, false
		}
	} else if e, ok := s.Entry(tag); ok {
		return s, e, true
	}
	if len(h.cat.FindTag(tag)) > 0 {
		http.Error(w, fmt.Sprintf(notInStream, tag, name), http.StatusNotFound)
	} else {
		http.Error(w, fmt.Sprintf(missing, tag), http.StatusNotFound)
	}
	return nil, catalog.Entry{}, false
}
