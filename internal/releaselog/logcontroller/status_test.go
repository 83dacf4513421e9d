package logcontroller

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/releaselog"
)

func date(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

func TestDesiredStatus(t *testing.T) {
	earlier := date("2026-03-02T09:00:00Z")
	now := date("2026-03-02T12:00:00Z")
	twoEntries := []v1alpha1.ReleaseLogEntry{{Version: "a"}, {Version: "b"}}
	validSince := func(at time.Time) []metav1.Condition {
		return []metav1.Condition{{Type: v1alpha1.ConditionReleaseLogValid, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonValidDay,
			Message: "holds the entries of 2026-03-02 (UTC)", ObservedGeneration: 1, LastTransitionTime: metav1.NewTime(at)}}
	}
	tests := []struct {
		name        string
		status      v1alpha1.ReleaseLogStatus
		generation  int64
		nameErr     error
		wantCount   int32
		wantValid   metav1.ConditionStatus
		wantReason  string
		wantChanged time.Time
	}{
		{name: "new object", generation: 1, wantCount: 2, wantValid: metav1.ConditionTrue, wantReason: v1alpha1.ReasonValidDay, wantChanged: now},
		{name: "counted before: the transition time stays", generation: 2,
			status:    v1alpha1.ReleaseLogStatus{EntryCount: 1, ObservedGeneration: 1, Conditions: validSince(earlier)},
			wantCount: 2, wantValid: metav1.ConditionTrue, wantReason: v1alpha1.ReasonValidDay, wantChanged: earlier},
		{name: "a name that is not a day", generation: 1, nameErr: errors.New(`"2026-02-30" is not a day`),
			wantCount: 2, wantValid: metav1.ConditionFalse, wantReason: v1alpha1.ReasonInvalidDay, wantChanged: now},
		{name: "a day that has not begun", generation: 1, nameErr: fmt.Errorf("%w: 2100-01-01 starts later", releaselog.ErrDayNotBegun),
			wantCount: 2, wantValid: metav1.ConditionFalse, wantReason: v1alpha1.ReasonFutureDay, wantChanged: now},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := &v1alpha1.ReleaseLog{
				ObjectMeta: metav1.ObjectMeta{Name: "release-2026-03-02", Generation: tt.generation},
				Spec:       v1alpha1.ReleaseLogSpec{Entries: twoEntries},
				Status:     tt.status,
			}
			got := DesiredStatus(l, tt.nameErr, now)
			if got.EntryCount != tt.wantCount || got.ObservedGeneration != tt.generation {
				t.Errorf("entryCount %d at generation %d, want %d at %d", got.EntryCount, got.ObservedGeneration, tt.wantCount, tt.generation)
			}
			c := meta.FindStatusCondition(got.Conditions, v1alpha1.ConditionReleaseLogValid)
			if c == nil || c.Status != tt.wantValid || c.Reason != tt.wantReason || !c.LastTransitionTime.Time.Equal(tt.wantChanged) || c.ObservedGeneration != tt.generation {
				t.Errorf("condition %+v, want %s %s since %s", c, tt.wantValid, tt.wantReason, tt.wantChanged)
			}
			if tt.nameErr != nil && c != nil && c.Message == "" {
				t.Error("the condition does not say what is wrong with the name")
			}
			if len(l.Status.Conditions) != len(tt.status.Conditions) {
				t.Error("DesiredStatus changed the object's status")
			}
		})
	}
}

func TestStatusWait(t *testing.T) {
	now := date("2026-03-02T12:00:00Z")
	tests := []struct {
		name string
		last time.Time
		want time.Duration
	}{
		{"never written", time.Time{}, 0},
		{"written just now", now, 2 * time.Second},
		{"written half an interval ago", now.Add(-time.Second), time.Second},
		{"written an interval ago", now.Add(-2 * time.Second), 0},
		{"written long ago", now.Add(-time.Hour), 0},
	}
	for _, tt := range tests {
		if got := statusWait(tt.last, now, 2*time.Second); got != tt.want {
			t.Errorf("%s: statusWait = %s, want %s", tt.name, got, tt.want)
		}
	}
}

func TestStatusSpacing(t *testing.T) {
	entries := func(n int) []v1alpha1.ReleaseLogEntry {
		es := make([]v1alpha1.ReleaseLogEntry, n)
		for i := range es {
			es[i] = v1alpha1.ReleaseLogEntry{Type: "release", Version: fmt.Sprintf("4.15.0-0.nightly-2026-03-02-%06d", i), Origin: "release-controller",
				Message: "accepted: all 10 blocking jobs succeeded", Link: "/releases/ocp/nightly/4.15.0", Date: metav1.NewTime(date("2026-03-02T12:00:00Z"))}
		}
		return es
	}
	for _, tt := range []struct {
		name    string
		entries int
		atLeast time.Duration
		atMost  time.Duration
	}{
		{"an empty day: the interval", 0, statusInterval, statusInterval},
		{"a day of ten: the interval", 10, statusInterval, statusInterval},
		{"a full day: four appends' spacing", 3500, 8 * time.Second, 20 * time.Second},
	} {
		l := &v1alpha1.ReleaseLog{ObjectMeta: metav1.ObjectMeta{Name: "release-2026-03-02"}, Spec: v1alpha1.ReleaseLogSpec{Entries: entries(tt.entries)}}
		got := statusSpacing(l)
		if got < tt.atLeast || got > tt.atMost {
			t.Errorf("%s: statusSpacing = %s, want %s to %s", tt.name, got, tt.atLeast, tt.atMost)
		}
	}
}
