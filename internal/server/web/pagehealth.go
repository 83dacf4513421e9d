package web

import (
	"cmp"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/release-controller/release-controller/internal/server/catalog"
)

// The stream health page: acceptance and time to verdict over a window of payloads, drawn
// as two SVG charts with the same figures in a table, and each verification's record sorted
// by harm. Everything comes from catalog.Stream.Health, which format=json returns as is
// (the MCP tool stream_health returns it too).

// healthQuery is the health page's window and format.
type healthQuery struct {
	Payloads, Days int
	JSON           bool
}

// parseHealthQuery reads payloads, days and format; a malformed one is an error meant for
// people. Missing ones take the catalog's defaults.
func parseHealthQuery(q url.Values) (healthQuery, error) {
	hq := healthQuery{Payloads: catalog.DefaultHealthPayloads, Days: catalog.DefaultHealthDays}
	for _, f := range []struct {
		name  string
		dst   *int
		limit int
	}{{"payloads", &hq.Payloads, catalog.MaxHealthPayloads}, {"days", &hq.Days, catalog.MaxHealthDays}} {
		v := q.Get(f.name)
		if v == "" {
			continue
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > f.limit {
			return hq, fmt.Errorf("“%s” is not a number of %s: give one from 1 to %d", v, f.name, f.limit)
		}
		*f.dst = n
	}
	switch q.Get("format") {
	case "", "html":
	case "json":
		hq.JSON = true
	default:
		return hq, fmt.Errorf("“%s” is not a format of this page: use html or json", q.Get("format"))
	}
	return hq, nil
}

// healthPage is what the health template renders.
type healthPage struct {
	pageBase
	Stream         streamHeader
	Query          healthQuery
	JSON           string
	Health         catalog.Health
	Acceptance     string
	VerdictTimes   string
	LastAccepted   *healthPayloadView
	Drought        string
	Charts         []chart
	Days           []healthDayRow
	Verifications  []verificationHealthRow
	EmptyWindowMsg string
	// Risks are the update service's risks of the stream (updates.go).
	Risks healthRisks
}

type healthPayloadView struct {
	Tag, Link string
	Created   stamp
}

type healthDayRow struct {
	Day, Payloads, Acceptance, P50, P90 string
}

type verificationHealthRow struct {
	Name, Kind                         string
	Pass, Retry, Flaky, P50, P90, Harm string
	LastFailure, LastFailureRun        link
	LastFailureAt                      stamp
	Suspects                           string
	Breaks                             []breakView
}

// breakView is a payload a verification started failing on, with what its changelog (when
// computed before) says changed.
type breakView struct {
	Link    link
	Commits string
}

// keptHealth is a health report in the page cache, with the snapshot it was computed from.
type keptHealth struct {
	stream *catalog.Stream
	health catalog.Health
}

func (p *site) healthPage(w http.ResponseWriter, r *http.Request) {
	s, ok := p.stream(w, r)
	if !ok {
		return
	}
	base := streamPath(s.Namespace, s.Name) + "/health"
	hq, err := parseHealthQuery(r.URL.Query())
	if err != nil {
		p.fail(w, http.StatusBadRequest, "Bad request", err.Error()+".", link{"Health of " + s.Namespace + "/" + s.Name, base})
		return
	}
	// The report is kept for its snapshot, window and minute, like the pages' live parts:
	// viewers of an unchanged stream share one computation a minute. The kept value holds
	// its snapshot, so the snapshot's address (the key) cannot be reused by another.
	now := p.now()
	key := partKey{view: "health", snapshot: snapshotID(s), arg: fmt.Sprintf("%d/%d", hq.Payloads, hq.Days), minute: minuteOf(now)}
	kept, _ := cached(p.parts, key, func() (keptHealth, error) {
		return keptHealth{s, s.Health(catalog.HealthWindow{Payloads: hq.Payloads, Days: hq.Days, Now: now})}, nil
	})
	h := kept.health
	if hq.JSON {
		writeJSON(w, h)
		return
	}
	page := healthView(s, h, hq, now, base, p.breakCommits)
	risks, warnings := p.streamRisks(s)
	page.Risks = healthRisksOf(s, risks, warnings, now)
	renderPage(w, http.StatusOK, "health", page)
}

// healthView turns a health report into the page's text, charts and tables.
func healthView(s *catalog.Stream, h catalog.Health, hq healthQuery, now time.Time, base string, commits func(*catalog.Stream, catalog.Break) string) healthPage {
	page := healthPage{
		pageBase: pageBase{Title: "Health of " + s.Namespace + "/" + s.Name,
			Crumbs: []link{{"Streams", IndexPath}, {s.Namespace + "/" + s.Name, streamPath(s.Namespace, s.Name)}}},
		Stream: streamLinks(s),
		Query:  hq,
		JSON:   withQuery(base, "payloads", strconv.Itoa(hq.Payloads), "days", strconv.Itoa(hq.Days), "format", "json"),
		Health: h,
	}
	if l := h.LastAccepted; l != nil {
		page.LastAccepted = &healthPayloadView{Tag: l.Tag, Link: entryPath(s, l.Tag), Created: stampOf(now, l.Created)}
	}
	if h.Payloads == 0 {
		page.EmptyWindowMsg = fmt.Sprintf("No payload was created in the last %s.", plural(hq.Days, "day"))
		return page
	}
	page.Acceptance = fmt.Sprintf("%s of %s accepted (%s); %d rejected, %d failed, %d waiting for a verdict.",
		plural(h.Accepted, "payload"), plural(h.Verdicts, "verdict"), percent(h.AcceptanceRate, h.Verdicts), h.Rejected, h.Failed, h.Waiting)
	if h.Verdicts > 0 {
		page.VerdictTimes = fmt.Sprintf("From creation to verdict: %s at the median, %s at the 90th percentile.", seconds(h.VerdictP50), seconds(h.VerdictP90))
	}
	if d := h.LongestDrought; d != nil {
		page.Drought = droughtText(*d)
	}
	page.Charts = []chart{acceptanceChart(h.Days), verdictTimeChart(h.Days)}
	for _, d := range h.Days {
		page.Days = append(page.Days, healthDayRow{
			Day: d.Day, Payloads: strconv.Itoa(d.Payloads),
			Acceptance: fmt.Sprintf("%d of %d (%s)", d.Accepted, d.Verdicts, percent(d.AcceptanceRate, d.Verdicts)),
			P50:        secondsOrNone(d.VerdictP50, d.Verdicts), P90: secondsOrNone(d.VerdictP90, d.Verdicts),
		})
	}
	for _, v := range h.Verifications {
		page.Verifications = append(page.Verifications, verificationRow(s, v, now, commits))
	}
	return page
}

func verificationRow(s *catalog.Stream, v catalog.VerificationHealth, now time.Time, commits func(*catalog.Stream, catalog.Break) string) verificationHealthRow {
	row := verificationHealthRow{
		Name: v.Name, Kind: "informing",
		Pass:  fmt.Sprintf("%d of %d (%s)", v.Passed, v.Ended, percent(v.PassRate, v.Ended)),
		Retry: fmt.Sprintf("%d (%s)", v.Retried, percent(v.RetryRate, v.Ended)),
		Flaky: fmt.Sprintf("%d (%s)", v.Flaky, percent(v.Flakiness, v.Ended)),
		P50:   secondsOrNone(v.DurationP50, v.Runs), P90: secondsOrNone(v.DurationP90, v.Runs),
		Harm: fmt.Sprintf("%d: rejected %s, delayed %d", v.Harm, plural(v.Rejected, "payload"), v.Delayed),
	}
	if v.Blocking {
		row.Kind = "blocking"
	}
	if f := v.LastFailure; f != nil {
		row.LastFailure = link{Text: f.Tag}
		if _, ok := s.Entry(f.Tag); ok {
			row.LastFailure.URL = entryPath(s, f.Tag)
		}
		row.LastFailureRun = link{Text: f.Run, URL: f.URL}
		row.LastFailureAt = stampOf(now, f.Time)
	}
	var suspects []string
	for _, c := range v.Suspects {
		suspects = append(suspects, fmt.Sprintf("%s (%s)", c.Component, plural(c.Breaks, "break")))
	}
	row.Suspects = strings.Join(suspects, ", ")
	for _, b := range v.Breaks {
		l := link{Text: b.Tag}
		if _, ok := s.Entry(b.Tag); ok {
			l.URL = withQuery(entryPath(s, b.Tag), "from", b.Previous)
		}
		row.Breaks = append(row.Breaks, breakView{Link: l, Commits: commits(s, b)})
	}
	return row
}

// maxBreakCommits bounds the commits named per component of a break.
const maxBreakCommits = 2

// breakCommits names the new commits of each component a break changed, from the changelog
// of the pair when one was computed before (a health page never computes one); "" without.
func (p *site) breakCommits(s *catalog.Stream, b catalog.Break) string {
	if p.opts.ChangeLogs == nil {
		return ""
	}
	prev, ok1 := s.Entry(b.Previous)
	cur, ok2 := s.Entry(b.Tag)
	if !ok1 || !ok2 {
		return ""
	}
	cl, ok := p.opts.ChangeLogs.Cached(prev.Payload, cur.Payload)
	if !ok || cl == nil {
		return ""
	}
	var parts []string
	for _, ic := range slices.Concat(cl.UpdatedImages, cl.NewImages) {
		if len(ic.Commits) == 0 {
			continue
		}
		var titles []string
		for _, c := range ic.Commits[:min(len(ic.Commits), maxBreakCommits)] {
			titles = append(titles, "“"+cmp.Or(c.Title, c.Subject)+"”")
		}
		if more := len(ic.Commits) - maxBreakCommits; more > 0 {
			titles = append(titles, fmt.Sprintf("%d more", more))
		}
		parts = append(parts, ic.Name+": "+strings.Join(titles, ", "))
	}
	return strings.Join(parts, "; ")
}

func droughtText(d catalog.Drought) string {
	after := "the start of the window"
	if d.After != "" {
		after = "the acceptance of " + d.After
	}
	if d.Ongoing {
		return fmt.Sprintf("Longest time without a new accepted payload: %s, since %s, and still going (%s not accepted).",
			seconds(d.Seconds), after, plural(d.Payloads, "payload"))
	}
	return fmt.Sprintf("Longest time without a new accepted payload: %s, from %s until %s was accepted (%s not accepted in between).",
		seconds(d.Seconds), after, d.Until, plural(d.Payloads, "payload"))
}

// percent is a share for people; "n/a" when it is a share of nothing.
func percent(share float64, of int) string {
	if of == 0 {
		return "n/a"
	}
	return strconv.FormatFloat(share*100, 'f', 0, 64) + "%"
}

func seconds(s float64) string {
	if s >= 48*3600 {
		return fmt.Sprintf("%.1f days", s/86400)
	}
	return duration(time.Duration(s * float64(time.Second)))
}

func secondsOrNone(s float64, of int) string {
	if of == 0 {
		return "—"
	}
	return seconds(s)
}
