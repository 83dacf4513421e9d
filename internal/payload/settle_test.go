package payload

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/jobcache"
)

func TestSettleWait(t *testing.T) {
	t0 := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	ms := time.Millisecond
	const quiet, limit = 200 * time.Millisecond, 2 * time.Second
	tests := []struct {
		name             string
		first, last, now time.Time
		want             time.Duration
	}{
		{name: "no event noted (a payload event, a requeue)", now: t0, want: 0},
		{name: "one event, delay not over", first: t0, last: t0, now: t0.Add(150 * ms), want: 50 * ms},
		{name: "one event, quiet since", first: t0, last: t0, now: t0.Add(200 * ms), want: 0},
		{name: "burst goes on: wait for quiet after the latest", first: t0, last: t0.Add(180 * ms), now: t0.Add(200 * ms), want: 180 * ms},
		{name: "burst quiet since its latest event", first: t0, last: t0.Add(180 * ms), now: t0.Add(400 * ms), want: 0},
		{name: "a trickle is cut at the limit", first: t0, last: t0.Add(1900 * ms), now: t0.Add(1950 * ms), want: 50 * ms},
		{name: "past the limit: now", first: t0, last: t0.Add(2100 * ms), now: t0.Add(2200 * ms), want: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := SettleWait(tt.first, tt.last, tt.now, quiet, limit); got != tt.want {
				t.Errorf("SettleWait = %s, want %s", got, tt.want)
			}
		})
	}
}

func TestWriteBeforeSettled(t *testing.T) {
	tests := []struct {
		old, computed v1alpha1.PayloadPhase
		want          bool
	}{
		{v1alpha1.PhaseReady, v1alpha1.PhaseAccepted, true},
		{v1alpha1.PhaseReady, v1alpha1.PhaseRejected, true},
		{v1alpha1.PhasePending, v1alpha1.PhaseFailed, true},
		{v1alpha1.PhaseRejected, v1alpha1.PhaseAccepted, true},  // an override
		{v1alpha1.PhaseAccepted, v1alpha1.PhaseAccepted, false}, // runs still changing after the verdict
		{v1alpha1.PhasePending, v1alpha1.PhaseReady, false},     // created: the runs launched next belong in the same write
		{v1alpha1.PhaseReady, v1alpha1.PhaseReady, false},
		{"", v1alpha1.PhasePending, false},
	}
	for _, tt := range tests {
		if got := WriteBeforeSettled(tt.old, tt.computed); got != tt.want {
			t.Errorf("WriteBeforeSettled(%q, %q) = %v, want %v", tt.old, tt.computed, got, tt.want)
		}
	}
}

func TestOpensBurst(t *testing.T) {
	tests := []struct {
		name   string
		status v1alpha1.ReleasePayloadStatus
		want   bool
	}{
		{"new payload: its first status waits for its jobs", v1alpha1.ReleasePayloadStatus{}, true},
		{"status written before (a restart): at once", v1alpha1.ReleasePayloadStatus{Phase: v1alpha1.PhasePending}, false},
		{"verdict written before: at once", v1alpha1.ReleasePayloadStatus{Phase: v1alpha1.PhaseAccepted}, false},
		{"conditions without a phase: at once", v1alpha1.ReleasePayloadStatus{Conditions: []metav1.Condition{{Type: v1alpha1.ConditionPayloadCreated}}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := OpensBurst(&tt.status); got != tt.want {
				t.Errorf("OpensBurst = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestRunsFinished(t *testing.T) {
	run := func(verification string, state v1alpha1.JobState) *jobcache.Record {
		return &jobcache.Record{JobType: v1alpha1.JobTypeVerification, Verification: verification, State: state}
	}
	creation := &jobcache.Record{JobType: v1alpha1.JobTypeCreation, State: v1alpha1.JobPending}
	tests := []struct {
		name    string
		records []*jobcache.Record
		want    bool
	}{
		{name: "no jobs", want: false},
		{name: "only the creation job", records: []*jobcache.Record{{JobType: v1alpha1.JobTypeCreation, State: v1alpha1.JobSuccess}}, want: false},
		{name: "a run still going", records: []*jobcache.Record{run("e2e", v1alpha1.JobSuccess), run("upgrade", v1alpha1.JobPending)}, want: false},
		{name: "every run over, whatever its result", records: []*jobcache.Record{
			run("e2e", v1alpha1.JobSuccess), run("upgrade", v1alpha1.JobFailure), run("gone", v1alpha1.JobUnknown), run("skip", v1alpha1.JobSkipped),
		}, want: true},
		{name: "a creation job still running does not count as a run", records: []*jobcache.Record{creation, run("e2e", v1alpha1.JobSuccess)}, want: true},
		{name: "a verification label without a name is not a run", records: []*jobcache.Record{
			{JobType: v1alpha1.JobTypeVerification, State: v1alpha1.JobPending}, run("e2e", v1alpha1.JobFailure),
		}, want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := RunsFinished(tt.records); got != tt.want {
				t.Errorf("RunsFinished = %t, want %t", got, tt.want)
			}
		})
	}
}
