// Package mcp serves the release log, the streams and the payloads to AI assistants over the
// Model Context Protocol: the tools list_release_days and list_releases (the release log),
// list_streams, latest_payload, get_payload and get_changelog (streams and payloads), on the
// HTTP server at /mcp (streamable HTTP, the official Go SDK). The tools read the in-memory
// release log store and the catalog fed by informers, never the API server; get_changelog
// reads payload images and git repositories through the server's changelogs.
package mcp

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/release-controller/release-controller/internal/changelog"
	"github.com/release-controller/release-controller/internal/releaselog"
	"github.com/release-controller/release-controller/internal/server"
	"github.com/release-controller/release-controller/internal/server/catalog"
	"github.com/release-controller/release-controller/internal/version"
)

// Path is where the MCP endpoint is served.
const Path = "/mcp"

// Limits of list_releases.
const (
	// DefaultLimit is how many entries list_releases returns when the caller gives no limit:
	// enough for a busy day, small enough for an assistant's context.
	DefaultLimit = 100
	// MaxLimit bounds one call; larger days are read with offset.
	MaxLimit = 1000
)

// Tool names.
const (
	ToolListReleases    = "list_releases"
	ToolListReleaseDays = "list_release_days"
)

// ListReleasesInput is the input of list_releases.
type ListReleasesInput struct {
	Day    string `json:"day,omitempty" jsonschema:"the UTC day to list, YYYY-MM-DD (e.g. 2026-11-22); empty means the latest day that has releases"`
	Offset int    `json:"offset,omitempty" jsonschema:"how many of the day's entries to skip, in time order; default 0"`
	Limit  int    `json:"limit,omitempty" jsonschema:"the most entries to return; default 100, at most 1000"`
}

// Release is one entry of the release log.
type Release struct {
	Time    string `json:"time" jsonschema:"when it happened, RFC 3339 in UTC"`
	Type    string `json:"type" jsonschema:"the kind of event, e.g. release, rejected, promotion, hotfix"`
	Version string `json:"version" jsonschema:"the version the event is about"`
	Origin  string `json:"origin,omitempty" jsonschema:"the system that recorded the event"`
	Author  string `json:"author,omitempty" jsonschema:"who wrote the entry: the authenticated writer; 'unverified: NAME' for an entry written directly into the ReleaseLog object, whose author is only claimed"`
	// Verified says the entry was written through the release controller (its own entries
	// and AddRelease's); false for one written directly into the ReleaseLog object.
	Verified bool `json:"verified" jsonschema:"true when the release controller wrote the entry (its own, or added through its API by the author named); false when it was written directly into the ReleaseLog object and its author is unverified"`
	// ReportedAuthor is who the writer said the entry is for; not verified.
	ReportedAuthor string `json:"reportedAuthor,omitempty" jsonschema:"who the writer said it wrote the entry for (e.g. the person a CI system acted for); not verified"`
	Message        string `json:"message,omitempty"`
	Link           string `json:"link,omitempty" jsonschema:"a URL, or a path on this server such as /namespaces/NAMESPACE/releasestream/STREAM/release/TAG"`
}

// ListReleasesOutput is the structured result of list_releases.
type ListReleasesOutput struct {
	Day         string    `json:"day" jsonschema:"the day listed; empty when the release log is empty"`
	Total       int       `json:"total" jsonschema:"how many entries the day holds"`
	Offset      int       `json:"offset" jsonschema:"the index of the first entry returned"`
	Releases    []Release `json:"releases" jsonschema:"the entries, oldest first"`
	PreviousDay string    `json:"previous_day,omitempty" jsonschema:"the closest older day with releases"`
	NextDay     string    `json:"next_day,omitempty" jsonschema:"the closest newer day with releases"`
}

// DaySummary is one day that has a release log.
type DaySummary struct {
	Day      string `json:"day" jsonschema:"YYYY-MM-DD, UTC"`
	Releases int    `json:"releases" jsonschema:"how many entries the day holds"`
}

// EntryType is a configured entry type.
type EntryType struct {
	Name  string `json:"name"`
	Color string `json:"color" jsonschema:"the CSS colour the web page shows the type in"`
}

// ListReleaseDaysOutput is the structured result of list_release_days.
type ListReleaseDaysOutput struct {
	Days    []DaySummary `json:"days" jsonschema:"the days that have a release log, newest first"`
	TTLDays int          `json:"ttl_days" jsonschema:"how many days the release log keeps a day"`
	Types   []EntryType  `json:"types" jsonschema:"the entry types writers may use; empty means any"`
}

// NewServer returns the MCP server with the release log's tools and, with a catalog, the
// tools of streams and payloads. changeLogs may be nil: get_changelog then says changelogs
// are not available.
func NewServer(store *releaselog.Store, opts releaselog.Options, cat *catalog.Catalog, changeLogs changelog.PayloadChangeLogs) *sdk.Server {
	opts = opts.WithDefaults("")
	t := tools{store: store, opts: opts}
	instructions := "Read the release log: what was released, rejected or promoted on each UTC day. " +
		"Call list_release_days to see which days have entries, then list_releases for a day."
	if cat != nil {
		instructions += " Read the release streams and their payloads (release candidates): list_streams lists the streams, " +
			"latest_payload finds a stream's newest payload in a phase (Accepted by default), get_payload shows one payload's " +
			"verdict, verification runs, components and upgrade risks, channels and tombstone (what the update service offers clusters), " +
			"get_changelog lists the commits between two payloads, and " +
			"stream_health shows a stream's acceptance rate, time to verdict and most harmful verifications. " +
			"Read the pipelines that promote apps through environments: list_pipelines lists them with each environment's revision and what holds it, " +
			"get_pipeline shows one pipeline's targets, waiting approvals (with the commands that approve and reject), each environment's soak, freeze, " +
			"verification after rollout with its runs, rollbacks, approval policy, approvals and rejections, the freezes that cover it, last promotions and conditions."
	}
	s := sdk.NewServer(&sdk.Implementation{Name: "release-controller", Version: version.Version}, &sdk.ServerOptions{
		Instructions: instructions,
		// Only tools, and the list never changes; no logging capability.
		Capabilities: &sdk.ServerCapabilities{Tools: &sdk.ToolCapabilities{}},
	})
	readOnly := &sdk.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: new(false)}
	sdk.AddTool(s, &sdk.Tool{
		Name:        ToolListReleaseDays,
		Title:       "List release log days",
		Description: "Lists the UTC days that have a release log, newest first, with how many entries each holds, how long days are kept, and the configured entry types.",
		Annotations: readOnly,
	}, t.listReleaseDays)
	sdk.AddTool(s, &sdk.Tool{
		Name:        ToolListReleases,
		Title:       "List releases of a day",
		Description: "Lists the release log entries of one UTC day in time order: time, type, version, author, message and link. Without a day it lists the latest day that has releases.",
		Annotations: readOnly,
	}, t.listReleases)
	if cat != nil {
		ct := catalogTools{cat: cat, changeLogs: changeLogs, clock: opts.Clock}
		addCatalogTools(s, ct, readOnly)
		addPipelineTools(s, ct, readOnly)
		addHealthTool(s, ct, readOnly)
	}
	return s
}

// Handler serves the MCP server over streamable HTTP.
func Handler(store *releaselog.Store, opts releaselog.Options, cat *catalog.Catalog, changeLogs changelog.PayloadChangeLogs) http.Handler {
	s := NewServer(store, opts, cat, changeLogs)
	// Stateless: the tools only read, so no session needs to outlive a request; nothing is
	// left behind by clients that go away, and any replica can answer any request.
	// A body over the server's limit is refused with 413 (the server bounds it too).
	return sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, &sdk.StreamableHTTPOptions{
		Stateless: true, MaxRequestBodyBytes: server.DefaultMaxBodyBytes,
	})
}

// Register serves the MCP endpoint on s at Path.
func Register(s *server.Server, store *releaselog.Store, opts releaselog.Options, cat *catalog.Catalog, changeLogs changelog.PayloadChangeLogs) {
	s.Handle(Path, Handler(store, opts, cat, changeLogs))
}

type tools struct {
	store *releaselog.Store
	opts  releaselog.Options
}

func (t tools) listReleaseDays(_ context.Context, _ *sdk.CallToolRequest, _ any) (*sdk.CallToolResult, ListReleaseDaysOutput, error) {
	out := ListReleaseDaysOutput{
		Days:    []DaySummary{},
		TTLDays: int(t.opts.TTL / (24 * time.Hour)),
		Types:   []EntryType{},
	}
	for _, day := range t.store.Days() {
		_, total := t.store.Page(day, 0, 0)
		out.Days = append(out.Days, DaySummary{Day: day, Releases: total})
	}
	for _, ty := range t.opts.Types {
		out.Types = append(out.Types, EntryType{Name: ty.Name, Color: ty.Color})
	}

	var b strings.Builder
	if len(out.Days) == 0 {
		fmt.Fprintf(&b, "The release log is empty. Days are kept for %d days.\n", out.TTLDays)
	} else {
		fmt.Fprintf(&b, "%s with a release log, newest first (days are kept for %d days):\n", plural(len(out.Days), "day"), out.TTLDays)
		for _, d := range out.Days {
			fmt.Fprintf(&b, "%s: %s\n", d.Day, plural(d.Releases, "release"))
		}
	}
	if len(out.Types) == 0 {
		b.WriteString("Entry types: any.\n")
	} else {
		names := make([]string, len(out.Types))
		for i, ty := range out.Types {
			names[i] = ty.Name
		}
		fmt.Fprintf(&b, "Entry types: %s.\n", strings.Join(names, ", "))
	}
	return text(b.String()), out, nil
}

func (t tools) listReleases(_ context.Context, _ *sdk.CallToolRequest, in ListReleasesInput) (*sdk.CallToolResult, ListReleasesOutput, error) {
	var none ListReleasesOutput
	if in.Offset < 0 {
		return nil, none, fmt.Errorf("offset must not be negative, got %d", in.Offset)
	}
	if in.Limit < 0 || in.Limit > MaxLimit {
		return nil, none, fmt.Errorf("limit must be between 1 and %d (0 or absent means %d), got %d", MaxLimit, DefaultLimit, in.Limit)
	}
	limit := in.Limit
	if limit == 0 {
		limit = DefaultLimit
	}

	day := in.Day
	if day == "" {
		latest, ok := t.store.Latest()
		if !ok {
			out := ListReleasesOutput{Releases: []Release{}}
			return text("The release log is empty: no day has releases.\n"), out, nil
		}
		day = latest
	} else if _, err := releaselog.ParseDay(day); err != nil {
		return nil, none, fmt.Errorf("invalid day: %w; give a UTC date as YYYY-MM-DD, e.g. %s", err, releaselog.DayOf(t.opts.Clock.Now()))
	}
	previous, next := t.store.Adjacent(day)
	if !t.store.Has(day) {
		return nil, none, fmt.Errorf("no release log for %s (%s); call %s for the days that have one",
			day, nearest(previous, next), ToolListReleaseDays)
	}

	page, total := t.store.Page(day, in.Offset, limit)
	out := ListReleasesOutput{Day: day, Total: total, Offset: in.Offset, Releases: make([]Release, len(page)), PreviousDay: previous, NextDay: next}
	for i, e := range page {
		out.Releases[i] = Release{
			Time: e.Date.UTC().Format(time.RFC3339), Type: e.Type, Version: e.Version, Origin: e.Origin,
			Author: e.ShownAuthor(), Verified: e.Verified, ReportedAuthor: e.ReportedAuthor, Message: e.Message, Link: e.Link,
		}
	}
	return text(releasesText(out)), out, nil
}

// releasesText is the day as an assistant reads it: a heading line, then one line an entry.
func releasesText(out ListReleasesOutput) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s", out.Day, plural(out.Total, "release"))
	if len(out.Releases) < out.Total {
		if len(out.Releases) == 0 {
			fmt.Fprintf(&b, " (none from offset %d)", out.Offset)
		} else {
			fmt.Fprintf(&b, " (showing %d–%d; use offset for the others)", out.Offset+1, out.Offset+len(out.Releases))
		}
	}
	b.WriteString("\n")
	for _, r := range out.Releases {
		fmt.Fprintf(&b, "- %s %s %s", r.Time, r.Type, r.Version)
		if r.Author != "" {
			fmt.Fprintf(&b, " by %s", r.Author)
		}
		if !r.Verified {
			b.WriteString(" (written directly into the ReleaseLog, not through the release controller)")
		}
		if r.ReportedAuthor != "" {
			fmt.Fprintf(&b, " (for %s, as the writer reported)", r.ReportedAuthor)
		}
		if r.Origin != "" {
			fmt.Fprintf(&b, " via %s", r.Origin)
		}
		if r.Message != "" {
			fmt.Fprintf(&b, ": %s", r.Message)
		}
		if r.Link != "" {
			fmt.Fprintf(&b, " <%s>", r.Link)
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "Previous day: %s. Next day: %s.\n", orNone(out.PreviousDay), orNone(out.NextDay))
	return b.String()
}

// nearest names the days around one that has no log, for an error an assistant can act on.
func nearest(previous, next string) string {
	switch {
	case previous != "" && next != "":
		return fmt.Sprintf("the nearest days with releases are %s before and %s after", previous, next)
	case previous != "":
		return fmt.Sprintf("the latest day with releases is %s", previous)
	case next != "":
		return fmt.Sprintf("the oldest day with releases is %s", next)
	default:
		return "the release log is empty"
	}
}

func text(s string) *sdk.CallToolResult {
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: s}}}
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

func orNone(day string) string {
	if day == "" {
		return "none"
	}
	return day
}
