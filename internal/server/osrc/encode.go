package osrc

import (
	"cmp"
	"encoding/json"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/release-controller/release-controller/internal/server/catalog"
	"github.com/release-controller/release-controller/internal/updateservice"
)

// The large answers (tags, the releasestreams lists, the graph) are written by hand: the
// same bytes json.MarshalIndent gives, several times faster, which keeps them within
// milliseconds at 10,000 payloads. The contract tests compare them with encoding/json.

// appendString appends s as a JSON string, escaped as encoding/json does (HTML characters
// included).
func appendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	return append(appendEscaped(dst, s), '"')
}

// plain marks the bytes that stand for themselves in a JSON string as encoding/json writes
// it: printable ASCII but for '"', '\\' and the HTML characters '<', '>' and '&'.
var plain = func() (t [256]bool) {
	for c := 0x20; c < 0x80; c++ {
		t[c] = true
	}
	for _, c := range `"\<>&` {
		t[c] = false
	}
	return t
}()

// appendEscaped appends s escaped for the inside of a JSON string.
func appendEscaped(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if !plain[s[i]] {
			b, _ := json.Marshal(s)
			return append(dst, b[1:len(b)-1]...)
		}
	}
	return append(dst, s...)
}

// appendTag appends the APITag of e as an element of a list indented by four spaces.
func (h *handler) appendTag(dst []byte, s *catalog.Stream, e catalog.Entry) []byte {
	tag := e.Tag()
	dst = append(dst, "    {\n      \"name\": "...)
	dst = appendString(dst, tag)
	dst = append(dst, ",\n      \"phase\": "...)
	dst = appendString(dst, string(e.Phase()))
	dst = append(dst, ",\n      \"pullSpec\": "...)
	dst = appendString(dst, s.PullSpec(e))
	dst = append(dst, ",\n      \"downloadURL\": \""...)
	if h.artifacts != "" {
		dst = appendEscaped(dst, h.artifacts)
		dst = append(dst, '/')
		dst = appendEscaped(dst, url.PathEscape(tag))
	}
	return append(dst, "\"\n    }"...)
}

// encodeTags is json.MarshalIndent of OSRC's APIRelease {name, tags} plus a newline, tags
// being the APITags of the entries keep accepts.
func (h *handler) encodeTags(dst []byte, s *catalog.Stream, keep func(catalog.Entry) bool) []byte {
	if len(s.Entries) > 0 {
		e := s.Entries[0]
		dst = slices.Grow(dst, 64+len(s.Entries)*(160+3*len(e.Tag())+len(s.PullSpec(e))+len(h.artifacts)))
	}
	dst = append(dst, "{\n  \"name\": "...)
	dst = appendString(dst, s.Name)
	dst = append(dst, ",\n  \"tags\": "...)
	n := 0
	for _, e := range s.Entries {
		if !keep(e) {
			continue
		}
		if n == 0 {
			dst = append(dst, "[\n"...)
		} else {
			dst = append(dst, ",\n"...)
		}
		dst = h.appendTag(dst, s, e)
		n++
	}
	if n == 0 {
		return append(dst, "null\n}\n"...)
	}
	return append(dst, "\n  ]\n}\n"...)
}

// streamList is one key of a releasestreams answer.
type streamList struct {
	key  string
	tags []string
}

// encodeStreamLists is json.MarshalIndent of the map {key: tags}, indented by one space,
// plus a newline; lists must be sorted by key.
func encodeStreamLists(dst []byte, lists []streamList) []byte {
	if len(lists) == 0 {
		return append(dst, "{}\n"...)
	}
	size := 4
	for _, l := range lists {
		size += len(l.key) + 8
		for _, t := range l.tags {
			size += len(t) + 6
		}
	}
	dst = slices.Grow(dst, size)
	dst = append(dst, "{\n"...)
	for i, l := range lists {
		dst = append(dst, ' ')
		dst = appendString(dst, l.key)
		dst = append(dst, ": "...)
		switch {
		case l.tags == nil:
			dst = append(dst, "null"...)
		case len(l.tags) == 0:
			dst = append(dst, "[]"...)
		default:
			dst = append(dst, "[\n"...)
			for j, t := range l.tags {
				dst = append(dst, "  "...)
				dst = appendString(dst, t)
				if j < len(l.tags)-1 {
					dst = append(dst, ',')
				}
				dst = append(dst, '\n')
			}
			dst = append(dst, " ]"...)
		}
		if i < len(lists)-1 {
			dst = append(dst, ',')
		}
		dst = append(dst, '\n')
	}
	return append(dst, "}\n"...)
}

// Keys of a node's metadata, as Cincinnati names them, in the order encoding/json sorts a
// map's keys.
const (
	metaRemoveRegex = "io.openshift.upgrades.graph.previous.remove_regex"
	metaChannels    = "io.openshift.upgrades.graph.release.channels"
	metaManifestRef = "io.openshift.upgrades.graph.release.manifestref"
	metaURL         = "url"
)

// encodeGraph is json.MarshalIndent of graphDoc{nodes, edges, conditionalEdges} plus a
// newline: the nodes of a (each with its metadata when it has any), its edges, and its
// conditional edges (left out when there are none) by version.
func (h *handler) encodeGraph(dst []byte, m *graphModel, a graphAnswer) []byte {
	size := 64 + len(a.edges)*40 + len(a.conditional)*400
	for k, n := range a.nodes {
		size += 120 + len(m.nodes[n].Version) + 2*len(a.payloads[k]) + len(m.channelsOf[n])
		if h.public != "" {
			size += 48 + len(h.public) + len(m.nodes[n].Stream) + len(m.nodes[n].Namespace) + len(m.nodes[n].Version)
		}
	}
	dst = slices.Grow(dst, size)
	dst = append(dst, "{\n  \"nodes\": "...)
	if len(a.nodes) == 0 {
		dst = append(dst, "[]"...)
	} else {
		dst = append(dst, "[\n"...)
		for k, n := range a.nodes {
			if k > 0 {
				dst = append(dst, ",\n"...)
			}
			dst = h.appendNode(dst, m, n, a.payloads[k])
		}
		dst = append(dst, "\n  ]"...)
	}
	dst = append(dst, ",\n  \"edges\": "...)
	if len(a.edges) == 0 {
		dst = append(dst, "[]"...)
	} else {
		dst = append(dst, "[\n"...)
		for i, e := range a.edges {
			dst = append(dst, "    [\n      "...)
			dst = strconv.AppendInt(dst, int64(e[0]), 10)
			dst = append(dst, ",\n      "...)
			dst = strconv.AppendInt(dst, int64(e[1]), 10)
			dst = append(dst, "\n    ]"...)
			dst = endItem(dst, i, len(a.edges))
		}
		dst = append(dst, "  ]"...)
	}
	if len(a.conditional) > 0 {
		dst = append(dst, ",\n  \"conditionalEdges\": [\n"...)
		risks := map[*updateservice.Risk][]byte{} // a risk is written once, then copied
		for i, c := range a.conditional {
			dst = append(dst, "    {\n      \"edges\": [\n"...)
			for j, e := range c.Edges {
				dst = append(dst, "        {\n          \"from\": "...)
				dst = appendString(dst, m.nodes[a.nodes[e[0]]].Version)
				dst = append(dst, ",\n          \"to\": "...)
				dst = appendString(dst, m.nodes[a.nodes[e[1]]].Version)
				dst = append(dst, "\n        }"...)
				dst = endItem(dst, j, len(c.Edges))
			}
			dst = append(dst, "      ],\n      \"risks\": [\n"...)
			for j, r := range c.Risks {
				b, ok := risks[r]
				if !ok {
					b = appendRisk(nil, r)
					risks[r] = b
				}
				dst = append(dst, b...)
				dst = endItem(dst, j, len(c.Risks))
			}
			dst = append(dst, "      ]\n    }"...)
			dst = endItem(dst, i, len(a.conditional))
		}
		dst = append(dst, "  ]"...)
	}
	return append(dst, "\n}\n"...)
}

// appendNode appends node n of the model, offering payload, as an element of the nodes list.
// Its metadata: remove_regex ".*" when tombstoned (clusters drop every edge into it), the
// declared channels holding it, the payload's digest, and its page under the public URL.
func (h *handler) appendNode(dst []byte, m *graphModel, n int, payload string) []byte {
	node := m.nodes[n]
	dst = append(dst, "    {\n      \"version\": "...)
	dst = appendString(dst, node.Version)
	dst = append(dst, ",\n      \"payload\": "...)
	dst = appendString(dst, payload)
	digest := ""
	if i := strings.LastIndex(payload, "@"); i >= 0 && strings.Contains(payload[i+1:], ":") {
		digest = payload[i+1:]
	}
	first := true
	meta := func(key string) {
		if first {
			dst = append(dst, ",\n      \"metadata\": {\n        \""...)
			first = false
		} else {
			dst = append(dst, ",\n        \""...)
		}
		dst = append(dst, key...)
		dst = append(dst, "\": "...)
	}
	if node.Tombstoned {
		meta(metaRemoveRegex)
		dst = append(dst, `".*"`...)
	}
	if channels := m.channelsOf[n]; channels != "" {
		meta(metaChannels)
		dst = appendString(dst, channels)
	}
	if digest != "" {
		meta(metaManifestRef)
		dst = appendString(dst, digest)
	}
	if h.public != "" {
		meta(metaURL)
		dst = appendString(dst, h.pageURL(node.Namespace, node.Stream, node.Version))
	}
	if !first {
		dst = append(dst, "\n      }"...)
	}
	return append(dst, "\n    }"...)
}

// appendRisk appends r as an element of a conditional edge's risks.
func appendRisk(dst []byte, r *updateservice.Risk) []byte {
	dst = append(dst, "        {\n          \"url\": "...)
	dst = appendString(dst, r.URL)
	dst = append(dst, ",\n          \"name\": "...)
	dst = appendString(dst, r.Name)
	dst = append(dst, ",\n          \"message\": "...)
	dst = appendString(dst, r.Message)
	dst = append(dst, ",\n          \"matchingRules\": "...)
	if len(r.Rules) == 0 {
		dst = append(dst, "[]"...)
	} else {
		dst = append(dst, "[\n"...)
		for i, rule := range r.Rules {
			dst = append(dst, "            {\n              \"type\": "...)
			dst = appendString(dst, rule.Type)
			if rule.PromQL != nil {
				dst = append(dst, ",\n              \"promql\": {\n                \"promql\": "...)
				dst = appendString(dst, rule.PromQL.PromQL)
				dst = append(dst, "\n              }"...)
			}
			dst = append(dst, "\n            }"...)
			dst = endItem(dst, i, len(r.Rules))
		}
		dst = append(dst, "          ]"...)
	}
	return append(dst, "\n        }"...)
}

// endItem ends item i of a list of n: with a comma unless it is the last, then a newline.
func endItem(dst []byte, i, n int) []byte {
	if i < n-1 {
		dst = append(dst, ',')
	}
	return append(dst, '\n')
}

// versionCache keeps answers computed from one version of the whole catalog, which
// Catalog.Changed identifies: the channel stays open until the next change. An answer may
// also hold only until a time (one that reads channel membership, until the next feeder's
// promotion).
type versionCache struct {
	// maxBodies bounds the answers kept for one version (0: maxCachedBodies); maxBytes their
	// total size (0: no bound). Past either, the cache starts afresh.
	maxBodies, maxBytes int

	mu      sync.Mutex
	version <-chan struct{}
	bodies  map[string]cachedBody
	bytes   int
}

type cachedBody struct {
	data  []byte
	until time.Time // zero: until the catalog changes
}

// maxCachedBodies bounds the answers kept for one version by default.
const maxCachedBodies = 16

// get returns the answer to key for version, built once per version.
func (c *versionCache) get(version <-chan struct{}, key string, build func() []byte) []byte {
	return c.getUntil(version, time.Time{}, key, func() ([]byte, time.Time) { return build(), time.Time{} })
}

// getUntil returns the answer to key for version at now, built once per version and again
// once the time build returned with it (zero: none) has come.
func (c *versionCache) getUntil(version <-chan struct{}, now time.Time, key string, build func() ([]byte, time.Time)) []byte {
	c.mu.Lock()
	if c.version == version {
		if b, ok := c.bodies[key]; ok && (b.until.IsZero() || now.Before(b.until)) {
			c.mu.Unlock()
			return b.data
		}
	}
	c.mu.Unlock()
	data, until := build()
	select {
	case <-version:
		return data // the catalog changed meanwhile: data is already old, do not keep it
	default:
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	maxBodies := cmp.Or(c.maxBodies, maxCachedBodies)
	if old, ok := c.bodies[key]; ok && c.version == version {
		delete(c.bodies, key)
		c.bytes -= len(old.data)
	}
	if c.version != version || len(c.bodies) >= maxBodies || (c.maxBytes > 0 && c.bytes+len(data) > c.maxBytes) {
		c.version, c.bodies, c.bytes = version, map[string]cachedBody{}, 0
	}
	c.bodies[key] = cachedBody{data: data, until: until}
	c.bytes += len(data)
	return data
}

// snapshotCache keeps answers computed from one stream's snapshot: a stream whose payloads
// did not change answers from memory however busy the other streams are.
type snapshotCache struct {
	mu      sync.Mutex
	streams map[*catalog.Stream]map[string][]byte
}

// maxCachedStreams bounds the snapshots kept; past it the cache starts afresh.
const maxCachedStreams = 256

// get returns the answer to key for snapshot s, built once per snapshot.
func (c *snapshotCache) get(s *catalog.Stream, key string, build func() []byte) []byte {
	c.mu.Lock()
	if b, ok := c.streams[s][key]; ok {
		c.mu.Unlock()
		return b
	}
	c.mu.Unlock()
	b := build()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.streams == nil || len(c.streams) >= maxCachedStreams {
		c.streams = map[*catalog.Stream]map[string][]byte{}
	}
	// A newer snapshot of the same stream replaces the older ones.
	for old := range c.streams {
		if old != s && old.Key() == s.Key() {
			delete(c.streams, old)
		}
	}
	bodies := c.streams[s]
	if bodies == nil || len(bodies) >= maxCachedBodies {
		bodies = map[string][]byte{}
		c.streams[s] = bodies
	}
	bodies[key] = b
	return b
}
