// Package signature signs and checks the HMAC-SHA256 signatures of pipeline requests: the
// approvals the server receives and the promotion notifications the controller sends.
//
// An approval's signature (a contract) is the header
//
//	X-Release-Controller-Signature: sha256=<hex HMAC-SHA256 of "METHOD\nPATH\nTIMESTAMP\n" + body>
//
// keyed with the environment's approval key, where TIMESTAMP is the
// X-Release-Controller-Timestamp header (RFC 3339). A notification is signed the same way over
// NotificationDomain + "METHOD\nPATH\nTIMESTAMP\n" + body: an approval's message starts with
// its method (POST), a notification's with the domain line, so no notification signature is
// ever a valid approval, whatever the key. A receiver compares in constant time, and refuses a
// timestamp outside a window (five minutes either way) and a signature it accepted before.
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

// NotificationDomain is the first line of every notification's signed message. Approvals
// have no such line (their message starts with the method), so the two can never be equal.
const NotificationDomain = "release-controller.dev/notification/v1\n"

// Purpose says what a signature is for: the message signed starts with the purpose's domain.
type Purpose string

// The purposes of signatures.
const (
	// Approval signs approvals: the contract's message, with no domain line.
	Approval Purpose = ""
	// Notification signs the notification strategy's promotion events.
	Notification Purpose = NotificationDomain
)

// Message is the text a request's signature covers, before the body.
func (p Purpose) Message(method, path, timestamp string) string {
	return string(p) + method + "\n" + path + "\n" + timestamp + "\n"
}

// Sum is the HMAC-SHA256 of a request for purpose p.
func (p Purpose) Sum(key []byte, method, path, timestamp string, body []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(p.Message(method, path, timestamp)))
	m.Write(body)
	return m.Sum(nil)
}

// Header is the value of HeaderSignature for a request signed for purpose p.
func (p Purpose) Header(key []byte, method, path, timestamp string, body []byte) string {
	return prefix + hex.EncodeToString(p.Sum(key, method, path, timestamp, body))
}

// Sum is the HMAC-SHA256 of an approval.
func Sum(key []byte, method, path, timestamp string, body []byte) []byte {
	return Approval.Sum(key, method, path, timestamp, body)
}

// Header is the value of HeaderSignature for an approval.
func Header(key []byte, method, path, timestamp string, body []byte) string {
	return Approval.Header(key, method, path, timestamp, body)
}

// NotificationHeader is the value of HeaderSignature for a notification.
func NotificationHeader(key []byte, method, path, timestamp string, body []byte) string {
	return Notification.Header(key, method, path, timestamp, body)
}

// Digest is the SHA-256 of a signature (the 32 bytes of its HMAC), in hex: what a receiver
// records of a signature it accepted, so that it refuses it again.
func Digest(sum []byte) string {
	d := sha256.Sum256(sum)
	return hex.EncodeToString(d[:])
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

// Signed is a request's signature headers, parsed.
type Signed struct {
	// Timestamp is the timestamp header as sent (it is signed as sent); Time its value.
	Timestamp string
	Time      time.Time
	// Sum is the HMAC the signature header carries.
	Sum []byte
}

// ParseHeaders reads a request's HeaderTimestamp and HeaderSignature values.
func ParseHeaders(timestampHeader, signatureHeader string) (Signed, error) {
	if timestampHeader == "" || signatureHeader == "" {
		return Signed{}, ErrMissing
	}
	ts, err := ParseTimestamp(timestampHeader)
	if err != nil {
		return Signed{}, err
	}
	sum, err := Parse(signatureHeader)
	if err != nil {
		return Signed{}, err
	}
	return Signed{Timestamp: timestampHeader, Time: ts, Sum: sum}, nil
}

// Expires is when the signature's timestamp leaves the window: until then it must be
// remembered, after it is refused as expired anyway.
func (s Signed) Expires() time.Time { return s.Time.Add(Window) }

// Digest is Digest of the signature.
func (s Signed) Digest() string { return Digest(s.Sum) }

// Verifier checks signed requests, and remembers the signatures it accepted until they
// leave the window, so that each is accepted once (by this process: a receiver with several
// replicas records them where all replicas see them too).
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

// Verify checks an approval's signature headers against key: the timestamp within Window,
// the HMAC equal in constant time, the signature not seen before. A request that passes is
// remembered.
func (v *Verifier) Verify(key []byte, method, path, timestampHeader, signatureHeader string, body []byte) error {
	return v.verify(Approval, key, method, path, timestampHeader, signatureHeader, body)
}

// VerifyNotification is Verify for a notification (the receiver's side of the notification
// strategy): the message signed starts with NotificationDomain.
func (v *Verifier) VerifyNotification(key []byte, method, path, timestampHeader, signatureHeader string, body []byte) error {
	return v.verify(Notification, key, method, path, timestampHeader, signatureHeader, body)
}

func (v *Verifier) verify(p Purpose, key []byte, method, path, timestampHeader, signatureHeader string, body []byte) error {
	s, err := ParseHeaders(timestampHeader, signatureHeader)
	if err != nil {
		return err
	}
	if err := v.Check(s); err != nil {
		return err
	}
	return v.Accept(p, key, method, path, s, body)
}

// Check is what needs no key: s's timestamp is within the window and this verifier has not
// accepted s before. A receiver calls it before it reads anything to find the key.
func (v *Verifier) Check(s Signed) error {
	now := v.Now()
	v.prune(now)
	if d := now.Sub(s.Time); d > Window || d < -Window {
		return ErrExpired
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if _, seen := v.used[hex.EncodeToString(s.Sum)]; seen {
		return ErrReplayed
	}
	return nil
}

// Accept checks s against the request and key for purpose p, in constant time, and
// remembers it; ErrReplayed when it was accepted meanwhile.
func (v *Verifier) Accept(p Purpose, key []byte, method, path string, s Signed, body []byte) error {
	if d := v.Now().Sub(s.Time); d > Window || d < -Window {
		return ErrExpired
	}
	if !hmac.Equal(s.Sum, p.Sum(key, method, path, s.Timestamp, body)) {
		return ErrMismatch
	}
	id := hex.EncodeToString(s.Sum)
	v.mu.Lock()
	defer v.mu.Unlock()
	if _, seen := v.used[id]; seen {
		return ErrReplayed
	}
	// The timestamp leaves the window Window after it; the signature is kept until then.
	v.used[id] = s.Expires()
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
