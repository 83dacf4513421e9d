package osrc

import (
	"encoding/json"
	"net/url"
	"slices"
	"strconv"
	"sync"

	"github.com/release-controller/release-controller/internal/server/catalog"
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

// encodeGraph is json.MarshalIndent of graphDoc{nodes, edges} plus a newline, the nodes
// being every entry of streams.
//
// node, when set, says which payloads are nodes and the payload each names, by index in the
// whole graph (an architecture's view); nil keeps every payload as the stream lists it.
func encodeGraph(dst []byte, streams []*catalog.Stream, edges [][2]int, node func(int) (string, bool)) []byte {
	size := 64 + len(edges)*40
	for _, s := range streams {
		if len(s.Entries) > 0 {
			e := s.Entries[0]
			size += len(s.Entries) * (60 + len(e.Tag()) + len(s.PullSpec(e)) + len(e.Payload.Status.PayloadImage))
		}
	}
	dst = slices.Grow(dst, size)
	dst = append(dst, "{\n  \"nodes\": "...)
	n, whole := 0, -1
	for _, s := range streams {
		for _, e := range s.Entries {
			whole++
			var image string
			if node != nil {
				var keep bool
				if image, keep = node(whole); !keep {
					continue
				}
			}
			if n == 0 {
				dst = append(dst, "[\n"...)
			} else {
				dst = append(dst, ",\n"...)
			}
			n++
			dst = append(dst, "    {\n      \"version\": "...)
			dst = appendString(dst, e.Tag())
			dst = append(dst, ",\n      \"payload\": \""...)
			if node != nil {
				dst = appendEscaped(dst, image)
			} else {
				repo, digest, ok := nodePayload(s, e)
				dst = appendEscaped(dst, repo)
				if ok {
					dst = append(dst, '@')
					dst = appendEscaped(dst, digest)
				}
			}
			dst = append(dst, "\"\n    }"...)
		}
	}
	if n == 0 {
		dst = append(dst, "[]"...)
	} else {
		dst = append(dst, "\n  ]"...)
	}
	dst = append(dst, ",\n  \"edges\": "...)
	if len(edges) == 0 {
		dst = append(dst, "[]"...)
	} else {
		dst = append(dst, "[\n"...)
		for i, e := range edges {
			dst = append(dst, "    [\n      "...)
			dst = strconv.AppendInt(dst, int64(e[0]), 10)
			dst = append(dst, ",\n      "...)
			dst = strconv.AppendInt(dst, int64(e[1]), 10)
			dst = append(dst, "\n    ]"...)
			if i < len(edges)-1 {
				dst = append(dst, ',')
			}
			dst = append(dst, '\n')
		}
		dst = append(dst, "  ]"...)
	}
	return append(dst, "\n}\n"...)
}

// versionCache keeps answers computed from one version of the whole catalog, which
// Catalog.Changed identifies: the channel stays open until the next change.
type versionCache struct {
	mu      sync.Mutex
	version <-chan struct{}
	bodies  map[string][]byte
}

// maxCachedBodies bounds the answers kept for one version.
const maxCachedBodies = 16

// get returns the answer to key for version, built once per version.
func (c *versionCache) get(version <-chan struct{}, key string, build func() []byte) []byte {
	c.mu.Lock()
	if c.version == version {
		if b, ok := c.bodies[key]; ok {
			c.mu.Unlock()
			return b
		}
	}
	c.mu.Unlock()
	b := build()
	select {
	case <-version:
		return b // the catalog changed meanwhile: b is already old, do not keep it
	default:
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.version != version || len(c.bodies) >= maxCachedBodies {
		c.version, c.bodies = version, map[string][]byte{}
	}
	c.bodies[key] = b
	return b
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
