// Package paging reads what clients send the release log's API to page through it: a day,
// YYYY-MM-DD, and a page token. Both are outside input, fuzzed (paging_fuzz_test.go).
package paging

import (
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/release-controller/release-controller/internal/releaselog"
)

// CheckDay accepts a day written as the store keys it, YYYY-MM-DD, naming a real date.
func CheckDay(day string) error {
	start, err := releaselog.ParseDay(day)
	if err != nil {
		return err
	}
	if releaselog.DayOf(start) != day {
		return fmt.Errorf("%q is not a day written YYYY-MM-DD", day)
	}
	return nil
}

// A page token names the day it pages through and the offset of the page's first entry,
// "YYYY-MM-DD/offset", base64url-encoded so callers treat it as opaque and do not build their
// own. Entries are only added to a day, nearly always at its end, so an offset stays valid
// between pages. (A back-dated entry added while a caller pages, landing before the page
// boundary, shifts the later entries by one: that caller sees one entry twice and not the new
// one, which it would not have seen either had it come a moment later.)

// EncodeToken is the token of the page of day starting at offset.
func EncodeToken(day string, offset int) string {
	return base64.RawURLEncoding.EncodeToString([]byte(day + "/" + strconv.Itoa(offset)))
}

// ErrBadToken is the error of every token DecodeToken refuses.
var ErrBadToken = errors.New("the page token is not one this server returned")

// DecodeToken reads a token EncodeToken made: a real day and an offset above 0 (tokens are
// only made for pages after the first).
func DecodeToken(token string) (day string, offset int, err error) {
	raw, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil {
		return "", 0, ErrBadToken
	}
	day, offsetText, ok := strings.Cut(string(raw), "/")
	if !ok {
		return "", 0, ErrBadToken
	}
	offset, err = strconv.Atoi(offsetText)
	if err != nil || offset <= 0 {
		return "", 0, ErrBadToken
	}
	if err := CheckDay(day); err != nil {
		return "", 0, fmt.Errorf("%w: %w", ErrBadToken, err)
	}
	return day, offset, nil
}
