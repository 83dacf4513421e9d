package osrc

import (
	"bytes"
	"cmp"
	"compress/gzip"
	"encoding/json"
	"net/http"
	"slices"
	"strings"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/server/catalog"
)

// CincinnatiContentType is the media type of /graph.
const CincinnatiContentType = "application/vnd.redhat.cincinnati.graph+json; version=1.0"

const textBadChannel = "Unsupported ?channel, must be '', 'prerelease', 'prerelease-*', 'nightly', 'nightly-*', 'stable', or 'stable-*"

// channelFilter returns which upgrades a channel keeps, given the payload each leads to;
// false for a channel it does not know. OSRC's rules, with one difference: the channels that
// promise success (empty, stable*, next*) keep an upgrade only into an Accepted payload, since
// clusters follow them, and a payload rejected by another check is no place to upgrade to.
func channelFilter(channel string) (func(u catalog.Upgrade, to catalog.Entry) bool, bool) {
	promised := func(u catalog.Upgrade, to catalog.Entry) bool {
		return u.Success > 0 && to.Phase() == v1alpha1.PhaseAccepted
	}
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

// graph is /graph: every payload of every stream as a node (streams in catalog order,
// payloads in semver order), and an edge per tested upgrade the channel keeps, sorted by
// (from, to) so the same graph always reads the same. Answers are kept until the catalog
// changes.
func (h *handler) graph(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Query().Get("format") {
	case "", "cincinnati":
	default:
		http.Error(w, "Unsupported ?format, must be 'cincinnati' (default)", http.StatusBadRequest)
		return
	}
	channel := r.URL.Query().Get("channel")
	keep, ok := channelFilter(channel)
	if !ok {
		http.Error(w, textBadChannel, http.StatusBadRequest)
		return
	}
	arch := r.URL.Query().Get("arch")
	if arch != "" && !validArch(arch) {
		http.Error(w, textBadArch, http.StatusBadRequest)
		return
	}
	body := h.cache.get(h.cat.Changed(), "graph?"+channel+"&"+arch, func() []byte {
		streams := h.cat.Streams()
		edges := graphEdges(streams, keep)
		if arch == "" {
			return encodeGraph(nil, streams, edges, nil)
		}
		nodes := archNodes(streams, arch)
		return encodeGraph(nil, streams, nodes.edges(edges), nodes.image)
	})
	writeBody(w, CincinnatiContentType, body)
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

// archView is the graph of one architecture: which nodes of the whole graph it keeps, their
// new indexes, and the image each offers.
type archView struct {
	// index maps a node of the whole graph to its index here, -1 when dropped.
	index []int
	// images are the kept nodes' payloads (repository@digest), by index of the whole graph.
	images map[int]string
}

// archNodes keeps, of every payload of streams (in graph order), what clusters of arch can
// run: with "multi", payloads built for platforms, by their image index; with an
// architecture, payloads with an image of linux/<arch>, by that image, and payloads of one
// image (streams without platforms), which offer that image whatever the architecture.
func archNodes(streams []*catalog.Stream, arch string) archView {
	v := archView{images: map[int]string{}}
	n, kept := 0, 0
	for _, s := range streams {
		for _, e := range s.Entries {
			image, ok := archImage(s, e, arch)
			if ok {
				v.index = append(v.index, kept)
				v.images[n] = image
				kept++
			} else {
				v.index = append(v.index, -1)
			}
			n++
		}
	}
	return v
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

// edges renumbers the edges of the whole graph between kept nodes.
func (v archView) edges(all [][2]int) [][2]int {
	out := make([][2]int, 0, len(all))
	for _, e := range all {
		from, to := v.index[e[0]], v.index[e[1]]
		if from >= 0 && to >= 0 {
			out = append(out, [2]int{from, to})
		}
	}
	return out
}

// image is the payload of node n of the whole graph, and whether the view keeps it.
func (v archView) image(n int) (string, bool) {
	image, ok := v.images[n]
	return image, ok
}

// graphEdges are the node indexes of the upgrades keep accepts, sorted, nodes being every
// entry of streams in order. An upgrade from a tag of another stream starts at that tag's
// first node.
func graphEdges(streams []*catalog.Stream, keep func(catalog.Upgrade, catalog.Entry) bool) [][2]int {
	bases := make([]int, len(streams))
	total := 0
	for i, s := range streams {
		bases[i] = total
		total += len(s.Entries)
	}
	var first map[string]int // built on the first upgrade from another stream
	firstNode := func(tag string) (int, bool) {
		if first == nil {
			first = make(map[string]int, total)
			for i := len(streams) - 1; i >= 0; i-- {
				for j := len(streams[i].Entries) - 1; j >= 0; j-- {
					first[streams[i].Entries[j].Tag()] = bases[i] + j
				}
			}
		}
		n, ok := first[tag]
		return n, ok
	}
	edges := [][2]int{}
	for i, s := range streams {
		for _, u := range s.Upgrades() {
			to := s.Index(u.To)
			if to < 0 || !keep(u, s.Entries[to]) {
				continue
			}
			from := s.Index(u.From)
			if from >= 0 {
				from += bases[i]
			} else if f, ok := firstNode(u.From); ok {
				from = f
			} else {
				continue
			}
			edges = append(edges, [2]int{from, to + bases[i]})
		}
	}
	slices.SortFunc(edges, func(a, b [2]int) int { return cmp.Or(cmp.Compare(a[0], b[0]), cmp.Compare(a[1], b[1])) })
	return slices.Compact(edges)
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
