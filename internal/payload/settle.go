package payload

import (
	"time"

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
// then fail on the optimistic lock. So the controller remembers its writes
// (statuswrite.Tracker), and a reconcile that reads the version a write replaced waits for the
// cache instead of sending the patch.
