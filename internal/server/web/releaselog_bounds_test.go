package web_test

import (
	"strings"
	"testing"
	"time"

	"github.com/release-controller/release-controller/internal/releaselog"
	"github.com/release-controller/release-controller/internal/server/web"
)

func TestDayRange(t *testing.T) {
	const month = 30 * 24 * time.Hour
	tests := []struct {
		name           string
		now            string
		ttl            time.Duration
		oldest, newest string
		wantFirst      string
		wantLast       string
	}{
		{name: "an empty log: the days kept, today last", now: "2026-11-22T16:00:00Z", ttl: month,
			wantFirst: "2026-10-24", wantLast: "2026-11-22"},
		{name: "days inside the window", now: "2026-11-22T16:00:00Z", ttl: month, oldest: "2026-11-01", newest: "2026-11-22",
			wantFirst: "2026-10-24", wantLast: "2026-11-22"},
		{name: "a day not yet expired by the controller widens the start", now: "2026-11-22T16:00:00Z", ttl: month, oldest: "2026-10-20", newest: "2026-11-20",
			wantFirst: "2026-10-20", wantLast: "2026-11-22"},
		{name: "tomorrow (an entry within the clock skew)", now: "2026-11-22T23:58:00Z", ttl: month, oldest: "2026-11-01", newest: "2026-11-23",
			wantFirst: "2026-10-24", wantLast: "2026-11-23"},
		{name: "a day far in the future ends the range tomorrow", now: "2026-11-22T16:00:00Z", ttl: month, oldest: "2026-11-01", newest: "9999-12-31",
			wantFirst: "2026-10-24", wantLast: "2026-11-23"},
		{name: "a day far in the past starts it at most 400 days back", now: "2026-11-22T16:00:00Z", ttl: month, oldest: "0001-01-01", newest: "2026-11-22",
			wantFirst: "2025-10-19", wantLast: "2026-11-22"},
		{name: "a time to live of ten years: 400 days", now: "2026-11-22T16:00:00Z", ttl: 10 * 365 * 24 * time.Hour,
			wantFirst: "2025-10-19", wantLast: "2026-11-22"},
		{name: "a time to live under a day: today", now: "2026-11-22T16:00:00Z", ttl: time.Hour,
			wantFirst: "2026-11-22", wantLast: "2026-11-22"},
		{name: "days that are not days are ignored", now: "2026-11-22T16:00:00Z", ttl: month, oldest: "junk", newest: "2026-13-45",
			wantFirst: "2026-10-24", wantLast: "2026-11-22"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			first, last := web.DayRange(at(tt.now), tt.ttl, tt.oldest, tt.newest)
			if first != tt.wantFirst || last != tt.wantLast {
				t.Errorf("DayRange = %s..%s, want %s..%s", first, last, tt.wantFirst, tt.wantLast)
			}
			start, _ := releaselog.ParseDay(first)
			end, _ := releaselog.ParseDay(last)
			if days := int(end.Sub(start)/(24*time.Hour)) + 1; days > web.MaxPageDays {
				t.Errorf("%d days, more than %d", days, web.MaxPageDays)
			}
		})
	}
}

// A ReleaseLog dated 9999 (written past admission, or before the policy existed) made the page
// draw a bar for every day until then: 6 MB at 2100, out of memory near 9999. The page draws
// the days up to tomorrow at most.
func TestAFarFutureDayKeepsThePageBounded(t *testing.T) {
	store := filledStore()
	store.Set("9999-12-31", []releaselog.Entry{{Type: "release", Version: "9.9.9", Origin: "release-controller",
		Author: "release-controller", Date: at("9999-12-31T10:00:00Z")}})
	store.Set("0001-01-01", []releaselog.Entry{{Type: "release", Version: "0.0.1", Origin: "cli", Date: at("0001-01-01T10:00:00Z")}})
	base := serve(t, store, options())
	for _, query := range []string{"", "?day=2026-11-22", "?day=9999-12-31", "?day=0001-01-01", "?day=2026-11-22&type=release"} {
		code, _, body := get(t, base+web.ReleasesPath+query)
		if code != 200 {
			t.Errorf("%s: status %d", query, code)
		}
		// The fixture's page is about 25 KB; 400 days of bars and table rows add about 150 KB.
		if len(body) > 256<<10 {
			t.Errorf("%s: the page is %d bytes", query, len(body))
		}
		if rows := strings.Count(body, `<th scope="row">`); rows > web.MaxPageDays {
			t.Errorf("%s: %d days counted, more than %d", query, rows, web.MaxPageDays)
		}
		if strings.Contains(body, `max="9999-12-31"`) {
			t.Errorf("%s: the date picker reaches 9999", query)
		}
	}
}

// An entry written directly into a ReleaseLog (not sealed) shows as such, whoever it names as
// its author; the controller's own entries do not.
func TestDirectlyWrittenEntriesAreMarked(t *testing.T) {
	store := releaselog.NewStore()
	store.Set("2026-11-22", []releaselog.Entry{
		{Type: "release", Version: "4.18.3", Origin: "release-controller", Author: "release-controller", Date: at("2026-11-22T10:00:00Z")},
		{Type: "release", Version: "4.18.2", Origin: "release-controller", Author: "release-controller", Date: at("2026-11-22T09:00:00Z"), Verified: true},
	})
	base := serve(t, store, options())
	_, _, body := get(t, base+web.ReleasesPath+"?day=2026-11-22")
	for _, want := range []string{
		`<td class="author"><span class="unverified" title="written directly into the ReleaseLog object, not through the release controller: the author is not verified">unverified: release-controller</span></td>`,
		`<td class="author">release-controller</td>`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("page lacks %s:\n%s", want, body)
		}
	}
	if n := strings.Count(body, `unverified: release-controller`); n != 1 {
		t.Errorf("%d entries shown as unverified, want the one written directly", n)
	}
}
