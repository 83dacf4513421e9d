package releaseapi

import (
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// A page token names the day it pages through and the offset of the page's first entry,
// "YYYY-MM-DD/offset", base64url-encoded so callers treat it as opaque and do not build their
// own. Entries are only added to a day, nearly always at its end, so an offset stays valid
// between pages. (A back-dated entry added while a caller pages, landing before the page
// boundary, shifts the later entries by one: that caller sees one entry twice and not the new
// one, which it would not have seen either had it come a moment later.)

func encodePageToken(day string, offset int) string {
	return base64.RawURLEncoding.EncodeToString([]byte(day + "/" + strconv.Itoa(offset)))
}

var errBadPageToken = errors.New("the page token is not one this server returned")

func decodePageToken(token string) (day string, offset int, err error) {
	raw, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil {
		return "", 0, errBadPageToken
	}
	day, offsetText, ok := strings.Cut(string(raw), "/")
	if !ok {
		return "", 0, errBadPageToken
	}
	offset, err = strconv.Atoi(offsetText)
	// Tokens are only made for the start of a page after the first, so never for offset 0.
	if err != nil || offset <= 0 {
		return "", 0, errBadPageToken
	}
	if err := checkDay(day); err != nil {
		return "", 0, fmt.Errorf("%w: %w", errBadPageToken, err)
	}
	return day, offset, nil
}
