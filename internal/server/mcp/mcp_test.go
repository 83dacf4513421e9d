package mcp_test

import (
	"context"
	"encoding/json"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/release-controller/release-controller/internal/releaselog"
	"github.com/release-controller/release-controller/internal/server"
	"github.com/release-controller/release-controller/internal/server/mcp"
)

func at(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

// serve runs the real HTTP server with the MCP endpoint on a loopback port and returns a
// client session connected to it with the SDK's streamable HTTP transport.
func serve(t *testing.T, store *releaselog.Store, opts releaselog.Options) *sdk.ClientSession {
	t.Helper()
	s := server.New()
	mcp.Register(s, store, opts)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- s.Serve(ctx, l, 5*time.Second) }()
	t.Cleanup(func() {
		stop()
		if err := <-served; err != nil {
			t.Errorf("server: %v", err)
		}
	})

	client := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "v0"}, nil)
	session, err := client.Connect(t.Context(), &sdk.StreamableClientTransport{Endpoint: "http://" + l.Addr().String() + mcp.Path}, nil)
	if err != nil {
		t.Fatalf("connecting the MCP client: %v", err)
	}
	t.Cleanup(func() { _ = session.Close() })
	return session
}

// call calls a tool and returns its text and, decoded into out, its structured content.
func call(t *testing.T, session *sdk.ClientSession, tool string, args map[string]any, out any) (text string, isError bool) {
	t.Helper()
	res, err := session.CallTool(t.Context(), &sdk.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("calling %s(%v): %v", tool, args, err)
	}
	var texts []string
	for _, c := range res.Content {
		tc, ok := c.(*sdk.TextContent)
		if !ok {
			t.Fatalf("%s returned %T content, want text", tool, c)
		}
		texts = append(texts, tc.Text)
	}
	if out != nil && !res.IsError {
		raw, err := json.Marshal(res.StructuredContent)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(raw, out); err != nil {
			t.Fatalf("%s: structured content %s: %v", tool, raw, err)
		}
	}
	return strings.Join(texts, "\n"), res.IsError
}

func filledStore() *releaselog.Store {
	store := releaselog.NewStore()
	store.Set("2026-11-22", []releaselog.Entry{
		{Type: "release", Version: "4.18.2", Origin: "release-controller", Date: at("2026-11-22T15:00:00Z"),
			Message: "Accepted", Link: "/releases/ocp/4.18/4.18.2"},
		{Type: "promotion", Version: "4.18.1", Origin: "cli", Date: at("2026-11-22T09:30:00Z"),
			Author: "alice", Message: "Promoted to stable", Link: "https://example.com/4.18.1"},
		{Type: "rejected", Version: "4.18.0-rc.1", Origin: "release-controller", Date: at("2026-11-22T11:00:00Z")},
	})
	store.Set("2026-11-20", []releaselog.Entry{
		{Type: "hotfix", Version: "4.17.9", Origin: "cli", Date: at("2026-11-20T08:00:00Z"), Author: "bob"},
	})
	return store
}

func TestToolsAreListedWithSchemas(t *testing.T) {
	session := serve(t, filledStore(), releaselog.Options{})
	res, err := session.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	schemas := map[string]map[string]any{}
	for _, tool := range res.Tools {
		if tool.Description == "" {
			t.Errorf("tool %s has no description", tool.Name)
		}
		if tool.Annotations == nil || !tool.Annotations.ReadOnlyHint {
			t.Errorf("tool %s is not marked read-only", tool.Name)
		}
		schema, ok := tool.InputSchema.(map[string]any)
		if !ok || schema["type"] != "object" {
			t.Errorf("tool %s: input schema %v is not an object schema", tool.Name, tool.InputSchema)
		}
		if tool.OutputSchema == nil {
			t.Errorf("tool %s has no output schema", tool.Name)
		}
		schemas[tool.Name] = schema
	}
	if got := slices.Sorted(func(yield func(string) bool) {
		for name := range schemas {
			if !yield(name) {
				return
			}
		}
	}); !slices.Equal(got, []string{mcp.ToolListReleaseDays, mcp.ToolListReleases}) {
		t.Fatalf("tools = %v", got)
	}

	props, _ := schemas[mcp.ToolListReleases]["properties"].(map[string]any)
	for name, wantType := range map[string]string{"day": "string", "limit": "integer", "offset": "integer"} {
		prop, _ := props[name].(map[string]any)
		if prop["type"] != wantType || prop["description"] == nil {
			t.Errorf("list_releases input property %s = %v, want type %s with a description", name, prop, wantType)
		}
	}
	if required, _ := schemas[mcp.ToolListReleases]["required"].([]any); len(required) != 0 {
		t.Errorf("list_releases requires %v; every input is optional", required)
	}
}

func TestListReleaseDays(t *testing.T) {
	session := serve(t, filledStore(), releaselog.Options{TTL: 10 * 24 * time.Hour, Types: releaselog.DefaultTypes()})
	var out mcp.ListReleaseDaysOutput
	text, isError := call(t, session, mcp.ToolListReleaseDays, nil, &out)
	if isError {
		t.Fatalf("error: %s", text)
	}
	wantDays := []mcp.DaySummary{{Day: "2026-11-22", Releases: 3}, {Day: "2026-11-20", Releases: 1}}
	if !slices.Equal(out.Days, wantDays) || out.TTLDays != 10 {
		t.Errorf("structured = %+v, want days %v and ttl 10", out, wantDays)
	}
	if len(out.Types) != 4 || out.Types[0] != (mcp.EntryType{Name: "release", Color: "green"}) {
		t.Errorf("types = %v, want the configured ones", out.Types)
	}
	for _, want := range []string{"2 days with a release log", "kept for 10 days", "2026-11-22: 3 releases", "2026-11-20: 1 release\n", "Entry types: release, rejected, promotion, hotfix."} {
		if !strings.Contains(text, want) {
			t.Errorf("text lacks %q:\n%s", want, text)
		}
	}
}

func TestListReleases(t *testing.T) {
	session := serve(t, filledStore(), releaselog.Options{})

	t.Run("latest day by default", func(t *testing.T) {
		var out mcp.ListReleasesOutput
		text, isError := call(t, session, mcp.ToolListReleases, nil, &out)
		if isError {
			t.Fatalf("error: %s", text)
		}
		if out.Day != "2026-11-22" || out.Total != 3 || out.PreviousDay != "2026-11-20" || out.NextDay != "" {
			t.Errorf("structured = %+v", out)
		}
		var versions []string
		for _, r := range out.Releases {
			versions = append(versions, r.Version)
		}
		if want := []string{"4.18.1", "4.18.0-rc.1", "4.18.2"}; !slices.Equal(versions, want) {
			t.Errorf("versions = %v, want time order %v", versions, want)
		}
		if out.Releases[0] != (mcp.Release{Time: "2026-11-22T09:30:00Z", Type: "promotion", Version: "4.18.1", Origin: "cli",
			Author: "alice", Message: "Promoted to stable", Link: "https://example.com/4.18.1"}) {
			t.Errorf("first release = %+v", out.Releases[0])
		}
		wantText := "2026-11-22: 3 releases\n" +
			"- 2026-11-22T09:30:00Z promotion 4.18.1 by alice via cli: Promoted to stable <https://example.com/4.18.1>\n" +
			"- 2026-11-22T11:00:00Z rejected 4.18.0-rc.1 via release-controller\n" +
			"- 2026-11-22T15:00:00Z release 4.18.2 via release-controller: Accepted </releases/ocp/4.18/4.18.2>\n" +
			"Previous day: 2026-11-20. Next day: none.\n"
		if text != wantText {
			t.Errorf("text =\n%s\nwant\n%s", text, wantText)
		}
	})

	t.Run("a given day", func(t *testing.T) {
		var out mcp.ListReleasesOutput
		text, isError := call(t, session, mcp.ToolListReleases, map[string]any{"day": "2026-11-20"}, &out)
		if isError || out.Day != "2026-11-20" || len(out.Releases) != 1 || out.NextDay != "2026-11-22" {
			t.Errorf("got %+v, error %v: %s", out, isError, text)
		}
		if !strings.HasPrefix(text, "2026-11-20: 1 release\n- 2026-11-20T08:00:00Z hotfix 4.17.9 by bob via cli\n") {
			t.Errorf("text = %s", text)
		}
	})

	t.Run("offset and limit", func(t *testing.T) {
		var out mcp.ListReleasesOutput
		text, isError := call(t, session, mcp.ToolListReleases, map[string]any{"day": "2026-11-22", "offset": 1, "limit": 1}, &out)
		if isError || out.Total != 3 || out.Offset != 1 || len(out.Releases) != 1 || out.Releases[0].Version != "4.18.0-rc.1" {
			t.Errorf("got %+v, error %v: %s", out, isError, text)
		}
		if !strings.HasPrefix(text, "2026-11-22: 3 releases (showing 2–2; use offset for the others)\n") {
			t.Errorf("text = %s", text)
		}
	})

	errorsTests := []struct {
		name string
		args map[string]any
		want string
	}{
		{"malformed day", map[string]any{"day": "22/11/2026"}, `invalid day: "22/11/2026" is not a day (YYYY-MM-DD)`},
		{"impossible date", map[string]any{"day": "2026-02-30"}, `invalid day: "2026-02-30" is not a day (YYYY-MM-DD)`},
		{"unknown day between two", map[string]any{"day": "2026-11-21"}, "no release log for 2026-11-21 (the nearest days with releases are 2026-11-20 before and 2026-11-22 after); call list_release_days"},
		{"unknown day after the latest", map[string]any{"day": "2026-12-01"}, "no release log for 2026-12-01 (the latest day with releases is 2026-11-22)"},
		{"negative limit", map[string]any{"limit": -1}, "limit must be between 1 and 1000"},
		{"limit too large", map[string]any{"limit": 5000}, "limit must be between 1 and 1000"},
		{"negative offset", map[string]any{"offset": -2}, "offset must not be negative"},
		{"wrong type", map[string]any{"day": 20261122}, "day"},
	}
	for _, tt := range errorsTests {
		t.Run(tt.name, func(t *testing.T) {
			text, isError := call(t, session, mcp.ToolListReleases, tt.args, nil)
			if !isError || !strings.Contains(text, tt.want) {
				t.Errorf("isError %v, text %q; want a tool error containing %q", isError, text, tt.want)
			}
		})
	}
}

func TestEmptyLog(t *testing.T) {
	session := serve(t, releaselog.NewStore(), releaselog.Options{})

	var days mcp.ListReleaseDaysOutput
	text, isError := call(t, session, mcp.ToolListReleaseDays, nil, &days)
	if isError || len(days.Days) != 0 || days.TTLDays != 30 || !strings.HasPrefix(text, "The release log is empty. Days are kept for 30 days.\nEntry types: any.") {
		t.Errorf("list_release_days = %+v, error %v: %q", days, isError, text)
	}

	var releases mcp.ListReleasesOutput
	text, isError = call(t, session, mcp.ToolListReleases, nil, &releases)
	if isError || releases.Day != "" || releases.Releases == nil || len(releases.Releases) != 0 || !strings.Contains(text, "The release log is empty") {
		t.Errorf("list_releases = %+v, error %v: %q", releases, isError, text)
	}

	text, isError = call(t, session, mcp.ToolListReleases, map[string]any{"day": "2026-11-22"}, nil)
	if !isError || !strings.Contains(text, "no release log for 2026-11-22 (the release log is empty)") {
		t.Errorf("unknown day in an empty log: error %v: %q", isError, text)
	}
}

// The tools read the store on every call: a day added after the client connected is seen.
func TestReadsTheStoreLive(t *testing.T) {
	store := filledStore()
	session := serve(t, store, releaselog.Options{})
	store.Set("2026-11-23", []releaselog.Entry{{Type: "release", Version: "4.18.3", Origin: "cli", Date: at("2026-11-23T01:00:00Z")}})
	var out mcp.ListReleasesOutput
	if text, isError := call(t, session, mcp.ToolListReleases, nil, &out); isError || out.Day != "2026-11-23" || out.PreviousDay != "2026-11-22" {
		t.Errorf("got %+v, error %v: %s", out, isError, text)
	}
}
