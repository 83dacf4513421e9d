package web

import (
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/release-controller/release-controller/internal/releaselog"
)

func TestParseLogFilter(t *testing.T) {
	for _, tc := range []struct {
		query   string
		want    logFilter
		wantErr bool
	}{
		{"", logFilter{}, false},
		{"type=release&stream=4.18&q=+accepted+", logFilter{Type: "release", Stream: "4.18", Text: "accepted"}, false},
		{"q=" + strings.Repeat("x", maxFilterLength), logFilter{Text: strings.Repeat("x", maxFilterLength)}, false},
		{"q=" + strings.Repeat("x", maxFilterLength+1), logFilter{}, true},
		{"stream=" + strings.Repeat("s", maxFilterLength+1), logFilter{}, true},
	} {
		q, _ := url.ParseQuery(tc.query)
		got, err := parseLogFilter(q)
		if (err != nil) != tc.wantErr || got != tc.want {
			t.Errorf("%q: got %+v, %v; want %+v (error %v)", tc.query, got, err, tc.want, tc.wantErr)
		}
	}
}

func TestStreamOfLink(t *testing.T) {
	for _, tc := range []struct {
		link, namespace, stream string
		ok                      bool
	}{
		{"/namespaces/ocp/releasestream/4.18.0-0.nightly/release/4.18.0-0.nightly-2026-11-22-093000", "ocp", "4.18.0-0.nightly", true},
		{"/releases/ocp/4.18/4.18.2", "ocp", "4.18", true},
		{"https://example.com/releases/ocp/4.18/4.18.2", "", "", false},
		{"/namespaces/ocp/releasestream/4.18", "", "", false},
		{"/releases", "", "", false},
		{"", "", "", false},
		{"/releases//4.18/x", "", "4.18", false},
	} {
		ns, stream, ok := streamOfLink(tc.link)
		if ok != tc.ok || (ok && (ns != tc.namespace || stream != tc.stream)) {
			t.Errorf("streamOfLink(%q) = %q, %q, %v; want %q, %q, %v", tc.link, ns, stream, ok, tc.namespace, tc.stream, tc.ok)
		}
	}
}

func TestLogFilterMatches(t *testing.T) {
	accepted := releaselog.Entry{Type: "release", Version: "4.18.2", Origin: "release-controller", Message: "Accepted: all blocking jobs passed",
		Link: "/namespaces/ocp/releasestream/4.18/release/4.18.2"}
	promotion := releaselog.Entry{Type: "promotion", Version: "v2", Origin: "release-controller", Author: "release-controller", ReportedAuthor: "alice"}
	for _, tc := range []struct {
		name   string
		filter logFilter
		want   []bool // accepted, promotion
	}{
		{"none", logFilter{}, []bool{true, true}},
		{"type, ignoring case", logFilter{Type: "RELEASE"}, []bool{true, false}},
		{"stream from the payload link", logFilter{Stream: "4.18"}, []bool{true, false}},
		{"another stream", logFilter{Stream: "4.17"}, []bool{false, false}},
		{"text in the message", logFilter{Text: "BLOCKING"}, []bool{true, false}},
		{"text in the reported author", logFilter{Text: "alice"}, []bool{false, true}},
		{"text in the origin", logFilter{Text: "controller"}, []bool{true, true}},
		{"all three", logFilter{Type: "release", Stream: "4.18", Text: "4.18.2"}, []bool{true, false}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := []bool{tc.filter.matches(accepted), tc.filter.matches(promotion)}
			if !slices.Equal(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestDayCounts(t *testing.T) {
	store := releaselog.NewStore()
	at := func(s string) time.Time { t, _ := time.Parse(time.RFC3339, s); return t }
	store.Set("2026-11-20", []releaselog.Entry{{Type: "release", Version: "a", Date: at("2026-11-20T01:00:00Z")}, {Type: "rejected", Version: "b", Date: at("2026-11-20T02:00:00Z")}})
	store.Set("2026-11-22", []releaselog.Entry{{Type: "release", Version: "c", Date: at("2026-11-22T01:00:00Z")}})
	got := dayCounts(store, logFilter{Type: "release"}, "2026-11-19", "2026-11-22")
	want := []dayCount{
		{"2026-11-19", 0, "/releases?day=2026-11-19&type=release"},
		{"2026-11-20", 1, "/releases?day=2026-11-20&type=release"},
		{"2026-11-21", 0, "/releases?day=2026-11-21&type=release"},
		{"2026-11-22", 1, "/releases?day=2026-11-22&type=release"},
	}
	if !slices.Equal(got, want) {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
	if got := dayCounts(store, logFilter{}, "2026-11-22", "2026-11-20"); got != nil {
		t.Errorf("a range ending before it starts: %+v", got)
	}
	c := countChart(got, logFilter{Type: "release"})
	if len(c.Bars) != 4 || c.Bars[1].H == 0 || c.Bars[0].H != 0 || c.Bars[1].Link != want[1].Link || c.Title != "Matching entries per day" {
		t.Errorf("chart %+v", c)
	}
}
