package releaselog

import (
	"testing"
	"time"
)

func TestWriteSpacing(t *testing.T) {
	tests := []struct {
		name     string
		dayBytes int
		want     time.Duration
	}{
		{"nothing written", 0, 0},
		{"a quiet day of a few entries: at once", 2 << 10, 7812500 * time.Nanosecond},
		{"a day of about 200 entries", 64 << 10, 250 * time.Millisecond},
		{"a day of about 1,600 entries", 512 << 10, 2 * time.Second},
		{"a megabyte: about 3,200 entries", 1 << 20, 4 * time.Second},
	}
	for _, tt := range tests {
		if got := WriteSpacing(tt.dayBytes); got != tt.want {
			t.Errorf("%s: WriteSpacing(%d) = %s, want %s", tt.name, tt.dayBytes, got, tt.want)
		}
	}
}

func TestSpacingAfter(t *testing.T) {
	limits := dayLimits{maxEntries: 3500, maxBytes: 1 << 20}
	tests := []struct {
		name    string
		written dayWritten
		limits  dayLimits
		want    time.Duration
	}{
		{"nothing written", dayWritten{}, limits, 0},
		{"a day with room: spaced by its size", dayWritten{bytes: 512 << 10, entries: 1600}, limits, 2 * time.Second},
		{"one entry short of full: still spaced", dayWritten{bytes: 1 << 20, entries: 3499}, limits, 4 * time.Second},
		{"the write that filled the day: the rest are refused at once", dayWritten{bytes: 1 << 20, entries: 3500}, limits, 0},
		{"no entry limit: spaced by its size", dayWritten{bytes: 1 << 20, entries: 3500}, dayLimits{maxBytes: 1 << 20}, 4 * time.Second},
	}
	for _, tt := range tests {
		if got := spacingAfter(tt.written, tt.limits); got != tt.want {
			t.Errorf("%s: spacingAfter(%+v) = %s, want %s", tt.name, tt.written, got, tt.want)
		}
	}
}
