package releaselog

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// NamePrefix starts the name of every ReleaseLog: release-YYYY-MM-DD.
const NamePrefix = "release-"

// dayLayout is a day's key: the UTC date, YYYY-MM-DD.
const dayLayout = "2006-01-02"

// ResyncInterval is how often the controller looks at a day again when its expiry is further
// away: a safety net against a missed event or a clock that jumped.
const ResyncInterval = 12 * time.Hour

// DayOf returns the UTC day of t, YYYY-MM-DD.
func DayOf(t time.Time) string {
	return t.UTC().Format(dayLayout)
}

// dayStart returns the start (UTC midnight) of t's UTC day.
func dayStart(t time.Time) time.Time {
	y, m, d := t.UTC().Date()
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
}

// ObjectName returns the name of the ReleaseLog holding day (YYYY-MM-DD).
func ObjectName(day string) string {
	return NamePrefix + day
}

// ParseDay parses a day key (YYYY-MM-DD) and returns the day's start, UTC midnight. It
// refuses dates that do not exist, e.g. 2026-02-30.
func ParseDay(day string) (time.Time, error) {
	start, err := time.Parse(dayLayout, day)
	if err != nil {
		return time.Time{}, fmt.Errorf("%q is not a day (YYYY-MM-DD): %w", day, err)
	}
	return start, nil
}

// ParseObjectName returns the day a ReleaseLog's name names, and the day's start.
func ParseObjectName(name string) (day string, start time.Time, err error) {
	day, ok := strings.CutPrefix(name, NamePrefix)
	if !ok {
		return "", time.Time{}, fmt.Errorf("name %q does not start with %q", name, NamePrefix)
	}
	start, err = ParseDay(day)
	if err != nil {
		return "", time.Time{}, fmt.Errorf("name %q must be release-YYYY-MM-DD naming a real UTC day: %w", name, err)
	}
	return day, start, nil
}

// Expiry is when a day's object is deleted: the day's start plus the time to live. With the
// default of 30 days, release-2026-03-01 goes at 2026-03-31T00:00:00Z.
func Expiry(start time.Time, ttl time.Duration) time.Time {
	return start.Add(ttl)
}

// Expired reports whether the day starting at start has outlived ttl at now.
func Expired(start, now time.Time, ttl time.Duration) bool {
	return !now.Before(Expiry(start, ttl))
}

// RequeueAfter is how long the controller waits before it looks at a live day again: until
// the day expires, or ResyncInterval when that is sooner.
func RequeueAfter(start, now time.Time, ttl time.Duration) time.Duration {
	return min(Expiry(start, ttl).Sub(now), ResyncInterval)
}

// Errors of the date window; CheckDate and the Writer return them wrapped.
var (
	// ErrDateExpired: the entry's day is older than the time to live, so its object would be
	// deleted at once (or already was).
	ErrDateExpired = errors.New("the entry's day is older than the release log keeps")
	// ErrDateInFuture: the entry is dated later than now plus the allowed clock skew.
	ErrDateInFuture = errors.New("the entry is dated in the future")
)

// CheckDate accepts an entry's date when its day has not expired at now and the date is not
// later than now plus skew (clocks of writers differ a little).
func CheckDate(date, now time.Time, ttl, skew time.Duration) error {
	if date.After(now.Add(skew)) {
		return fmt.Errorf("%w: %s is more than %s after now (%s)", ErrDateInFuture,
			date.UTC().Format(time.RFC3339), skew, now.UTC().Format(time.RFC3339))
	}
	start := dayStart(date)
	if Expired(start, now, ttl) {
		return fmt.Errorf("%w: the day %s expired at %s (entries are kept for %s)", ErrDateExpired,
			DayOf(date), Expiry(start, ttl).UTC().Format(time.RFC3339), ttl)
	}
	return nil
}

// ErrDayNotBegun says a day's object exists before the day began (it was written directly, or
// before the admission policy refused such days). Readers do not show it until it begins.
var ErrDayNotBegun = errors.New("the day has not begun")

// CheckBegun accepts a day starting at start once it has begun at now, with skew allowed for
// clocks that run ahead: the rule of the writer (CheckDate) and of the admission policy.
func CheckBegun(start, now time.Time, skew time.Duration) error {
	if start.After(now.Add(skew)) {
		return fmt.Errorf("%w: %s starts at %s, more than %s after now (%s); readers show it from then on", ErrDayNotBegun,
			DayOf(start), start.UTC().Format(time.RFC3339), skew, now.UTC().Format(time.RFC3339))
	}
	return nil
}

// UntilBegun is how long the controller waits before it looks at a day that has not begun
// again: until it begins, or ResyncInterval when that is sooner.
func UntilBegun(start, now time.Time, skew time.Duration) time.Duration {
	return min(start.Add(-skew).Sub(now), ResyncInterval)
}
