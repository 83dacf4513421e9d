package freeze

import (
	"strings"
	"testing"
	"time"

	// The zones on any machine, as in the binary.
	_ "time/tzdata"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/release-controller/release-controller/api/v1alpha1"
)

func utc(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

func weekly(cron, zone string, d time.Duration) v1alpha1.ReleaseFreezeSpec {
	return v1alpha1.ReleaseFreezeSpec{Reason: "r", Schedule: &v1alpha1.FreezeSchedule{Cron: cron, TimeZone: zone, Duration: metav1.Duration{Duration: d}}}
}

func TestWindow(t *testing.T) {
	created := utc("2026-03-01T10:00:00Z")
	at := func(s string) *metav1.Time { t := metav1.NewTime(utc(s)); return &t }
	// Friday 18:00 to Monday 09:00 on the zone's clock.
	berlin := weekly("0 18 * * 5", "Europe/Berlin", 63*time.Hour)
	newYork := weekly("0 18 * * 5", "America/New_York", 63*time.Hour)
	tests := []struct {
		name string
		spec v1alpha1.ReleaseFreezeSpec
		now  string
		want State
	}{
		// One-shot freezes.
		{name: "stop-the-line: from its creation, no end",
			spec: v1alpha1.ReleaseFreezeSpec{Reason: "incident"}, now: "2026-03-02T00:00:00Z",
			want: State{Active: true, Since: created}},
		{name: "before its start: the start is next",
			spec: v1alpha1.ReleaseFreezeSpec{Start: at("2026-03-10T00:00:00Z"), End: at("2026-03-12T00:00:00Z")}, now: "2026-03-09T23:59:59Z",
			want: State{Next: utc("2026-03-10T00:00:00Z")}},
		{name: "at its start: active until its end",
			spec: v1alpha1.ReleaseFreezeSpec{Start: at("2026-03-10T00:00:00Z"), End: at("2026-03-12T00:00:00Z")}, now: "2026-03-10T00:00:00Z",
			want: State{Active: true, Since: utc("2026-03-10T00:00:00Z"), Until: utc("2026-03-12T00:00:00Z")}},
		{name: "at its end: over, the window kept for the record",
			spec: v1alpha1.ReleaseFreezeSpec{Start: at("2026-03-10T00:00:00Z"), End: at("2026-03-12T00:00:00Z")}, now: "2026-03-12T00:00:00Z",
			want: State{Since: utc("2026-03-10T00:00:00Z"), Until: utc("2026-03-12T00:00:00Z")}},
		{name: "an end alone: from its creation",
			spec: v1alpha1.ReleaseFreezeSpec{End: at("2026-03-05T00:00:00Z")}, now: "2026-03-04T00:00:00Z",
			want: State{Active: true, Since: created, Until: utc("2026-03-05T00:00:00Z")}},

		// Europe/Berlin: CET (UTC+1) until the last Sunday of March (2026-03-29), CEST (UTC+2)
		// until the last Sunday of October (2026-10-25).
		{name: "Berlin, winter Friday 17:59: the window starts at 18:00",
			spec: berlin, now: "2026-03-13T16:59:00Z",
			want: State{Next: utc("2026-03-13T17:00:00Z")}},
		{name: "Berlin, winter weekend: Friday 18:00 CET to Monday 09:00 CET",
			spec: berlin, now: "2026-03-13T17:00:00Z",
			want: State{Active: true, Since: utc("2026-03-13T17:00:00Z"), Until: utc("2026-03-16T08:00:00Z"), Next: utc("2026-03-20T17:00:00Z")}},
		{name: "Berlin, the weekend the clocks go forward: ends Monday 09:00 CEST, 62 hours",
			spec: berlin, now: "2026-03-29T12:00:00Z",
			want: State{Active: true, Since: utc("2026-03-27T17:00:00Z"), Until: utc("2026-03-30T07:00:00Z"), Next: utc("2026-04-03T16:00:00Z")}},
		{name: "Berlin, Monday 09:30 CEST after the change: over (63 real hours would still hold)",
			spec: berlin, now: "2026-03-30T07:30:00Z",
			want: State{Next: utc("2026-04-03T16:00:00Z")}},
		{name: "Berlin, the weekend the clocks go back: ends Monday 09:00 CET, 64 hours",
			spec: berlin, now: "2026-10-26T07:30:00Z",
			want: State{Active: true, Since: utc("2026-10-23T16:00:00Z"), Until: utc("2026-10-26T08:00:00Z"), Next: utc("2026-10-30T17:00:00Z")}},
		{name: "Berlin, Friday after the change back: 18:00 CET",
			spec: berlin, now: "2026-10-28T00:00:00Z",
			want: State{Next: utc("2026-10-30T17:00:00Z")}},

		// America/New_York: EST (UTC-5) until 2026-03-08, EDT (UTC-4) after.
		{name: "New York, the weekend the clocks go forward: Friday 18:00 EST to Monday 09:00 EDT",
			spec: newYork, now: "2026-03-09T12:59:59Z",
			want: State{Active: true, Since: utc("2026-03-06T23:00:00Z"), Until: utc("2026-03-09T13:00:00Z"), Next: utc("2026-03-13T22:00:00Z")}},
		{name: "New York, Monday 09:00 EDT: over",
			spec: newYork, now: "2026-03-09T13:00:00Z",
			want: State{Next: utc("2026-03-13T22:00:00Z")}},
		{name: "the same instant in Berlin: Saturday, frozen",
			spec: berlin, now: "2026-03-07T00:00:00Z",
			want: State{Active: true, Since: utc("2026-03-06T17:00:00Z"), Until: utc("2026-03-09T08:00:00Z"), Next: utc("2026-03-13T17:00:00Z")}},
		{name: "the same instant in New York: Friday 19:00, frozen since an hour",
			spec: newYork, now: "2026-03-07T00:00:00Z",
			want: State{Active: true, Since: utc("2026-03-06T23:00:00Z"), Until: utc("2026-03-09T13:00:00Z"), Next: utc("2026-03-13T22:00:00Z")}},
		{name: "no zone is UTC",
			spec: weekly("0 18 * * 5", "", 63*time.Hour), now: "2026-03-06T17:59:00Z",
			want: State{Next: utc("2026-03-06T18:00:00Z")}},

		{name: "windows that overlap are one: Friday 18:00 and Saturday 18:00, 30h each",
			spec: weekly("0 18 * * 5,6", "UTC", 30*time.Hour), now: "2026-03-08T12:00:00Z",
			want: State{Active: true, Since: utc("2026-03-07T18:00:00Z"), Until: utc("2026-03-09T00:00:00Z"), Next: utc("2026-03-13T18:00:00Z")}},
		{name: "and from the first one's start",
			spec: weekly("0 18 * * 5,6", "UTC", 30*time.Hour), now: "2026-03-06T18:00:00Z",
			want: State{Active: true, Since: utc("2026-03-06T18:00:00Z"), Until: utc("2026-03-09T00:00:00Z"), Next: utc("2026-03-13T18:00:00Z")}},
		{name: "a descriptor: @weekly is Sunday 00:00",
			spec: weekly("@weekly", "UTC", time.Hour), now: "2026-03-08T00:30:00Z",
			want: State{Active: true, Since: utc("2026-03-08T00:00:00Z"), Until: utc("2026-03-08T01:00:00Z"), Next: utc("2026-03-15T00:00:00Z")}},
		{name: "a cron that never comes: never active",
			spec: weekly("0 0 30 2 *", "UTC", time.Hour), now: "2026-03-08T00:30:00Z",
			want: State{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Window(tt.spec, created, utc(tt.now))
			if err != nil {
				t.Fatal(err)
			}
			if got.Active != tt.want.Active || !got.Since.Equal(tt.want.Since) || !got.Until.Equal(tt.want.Until) || !got.Next.Equal(tt.want.Next) {
				t.Errorf("Window at %s:\n got %s\nwant %s", tt.now, show(got), show(tt.want))
			}
		})
	}
}

func show(s State) string {
	f := func(t time.Time) string {
		if t.IsZero() {
			return "-"
		}
		return t.UTC().Format(time.RFC3339)
	}
	return "active=" + map[bool]string{true: "yes", false: "no"}[s.Active] + " since=" + f(s.Since) + " until=" + f(s.Until) + " next=" + f(s.Next)
}

func TestWindowRefusesWhatItCannotRead(t *testing.T) {
	tests := []struct {
		name  string
		spec  v1alpha1.ReleaseFreezeSpec
		field string
	}{
		{"an unknown time zone", weekly("0 18 * * 5", "Mars/Olympus_Mons", time.Hour), "spec.schedule.timeZone: "},
		{"a minute past 59", weekly("61 18 * * 5", "UTC", time.Hour), "spec.schedule.cron: "},
		{"six fields", weekly("0 0 18 * * 5", "UTC", time.Hour), "spec.schedule.cron: "},
		{"a zone in the cron", weekly("CRON_TZ=Europe/Berlin 0 18 * * 5", "UTC", time.Hour), "spec.schedule.cron: "},
		{"a delay, not a calendar time", weekly("@every 1h", "UTC", time.Hour), "spec.schedule.cron: "},
		{"windows that never close", weekly("0 * * * *", "UTC", 90*time.Minute), "spec.schedule: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Window(tt.spec, time.Time{}, utc("2026-03-08T00:30:00Z"))
			if err == nil || !strings.HasPrefix(err.Error(), tt.field) {
				t.Errorf("Window: %v, want an error naming %q", err, tt.field)
			}
		})
	}
}

func TestSelector(t *testing.T) {
	sel, err := Selector(v1alpha1.ReleaseFreezeSpec{})
	if err != nil || !sel.Empty() {
		t.Errorf("no spec.pipelines: %v, %v; want every pipeline", sel, err)
	}
	_, err = Selector(v1alpha1.ReleaseFreezeSpec{Pipelines: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "team", Operator: "Near"}}}})
	if err == nil || !strings.HasPrefix(err.Error(), "spec.pipelines: ") {
		t.Errorf("a selector that is not one: %v", err)
	}
}
