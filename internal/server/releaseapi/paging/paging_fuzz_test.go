package paging

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/release-controller/release-controller/internal/releaselog"
)

// Days come from outside: the API's and the pages' ?day=, page tokens, the names of
// ReleaseLog objects anyone allowed may create. A day releaselog.ParseDay accepts is the
// canonical YYYY-MM-DD of a real date (it writes back to itself, so CheckDay accepts it too),
// starting at UTC midnight, and its object name parses back to it; a refused one gets an
// error saying what a day is, and a zero time.
func FuzzParseDay(f *testing.F) {
	for _, seed := range []string{
		"2026-11-22", "2024-02-29", "2026-02-29", "2026-02-30", "2026-13-01", "0000-01-01", "9999-12-31",
		"22-11-2026", "2026-1-5", "2026-11-22T00:00:00Z", " 2026-11-22", "+2026-11-22", "2026-11-22\x00", "",
		"２０２６-11-22", "2026-11-2２",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, day string) {
		start, err := releaselog.ParseDay(day)
		if err != nil {
			if !start.IsZero() {
				t.Errorf("ParseDay(%q) failed with a time %v", day, start)
			}
			if !strings.Contains(err.Error(), "is not a day (YYYY-MM-DD)") {
				t.Errorf("ParseDay(%q): the error %q does not say what a day is", day, err)
			}
			if CheckDay(day) == nil {
				t.Errorf("CheckDay(%q) accepts a day ParseDay refuses", day)
			}
			return
		}
		if got := releaselog.DayOf(start); got != day {
			t.Errorf("ParseDay(%q) = %v, whose day is %q", day, start, got)
		}
		if y, m, d := start.Date(); start.Location() != time.UTC || !start.Equal(time.Date(y, m, d, 0, 0, 0, 0, time.UTC)) {
			t.Errorf("ParseDay(%q) = %v, not UTC midnight", day, start)
		}
		if err := CheckDay(day); err != nil {
			t.Errorf("CheckDay(%q) refuses a day ParseDay accepts: %v", day, err)
		}
		gotDay, gotStart, err := releaselog.ParseObjectName(releaselog.ObjectName(day))
		if err != nil || gotDay != day || !gotStart.Equal(start) {
			t.Errorf("ParseObjectName(ObjectName(%q)) = %q, %v, %v", day, gotDay, gotStart, err)
		}
	})
}

// A ReleaseLog's name: accepted, it names its day and writes back to itself.
func FuzzParseObjectName(f *testing.F) {
	for _, seed := range []string{"release-2026-11-22", "release-2026-02-30", "release-", "2026-11-22", "Release-2026-11-22", "release-release-2026-11-22", ""} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, name string) {
		day, start, err := releaselog.ParseObjectName(name)
		if err != nil {
			if day != "" || !start.IsZero() {
				t.Errorf("ParseObjectName(%q) failed with %q, %v", name, day, start)
			}
			return
		}
		if releaselog.ObjectName(day) != name || releaselog.DayOf(start) != day {
			t.Errorf("ParseObjectName(%q) = %q, %v: does not write back", name, day, start)
		}
	})
}

// Page tokens come back from clients, who may send anything. A token the server accepts
// names a real day and an offset past the first page, and encodes back to a token that
// decodes to the same; a refused one is ErrBadToken with zero values.
func FuzzDecodeToken(f *testing.F) {
	for _, seed := range []string{
		EncodeToken("2026-11-22", 100), EncodeToken("2026-02-30", 100), EncodeToken("2026-11-22", 0),
		EncodeToken("2026-11-22", -1), "MjAyNi0xMS0yMi8xMDA=", "MjAyNi0xMS0yMi8rMTAw", "not base64!", "",
		"MjAyNi0xMS0yMi85OTk5OTk5OTk5OTk5OTk5OTk5OTk5OTk5", "MjAyNi0xMS0yMg",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, token string) {
		day, offset, err := DecodeToken(token)
		if err != nil {
			if !errors.Is(err, ErrBadToken) || day != "" || offset != 0 {
				t.Errorf("DecodeToken(%q) = %q, %d, %v: want ErrBadToken and zero values", token, day, offset, err)
			}
			return
		}
		if offset <= 0 || CheckDay(day) != nil {
			t.Errorf("DecodeToken(%q) accepted day %q, offset %d", token, day, offset)
		}
		again := EncodeToken(day, offset)
		if d, o, err := DecodeToken(again); err != nil || d != day || o != offset {
			t.Errorf("token %q decodes to %q/%d, whose token %q decodes to %q/%d, %v", token, day, offset, again, d, o, err)
		}
	})
}

// Every token the server makes decodes to what it was made of.
func FuzzTokenRoundTrip(f *testing.F) {
	f.Add("2026-11-22", 1)
	f.Add("2026-02-29", 5)
	f.Add("2026-11-22/3", 7)
	f.Add("", 1)
	f.Fuzz(func(t *testing.T, day string, offset int) {
		if CheckDay(day) != nil || offset <= 0 {
			return // the server never makes such a token
		}
		d, o, err := DecodeToken(EncodeToken(day, offset))
		if err != nil || d != day || o != offset {
			t.Errorf("EncodeToken(%q, %d) decodes to %q, %d, %v", day, offset, d, o, err)
		}
	})
}
