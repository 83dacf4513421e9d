// Package conditions bounds what the controllers write for people to read: condition
// messages, the errors recorded in a status, and Event notes. An unbounded message (a stream
// whose 1,000 components all fail, a build's long last words) would otherwise make the API
// server refuse the whole status write — the CRD allows 32,768 bytes in a condition's message,
// events.k8s.io 1 KiB in a note — and the status would freeze at its last accepted value.
// It is the one place conditions are set: every controller (stream, payload, audit, Jira,
// pipeline, release log) sets its conditions through Set, which applies the bound and keeps the
// transition time while the status stays; nothing calls meta.SetStatusCondition itself.
package conditions

import (
	"fmt"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const (
	// MaxMessageLength bounds a condition's message: far below the CRD's 32,768 bytes, so a
	// status with several conditions stays small and readable.
	MaxMessageLength = 4096
	// MaxErrorLength bounds an error recorded per item in a status (a component's import error).
	MaxErrorLength = 512
	// MaxNoteLength bounds an Event's note: events.k8s.io/v1 refuses notes of 1 KiB and more.
	MaxNoteLength = 1023
)

// Truncate returns s cut to at most limit bytes, on a UTF-8 boundary, ending with a marker
// that says how many bytes were left out; s itself when it fits.
func Truncate(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	marker := func(left int) string { return fmt.Sprintf(" … [%d more bytes]", left) }
	// The marker's number is at most len(s): room for its widest form is kept.
	reserve := len(marker(len(s)))
	if reserve > limit {
		reserve = 0 // no room for a marker: just cut
	}
	cut := limit - reserve
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	if reserve == 0 {
		return s[:cut]
	}
	return s[:cut] + marker(len(s)-cut)
}

// Set sets c in conditions (meta.SetStatusCondition: the transition time moves only when the
// status changes) with its message bounded to MaxMessageLength, and reports whether anything changed.
func Set(conditions *[]metav1.Condition, c metav1.Condition) bool {
	c.Message = Truncate(c.Message, MaxMessageLength)
	return meta.SetStatusCondition(conditions, c)
}
