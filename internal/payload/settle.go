package payload

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/jobcache"
)

// Jobs of one payload tend to change together: its creation job and the verification runs
// launched right after it, or ten verification runs finishing within a second. Writing the
// payload's status once for the whole burst instead of once per slice of it halves the status
// writes of a busy API server, where a burst's events spread over more than JobEventDelay.
// So a payload is reconciled JobEventDelay after a job event, and a verdict found then is
// written at once (WriteBeforeSettled); the rest of its status is written once its jobs have
// been quiet for SettleQuietFactor delays, and at the latest MaxJobEventDelayFactor delays
// after the first event of the burst, so a steady trickle of events (a large aggregated job)
// cannot hold its status back for long. The quiet period is longer than the delay: a client
// creates a payload's jobs one request after the other, and on a busy API server (a thousand
// payloads set up at once) its requests are a few hundred milliseconds apart.
//
// A payload's own creation opens a burst too: its creation job follows at once (and, in a
// benchmark or a replay, its verification runs), so a first status written before them would
// only say "no creation job found" and be overwritten a moment later. See OpensBurst.

// SettleQuietFactor is how many JobEventDelays a payload's jobs must have been quiet for a
// status without a new verdict to be written.
const SettleQuietFactor = 5

// MaxJobEventDelayFactor bounds a burst: at most this many JobEventDelays after its first event.
const MaxJobEventDelayFactor = 50

// SettleWait is how much longer a payload whose burst of job events began at first and whose
// latest event came at last should wait, at now, before it is reconciled; zero means now.
func SettleWait(first, last, now time.Time, quiet, limit time.Duration) time.Duration {
	if first.IsZero() {
		return 0
	}
	wait := last.Add(quiet).Sub(now)
	if deadline := first.Add(limit).Sub(now); deadline < wait {
		wait = deadline
	}
	return max(wait, 0)
}

// burst is the first and latest job event of a payload not yet reconciled.
type burst struct{ first, last time.Time }

// bursts holds the payloads with job events not yet reconciled.
type bursts struct {
	mu sync.Mutex
	m  map[types.NamespacedName]burst
}

// event notes a job event of payload at now.
func (b *bursts) event(payload types.NamespacedName, now time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.m == nil {
		b.m = map[types.NamespacedName]burst{}
	}
	cur, ok := b.m[payload]
	if !ok {
		cur.first = now
	}
	cur.last = now
	b.m[payload] = cur
}

// wait returns how long payload should still wait at now for its burst to settle; zero when
// it has none or the burst is over.
func (b *bursts) wait(payload types.NamespacedName, now time.Time, quiet, limit time.Duration) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	cur, ok := b.m[payload]
	if !ok {
		return 0
	}
	return SettleWait(cur.first, cur.last, now, quiet, limit)
}

// end forgets payload's burst once its status is written (or has nothing to write): events
// from here on start a new one.
func (b *bursts) end(payload types.NamespacedName) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.m, payload)
}

// WriteBeforeSettled reports whether a status computed while a burst of job events is still
// going on is written at once: when it brings the payload's verdict. Waiting for the rest of
// the burst would delay the verdict and save no write: the verdict is the last write.
func WriteBeforeSettled(old, computed v1alpha1.PayloadPhase) bool {
	if computed == old {
		return false
	}
	switch computed {
	case v1alpha1.PhaseAccepted, v1alpha1.PhaseRejected, v1alpha1.PhaseFailed:
		return true
	}
	return false
}

// OpensBurst reports whether the creation event of a payload with status starts a burst of
// job events, so that its first status is written once its first jobs have settled rather than
// before they are seen: true for a payload whose status was never written. A payload with a
// status (the controller restarted, another replica wrote it) is reconciled at once.
func OpensBurst(status *v1alpha1.ReleasePayloadStatus) bool {
	return status.Phase == "" && len(status.Conditions) == 0
}

// RunsFinished reports whether records, the jobs of one payload, hold verification runs and
// all of them are over. A payload whose last run just finished is reconciled at once, not
// JobEventDelay later: its verdict is its last status write, so waiting for more events of
// the burst would only delay it.
func RunsFinished(records []*jobcache.Record) bool {
	runs := 0
	for _, r := range records {
		if !r.IsRun() {
			continue
		}
		if !r.State.IsTerminal() {
			return false
		}
		runs++
	}
	return runs > 0
}

// A payload reconciled at once after its status write (its last run finished right after an
// earlier write) may be read from a cache that does not show that write yet; its patch would
// then fail on the optimistic lock. So each status write is remembered for a moment, and a
// reconcile that reads an older version waits for the cache instead of sending the patch.

// CacheCatchUp bounds how long a reconcile waits for the cache to show the controller's own
// status write; after it, another writer's later version (the stream controller's, a user's)
// is taken as it is.
const CacheCatchUp = 2 * time.Second

// CacheBehind reports whether a payload read at now with resourceVersion cached predates the
// controller's own write, which the API server answered with resourceVersion written at
// writtenAt: the versions differ and the write is less than CacheCatchUp old.
func CacheBehind(cached, written string, writtenAt, now time.Time) bool {
	return written != "" && cached != written && now.Sub(writtenAt) < CacheCatchUp
}

// lastWrite is the resourceVersion a status write returned, and when.
type lastWrite struct {
	resourceVersion string
	at              time.Time
}

// writes holds each payload's last status write while the cache may still lag behind it.
type writes struct {
	mu    sync.Mutex
	m     map[types.NamespacedName]lastWrite
	swept time.Time
}

// note records the status write of payload that returned resourceVersion at now, and forgets
// the writes the cache has had time to catch up with.
func (w *writes) note(payload types.NamespacedName, resourceVersion string, now time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.m == nil {
		w.m = map[types.NamespacedName]lastWrite{}
	}
	if now.Sub(w.swept) > CacheCatchUp {
		for key, lw := range w.m {
			if now.Sub(lw.at) >= CacheCatchUp {
				delete(w.m, key)
			}
		}
		w.swept = now
	}
	w.m[payload] = lastWrite{resourceVersion: resourceVersion, at: now}
}

// behind reports whether payload, read from the cache with resourceVersion cached at now,
// does not show its last status write yet (CacheBehind).
func (w *writes) behind(payload types.NamespacedName, cached string, now time.Time) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	lw, ok := w.m[payload]
	if !ok {
		return false
	}
	if !CacheBehind(cached, lw.resourceVersion, lw.at, now) {
		delete(w.m, payload)
		return false
	}
	return true
}
