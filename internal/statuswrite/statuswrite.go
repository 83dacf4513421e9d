// Package statuswrite is the controllers' one answer to "my cache is behind my own write".
// A controller reads objects from its informer cache, which shows its own status write a
// moment after the API server took it. A reconcile in between would compute a status from the
// version that write replaced, and its optimistically locked write would be refused: a wasted
// request, or worse, a status computed from facts that write already changed. So each
// controller remembers its last status write per object in a Tracker until the cache shows it,
// and a reconcile that reads the version the write replaced either waits for the cache or
// starts from what it wrote.
//
// Window is the other half of holding writes back: it remembers, per object, when a run of
// events began whose writes are being gathered into one (a payload's burst of job events, a
// pipeline's rollout observations).
//
// Both are bookkeeping only, safe for concurrent use, and read the time from an injected clock.
package statuswrite

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
)

// DefaultMaxLag bounds how long a write is waited for: a cache that has not shown it by then
// is taken as it is (its write is refused if it is stale, and retried).
const DefaultMaxLag = 10 * time.Second

// Write is a status write the controller made.
type Write[T any] struct {
	// Before is the resourceVersion the write replaced, After the one it made.
	Before, After string
	// At is when the write was made.
	At time.Time
	// Value is what the controller wrote (or nothing it needs: struct{}).
	Value T
}

// Tracker remembers the controller's last status write of each object.
type Tracker[T any] struct {
	// Clock tells the time; nil is the real clock.
	Clock clock.PassiveClock
	// MaxLag is how long a write is remembered for Behind; zero is DefaultMaxLag.
	MaxLag time.Duration
	// Keep is how long a write is remembered for Last (the spacing of writes); zero is MaxLag.
	Keep time.Duration

	mu     sync.Mutex
	writes map[types.NamespacedName]Write[T]
	swept  time.Time
}

func (t *Tracker[T]) now() time.Time {
	if t.Clock == nil {
		return time.Now()
	}
	return t.Clock.Now()
}

func (t *Tracker[T]) maxLag() time.Duration {
	if t.MaxLag > 0 {
		return t.MaxLag
	}
	return DefaultMaxLag
}

func (t *Tracker[T]) keep() time.Duration {
	return max(t.Keep, t.maxLag())
}

// Wrote records a status write of key that replaced resourceVersion before with after and
// wrote value, and forgets writes older than Keep.
func (t *Tracker[T]) Wrote(key types.NamespacedName, before, after string, value T) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	if t.writes == nil {
		t.writes = map[types.NamespacedName]Write[T]{}
	}
	if keep := t.keep(); now.Sub(t.swept) > keep {
		for k, w := range t.writes {
			if now.Sub(w.At) >= keep {
				delete(t.writes, k)
			}
		}
		t.swept = now
	}
	t.writes[key] = Write[T]{Before: before, After: after, At: now, Value: value}
}

// Behind reports whether key, read from the cache at resourceVersion cached, predates the
// controller's last write of it — the cache still shows the very version that write replaced,
// and the write is younger than MaxLag — and returns that write. Otherwise the cache has
// caught up (or moved past, to another writer's version), and false.
func (t *Tracker[T]) Behind(key types.NamespacedName, cached string) (Write[T], bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	w, ok := t.writes[key]
	if !ok || w.Before == w.After {
		return Write[T]{}, false
	}
	return w, IsBehind(cached, w.Before, w.At, t.now(), t.maxLag())
}

// IsBehind is Behind's rule: a cached resourceVersion equal to the one a write replaced, read
// less than maxLag after the write. It is pure.
func IsBehind(cached, replaced string, writtenAt, now time.Time, maxLag time.Duration) bool {
	return replaced != "" && cached == replaced && now.Sub(writtenAt) < maxLag
}

// Last returns when key was last written, while remembered (Keep); zero otherwise.
func (t *Tracker[T]) Last(key types.NamespacedName) time.Time {
	t.mu.Lock()
	defer t.mu.Unlock()
	w, ok := t.writes[key]
	if !ok || t.now().Sub(w.At) >= t.keep() {
		return time.Time{}
	}
	return w.At
}

// Now is the tracker's time, for waits computed from Last.
func (t *Tracker[T]) Now() time.Time { return t.now() }

// Forget drops what is remembered of key (the object is gone).
func (t *Tracker[T]) Forget(key types.NamespacedName) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.writes, key)
}

// Span is a run of events of one object: the first and the latest.
type Span struct {
	First, Last time.Time
}

// Window remembers the runs of events whose status writes are being held back.
type Window struct {
	// Clock tells the time; nil is the real clock.
	Clock clock.PassiveClock

	mu    sync.Mutex
	spans map[types.NamespacedName]Span
}

func (w *Window) now() time.Time {
	if w.Clock == nil {
		return time.Now()
	}
	return w.Clock.Now()
}

// Mark notes an event of key now: it opens a span, or extends the open one. It returns the span.
func (w *Window) Mark(key types.NamespacedName) Span {
	w.mu.Lock()
	defer w.mu.Unlock()
	now := w.now()
	if w.spans == nil {
		w.spans = map[types.NamespacedName]Span{}
	}
	s, ok := w.spans[key]
	if !ok {
		s.First = now
	}
	s.Last = now
	w.spans[key] = s
	return s
}

// Open returns key's span, opening one now when it has none, without marking an event.
func (w *Window) Open(key types.NamespacedName) Span {
	w.mu.Lock()
	defer w.mu.Unlock()
	if s, ok := w.spans[key]; ok {
		return s
	}
	now := w.now()
	if w.spans == nil {
		w.spans = map[types.NamespacedName]Span{}
	}
	s := Span{First: now, Last: now}
	w.spans[key] = s
	return s
}

// Get returns key's open span, if any.
func (w *Window) Get(key types.NamespacedName) (Span, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	s, ok := w.spans[key]
	return s, ok
}

// Close ends key's span: its status was written, or has nothing to write.
func (w *Window) Close(key types.NamespacedName) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.spans, key)
}

// Now is the window's time, for the waits computed from a span.
func (w *Window) Now() time.Time { return w.now() }
