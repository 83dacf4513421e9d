package conditions

import (
	"strings"
	"testing"
	"unicode/utf8"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestTruncate(t *testing.T) {
	tests := []struct {
		name  string
		in    string
		limit int
		want  string
	}{
		{"fits", "all 3 components resolved", 100, "all 3 components resolved"},
		{"exactly the limit", "abcdef", 6, "abcdef"},
		{"empty", "", 0, ""},
		{"cut with a marker", strings.Repeat("a", 100), 40, strings.Repeat("a", 19) + " … [81 more bytes]"},
		{"no room for the marker", strings.Repeat("a", 100), 10, strings.Repeat("a", 10)},
		// "é" is two bytes: the cut never splits it.
		{"on a rune boundary", strings.Repeat("é", 50), 40, strings.Repeat("é", 9) + " … [82 more bytes]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Truncate(tt.in, tt.limit)
			if got != tt.want {
				t.Errorf("Truncate(%d bytes, %d) = %q, want %q", len(tt.in), tt.limit, got, tt.want)
			}
			if len(got) > tt.limit || !utf8.ValidString(got) {
				t.Errorf("Truncate(%d bytes, %d) = %d bytes, valid UTF-8 %v", len(tt.in), tt.limit, len(got), utf8.ValidString(got))
			}
		})
	}
	// Every length around the limits stays within them.
	for _, limit := range []int{MaxNoteLength, MaxErrorLength, MaxMessageLength} {
		for n := limit - 3; n < 10*limit; n += limit / 3 {
			if got := Truncate(strings.Repeat("x", n), limit); len(got) > limit {
				t.Errorf("Truncate(%d bytes, %d) = %d bytes", n, limit, len(got))
			}
		}
	}
}

func TestSetBoundsTheMessage(t *testing.T) {
	var conditions []metav1.Condition
	long := strings.Repeat("component (manifest unknown); ", 2000)
	if !Set(&conditions, metav1.Condition{Type: "Imported", Status: metav1.ConditionFalse, Reason: "ComponentsUnresolved", Message: long}) {
		t.Fatal("Set reported no change on a new condition")
	}
	if got := conditions[0].Message; len(got) > MaxMessageLength || !strings.HasPrefix(got, "component (manifest unknown); ") || !strings.HasSuffix(got, "more bytes]") {
		t.Errorf("message of %d bytes: …%q", len(got), got[max(0, len(got)-40):])
	}
	// The same long message again changes nothing (the bound is stable), so no status write follows.
	if Set(&conditions, metav1.Condition{Type: "Imported", Status: metav1.ConditionFalse, Reason: "ComponentsUnresolved", Message: long}) {
		t.Error("setting the same condition again reported a change")
	}
}
