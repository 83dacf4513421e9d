package stream

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/release-controller/release-controller/api/v1alpha1"
)

func TestImportDue(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	resolved := v1alpha1.ComponentStatus{Name: "api", Image: "r/api@sha256:1"}
	failing := v1alpha1.ComponentStatus{Name: "api", Error: "not found", Failures: 3} // backoff 20s
	tests := []struct {
		name        string
		st          v1alpha1.ComponentStatus
		lastAttempt time.Time
		specChanged bool
		wantDue     bool
		wantWait    time.Duration
	}{
		{name: "never resolved by this process", st: resolved, wantDue: true},
		{name: "never resolved at all", st: v1alpha1.ComponentStatus{Name: "api"}, lastAttempt: now, wantDue: true},
		{name: "spec changed", st: resolved, lastAttempt: now, specChanged: true, wantDue: true},
		{name: "resolved within the interval", st: resolved, lastAttempt: now.Add(-40 * time.Second), wantWait: 20 * time.Second},
		{name: "interval passed", st: resolved, lastAttempt: now.Add(-time.Minute), wantDue: true},
		{name: "failing within its backoff", st: failing, lastAttempt: now.Add(-5 * time.Second), wantWait: 15 * time.Second},
		{name: "failing, backoff passed", st: failing, lastAttempt: now.Add(-20 * time.Second), wantDue: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			due, wait := ImportDue(tt.st, tt.lastAttempt, tt.specChanged, now, time.Minute)
			if due != tt.wantDue || wait != tt.wantWait {
				t.Errorf("due %v wait %s, want due %v wait %s", due, wait, tt.wantDue, tt.wantWait)
			}
		})
	}
}

func TestImportResult(t *testing.T) {
	before := metav1.NewTime(time.Date(2026, 11, 23, 11, 0, 0, 0, time.UTC))
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	changed := &metav1.Time{Time: now}
	notFound := errors.New("not found")
	tests := []struct {
		name   string
		prev   v1alpha1.ComponentStatus
		digest string
		err    error
		want   v1alpha1.ComponentStatus
	}{
		{
			name:   "same digest: nothing changes",
			prev:   v1alpha1.ComponentStatus{Name: "api", Image: "r/api@sha256:1", LastChanged: &before},
			digest: "r/api@sha256:1",
			want:   v1alpha1.ComponentStatus{Name: "api", Image: "r/api@sha256:1", LastChanged: &before},
		},
		{
			name:   "new digest",
			prev:   v1alpha1.ComponentStatus{Name: "api", Image: "r/api@sha256:1", LastChanged: &before},
			digest: "r/api@sha256:2",
			want:   v1alpha1.ComponentStatus{Name: "api", Image: "r/api@sha256:2", LastChanged: changed},
		},
		{
			name:   "first resolution",
			prev:   v1alpha1.ComponentStatus{Name: "api"},
			digest: "r/api@sha256:1",
			want:   v1alpha1.ComponentStatus{Name: "api", Image: "r/api@sha256:1", LastChanged: changed},
		},
		{
			name: "error begins: the last good digest stays",
			prev: v1alpha1.ComponentStatus{Name: "api", Image: "r/api@sha256:1", LastChanged: &before},
			err:  notFound,
			want: v1alpha1.ComponentStatus{Name: "api", Image: "r/api@sha256:1", Error: "not found", Failures: 1, LastChanged: changed},
		},
		{
			name: "same error again: only the failure count moves (it spaces the retries)",
			prev: v1alpha1.ComponentStatus{Name: "api", Error: "not found", Failures: 2, LastChanged: &before},
			err:  notFound,
			want: v1alpha1.ComponentStatus{Name: "api", Error: "not found", Failures: 3, LastChanged: &before},
		},
		{
			name:   "error ends",
			prev:   v1alpha1.ComponentStatus{Name: "api", Image: "r/api@sha256:1", Error: "not found", Failures: 4, LastChanged: &before},
			digest: "r/api@sha256:1",
			want:   v1alpha1.ComponentStatus{Name: "api", Image: "r/api@sha256:1", LastChanged: changed},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, ImportResult(tt.prev, tt.digest, tt.err, now)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestLastAttempt: what this process remembers, else rebuilt from the status's lastChanged on
// the grid of intervals (or backoffs), so that a new leader resumes the previous one's schedule.
func TestLastAttempt(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	ago := func(d time.Duration) *metav1.Time { return &metav1.Time{Time: now.Add(-d)} }
	resolved := v1alpha1.ComponentStatus{Name: "api", Image: "r/api@sha256:1", LastChanged: ago(3*time.Minute + 40*time.Second)}
	failing := v1alpha1.ComponentStatus{Name: "api", Error: "not found", Failures: 1, LastChanged: ago(27 * time.Second)}
	tests := []struct {
		name       string
		st         v1alpha1.ComponentStatus
		remembered time.Time
		want       time.Time
	}{
		{"this process resolved it", resolved, now.Add(-time.Second), now.Add(-time.Second)},
		{"a new leader: the last minute of the grid from lastChanged", resolved, time.Time{}, now.Add(-40 * time.Second)},
		{"a new leader, failing: the grid of the 5s backoff", failing, time.Time{}, now.Add(-2 * time.Second)},
		{"changed this very moment", v1alpha1.ComponentStatus{Name: "api", Image: "r/api@sha256:1", LastChanged: ago(0)}, time.Time{}, now},
		{"never resolved", v1alpha1.ComponentStatus{Name: "api"}, time.Time{}, time.Time{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := LastAttempt(tt.st, tt.remembered, now, time.Minute); !got.Equal(tt.want) {
				t.Errorf("LastAttempt = %s, want %s", got, tt.want)
			}
		})
	}
	// A new leader 40s into a one-minute interval waits the remaining 20s: neither early nor late.
	if due, wait := ImportDue(resolved, LastAttempt(resolved, time.Time{}, now, time.Minute), false, now, time.Minute); due || wait != 20*time.Second {
		t.Errorf("a new leader: due %v, wait %s; want 20s", due, wait)
	}
}

// TestSpecChanged: the generation this process imported, or observedGeneration when it has
// imported none (a restart, a new leader).
func TestSpecChanged(t *testing.T) {
	stream := func(generation, observed int64) *v1alpha1.ReleaseStream {
		s := &v1alpha1.ReleaseStream{ObjectMeta: metav1.ObjectMeta{Generation: generation}}
		s.Status.ObservedGeneration = observed
		return s
	}
	tests := []struct {
		name     string
		stream   *v1alpha1.ReleaseStream
		imported int64
		want     bool
	}{
		{"imported this generation", stream(3, 2), 3, false},
		{"imported an earlier one", stream(3, 3), 2, true},
		{"a new leader, the status observed this generation", stream(3, 3), 0, false},
		{"a new leader, the status did not observe it", stream(3, 2), 0, true},
		{"a new stream", stream(1, 0), 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := SpecChanged(tt.stream, tt.imported); got != tt.want {
				t.Errorf("SpecChanged = %v, want %v", got, tt.want)
			}
		})
	}
}
