// Package signature signs and checks the HMAC-SHA256 signatures of pipeline requests: the
// approvals the server receives and the promotion notifications the controller sends.
//
// The signature (a contract) is the header
//
//	X-Release-Controller-Signature: sha256=<hex HMAC-SHA256 of "METHOD\nPATH\nTIMESTAMP\n" + body>
//
// keyed with the shared key, where TIMESTAMP is the X-Release-Controller-Timestamp header
// (RFC 3339). A receiver compares in constant time, and refuses a timestamp outside a window
// (five minutes either way) and a signature it accepted before.
package signature

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
)

// Headers of a signed request.
const (
	HeaderTimestamp = "X-Release-Controller-Timestamp"
	HeaderSignature = "X-Release-Controller-Signature"
)

// Window is how far a request's timestamp may be from the receiver's clock, either way.
const Window = 5 * time.Minute

const prefix = "sha256="

// Errors of Parse and Verify. None of them quotes a signature.
var (
	ErrMissing   = errors.New("the request is not signed: it needs the headers " + HeaderTimestamp + " and " + HeaderSignature)
	ErrMalformed = errors.New(HeaderSignature + " must be sha256=<64 hex digits>")
	ErrTimestamp = errors.New(HeaderTimestamp + " must be an RFC 3339 time, e.g. 2026-03-25T12:00:00Z")
	ErrExpired   = fmt.Errorf("the request's timestamp is more than %s away from the server's clock", Window)
	ErrMismatch  = errors.New("the signature does not match the request")
	ErrReplayed  = errors.New("this signature was used already: sign every request anew")
)

// Sum is the HMAC-SHA256 of a request.
func Sum(key []byte, method, path, timestamp string, body []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(method + "\n" + path + "\n" + timestamp + "\n"))
	m.Write(body)
	return m.Sum(nil)
}

// Header is the value of HeaderSignature for a request.
func Header(key []byte, method, path, timestamp string, body []byte) string {
	return prefix + hex.EncodeToString(Sum(key, method, path, timestamp, body))
}

// Parse reads a HeaderSignature value: the 32 bytes of its HMAC.
func Parse(header string) ([]byte, error) {
	header = strings.TrimSpace(header)
	if header == "" {
		return nil, ErrMissing
	}
	hexSum, ok := strings.CutPrefix(header, prefix)
	if !ok || len(hexSum) != 2*sha256.Size {
		return nil, ErrMalformed
	}
	sum, err := hex.DecodeString(hexSum)
	if err != nil {
		return nil, ErrMalformed
	}
	return sum, nil
}

// ParseTimestamp reads a HeaderTimestamp value.
func ParseTimestamp(value string) (time.Time, error) {
	if value == "" {
		return time.Time{}, ErrMissing
	}
	t, err := time.Parse(time.RFC3339, value)
	if err != nil {
		return time.Time{}, ErrTimestamp
	}
	return t, nil
}

// Verifier checks signed requests, and remembers the signatures it accepted until they
// leave the window, so that each is accepted once.
type Verifier struct {
	Now func() time.Time

	mu   sync.Mutex
	used map[string]time.Time // hex signature -> when it leaves the window
}

// NewVerifier returns a verifier on the clock now (nil: the real clock).
func NewVerifier(now func() time.Time) *Verifier {
	if now == nil {
		now = time.Now
	}
	return &Verifier{Now: now, used: map[string]time.Time{}}
}

// Verify checks a request's signature headers against key: the timestamp within Window, the
// HMAC equal in constant time, the signature not seen before. A request that passes is
// remembered.
func (v *Verifier) Verify(key []byte, method, path, timestampHeader, signatureHeader string, body []byte) error {
	if timestampHeader == "" || signatureHeader == "" {
		return ErrMissing
	}
	ts, err := ParseTimestamp(timestampHeader)
	if err != nil {
		return err
	}
	got, err := Parse(signatureHeader)
	if err != nil {
		return err
	}
	now := v.Now()
	v.prune(now)
	if d := now.Sub(ts); d > Window || d < -Window {
		return ErrExpired
	}
	if !hmac.Equal(got, Sum(key, method, path, timestampHeader, body)) {
		return ErrMismatch
	}
	id := hex.EncodeToString(got)
	v.mu.Lock()
	defer v.mu.Unlock()
	if _, seen := v.used[id]; seen {
		return ErrReplayed
	}
	// The timestamp leaves the window Window after it; the signature is kept until then.
	v.used[id] = ts.Add(Window)
	return nil
}

// prune forgets the signatures whose window has passed.
func (v *Verifier) prune(now time.Time) {
	v.mu.Lock()
	defer v.mu.Unlock()
	for s, until := range v.used {
		if now.After(until) {
			delete(v.used, s)
		}
	}
}
