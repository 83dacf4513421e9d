package payload

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// Jobs of one payload tend to change together: its creation job and the verification runs
// launched right after it, or ten verification runs finishing within a second. Writing the
// payload's status once for the whole burst instead of once per slice of it halves the status
// writes of a busy API server, where a burst's events spread over more than JobEventDelay.
// So a payload is reconciled once its jobs have been quiet for JobEventDelay, and at the
// latest MaxJobEventDelay after the first event of the burst, so a steady trickle of events
// (a large aggregated job) cannot hold its status back.

// MaxJobEventDelayFactor bounds a burst: at most this many JobEventDelays after its first event.
const MaxJobEventDelayFactor = 10

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

// settle returns how long payload should still wait at now; when it need not, its burst is
// over and forgotten, and events from here on start a new one.
func (b *bursts) settle(payload types.NamespacedName, now time.Time, quiet, limit time.Duration) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	cur, ok := b.m[payload]
	if !ok {
		return 0
	}
	wait := SettleWait(cur.first, cur.last, now, quiet, limit)
	if wait == 0 {
		delete(b.m, payload)
	}
	return wait
}
