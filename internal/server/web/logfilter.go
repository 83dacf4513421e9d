package web

import (
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/release-controller/release-controller/internal/releaselog"
)

// The Releases page's filters (type, stream, text) and its chart of entries per day. The
// filters apply to the day shown, to the chart, and to the page's live updates alike.

// maxFilterLength bounds each filter's text.
const maxFilterLength = 200

// logFilter selects entries; its zero value selects every one.
type logFilter struct {
	Type, Stream, Text string
}

// parseLogFilter reads type, stream and q; a malformed one is an error meant for people.
func parseLogFilter(q url.Values) (logFilter, error) {
	f := logFilter{Type: strings.TrimSpace(q.Get("type")), Stream: strings.TrimSpace(q.Get("stream")), Text: strings.TrimSpace(q.Get("q"))}
	for name, v := range map[string]string{"type": f.Type, "stream": f.Stream, "q": f.Text} {
		if len(v) > maxFilterLength {
			return logFilter{}, fmt.Errorf("the %s filter is longer than %d characters", name, maxFilterLength)
		}
	}
	return f, nil
}

// Active reports whether the filter selects less than everything.
func (f logFilter) Active() bool { return f != logFilter{} }

// query is the filter as query parameters for links, "" when none, else starting with "&".
func (f logFilter) query() string {
	v := url.Values{}
	for k, s := range map[string]string{"type": f.Type, "stream": f.Stream, "q": f.Text} {
		if s != "" {
			v.Set(k, s)
		}
	}
	if len(v) == 0 {
		return ""
	}
	return "&" + v.Encode()
}

// matches reports whether e passes the filter: its type (ignoring case), the stream its
// payload link names (entries that link no payload have none), and the text, found ignoring
// case in its type, version, author, message or origin.
func (f logFilter) matches(e releaselog.Entry) bool {
	if f.Type != "" && !strings.EqualFold(f.Type, e.Type) {
		return false
	}
	if f.Stream != "" {
		if _, stream, ok := streamOfLink(e.Link); !ok || stream != f.Stream {
			return false
		}
	}
	if f.Text != "" {
		text := strings.ToLower(f.Text)
		for _, field := range []string{e.Type, e.Version, e.ShownAuthor(), e.ReportedAuthor, e.Message, e.Origin} {
			if strings.Contains(strings.ToLower(field), text) {
				return true
			}
		}
		return false
	}
	return true
}

// streamOfLink finds the stream of a payload link the controller writes
// (/namespaces/NAMESPACE/releasestream/STREAM/release/TAG, or the older
// /releases/NAMESPACE/STREAM/TAG); ok is false for any other link.
func streamOfLink(link string) (namespace, stream string, ok bool) {
	u, err := url.Parse(link)
	if err != nil || u.Host != "" {
		return "", "", false
	}
	parts := strings.Split(strings.Trim(u.Path, "/"), "/")
	switch {
	case len(parts) == 6 && parts[0] == "namespaces" && parts[2] == "releasestream" && parts[4] == "release":
		return parts[1], parts[3], parts[1] != "" && parts[3] != ""
	case len(parts) == 4 && parts[0] == "releases":
		return parts[1], parts[2], parts[1] != "" && parts[2] != ""
	}
	return "", "", false
}

// dayCount is how many entries of a day pass the filter.
type dayCount struct {
	Day   string
	Count int
	Link  string
}

// dayCounts counts the entries passing f on every day from first to last (YYYY-MM-DD,
// inclusive), oldest first; days the store lacks count 0.
func dayCounts(store *releaselog.Store, f logFilter, first, last string) []dayCount {
	start, err1 := releaselog.ParseDay(first)
	end, err2 := releaselog.ParseDay(last)
	if err1 != nil || err2 != nil || end.Before(start) {
		return nil
	}
	var out []dayCount
	for d := start; !d.After(end); d = d.Add(24 * time.Hour) {
		day := releaselog.DayOf(d)
		n := 0
		for _, e := range store.Entries(day) {
			if f.matches(e) {
				n++
			}
		}
		out = append(out, dayCount{Day: day, Count: n, Link: ReleasesPath + "?day=" + day + f.query()})
	}
	return out
}

// countChart draws the counts per day as bars, each linking to its day.
func countChart(counts []dayCount, f logFilter) chart {
	what := "Entries"
	if f.Active() {
		what = "Matching entries"
	}
	c := newChart("day-counts-chart", what+" per day", what+" of the release log per UTC day; each bar opens its day.")
	top := 0
	for _, d := range counts {
		top = max(top, d.Count)
	}
	step := max(1, (top+3)/4)
	for i := range 5 {
		c.YTicks = append(c.YTicks, chartTick{Pos: yOf(float64(step*i), float64(step*4)), Label: fmt.Sprint(step * i)})
	}
	days := make([]string, len(counts))
	for i, d := range counts {
		days[i] = d.Day
	}
	c.XLabels = dayLabels(days)
	for i, d := range counts {
		left, w := slot(i, len(counts))
		bw := barWidth(w)
		y := yOf(float64(d.Count), float64(step*4))
		c.Bars = append(c.Bars, chartBar{X: left + (w-bw)/2, Y: y, W: bw, H: chartBottom - y, Fill: colorPending,
			Title: fmt.Sprintf("%s: %d %s", d.Day, d.Count, map[bool]string{true: "entry", false: "entries"}[d.Count == 1]), Link: d.Link})
	}
	return c
}
