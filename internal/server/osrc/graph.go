package osrc

import (
	"bytes"
	"cmp"
	"compress/gzip"
	"encoding/json"
	"io"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/release-controller/release-controller/internal/server/catalog"
)

// CincinnatiContentType is the media type of /graph.
const CincinnatiContentType = "application/vnd.redhat.cincinnati.graph+json; version=1.0"

const textBadChannel = "Unsupported ?channel, must be '', 'prerelease', 'prerelease-*', 'nightly', 'nightly-*', 'stable', or 'stable-*"

// channelFilter returns which upgrades a channel keeps, given the payload each leads to;
// false for a channel it does not know. OSRC's rules, with one difference: the channels that
// promise success (empty, stable*, next*) keep an upgrade only into an Accepted payload, since
// clusters follow them, and a payload rejected by another check is no place to upgrade to.
// They apply to the streams that declare no channel of their own.
func channelFilter(channel string) (func(u catalog.Upgrade, to catalog.Entry) bool, bool) {
	promisedInto := func(prefix string) func(u catalog.Upgrade, to catalog.Entry) bool {
		return func(u catalog.Upgrade, to catalog.Entry) bool {
			return promised(u, to) && strings.HasPrefix(u.To, prefix)
		}
	}
	anyInto := func(prefix string) func(u catalog.Upgrade, to catalog.Entry) bool {
		return func(u catalog.Upgrade, _ catalog.Entry) bool { return strings.HasPrefix(u.To, prefix) }
	}
	switch {
	case channel == "", channel == "stable", channel == "stable-scos", channel == "next", channel == "next-scos":
		return promised, true
	case channel == "prerelease", channel == "nightly":
		return func(catalog.Upgrade, catalog.Entry) bool { return true }, true
	}
	for _, p := range []string{"stable-scos-", "stable-", "next-scos-", "next-"} {
		if rest, ok := strings.CutPrefix(channel, p); ok {
			return promisedInto(rest + "."), true
		}
	}
	if rest, ok := strings.CutPrefix(channel, "prerelease-"); ok {
		return anyInto(rest + "."), true
	}
	if rest, ok := strings.CutPrefix(channel, "nightly-"); ok {
		return anyInto(rest + ".0-0.nightly-"), true
	}
	return nil, false
}

// nodePayload is a node's payload: <repository>@<digest> when the payload image is known
// by digest (ok), else the pull spec (in repo).
func nodePayload(s *catalog.Stream, e catalog.Entry) (repo, digest string, ok bool) {
	pull := s.PullSpec(e)
	image := e.Payload.Status.PayloadImage
	if i := strings.LastIndex(image, "@"); i >= 0 && strings.Contains(image[i+1:], ":") {
		return pull[:len(pull)-len(e.Tag())-1], image[i+1:], true
	}
	return pull, "", false
}

// CincinnatiV1ContentType is the media type of /graph for a client that asks for it (Accept):
// the same graph with "version": 1 first, as openshift/cincinnati answers.
const CincinnatiV1ContentType = "application/vnd.redhat.cincinnati.v1+json"

// Bounds of the graph answers kept for one catalog version: an answer of 10,000 nodes is a
// few megabytes, and OSRC's channel names (stable-*, …) are as many as clients invent.
const (
	maxCachedGraphs     = 64
	maxCachedGraphBytes = 128 << 20
)

// graph is /graph: the update service's graph of a channel (see graphModel.answer), nodes in
// graph order (streams in catalog order, payloads in semver order) and edges sorted by (from,
// to) so the same graph always reads the same, the edges that carry risks as conditionalEdges.
// Answers are kept until the catalog changes or a feeder's delay ends.
func (h *handler) graph(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Query().Get("format") {
	case "", "cincinnati":
	default:
		http.Error(w, "Unsupported ?format, must be 'cincinnati' (default)", http.StatusBadRequest)
		return
	}
	now := h.now()
	version := h.cat.Changed()
	m := h.models.get(version, now, func() *graphModel {
		m, problems := buildModel(h.cat.Streams(), h.cat.Risks(), now, h.pageURL)
		for _, err := range problems {
			log.FromContext(r.Context()).Info("update service: " + err.Error())
		}
		return m
	})
	channel := r.URL.Query().Get("channel")
	arch := r.URL.Query().Get("arch")
	q, ok := m.query(channel, arch)
	if !ok {
		http.Error(w, m.badChannel(), http.StatusBadRequest)
		return
	}
	if arch != "" && !validArch(arch) {
		http.Error(w, textBadArch, http.StatusBadRequest)
		return
	}
	body := h.graphs.getUntil(version, now, "graph?"+channel+"&"+arch, func() ([]byte, time.Time) {
		return h.encodeGraph(nil, m, m.answer(q)), m.until
	})
	w.Header().Add("Vary", "Accept")
	if !acceptsV1(r) {
		writeBody(w, CincinnatiContentType, body)
		return
	}
	// The same document with "version": 1 as its first key.
	const head = "{\n  \"version\": 1,"
	w.Header().Set("Content-Type", CincinnatiV1ContentType)
	w.Header().Set("Content-Length", strconv.Itoa(len(head)+len(body)-1))
	_, _ = io.WriteString(w, head)
	_, _ = w.Write(body[1:])
}

// acceptsV1 says whether the request's Accept lists Cincinnati's v1 media type (with a
// quality above zero).
func acceptsV1(r *http.Request) bool {
	for _, value := range r.Header.Values("Accept") {
		for _, part := range strings.Split(value, ",") {
			mediaType, params, err := mime.ParseMediaType(strings.TrimSpace(part))
			if err != nil || mediaType != CincinnatiV1ContentType {
				continue
			}
			if q, err := strconv.ParseFloat(params["q"], 64); err == nil && q <= 0 {
				continue
			}
			return true
		}
	}
	return false
}

// pageURL is the address of a payload's page: under the public URL when one is set, else
// the path alone.
func (h *handler) pageURL(namespace, stream, tag string) string {
	return h.public + pagePath(namespace, stream, tag)
}

const textBadArch = "Unsupported ?arch, must be an architecture (amd64, arm64, ppc64le, s390x, ...) or 'multi'"

// validArch: an architecture as Go and the OCI platforms name it, or multi.
func validArch(arch string) bool {
	if len(arch) > 32 {
		return false
	}
	for _, r := range arch {
		if (r < 'a' || r > 'z') && (r < '0' || r > '9') && r != '_' {
			return false
		}
	}
	return true
}

// archImage is the image e offers to clusters of arch, and whether it offers one.
func archImage(s *catalog.Stream, e catalog.Entry, arch string) (string, bool) {
	status := &e.Payload.Status
	if len(e.Payload.Spec.PayloadCreationConfig.Platforms) == 0 {
		if arch == "multi" {
			return "", false
		}
		repo, digest, ok := nodePayload(s, e)
		if ok {
			return repo + "@" + digest, true
		}
		return repo, true
	}
	if arch == "multi" {
		repo, digest, ok := nodePayload(s, e)
		if !ok {
			return "", false // not built yet: no index to offer
		}
		return repo + "@" + digest, true
	}
	for _, pi := range status.PlatformImages {
		os, rest, _ := strings.Cut(pi.Platform, "/")
		if a, _, _ := strings.Cut(rest, "/"); os == "linux" && a == arch {
			return pi.Image, true
		}
	}
	return "", false
}

// upgradeRecord is OSRC's UpgradeRecord, the format of its persisted graph.
type upgradeRecord struct {
	From    string          `json:"from"`
	To      string          `json:"to"`
	Results []upgradeResult `json:"results"`
}

// archiveGraph is /archive/graph: every upgrade of every stream, gzipped JSON records
// sorted by to, from, then the results by URL. Runs without a URL are kept with url "".
func (h *handler) archiveGraph(w http.ResponseWriter, r *http.Request) {
	var records []upgradeRecord
	for _, s := range h.cat.Streams() {
		for _, u := range s.Upgrades() {
			rec := upgradeRecord{From: u.From, To: u.To, Results: make([]upgradeResult, 0, len(u.Runs))}
			for _, run := range u.Runs { // ordered by URL, then by name
				rec.Results = append(rec.Results, upgradeResult{State: stateWord(run.State), URL: run.URL})
			}
			records = append(records, rec)
		}
	}
	slices.SortStableFunc(records, func(a, b upgradeRecord) int {
		return cmp.Or(cmp.Compare(a.To, b.To), cmp.Compare(a.From, b.From))
	})
	if records == nil {
		records = []upgradeRecord{}
	}
	data, err := json.Marshal(records)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	var buf bytes.Buffer
	gw := gzip.NewWriter(&buf)
	_, _ = gw.Write(data)
	if err := gw.Close(); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Encoding", "gzip")
	writeBody(w, "application/json", buf.Bytes())
}
