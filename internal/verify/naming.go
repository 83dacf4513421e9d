// Package verify launches a payload's verifications: it decides which runs are due (first
// runs, retries after a backoff, aggregated runs, upgrade runs and where they start from) and
// builds the Job or ProwJob for each. Every decision is a pure function; the stream controller
// creates the objects.
package verify

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// MaxNameLength is the longest Job or ProwJob name the controller creates: Job names become
// pod labels, which are limited to 63 characters.
const MaxNameLength = 63

// ObjectName joins parts with "-" into a valid object name. A name longer than MaxNameLength
// keeps a readable head and ends with a hash of the whole, so the same parts always give the
// same name and a restarted controller finds the object it created.
func ObjectName(parts ...string) string {
	full := strings.ToLower(strings.Join(parts, "-"))
	if len(full) <= MaxNameLength {
		return full
	}
	sum := sha256.Sum256([]byte(full))
	suffix := hex.EncodeToString(sum[:])[:10]
	head := strings.TrimRight(full[:MaxNameLength-len(suffix)-1], "-.")
	return head + "-" + suffix
}
