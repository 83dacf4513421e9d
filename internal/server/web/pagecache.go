package web

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"time"

	"k8s.io/utils/lru"

	"github.com/release-controller/release-controller/internal/server/catalog"
)

// Rendering costs most of a page's time (html/template escapes every value), and a page is
// often rendered from the same snapshot many times: by every viewer, and by every viewer's
// live updates after each change. The live parts are therefore kept, keyed by the immutable
// catalog snapshots they read and by the minute their ages are computed for; a change of a
// stream makes a new snapshot, and so a new key.

// partCacheSize bounds the parts kept (about 50 KiB each for a stream page).
const partCacheSize = 128

type partKey struct {
	view string
	// snapshot identifies the snapshots the part reads (their addresses).
	snapshot string
	// arg is the rest of what the part depends on: page and phase, or tag.
	arg    string
	minute int64
}

// partCache holds the rendered parts, least recently used out first.
type partCache struct {
	parts *lru.Cache // partKey → the part
}

func newPartCache() *partCache { return &partCache{parts: lru.New(partCacheSize)} }

// cached returns the part of key, rendering it on a miss; errors are not kept. Two
// requests missing at once both render, which is harmless.
func cached[T any](c *partCache, key partKey, render func() (T, error)) (T, error) {
	if v, ok := c.parts.Get(key); ok {
		return v.(T), nil
	}
	v, err := render()
	if err != nil {
		return v, err
	}
	c.parts.Add(key, v) // a part rendered at once by another request is the same part
	return v, nil
}

func snapshotID(s *catalog.Stream) string { return fmt.Sprintf("%p", s) }

func snapshotsID(streams []*catalog.Stream) string {
	var b strings.Builder
	for _, s := range streams {
		fmt.Fprintf(&b, "%p,", s)
	}
	return b.String()
}

// now is the time the pages compute ages for: the current minute, so that a part rendered
// once serves the whole minute (ages are shown in minutes or coarser).
func (p *site) now() time.Time { return p.opts.Clock.Now().Truncate(time.Minute) }

func minuteOf(t time.Time) int64 { return t.Unix() / 60 }

// buffers are reused between renders: a page is tens of KiB, built by many small writes.
var buffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

func getBuffer() *bytes.Buffer {
	b := buffers.Get().(*bytes.Buffer)
	b.Reset()
	return b
}

func putBuffer(b *bytes.Buffer) {
	if b.Cap() <= 4<<20 {
		buffers.Put(b)
	}
}
