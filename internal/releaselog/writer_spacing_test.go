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
