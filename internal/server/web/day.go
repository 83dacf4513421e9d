package web

import (
	"fmt"
	"html/template"
	"strings"
	"time"

	"github.com/release-controller/release-controller/internal/releaselog"
)

// Empty states of the page.
const (
	EmptyDay = "No releases recorded for this day."
	EmptyLog = "The release log is empty."
)

// dayView is one day as the page shows it. The navigation and the entries are rendered once
// and used both in the page and in the live updates, so the two never differ.
type dayView struct {
	Day string
	// Label is the day for people, e.g. Sunday, 22 November 2026.
	Label   string
	Summary string
	Nav     fragment
	Entries fragment
	// Counts is the chart and table of entries per day.
	Counts fragment
}

// fragment is a rendered part of the page. Version identifies its content: the script swaps
// a part only when its version changed, so focus and selection survive other updates.
type fragment struct {
	HTML    template.HTML `json:"html"`
	Version string        `json:"version"`
}

// navData is what the nav template renders.
type navData struct {
	Day, Previous, Next, Latest string
	// The links to those days, which keep the filter.
	PreviousLink, NextLink, LatestLink string
}

// countsData is what the counts template renders.
type countsData struct {
	Chart chart
	Days  []dayCount
	// Day is the day shown, marked in the table.
	Day string
	// Any is whether a day counts an entry; Filtered whether a filter applies.
	Any, Filtered bool
}

// entriesData is what the entries template renders.
type entriesData struct {
	Label, Summary string
	Rows           []row
}

// row is one entry as the table shows it.
type row struct {
	// Key identifies the row across updates, so the script can mark the new ones.
	Key string
	// DateTime is the machine-readable time (RFC 3339), Time the shown one.
	DateTime, Time string
	Type           string
	// ColorClass is the class of the type's colour in the types stylesheet; empty for a
	// type without one.
	ColorClass    string
	Version, Link string
	// Author is the author as shown: "unverified: <author>" unless Verified.
	Author string
	// Verified says the entry was written through the release controller (it is sealed).
	Verified bool
	// ReportedAuthor is who the writer said it wrote for: shown beside the author, marked
	// as unverified.
	ReportedAuthor string
	Message        string
	Origin         string
}

// dayView reads day from the store and renders its parts with the entries that pass f, and
// the counts per day from first to last.
func (p *pages) dayView(day string, f logFilter, first, last string) (dayView, error) {
	start, err := releaselog.ParseDay(day)
	if err != nil {
		return dayView{}, err
	}
	previous, next := p.store.Adjacent(day)
	latest, _ := p.store.Latest()
	all := p.store.Entries(day)
	entries := make([]releaselog.Entry, 0, len(all))
	for _, e := range all {
		if f.matches(e) {
			entries = append(entries, e)
		}
	}

	summary := plural(len(entries), "release")
	switch {
	case f.Active() && len(all) > 0:
		summary = fmt.Sprintf("%d of %s match the filter.", len(entries), plural(len(all), "release"))
	case len(entries) > 0:
	case latest == "":
		summary = EmptyLog
	default:
		summary = EmptyDay
	}
	label := start.Format("Monday, 2 January 2006")
	rows := make([]row, len(entries))
	for i, e := range entries {
		key := e.ID
		if key == "" {
			key = e.Date.UTC().Format(time.RFC3339) + " " + e.Type + " " + e.Version
		}
		rows[i] = row{
			Key:            key,
			DateTime:       e.Date.UTC().Format(time.RFC3339),
			Time:           e.Date.UTC().Format("15:04:05"),
			Type:           e.Type,
			ColorClass:     p.colorClass[e.Type],
			Version:        e.Version,
			Link:           e.Link,
			Author:         e.ShownAuthor(),
			Verified:       e.Verified,
			ReportedAuthor: e.ReportedAuthor,
			Message:        e.Message,
			Origin:         e.Origin,
		}
	}

	v := dayView{Day: day, Label: label, Summary: summary}
	if v.Nav, err = part("day-nav", navData{Day: day, Previous: previous, Next: next, Latest: latest,
		PreviousLink: ReleasesPath + "?day=" + previous + f.query(), NextLink: ReleasesPath + "?day=" + next + f.query(),
		LatestLink: ReleasesPath + strings.Replace(f.query(), "&", "?", 1)}); err != nil {
		return dayView{}, err
	}
	if v.Entries, err = part("day-entries", entriesData{Label: label, Summary: summary, Rows: rows}); err != nil {
		return dayView{}, err
	}
	counts := dayCounts(p.store, f, first, last)
	cd := countsData{Chart: countChart(counts, f), Days: counts, Day: day, Filtered: f.Active()}
	for _, c := range counts {
		cd.Any = cd.Any || c.Count > 0
	}
	if v.Counts, err = part("day-counts", cd); err != nil {
		return dayView{}, err
	}
	return v, nil
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
