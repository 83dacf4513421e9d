package stream

import (
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/release-controller/release-controller/api/v1alpha1"
)

// Imports run every ImportInterval per component (or its backoff, while it fails). The time
// of each attempt is kept in memory only: writing it to the status would cost a status write
// per stream per import, for nothing a user reads. A controller that restarts, or a replica
// that becomes leader, rebuilds the schedule from the status instead (LastAttempt): imports
// run on a grid from the last change of the component's outcome (lastChanged), so it resumes
// the previous leader's schedule rather than resolving every component at once.

// ImportDue says whether a component is resolved now and, when it is not, how long until it
// is. lastAttempt is zero when this process has not resolved it yet; specChanged is set when
// the stream's spec changed since its status was written.
func ImportDue(st v1alpha1.ComponentStatus, lastAttempt time.Time, specChanged bool, now time.Time, interval time.Duration) (due bool, wait time.Duration) {
	if lastAttempt.IsZero() || specChanged || (st.Image == "" && st.Error == "") {
		return true, 0
	}
	every := interval
	if st.Error != "" {
		every = ImportBackoff(st.Failures)
	}
	if next := lastAttempt.Add(every); next.After(now) {
		return false, next.Sub(now)
	}
	return true, 0
}

// LastAttempt is when the component was last resolved: what this process remembers, or,
// when it has not resolved it yet (a restart, a new leader), the latest point not after now of
// the grid that starts at the last change of its outcome (lastChanged) and steps by the
// interval, or by the backoff while it fails; zero when the status has no lastChanged.
func LastAttempt(st v1alpha1.ComponentStatus, remembered, now time.Time, interval time.Duration) time.Time {
	if !remembered.IsZero() || st.LastChanged == nil {
		return remembered
	}
	every := interval
	if st.Error != "" {
		every = ImportBackoff(st.Failures)
	}
	since := now.Sub(st.LastChanged.Time)
	if since <= 0 || every <= 0 {
		return st.LastChanged.Time
	}
	return st.LastChanged.Add(since - since%every)
}

// SpecChanged says whether the stream's spec changed since its components were last
// resolved: importedGeneration is the generation this process last imported (0 when it has
// not yet, as after a restart or a change of leader; then the status's observedGeneration
// stands in for it).
func SpecChanged(stream *v1alpha1.ReleaseStream, importedGeneration int64) bool {
	if importedGeneration == 0 {
		importedGeneration = stream.Status.ObservedGeneration
	}
	return importedGeneration != stream.Generation
}

// ImportResult is a component's status after it was resolved to digestRef, or failed with
// resolveErr, at now. LastChanged moves only when the outcome does: a new digest, an error
// that begins, changes or ends.
func ImportResult(prev v1alpha1.ComponentStatus, digestRef string, resolveErr error, now time.Time) v1alpha1.ComponentStatus {
	next := prev
	if resolveErr != nil {
		next.Error, next.Failures = resolveErr.Error(), prev.Failures+1
	} else {
		next.Image, next.Error, next.Failures = digestRef, "", 0
	}
	if next.Image != prev.Image || next.Error != prev.Error || prev.LastChanged == nil {
		next.LastChanged = &metav1.Time{Time: now}
	}
	return next
}

// importTimes remembers when each component of each stream was last resolved, and the
// stream's generation then; lost with the process (the status keeps what a new leader needs).
type importTimes struct {
	mu          sync.Mutex
	last        map[types.NamespacedName]map[string]time.Time
	generations map[types.NamespacedName]int64
}

// generation is the stream's generation when it was last imported; 0 before.
func (t *importTimes) generation(stream types.NamespacedName) int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.generations[stream]
}

func (t *importTimes) setGeneration(stream types.NamespacedName, generation int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.generations == nil {
		t.generations = map[types.NamespacedName]int64{}
	}
	t.generations[stream] = generation
}

func (t *importTimes) get(stream types.NamespacedName, component string) time.Time {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.last[stream][component]
}

func (t *importTimes) set(stream types.NamespacedName, component string, at time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.last == nil {
		t.last = map[types.NamespacedName]map[string]time.Time{}
	}
	if t.last[stream] == nil {
		t.last[stream] = map[string]time.Time{}
	}
	t.last[stream][component] = at
}

// forget drops a deleted stream.
func (t *importTimes) forget(stream types.NamespacedName) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.last, stream)
	delete(t.generations, stream)
}
