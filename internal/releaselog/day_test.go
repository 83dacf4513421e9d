package releaselog

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func date(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

func TestParseObjectName(t *testing.T) {
	tests := []struct {
		name      string
		wantDay   string
		wantStart string
		wantErr   string
	}{
		{name: "release-2026-03-25", wantDay: "2026-03-25", wantStart: "2026-03-25T00:00:00Z"},
		{name: "release-2028-02-29", wantDay: "2028-02-29", wantStart: "2028-02-29T00:00:00Z"},
		{name: "release-2026-02-29", wantErr: "day out of range"},
		{name: "release-2026-13-01", wantErr: "month out of range"},
		{name: "release-2026-3-25", wantErr: "is not a day"},
		{name: "release-2026-03-25x", wantErr: "is not a day"},
		{name: "release-", wantErr: "is not a day"},
		{name: "log-2026-03-25", wantErr: `does not start with "release-"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			day, start, err := ParseObjectName(tt.name)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if day != tt.wantDay || !start.Equal(date(tt.wantStart)) || start.Location() != time.UTC {
				t.Errorf("got %s %s, want %s %s", day, start, tt.wantDay, tt.wantStart)
			}
			if ObjectName(day) != tt.name {
				t.Errorf("ObjectName(%s) = %s", day, ObjectName(day))
			}
		})
	}
}

func TestDayOfUsesUTC(t *testing.T) {
	tokyo := time.FixedZone("JST", 9*3600)
	if got := DayOf(time.Date(2026, 3, 26, 8, 0, 0, 0, tokyo)); got != "2026-03-25" {
		t.Errorf("DayOf = %s, want the UTC day 2026-03-25", got)
	}
}

func TestExpiryAndRequeue(t *testing.T) {
	const ttl = 30 * 24 * time.Hour
	start := date("2026-03-01T00:00:00Z")
	tests := []struct {
		name        string
		now         string
		wantExpired bool
		wantRequeue time.Duration
	}{
		{"the day itself", "2026-03-01T10:00:00Z", false, ResyncInterval},
		{"more than the resync interval before expiry", "2026-03-30T11:59:59Z", false, ResyncInterval},
		{"exactly the resync interval before expiry", "2026-03-30T12:00:00Z", false, ResyncInterval},
		{"less than the resync interval before expiry: at expiry", "2026-03-30T20:00:00Z", false, 4 * time.Hour},
		{"one second before expiry", "2026-03-30T23:59:59Z", false, time.Second},
		{"at expiry", "2026-03-31T00:00:00Z", true, 0},
		{"after expiry", "2026-04-15T00:00:00Z", true, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			now := date(tt.now)
			if got := Expired(start, now, ttl); got != tt.wantExpired {
				t.Errorf("Expired = %v, want %v", got, tt.wantExpired)
			}
			if !tt.wantExpired {
				if got := RequeueAfter(start, now, ttl); got != tt.wantRequeue {
					t.Errorf("RequeueAfter = %s, want %s", got, tt.wantRequeue)
				}
			}
		})
	}
	if got := Expiry(start, ttl); !got.Equal(date("2026-03-31T00:00:00Z")) {
		t.Errorf("Expiry = %s", got)
	}
}

func TestCheckDate(t *testing.T) {
	const ttl, skew = 30 * 24 * time.Hour, 5 * time.Minute
	now := date("2026-03-31T12:00:00Z")
	tests := []struct {
		name string
		date string
		want error
	}{
		{"now", "2026-03-31T12:00:00Z", nil},
		{"earlier today", "2026-03-31T00:00:00Z", nil},
		{"the oldest day kept, its first second", "2026-03-02T00:00:00Z", nil},
		{"the newest expired day, its last second", "2026-03-01T23:59:59Z", ErrDateExpired},
		{"long ago", "2025-01-01T00:00:00Z", ErrDateExpired},
		{"within the skew", "2026-03-31T12:05:00Z", nil},
		{"beyond the skew", "2026-03-31T12:05:01Z", ErrDateInFuture},
		{"tomorrow", "2026-04-01T09:00:00Z", ErrDateInFuture},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckDate(date(tt.date), now, ttl, skew)
			// errors.Is(err, nil) holds only for a nil err.
			if !errors.Is(err, tt.want) {
				t.Errorf("CheckDate = %v, want %v", err, tt.want)
			}
		})
	}
}
