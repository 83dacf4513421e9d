//go:build !unit

package v1alpha1_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/release-controller/release-controller/api/v1alpha1"
)

// The release log's admission policy (config/crd/policies) takes "now" from the
// creationTimestamp the API server sets before admission runs: these tests run on the real
// clock of the test API server.

const dayLayout = "2006-01-02"

func logDay(ns string, day time.Time, entries ...v1alpha1.ReleaseLogEntry) *v1alpha1.ReleaseLog {
	return &v1alpha1.ReleaseLog{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "release-" + day.UTC().Format(dayLayout)},
		Spec:       v1alpha1.ReleaseLogSpec{Entries: entries},
	}
}

func logEntry(version string, date time.Time) v1alpha1.ReleaseLogEntry {
	return v1alpha1.ReleaseLogEntry{Type: "release", Version: version, Origin: "test", Author: "release-controller", Date: metav1.NewTime(date)}
}

func TestReleaseLogDaysOutsideTheWindowAreRefused(t *testing.T) {
	ns := env.Namespace(t)
	ctx := context.Background()
	now := time.Now().UTC()
	today := now.Truncate(24 * time.Hour)
	daysAgo := func(n int) time.Time { return today.Add(-time.Duration(n) * 24 * time.Hour) }

	refused := []struct {
		name string
		log  *v1alpha1.ReleaseLog
		want string
	}{
		{"a day in the future", &v1alpha1.ReleaseLog{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "release-2100-01-01"}},
			"metadata.name: release-2100-01-01 is a day in the future: a day may be created once it has begun"},
		{"the last day of the calendar", &v1alpha1.ReleaseLog{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "release-9999-12-31"},
			Spec: v1alpha1.ReleaseLogSpec{Entries: []v1alpha1.ReleaseLogEntry{logEntry("far", time.Date(9999, 12, 31, 10, 0, 0, 0, time.UTC))}}},
			"metadata.name: release-9999-12-31 is a day in the future"},
		{"a day older than the time to live", logDay(ns, daysAgo(40), logEntry("old", daysAgo(40).Add(time.Hour))),
			"is older than the release log keeps: a day may be created until 720h (the default --log-ttl) after it ended"},
		{"a day that does not exist", &v1alpha1.ReleaseLog{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "release-2026-02-30"}},
			"metadata.name: release-2026-02-30 does not name a real UTC day"},
		{"an entry of another day", logDay(ns, today, logEntry("yesterday", daysAgo(1).Add(time.Hour))),
			fmt.Sprintf("spec.entries[*].date: every entry of release-%s must be dated on %s (UTC), the object's day", today.Format(dayLayout), today.Format(dayLayout))},
	}
	for _, tt := range refused {
		t.Run(tt.name, func(t *testing.T) {
			expectRejected(t, env.Client.Create(ctx, tt.log), tt.want)
		})
	}

	// Today, yesterday and a day well inside the time to live are admitted.
	for _, l := range []*v1alpha1.ReleaseLog{
		logDay(ns, today, logEntry("today", now)),
		logDay(ns, daysAgo(1), logEntry("yesterday", daysAgo(1).Add(23*time.Hour))),
		logDay(ns, daysAgo(29), logEntry("a month ago", daysAgo(29))),
	} {
		if err := env.Client.Create(ctx, l); err != nil {
			t.Errorf("%s is refused: %v", l.Name, err)
		}
	}

	// Appending to a day: an entry of the day is admitted, one of another day is not.
	l := logDay(ns, daysAgo(2), logEntry("first", daysAgo(2)))
	if err := env.Client.Create(ctx, l); err != nil {
		t.Fatal(err)
	}
	l.Spec.Entries = append(l.Spec.Entries, logEntry("second", daysAgo(2).Add(time.Hour)))
	if err := env.Client.Update(ctx, l); err != nil {
		t.Fatalf("appending an entry of the day: %v", err)
	}
	l.Spec.Entries = append(l.Spec.Entries, logEntry("next day", daysAgo(1)))
	expectRejected(t, env.Client.Update(ctx, l), "spec.entries[*].date: every entry of "+l.Name)
}

// A full day (the schema's most entries) is still admitted and appended to: the policy's cost
// stays within the API server's budget.
func TestReleaseLogPolicyAdmitsAFullDay(t *testing.T) {
	ns := env.Namespace(t)
	ctx := context.Background()
	today := time.Now().UTC().Truncate(24 * time.Hour)
	entries := make([]v1alpha1.ReleaseLogEntry, v1alpha1.MaxReleaseLogEntries-1)
	for i := range entries {
		entries[i] = v1alpha1.ReleaseLogEntry{Type: "r", Version: fmt.Sprint(i), Origin: "o", Date: metav1.NewTime(today.Add(time.Duration(i) * time.Second))}
	}
	l := logDay(ns, today, entries...)
	if err := env.Client.Create(ctx, l); err != nil {
		t.Fatalf("creating a day of %d entries: %v", len(entries), err)
	}
	l.Spec.Entries = append(l.Spec.Entries, logEntry("last", today))
	if err := env.Client.Update(ctx, l); err != nil {
		t.Fatalf("appending the %dth entry: %v", len(l.Spec.Entries), err)
	}
}

// moveToToday moves a ReleaseLog sample, written for a fixed day, to today, which the release
// log's admission policy admits whenever the test runs.
func moveToToday(l *v1alpha1.ReleaseLog) {
	today := time.Now().UTC().Truncate(24 * time.Hour)
	l.Name = "release-" + today.Format(dayLayout)
	for i := range l.Spec.Entries {
		e := &l.Spec.Entries[i]
		e.Date = metav1.NewTime(today.Add(e.Date.Sub(e.Date.UTC().Truncate(24 * time.Hour))))
	}
}
