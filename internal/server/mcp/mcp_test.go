package mcp_test

import (
	"context"
	"encoding/json"
	"net"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/changelog"
	"github.com/release-controller/release-controller/internal/releaselog"
	"github.com/release-controller/release-controller/internal/server"
	"github.com/release-controller/release-controller/internal/server/catalog"
	"github.com/release-controller/release-controller/internal/server/mcp"
	"github.com/release-controller/release-controller/internal/updateservice"
	"github.com/release-controller/release-controller/internal/verdict/verdicttest"
)

func at(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

// serve runs the real HTTP server with the MCP endpoint on a loopback port and returns a
// client session connected to it with the SDK's streamable HTTP transport. The catalog is
// empty and there are no changelogs.
func serve(t *testing.T, store *releaselog.Store, opts releaselog.Options) *sdk.ClientSession {
	t.Helper()
	return serveAll(t, store, opts, catalog.New(), nil)
}

// serveAll is serve with a catalog and changelogs.
func serveAll(t *testing.T, store *releaselog.Store, opts releaselog.Options, cat *catalog.Catalog, changeLogs changelog.PayloadChangeLogs) *sdk.ClientSession {
	t.Helper()
	session, _ := serveWith(t, func(s *server.Server) { mcp.Register(s, store, opts, cat, changeLogs) })
	return session
}

// serveWith runs the real HTTP server with what register adds on a loopback port, and
// returns a client session connected to its MCP endpoint and the server's base URL.
func serveWith(t *testing.T, register func(*server.Server)) (*sdk.ClientSession, string) {
	t.Helper()
	s := server.New()
	register(s)
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

	base := "http://" + l.Addr().String()
	client := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "v0"}, nil)
	session, err := client.Connect(t.Context(), &sdk.StreamableClientTransport{Endpoint: base + mcp.Path}, nil)
	if err != nil {
		t.Fatalf("connecting the MCP client: %v", err)
	}
	t.Cleanup(func() { _ = session.Close() })
	return session, base
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

// filledStore holds entries written through the release controller (verified);
// TestDirectlyWrittenEntriesAreMarked has the others.
func filledStore() *releaselog.Store {
	store := releaselog.NewStore()
	store.Set("2026-11-22", []releaselog.Entry{
		{Type: "release", Version: "4.18.2", Origin: "release-controller", Date: at("2026-11-22T15:00:00Z"),
			Message: "Accepted", Link: "/releases/ocp/4.18/4.18.2", Verified: true},
		{Type: "promotion", Version: "4.18.1", Origin: "cli", Date: at("2026-11-22T09:30:00Z"),
			Author: "alice", Message: "Promoted to stable", Link: "https://example.com/4.18.1", Verified: true},
		{Type: "rejected", Version: "4.18.0-rc.1", Origin: "release-controller", Date: at("2026-11-22T11:00:00Z"), Verified: true},
	})
	store.Set("2026-11-20", []releaselog.Entry{
		{Type: "hotfix", Version: "4.17.9", Origin: "cli", Date: at("2026-11-20T08:00:00Z"), Author: "ci-bot", ReportedAuthor: "bob", Verified: true},
	})
	return store
}

// An entry written directly into a ReleaseLog (not sealed) is marked in the structured answer
// and in the text, whoever it names as its author.
func TestDirectlyWrittenEntriesAreMarked(t *testing.T) {
	store := releaselog.NewStore()
	store.Set("2026-11-22", []releaselog.Entry{
		{Type: "release", Version: "4.18.3", Origin: "release-controller", Author: "release-controller", Date: at("2026-11-22T10:00:00Z")},
		{Type: "release", Version: "4.18.2", Origin: "release-controller", Author: "release-controller", Date: at("2026-11-22T09:00:00Z"), Verified: true},
	})
	session := serve(t, store, releaselog.Options{})
	var out mcp.ListReleasesOutput
	text, isError := call(t, session, mcp.ToolListReleases, map[string]any{"day": "2026-11-22"}, &out)
	if isError || len(out.Releases) != 2 {
		t.Fatalf("got %+v, error %v: %s", out, isError, text)
	}
	if r := out.Releases[0]; r.Version != "4.18.2" || !r.Verified || r.Author != "release-controller" {
		t.Errorf("the controller's entry = %+v", r)
	}
	if r := out.Releases[1]; r.Version != "4.18.3" || r.Verified || r.Author != "unverified: release-controller" {
		t.Errorf("the entry written directly = %+v", r)
	}
	want := "- 2026-11-22T10:00:00Z release 4.18.3 by unverified: release-controller (written directly into the ReleaseLog, not through the release controller) via release-controller\n"
	if !strings.Contains(text, want) {
		t.Errorf("text lacks %q:\n%s", want, text)
	}
	if strings.Count(text, "written directly") != 1 {
		t.Errorf("text marks the controller's entry too:\n%s", text)
	}
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
	}); !slices.Equal(got, []string{mcp.ToolGetChangelog, mcp.ToolGetPayload, mcp.ToolGetPipeline, mcp.ToolLatestPayload, mcp.ToolListPipelines, mcp.ToolListReleaseDays, mcp.ToolListReleases, mcp.ToolListStreams, mcp.ToolStreamHealth}) {
		t.Fatalf("tools = %v", got)
	}
	for tool, want := range map[string][]any{
		mcp.ToolListStreams: nil, mcp.ToolLatestPayload: {"stream"}, mcp.ToolGetPayload: {"tag"}, mcp.ToolGetChangelog: {"to"},
		mcp.ToolListPipelines: nil, mcp.ToolGetPipeline: {"name"}, mcp.ToolStreamHealth: {"stream"},
	} {
		if required, _ := schemas[tool]["required"].([]any); !slices.Equal(required, want) {
			t.Errorf("%s requires %v, want %v", tool, required, want)
		}
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
	var names []string
	for i, ty := range releaselog.DefaultTypes() {
		names = append(names, ty.Name)
		if i >= len(out.Types) || out.Types[i] != (mcp.EntryType{Name: ty.Name, Color: ty.Color}) {
			t.Errorf("types = %v, want the configured ones %v", out.Types, releaselog.DefaultTypes())
			break
		}
	}
	if len(out.Types) != len(names) {
		t.Errorf("types = %v, want the configured ones %v", out.Types, releaselog.DefaultTypes())
	}
	types := "Entry types: " + strings.Join(names, ", ") + "."
	for _, want := range []string{"2 days with a release log", "kept for 10 days", "2026-11-22: 3 releases", "2026-11-20: 1 release\n", types} {
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
			Author: "alice", Verified: true, Message: "Promoted to stable", Link: "https://example.com/4.18.1"}) {
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
		if !strings.HasPrefix(text, "2026-11-20: 1 release\n- 2026-11-20T08:00:00Z hotfix 4.17.9 by ci-bot (for bob, as the writer reported) via cli\n") {
			t.Errorf("text = %s", text)
		}
		if r := out.Releases[0]; r.Author != "ci-bot" || r.ReportedAuthor != "bob" {
			t.Errorf("author %q, reported author %q", r.Author, r.ReportedAuthor)
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

func newStream(ns, name string) *v1alpha1.ReleaseStream {
	return &v1alpha1.ReleaseStream{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       v1alpha1.ReleaseStreamSpec{PayloadRepository: "registry.example.com/" + ns + "/release"},
	}
}

func newPayload(ns, stream, tag string, phase v1alpha1.PayloadPhase) *v1alpha1.ReleasePayload {
	p := &v1alpha1.ReleasePayload{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: tag, CreationTimestamp: metav1.NewTime(at("2026-11-22T09:30:00Z"))},
		Spec: v1alpha1.ReleasePayloadSpec{
			PayloadCoordinates: v1alpha1.PayloadCoordinates{Stream: stream, Tag: tag},
			Components:         []v1alpha1.PinnedComponent{{Name: "api", Image: "registry.example.com/api@sha256:" + strings.Repeat("a", 64)}},
		},
		Status: v1alpha1.ReleasePayloadStatus{Phase: phase},
	}
	if phase != v1alpha1.PhasePending {
		p.Status.PayloadImage = "registry.example.com/" + ns + "/release@sha256:" + strings.Repeat("b", 64)
		p.Status.ReleaseCreationJobResult = v1alpha1.ReleaseCreationJobResult{Name: tag + "-build", Status: v1alpha1.CreationJobSuccess}
	}
	return p
}

// filledCatalog: ocp/4.18 with four payloads, ocp/4.17 with one, and a stream named 4.18 in
// a second namespace; the tag 4.18.0-rc.0 exists in both namespaces.
func filledCatalog() *catalog.Catalog {
	c := catalog.New()
	c.SetStream(newStream("ocp", "4.18"))
	c.SetStream(newStream("ocp", "4.17"))
	c.SetStream(newStream("okd", "4.18"))
	c.SetStream(newStream("okd", "empty"))
	rejected := newPayload("ocp", "4.18", "4.18.2", v1alpha1.PhaseRejected)
	rejected.Spec.PayloadVerificationConfig.Verifications = []v1alpha1.Verification{
		{Name: "e2e", MaxRetries: 1}, {Name: "upgrade", Type: v1alpha1.Informing, UpgradeFrom: v1alpha1.UpgradeFromPrevious},
	}
	rejected.Status.Conditions = []metav1.Condition{
		{Type: v1alpha1.ConditionPayloadCreated, Status: metav1.ConditionTrue, Reason: "Created", LastTransitionTime: metav1.NewTime(at("2026-11-22T09:35:00Z"))},
		{Type: v1alpha1.ConditionPayloadRejected, Status: metav1.ConditionTrue, Reason: "VerificationFailed",
			Message: "blocking verification e2e failed", LastTransitionTime: metav1.NewTime(at("2026-11-22T10:00:00Z"))},
	}
	started := metav1.NewTime(at("2026-11-22T09:40:00Z"))
	rejected.Status.Verifications = []v1alpha1.VerificationStatus{
		{Name: "e2e", Type: v1alpha1.Blocking, State: v1alpha1.JobFailure, Message: "2 of 2 runs failed", Runs: []v1alpha1.JobRun{
			{Kind: v1alpha1.RunKindJob, Namespace: "ocp", Name: "4.18.2-e2e-1", Attempt: 1, State: v1alpha1.JobFailure,
				URL: "https://ci.example.com/e2e/1", Message: "test failed", StartTime: &started},
			{Kind: v1alpha1.RunKindJob, Namespace: "ocp", Name: "4.18.2-e2e-2", Attempt: 2, State: v1alpha1.JobFailure, URL: "https://ci.example.com/e2e/2"},
		}},
		{Name: "upgrade", Type: v1alpha1.Informing, State: v1alpha1.JobSuccess, UpgradeFrom: v1alpha1.UpgradeFromPrevious, Runs: []v1alpha1.JobRun{
			{Kind: v1alpha1.RunKindProwJob, Namespace: "ci", Name: "abc", Attempt: 1, State: v1alpha1.JobSuccess, UpgradeFrom: "4.18.1", URL: "https://prow.example.com/abc"},
		}},
	}
	// 4.17.9 was audited and signed.
	signed := newPayload("ocp", "4.17", "4.17.9", v1alpha1.PhaseAccepted)
	signed.Status.PayloadImage = "registry.example.com/ocp/release@sha256:" + strings.Repeat("c", 64)
	signed.Status.Conditions = append(signed.Status.Conditions,
		metav1.Condition{Type: v1alpha1.ConditionPayloadAudited, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonAuditPassed, Message: "4 checks passed"},
		metav1.Condition{Type: v1alpha1.ConditionPayloadSigned, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonSigned, Message: v1alpha1.SignedMessage("0123456789ABCDEF", 1)},
		metav1.Condition{Type: v1alpha1.ConditionPayloadSigstoreSigned, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonSigned, Message: sigstoreSignedMessage})
	for _, p := range []*v1alpha1.ReleasePayload{
		newPayload("ocp", "4.18", "4.18.0-rc.0", v1alpha1.PhaseAccepted),
		newPayload("ocp", "4.18", "4.18.1", v1alpha1.PhaseAccepted),
		rejected,
		newPayload("ocp", "4.18", "4.18.3", v1alpha1.PhasePending),
		signed,
		newPayload("okd", "4.18", "4.18.0-rc.0", v1alpha1.PhaseFailed),
	} {
		verdicttest.Earn(p, p.Status.Phase) // the evidence of its phase, as the payload controller records it
		c.SetPayload(p)
	}
	return c
}

func TestListStreams(t *testing.T) {
	session := serveAll(t, releaselog.NewStore(), releaselog.Options{}, filledCatalog(), nil)
	var out mcp.ListStreamsOutput
	text, isError := call(t, session, mcp.ToolListStreams, nil, &out)
	if isError {
		t.Fatalf("error: %s", text)
	}
	var names []string
	for _, s := range out.Streams {
		names = append(names, s.Namespace+"/"+s.Name)
	}
	if want := []string{"ocp/4.18", "ocp/4.17", "okd/4.18", "okd/empty"}; !slices.Equal(names, want) {
		t.Fatalf("streams = %v, want %v", names, want)
	}
	s := out.Streams[0]
	if s.Payloads != 4 || s.Latest != "4.18.3" || s.LatestAccepted != "4.18.1" || s.PayloadRepository != "registry.example.com/ocp/release" ||
		s.Phases["Accepted"] != 2 || s.Phases["Rejected"] != 1 || s.Phases["Pending"] != 1 || s.Link != "/namespaces/ocp/releasestream/4.18" {
		t.Errorf("ocp/4.18 = %+v", s)
	}
	if e := out.Streams[3]; e.Payloads != 0 || len(e.Phases) != 0 || e.Latest != "" {
		t.Errorf("okd/empty = %+v", e)
	}
	for _, want := range []string{
		"4 release streams:\n",
		"- ocp/4.18: 4 payloads (2 Accepted, 1 Rejected, 1 Pending); latest 4.18.3, latest accepted 4.18.1\n",
		"- okd/empty: 0 payloads; latest none, latest accepted none\n",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("text lacks %q:\n%s", want, text)
		}
	}

	empty := serveAll(t, releaselog.NewStore(), releaselog.Options{}, catalog.New(), nil)
	if text, isError := call(t, empty, mcp.ToolListStreams, nil, &out); isError || len(out.Streams) != 0 || text != "There are no release streams.\n" {
		t.Errorf("empty catalog: %+v %v %q", out, isError, text)
	}
}

func TestLatestAndGetPayload(t *testing.T) {
	session := serveAll(t, releaselog.NewStore(), releaselog.Options{}, filledCatalog(), nil)

	var p mcp.Payload
	call := func(t *testing.T, session *sdk.ClientSession, tool string, args map[string]any, out *mcp.Payload) (string, bool) {
		t.Helper()
		if out != nil {
			*out = mcp.Payload{} // omitted fields must not keep the last call's values
		}
		return call(t, session, tool, args, out)
	}
	text, isError := call(t, session, mcp.ToolLatestPayload, map[string]any{"stream": "4.17"}, &p)
	if isError || p.Tag != "4.17.9" || p.Phase != "Accepted" || p.PullSpec != "registry.example.com/ocp/release:4.17.9" {
		t.Errorf("latest accepted of 4.17: %+v, error %v: %s", p, isError, text)
	}
	text, isError = call(t, session, mcp.ToolLatestPayload, map[string]any{"stream": "4.18", "namespace": "ocp"}, &p)
	if isError || p.Tag != "4.18.1" {
		t.Errorf("latest accepted of ocp/4.18: %+v, error %v: %s", p, isError, text)
	}
	text, isError = call(t, session, mcp.ToolLatestPayload, map[string]any{"stream": "4.18", "namespace": "ocp", "phase": "rejected"}, &p)
	if isError || p.Tag != "4.18.2" {
		t.Errorf("latest rejected: %+v, error %v: %s", p, isError, text)
	}
	text, isError = call(t, session, mcp.ToolLatestPayload, map[string]any{"stream": "4.18", "namespace": "ocp", "phase": "Any"}, &p)
	if isError || p.Tag != "4.18.3" || p.Phase != "Pending" || p.Image != "" || p.CreationJob.Status != "Unknown" {
		t.Errorf("latest of any phase: %+v, error %v: %s", p, isError, text)
	}

	text, isError = call(t, session, mcp.ToolGetPayload, map[string]any{"tag": "4.18.2"}, &p)
	if isError {
		t.Fatalf("get_payload: %s", text)
	}
	want := mcp.Payload{
		Namespace: "ocp", Stream: "4.18", Tag: "4.18.2", Phase: "Rejected", PullSpec: "registry.example.com/ocp/release:4.18.2",
		Image: "registry.example.com/ocp/release@sha256:" + strings.Repeat("b", 64), Created: "2026-11-22T09:30:00Z",
		Link:        "/namespaces/ocp/releasestream/4.18/release/4.18.2",
		CreationJob: mcp.CreationJob{Name: "4.18.2-build", Status: "Success"},
		Conditions: []mcp.Condition{
			{Type: "PayloadCreated", Status: "True", Reason: "Created", Since: "2026-11-22T09:35:00Z"},
			{Type: "PayloadRejected", Status: "True", Reason: "VerificationFailed", Message: "blocking verification e2e failed", Since: "2026-11-22T10:00:00Z"},
		},
		Verifications: []mcp.Verification{
			{Name: "e2e", Type: "Blocking", State: "Failure", Message: "2 of 2 runs failed", Runs: []mcp.Run{
				{Attempt: 1, Kind: "Job", Name: "4.18.2-e2e-1", State: "Failure", URL: "https://ci.example.com/e2e/1", Message: "test failed", Started: "2026-11-22T09:40:00Z"},
				{Attempt: 2, Kind: "Job", Name: "4.18.2-e2e-2", State: "Failure", URL: "https://ci.example.com/e2e/2"},
			}},
			{Name: "upgrade", Type: "Informing", State: "Success", UpgradeFrom: "Previous", Runs: []mcp.Run{
				{Attempt: 1, Kind: "ProwJob", Name: "abc", State: "Success", URL: "https://prow.example.com/abc", UpgradeFrom: "4.18.1"},
			}},
		},
		Components: []mcp.Component{{Name: "api", Image: "registry.example.com/api@sha256:" + strings.Repeat("a", 64)}},
		// One tested upgrade into it, no risk, no channels declared.
		UpdateService: updateservice.PayloadView{UpgradeRisks: []updateservice.PayloadRisk{}, TestedUpgrades: 1, Channels: []updateservice.ChannelMembership{}},
	}
	if !reflect.DeepEqual(p, want) {
		t.Errorf("get_payload =\n%+v\nwant\n%+v", p, want)
	}
	for _, line := range []string{
		"4.18.2 (stream ocp/4.18): Rejected\n",
		"- PayloadRejected=True (VerificationFailed): blocking verification e2e failed\n",
		"- e2e (Blocking): Failure: 2 of 2 runs failed\n",
		"  - run 1 Failure <https://ci.example.com/e2e/1>: test failed\n",
		"  - run 1 Success from 4.18.1 <https://prow.example.com/abc>\n",
		"Components (1):\n- api registry.example.com/api@sha256:",
	} {
		if !strings.Contains(text, line) {
			t.Errorf("get_payload text lacks %q:\n%s", line, text)
		}
	}

	// An audited and signed payload says so, with its signature's key and URL.
	text, isError = call(t, session, mcp.ToolGetPayload, map[string]any{"tag": "4.17.9"}, &p)
	wantSig := &mcp.Signature{KeyID: "0123456789ABCDEF", URL: "/signatures/sha256=" + strings.Repeat("c", 64) + "/signature-1"}
	if isError || p.Audit == nil || p.Audit.Result != v1alpha1.ReasonAuditPassed || !reflect.DeepEqual(p.Signature, wantSig) {
		t.Errorf("get_payload of a signed payload: audit %+v, signature %+v, want %+v: %s", p.Audit, p.Signature, wantSig, text)
	}
	if !strings.Contains(text, "Signature: by key 0123456789ABCDEF, at "+wantSig.URL+"\n") {
		t.Errorf("get_payload text lacks the signature:\n%s", text)
	}
	// and its Sigstore signature beside it, with the cosign command that checks it.
	image := "registry.example.com/ocp/release@sha256:" + strings.Repeat("c", 64)
	wantSigstore := &mcp.SigstoreSignature{KeyID: sigstoreKeyID, Attached: sigstoreSignedMessage, PublicKey: "/signatures/cosign.pub",
		Verify: "cosign verify --key cosign.pub --insecure-ignore-tlog=true " + image}
	if !reflect.DeepEqual(p.SigstoreSignature, wantSigstore) {
		t.Errorf("get_payload of a Sigstore-signed payload: %+v, want %+v", p.SigstoreSignature, wantSigstore)
	}
	if want := "Sigstore signature: " + sigstoreSignedMessage + "; public key at /signatures/cosign.pub; check with: " + wantSigstore.Verify + "\n"; !strings.Contains(text, want) {
		t.Errorf("get_payload text lacks %q:\n%s", want, text)
	}
	var unsigned mcp.Payload
	if _, isError = call(t, session, mcp.ToolGetPayload, map[string]any{"tag": "4.18.1"}, &unsigned); isError || unsigned.SigstoreSignature != nil {
		t.Errorf("get_payload of a payload without Sigstore signatures: %+v", unsigned)
	}

	// The tag in two namespaces: the namespace, or the stream with its namespace, picks one.
	if _, isError = call(t, session, mcp.ToolGetPayload, map[string]any{"tag": "4.18.0-rc.0", "namespace": "okd"}, &p); isError || p.Phase != "Failed" {
		t.Errorf("okd 4.18.0-rc.0: %+v", p)
	}
	if _, isError = call(t, session, mcp.ToolGetPayload, map[string]any{"tag": "4.18.0-rc.0", "stream": "4.18", "namespace": "ocp"}, &p); isError || p.Phase != "Accepted" {
		t.Errorf("ocp 4.18.0-rc.0: %+v", p)
	}

	for _, tt := range []struct {
		name, tool string
		args       map[string]any
		want       string
	}{
		{"no stream", mcp.ToolLatestPayload, map[string]any{}, "stream"},
		{"unknown stream", mcp.ToolLatestPayload, map[string]any{"stream": "5.0"}, `no release stream "5.0"; call list_streams`},
		{"ambiguous stream", mcp.ToolLatestPayload, map[string]any{"stream": "4.18"}, `release stream "4.18" exists in namespaces ocp, okd: give namespace`},
		{"bad phase", mcp.ToolLatestPayload, map[string]any{"stream": "4.17", "phase": "Done"}, "phase must be Accepted, Rejected, Failed, Ready, Pending or Any"},
		{"no payload in the phase", mcp.ToolLatestPayload, map[string]any{"stream": "4.17", "phase": "Rejected"}, "release stream ocp/4.17 has no Rejected payload (it holds 1 Accepted)"},
		{"empty stream", mcp.ToolLatestPayload, map[string]any{"stream": "empty", "phase": "any"}, "release stream okd/empty has no payload (it holds no payloads)"},
		{"unknown tag", mcp.ToolGetPayload, map[string]any{"tag": "9.9.9"}, `no payload "9.9.9"; call list_streams`},
		{"ambiguous tag", mcp.ToolGetPayload, map[string]any{"tag": "4.18.0-rc.0"}, `payload "4.18.0-rc.0" exists in namespaces ocp, okd: give namespace`},
		{"tag not in the stream", mcp.ToolGetPayload, map[string]any{"tag": "4.17.9", "stream": "4.18", "namespace": "ocp"}, `release stream ocp/4.18 has no payload "4.17.9"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			text, isError := call(t, session, tt.tool, tt.args, nil)
			if !isError || !strings.Contains(text, tt.want) {
				t.Errorf("isError %v, text %q; want a tool error containing %q", isError, text, tt.want)
			}
		})
	}
}

// fakeChangeLogs answers every pair with a changelog naming it, and counts the calls.
type fakeChangeLogs struct {
	mu    sync.Mutex
	pairs []string
}

func (f *fakeChangeLogs) Cached(from, to *v1alpha1.ReleasePayload) (*changelog.ChangeLog, bool) {
	return nil, false
}

func (f *fakeChangeLogs) ChangeLog(_ context.Context, from, to *v1alpha1.ReleasePayload) (*changelog.ChangeLog, error) {
	f.mu.Lock()
	f.pairs = append(f.pairs, from.Name+".."+to.Name)
	f.mu.Unlock()
	for _, p := range []*v1alpha1.ReleasePayload{from, to} {
		if p.Status.PayloadImage == "" {
			return nil, &changelog.NoImageError{Payload: p.Name}
		}
	}
	return &changelog.ChangeLog{
		From: changelog.ReleaseInfo{Name: from.Name, Digest: "sha256:from", Created: at("2026-11-21T09:30:00Z")},
		To:   changelog.ReleaseInfo{Name: to.Name, Digest: "sha256:to", Created: at("2026-11-22T09:30:00Z")},
		UpdatedImages: []changelog.ImageChange{{
			Name: "api", Source: "https://github.com/example/api", Revision: strings.Repeat("c", 40), FromRevision: strings.Repeat("d", 40),
			Commits: []changelog.Commit{{SHA: strings.Repeat("e", 40), Subject: "Merge pull request #12 from a/b", Title: "Add the feature",
				PullRequest: 12, PullURL: "https://github.com/example/api/pull/12", Merge: true, Issues: []string{"ABC-1"}, Time: at("2026-11-22T08:00:00Z")}},
		}},
		NewImages: []changelog.ImageChange{{Name: "web", Source: "https://github.com/example/web"}},
	}, nil
}

func TestGetChangelog(t *testing.T) {
	fake := &fakeChangeLogs{}
	session := serveAll(t, releaselog.NewStore(), releaselog.Options{}, filledCatalog(), fake)

	var out changelog.JSONChangeLog
	text, isError := call(t, session, mcp.ToolGetChangelog, map[string]any{"from": "4.17.9", "to": "4.18.1"}, &out)
	if isError {
		t.Fatalf("get_changelog: %s", text)
	}
	if out.From.Name != "4.17.9" || out.To.Name != "4.18.1" || len(out.UpdatedImages) != 1 || len(out.NewImages) != 1 {
		t.Fatalf("changelog = %+v", out)
	}
	api := out.UpdatedImages[0]
	if api.Name != "api" || api.Path != "https://github.com/example/api" || len(api.Commits) != 1 ||
		api.Commits[0].Subject != "Add the feature" || api.Commits[0].PullID != 12 ||
		api.Commits[0].PullURL != "https://github.com/example/api/pull/12" || api.FullChangeLog == "" {
		t.Errorf("updated image = %+v", api)
	}
	// The text is the same JSON, for clients that ignore structured content.
	var fromText changelog.JSONChangeLog
	if err := json.Unmarshal([]byte(text), &fromText); err != nil || !reflect.DeepEqual(fromText, out) {
		t.Errorf("text is not the changelog JSON (%v):\n%s", err, text)
	}

	// Without from: the newest older Accepted payload of the stream (4.18.0-rc.0 is older).
	if text, isError := call(t, session, mcp.ToolGetChangelog, map[string]any{"to": "4.18.2", "namespace": "ocp"}, nil); isError {
		t.Errorf("default from: %s", text)
	}
	if want := []string{"4.17.9..4.18.1", "4.18.1..4.18.2"}; !slices.Equal(fake.pairs[:2], want) {
		t.Errorf("pairs = %v, want %v", fake.pairs, want)
	}

	for _, tt := range []struct {
		name string
		args map[string]any
		want string
	}{
		{"oldest payload", map[string]any{"to": "4.17.9"}, "payload 4.17.9 is the oldest of stream ocp/4.17: give from"},
		{"unknown to", map[string]any{"to": "9.9.9"}, `to: no payload "9.9.9"`},
		{"unknown from", map[string]any{"from": "0.0.1", "to": "4.18.1"}, `from: no payload "0.0.1"`},
		{"ambiguous to", map[string]any{"to": "4.18.0-rc.0"}, "to: payload \"4.18.0-rc.0\" exists in namespaces ocp, okd: give namespace"},
		{"payload without an image", map[string]any{"from": "4.18.1", "to": "4.18.3"}, "changelog from 4.18.1 to 4.18.3: payload 4.18.3 has no image yet"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			text, isError := call(t, session, mcp.ToolGetChangelog, tt.args, nil)
			if !isError || !strings.Contains(text, tt.want) {
				t.Errorf("isError %v, text %q; want a tool error containing %q", isError, text, tt.want)
			}
		})
	}

	// A server without changelogs says so.
	none := serveAll(t, releaselog.NewStore(), releaselog.Options{}, filledCatalog(), nil)
	text, isError = call(t, none, mcp.ToolGetChangelog, map[string]any{"from": "4.17.9", "to": "4.18.1"}, nil)
	if !isError || !strings.Contains(text, "changelogs are not available on this server") {
		t.Errorf("without changelogs: isError %v, %q", isError, text)
	}
}

// The PayloadSigstoreSigned message of the signed payload 4.17.9, and its key.
const (
	sigstoreKeyID         = "sha256:5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e"
	sigstoreSignedMessage = "signed by " + sigstoreKeyID + ": signature and 3 attestations (slsaprovenance1, test-result ×1, verification-summary)"
)
