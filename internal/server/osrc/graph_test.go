package osrc_test

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/server/catalog"
	"github.com/release-controller/release-controller/internal/server/osrc"
	"github.com/release-controller/release-controller/internal/updateservice"
	"github.com/release-controller/release-controller/internal/upgradegraph"
	"github.com/release-controller/release-controller/internal/verdict/verdicttest"
)

// cincinnatiGraph is the Cincinnati graph as a client reads it, in the field order the
// server writes it: encoding/json's MarshalIndent of it gives the server's bytes.
type cincinnatiGraph struct {
	Version int `json:"version,omitempty"`
	Nodes   []struct {
		Version  string            `json:"version"`
		Payload  string            `json:"payload"`
		Metadata map[string]string `json:"metadata,omitempty"`
	} `json:"nodes"`
	Edges            [][]int `json:"edges"`
	ConditionalEdges []struct {
		Edges []struct {
			From string `json:"from"`
			To   string `json:"to"`
		} `json:"edges"`
		Risks []struct {
			URL           string `json:"url"`
			Name          string `json:"name"`
			Message       string `json:"message"`
			MatchingRules []struct {
				Type   string `json:"type"`
				PromQL *struct {
					PromQL string `json:"promql"`
				} `json:"promql,omitempty"`
			} `json:"matchingRules"`
		} `json:"risks"`
	} `json:"conditionalEdges,omitempty"`
}

const (
	publicURL = "https://release.example.com"
	// promQL carries characters encoding/json escapes.
	promQL = `topk(1, cluster_infrastructure_provider{type=~"AWS|GCP"}) or 0 * group(cluster_version{version!~"4\\.18\\.0"}) > 0 && true`
)

// t0 is the fixture's now.
var t0 = time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)

func updDigest(tag string) string {
	return fmt.Sprintf("sha256:%x", sha256.Sum256([]byte(tag)))
}

// updatePayload adds an Accepted payload of s whose PayloadAccepted condition changed at
// accepted (what channel membership reads), known by digest.
func updatePayload(cat *catalog.Catalog, s *v1alpha1.ReleaseStream, tag string, phase v1alpha1.PayloadPhase, accepted time.Time, change func(*v1alpha1.ReleasePayload)) {
	p := newPayload(s, tag, phase)
	p.Status.PayloadImage = s.Spec.PayloadRepository + "@" + updDigest(tag)
	verdicttest.Earn(p, phase)
	if c := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ConditionPayloadAccepted); c != nil && phase == v1alpha1.PhaseAccepted {
		c.LastTransitionTime = metav1.NewTime(accepted)
	}
	if change != nil {
		change(p)
	}
	cat.SetPayload(p)
}

func risk(ns, name string, declared time.Time, spec v1alpha1.UpgradeRiskSpec) *v1alpha1.UpgradeRisk {
	if spec.URL == "" {
		spec.URL = "https://issues.example/" + name
	}
	if spec.Message == "" {
		spec.Message = spec.Name + " hits some clusters."
	}
	return &v1alpha1.UpgradeRisk{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, CreationTimestamp: metav1.NewTime(declared)}, Spec: spec}
}

var (
	always    = v1alpha1.MatchingRule{Type: v1alpha1.MatchingRuleAlways}
	promQLHit = v1alpha1.MatchingRule{Type: v1alpha1.MatchingRulePromQL, PromQL: &v1alpha1.PromQLRule{PromQL: promQL}}
)

// updateFixture is the catalog of the update service's tests, at t0:
//
//	ocp/4.18   (OSRC's channels; built for linux/amd64 and linux/arm64)
//	           4.18.4, 4.18.3, 4.18.2 (tombstoned), 4.18.1, 4.18.0, all Accepted; arm64
//	           images of 4.18.4, 4.18.3 and 4.18.0 only. Upgrades, all passed: 0→1, 0→2, 0→3,
//	           1→2, 1→3, 2→3, 2→4, 3→4.
//	           Risks: Blocked (into 4.18.1, no rules), EtcdBug (4.18.[01] → 4.18.3, PromQL then
//	           Always), NetworkRegression (every stream of ocp: 4.18.1 → 4.18.[34], Always),
//	           SlowDrain (4.18.[23] → 4.18.4, PromQL); in namespace other, Elsewhere (into
//	           4.18.3), which is not ocp's.
//	ocp/4.19   declares candidate (^4\.19\.) and fast (fed from candidate after 48 h):
//	           4.19.2 Rejected, 4.19.1 Accepted a day ago, 4.19.0 Accepted 5 days ago; upgrades
//	           4.19.0→4.19.1 and 4.19.1→4.19.2 passed.
//	ocp/4.20   declares the same names (^4\.20\.): 4.20.0 Accepted 3 days ago; upgrades
//	           4.19.0→4.20.0 passed, 4.19.1→4.20.0 failed.
//	ocp/5.0    detects its own risks: 5.0.1, 5.0.0 Accepted; the upgrade 5.0.0→5.0.1 failed
//	           once (a run without a URL) and passed once.
func updateFixture() *catalog.Catalog {
	cat := catalog.New()

	s18 := newStream("ocp", "4.18", "4.18", "registry.example/ocp/release")
	s18.Spec.Platforms = []string{"linux/amd64", "linux/arm64"}
	cat.SetStream(s18)
	for _, tag := range []string{"4.18.4", "4.18.3", "4.18.2", "4.18.1", "4.18.0"} {
		updatePayload(cat, s18, tag, v1alpha1.PhaseAccepted, t0.Add(-10*24*time.Hour), func(p *v1alpha1.ReleasePayload) {
			p.Spec.PayloadCreationConfig.Platforms = s18.Spec.Platforms
			p.Status.PlatformImages = []v1alpha1.PlatformImage{{Platform: "linux/amd64", Image: "registry.example/ocp/release@" + updDigest("amd64-"+tag)}}
			if tag != "4.18.1" && tag != "4.18.2" {
				p.Status.PlatformImages = append(p.Status.PlatformImages, v1alpha1.PlatformImage{Platform: "linux/arm64", Image: "registry.example/ocp/release@" + updDigest("arm64-"+tag)})
			}
			if tag == "4.18.2" {
				p.Annotations = map[string]string{v1alpha1.AnnotationTombstone: "breaks the registry"}
				p.Status.Conditions = append(p.Status.Conditions, metav1.Condition{
					Type: v1alpha1.ConditionPayloadTombstoned, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonTombstoned,
					LastTransitionTime: metav1.NewTime(t0.Add(-24 * time.Hour)),
				})
			}
		})
	}
	var edges18 []upgradegraph.Edge
	for _, e := range [][2]string{{"0", "1"}, {"0", "2"}, {"0", "3"}, {"1", "2"}, {"1", "3"}, {"2", "3"}, {"2", "4"}, {"3", "4"}} {
		edges18 = append(edges18, edge("4.18."+e[0], "4.18."+e[1], "up-"+e[0]+e[1], v1alpha1.JobSuccess, "https://prow.example/up-"+e[0]+e[1]))
	}
	cat.SetGraph(graphMap("ocp", "4.18", edges18...))
	declared := t0.Add(-30 * 24 * time.Hour)
	cat.SetRisk(risk("ocp", "blocked", declared, v1alpha1.UpgradeRiskSpec{Stream: "4.18", To: "4.18.1", Name: "Blocked"}))
	cat.SetRisk(risk("ocp", "etcd-bug", declared, v1alpha1.UpgradeRiskSpec{Stream: "4.18", To: "4.18.3", From: `^4\.18\.[01]$`, Name: "EtcdBug",
		MatchingRules: []v1alpha1.MatchingRule{promQLHit, always}}))
	cat.SetRisk(risk("ocp", "network", declared, v1alpha1.UpgradeRiskSpec{To: `^4\.18\.[34]$`, From: `^4\.18\.1$`, Name: "NetworkRegression",
		MatchingRules: []v1alpha1.MatchingRule{always}}))
	cat.SetRisk(risk("ocp", "slow-drain", declared, v1alpha1.UpgradeRiskSpec{Stream: "4.18", To: "4.18.4", From: `^4\.18\.[23]$`, Name: "SlowDrain",
		Message: `Draining <nodes> & "pods" is slow.`, MatchingRules: []v1alpha1.MatchingRule{promQLHit}}))
	cat.SetRisk(risk("other", "elsewhere", declared, v1alpha1.UpgradeRiskSpec{To: "4.18.3", Name: "Elsewhere"}))

	channels := func(minor string) *v1alpha1.UpdateService {
		return &v1alpha1.UpdateService{Channels: []v1alpha1.UpdateChannel{
			{Name: "candidate", Versions: `^4\.` + minor + `\..*$`},
			{Name: "fast", Feeders: []v1alpha1.ChannelFeeder{{From: "candidate", Delay: metav1.Duration{Duration: 48 * time.Hour}}}},
		}}
	}
	s19 := newStream("ocp", "4.19", "4.19", "registry.example/ocp/release")
	s19.Spec.UpdateService = channels("19")
	cat.SetStream(s19)
	updatePayload(cat, s19, "4.19.2", v1alpha1.PhaseRejected, time.Time{}, nil)
	updatePayload(cat, s19, "4.19.1", v1alpha1.PhaseAccepted, t0.Add(-24*time.Hour), nil)
	updatePayload(cat, s19, "4.19.0", v1alpha1.PhaseAccepted, t0.Add(-5*24*time.Hour), nil)
	cat.SetGraph(graphMap("ocp", "4.19",
		edge("4.19.0", "4.19.1", "u19-01", v1alpha1.JobSuccess, "https://prow.example/u19-01"),
		edge("4.19.1", "4.19.2", "u19-12", v1alpha1.JobSuccess, "https://prow.example/u19-12")))
	s20 := newStream("ocp", "4.20", "4.20", "registry.example/ocp/release")
	s20.Spec.UpdateService = channels("20")
	cat.SetStream(s20)
	updatePayload(cat, s20, "4.20.0", v1alpha1.PhaseAccepted, t0.Add(-3*24*time.Hour), nil)
	cat.SetGraph(graphMap("ocp", "4.20",
		edge("4.19.0", "4.20.0", "u20-0", v1alpha1.JobSuccess, "https://prow.example/u20-0"),
		edge("4.19.1", "4.20.0", "u20-1", v1alpha1.JobFailure, "https://prow.example/u20-1")))

	s5 := newStream("ocp", "5.0", "5.0", "registry.example/ocp/five")
	s5.Spec.UpdateService = &v1alpha1.UpdateService{DetectRisks: true}
	cat.SetStream(s5)
	updatePayload(cat, s5, "5.0.1", v1alpha1.PhaseAccepted, t0.Add(-24*time.Hour), nil)
	updatePayload(cat, s5, "5.0.0", v1alpha1.PhaseAccepted, t0.Add(-48*time.Hour), nil)
	cat.SetGraph(graphMap("ocp", "5.0",
		edge("5.0.0", "5.0.1", "u5-a", v1alpha1.JobFailure, ""),
		edge("5.0.0", "5.0.1", "u5-b", v1alpha1.JobSuccess, "https://prow.example/u5-b")))
	return cat
}

// serveAt serves cat with the public URL and a clock set to t0 that the test moves.
func serveAt(t testing.TB, cat *catalog.Catalog) (string, *clocktesting.FakePassiveClock) {
	clock := clocktesting.NewFakePassiveClock(t0)
	return serve(t, cat, osrc.Options{PublicURL: publicURL, Clock: clock}), clock
}

// getGraph reads a /graph answer with the headers given, checks it against Cincinnati's
// contract (checkContract) and decodes it.
func getGraph(t *testing.T, base, path string, header ...string) (cincinnatiGraph, response) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, base+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Add(header[i], header[i+1])
	}
	got := send(t, req)
	if got.code != http.StatusOK {
		t.Fatalf("GET %s: %d %s", path, got.code, got.body)
	}
	var g cincinnatiGraph
	if err := json.Unmarshal([]byte(got.body), &g); err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	checkContract(t, path, g)
	return g, got
}

// checkContract checks what a Cincinnati client relies on: one node per version, edges
// between nodes, conditional edges by versions of nodes of the same answer and never also
// plain edges, every risk with its url, name, message and at least one matching rule, a
// PromQL rule with its query.
func checkContract(t *testing.T, path string, g cincinnatiGraph) {
	t.Helper()
	versions := map[string]int{}
	for i, n := range g.Nodes {
		if _, dup := versions[n.Version]; dup {
			t.Errorf("%s: version %s is two nodes", path, n.Version)
		}
		versions[n.Version] = i
	}
	plain := map[[2]int]bool{}
	for _, e := range g.Edges {
		if len(e) != 2 || e[0] < 0 || e[1] < 0 || e[0] >= len(g.Nodes) || e[1] >= len(g.Nodes) {
			t.Errorf("%s: edge %v is not between nodes", path, e)
			continue
		}
		plain[[2]int{e[0], e[1]}] = true
	}
	for _, c := range g.ConditionalEdges {
		if len(c.Edges) == 0 || len(c.Risks) == 0 {
			t.Errorf("%s: conditional edge without edges or risks: %+v", path, c)
		}
		for _, e := range c.Edges {
			from, okFrom := versions[e.From]
			to, okTo := versions[e.To]
			if !okFrom || !okTo {
				t.Errorf("%s: conditional edge %s → %s names a version that is no node", path, e.From, e.To)
			}
			if plain[[2]int{from, to}] {
				t.Errorf("%s: conditional edge %s → %s is also a plain edge", path, e.From, e.To)
			}
		}
		for _, r := range c.Risks {
			if r.URL == "" || r.Name == "" || r.Message == "" || len(r.MatchingRules) == 0 {
				t.Errorf("%s: risk %+v lacks a field or a rule", path, r)
			}
			for _, m := range r.MatchingRules {
				if (m.Type == "PromQL") != (m.PromQL != nil) || (m.PromQL != nil && m.PromQL.PromQL == "") {
					t.Errorf("%s: risk %s: rule %+v", path, r.Name, m)
				}
			}
		}
	}
}

// graphEdges lists g's plain edges as "from → to".
func graphEdges(g cincinnatiGraph) []string {
	out := []string{}
	for _, e := range g.Edges {
		out = append(out, g.Nodes[e[0]].Version+" → "+g.Nodes[e[1]].Version)
	}
	return out
}

// conditionalEdges lists g's conditional edges as "from → to: Risk, Risk", by group.
func conditionalEdges(g cincinnatiGraph) []string {
	out := []string{}
	for _, c := range g.ConditionalEdges {
		var names []string
		for _, r := range c.Risks {
			names = append(names, r.Name)
		}
		for _, e := range c.Edges {
			out = append(out, e.From+" → "+e.To+": "+strings.Join(names, ", "))
		}
	}
	return out
}

func nodeVersions(g cincinnatiGraph) []string {
	out := []string{}
	for _, n := range g.Nodes {
		out = append(out, n.Version)
	}
	return out
}

func nodeMetadata(g cincinnatiGraph, version string) map[string]string {
	for _, n := range g.Nodes {
		if n.Version == version {
			return n.Metadata
		}
	}
	return nil
}

// TestGraphRisks: risks make edges conditional (by version, out of the plain edges, with their
// rules in the order declared), a risk without rules removes its edges, a tombstoned payload
// keeps its node and its edges out but loses those into it, and a risk of another namespace
// does nothing.
func TestGraphRisks(t *testing.T) {
	base, _ := serveAt(t, updateFixture())
	// Streams 4.19 and 4.20 declare channels, but not the default one: OSRC's rules list
	// their payloads there too.
	g, resp := getGraph(t, base, "/graph")
	if ct := resp.header.Get("Content-Type"); ct != osrc.CincinnatiContentType {
		t.Errorf("Content-Type %q", ct)
	}
	if g.Version != 0 || strings.Contains(resp.body, `"version": 1`) {
		t.Errorf("a client that did not ask for v1 got its version field")
	}
	if got, want := nodeVersions(g), []string{"5.0.1", "5.0.0", "4.20.0", "4.19.2", "4.19.1", "4.19.0", "4.18.4", "4.18.3", "4.18.2", "4.18.1", "4.18.0"}; !slices.Equal(got, want) {
		t.Errorf("nodes %v, want %v", got, want)
	}
	// Into 4.18.1: Blocked removes 4.18.0 → 4.18.1. Into the tombstoned 4.18.2: nothing; out of
	// it: 4.18.2 → 4.18.3 plainly, 4.18.2 → 4.18.4 with SlowDrain.
	if got, want := graphEdges(g), []string{"4.19.0 → 4.20.0", "4.19.0 → 4.19.1", "4.18.2 → 4.18.3"}; !slices.Equal(got, want) {
		t.Errorf("edges %v, want %v", got, want)
	}
	want := []string{
		// Groups by their first edge (in node order): 4.18.3 → 4.18.4 is nodes 3 → 2.
		"5.0.0 → 5.0.1: UpgradeTestFlaky",
		"4.18.3 → 4.18.4: SlowDrain",
		"4.18.2 → 4.18.4: SlowDrain",
		"4.18.1 → 4.18.3: EtcdBug, NetworkRegression", // exact versions first, then patterns
		"4.18.0 → 4.18.3: EtcdBug",
	}
	if got := conditionalEdges(g); !slices.Equal(got, want) {
		t.Errorf("conditional edges (-want +got):\n%s", cmp.Diff(want, got))
	}
	etcd := g.ConditionalEdges[3].Risks[0]
	if etcd.Name != "EtcdBug" || len(etcd.MatchingRules) != 2 || etcd.MatchingRules[0].Type != "PromQL" ||
		etcd.MatchingRules[0].PromQL.PromQL != promQL || etcd.MatchingRules[1].Type != "Always" || etcd.MatchingRules[1].PromQL != nil {
		t.Errorf("EtcdBug's rules are not PromQL then Always as declared: %+v", etcd)
	}
	if etcd.URL != "https://issues.example/etcd-bug" || etcd.Message != "EtcdBug hits some clusters." {
		t.Errorf("EtcdBug: %+v", etcd)
	}
	flaky := g.ConditionalEdges[0].Risks[0]
	if flaky.URL != publicURL+"/namespaces/ocp/releasestream/5.0/release/5.0.1" || flaky.MatchingRules[0].Type != "Always" {
		t.Errorf("the detected risk of a run without a URL links to the payload's page: %+v", flaky)
	}
	if got, want := nodeMetadata(g, "4.18.2"), map[string]string{
		"io.openshift.upgrades.graph.previous.remove_regex": ".*",
		"io.openshift.upgrades.graph.release.manifestref":   updDigest("4.18.2"),
		"url": publicURL + "/namespaces/ocp/releasestream/4.18/release/4.18.2",
	}; !cmp.Equal(got, want) {
		t.Errorf("tombstoned node's metadata (-want +got):\n%s", cmp.Diff(want, got))
	}

	// One group's shape, byte for byte.
	if !strings.Contains(resp.body, lines(
		`    {`,
		`      "edges": [`,
		`        {`,
		`          "from": "4.18.3",`,
		`          "to": "4.18.4"`,
		`        },`,
		`        {`,
		`          "from": "4.18.2",`,
		`          "to": "4.18.4"`,
		`        }`,
		`      ],`,
		`      "risks": [`,
		`        {`,
		`          "url": "https://issues.example/slow-drain",`,
		`          "name": "SlowDrain",`,
		`          "message": "Draining \u003cnodes\u003e \u0026 \"pods\" is slow.",`,
		`          "matchingRules": [`,
		`            {`,
		`              "type": "PromQL",`,
		`              "promql": {`,
		`                "promql": "topk(1, cluster_infrastructure_provider{type=~\"AWS|GCP\"}) or 0 * group(cluster_version{version!~\"4\\\\.18\\\\.0\"}) \u003e 0 \u0026\u0026 true"`,
		`              }`,
		`            }`,
		`          ]`,
		`        }`,
		`      ]`,
		`    },`)) {
		t.Errorf("SlowDrain's conditional edge is not in the shape Cincinnati serves:\n%s", resp.body)
	}

	// prerelease keeps every upgrade, the same risks apply.
	g, _ = getGraph(t, base, "/graph?channel=prerelease-4.18")
	if got, want := graphEdges(g), []string{"4.18.2 → 4.18.3"}; !slices.Equal(got, want) {
		t.Errorf("prerelease-4.18 edges %v, want %v", got, want)
	}
	if got := conditionalEdges(g); !slices.Equal(got, want[1:]) {
		t.Errorf("prerelease-4.18 conditional edges (-want +got):\n%s", cmp.Diff(want[1:], got))
	}
}

// TestGraphArchRisks: an architecture's view renumbers its nodes, and its conditional edges
// name only versions of its nodes.
func TestGraphArchRisks(t *testing.T) {
	base, _ := serveAt(t, updateFixture())
	// 5.0 is built as one image, which every architecture runs.
	g, _ := getGraph(t, base, "/graph?arch=arm64&channel=stable-4.18")
	if got, want := nodeVersions(g), []string{"5.0.1", "5.0.0", "4.20.0", "4.19.2", "4.19.1", "4.19.0", "4.18.4", "4.18.3", "4.18.0"}; !slices.Equal(got, want) {
		t.Errorf("arm64 nodes %v, want %v", got, want)
	}
	if got := graphEdges(g); len(got) != 0 {
		t.Errorf("arm64 edges %v, want none", got)
	}
	if got, want := conditionalEdges(g), []string{"4.18.3 → 4.18.4: SlowDrain", "4.18.0 → 4.18.3: EtcdBug"}; !slices.Equal(got, want) {
		t.Errorf("arm64 conditional edges (-want +got):\n%s", cmp.Diff(want, got))
	}
	n4183 := g.Nodes[slices.Index(nodeVersions(g), "4.18.3")]
	if got, want := n4183.Payload, "registry.example/ocp/release@"+updDigest("arm64-4.18.3"); got != want {
		t.Errorf("arm64 payload %s, want %s", got, want)
	}
	if got := n4183.Metadata["io.openshift.upgrades.graph.release.manifestref"]; got != updDigest("arm64-4.18.3") {
		t.Errorf("arm64 manifestref %s: not the image served", got)
	}

	g, _ = getGraph(t, base, "/graph?arch=amd64&channel=stable-4.18")
	if got, want := nodeVersions(g), []string{"5.0.1", "5.0.0", "4.20.0", "4.19.2", "4.19.1", "4.19.0", "4.18.4", "4.18.3", "4.18.2", "4.18.1", "4.18.0"}; !slices.Equal(got, want) {
		t.Errorf("amd64 nodes %v, want %v", got, want)
	}
	if got, want := graphEdges(g), []string{"4.18.2 → 4.18.3"}; !slices.Equal(got, want) {
		t.Errorf("amd64 edges %v, want %v", got, want)
	}
	if len(g.ConditionalEdges) != 3 {
		t.Errorf("amd64: %d conditional groups, want 3: %v", len(g.ConditionalEdges), conditionalEdges(g))
	}
	g, _ = getGraph(t, base, "/graph?arch=multi")
	if got, want := nodeVersions(g), []string{"4.18.4", "4.18.3", "4.18.2", "4.18.1", "4.18.0"}; !slices.Equal(got, want) {
		t.Errorf("multi nodes %v, want %v", got, want)
	}
}

// TestGraphDeclaredChannels: a declared channel's nodes are its members now, across the
// streams declaring it; its edges the upgrades that passed into an Accepted payload between
// members. A feeder promotes after its delay, by the server's clock, with no change of the
// catalog: the answer kept for the channel expires then.
func TestGraphDeclaredChannels(t *testing.T) {
	base, clock := serveAt(t, updateFixture())
	g, _ := getGraph(t, base, "/graph?channel=candidate")
	if got, want := nodeVersions(g), []string{"4.20.0", "4.19.1", "4.19.0"}; !slices.Equal(got, want) {
		t.Errorf("candidate nodes %v, want %v", got, want)
	}
	if got, want := graphEdges(g), []string{"4.19.0 → 4.20.0", "4.19.0 → 4.19.1"}; !slices.Equal(got, want) {
		t.Errorf("candidate edges %v, want %v", got, want)
	}
	if got, want := nodeMetadata(g, "4.19.1"), map[string]string{
		"io.openshift.upgrades.graph.release.channels":    "candidate",
		"io.openshift.upgrades.graph.release.manifestref": updDigest("4.19.1"),
		"url": publicURL + "/namespaces/ocp/releasestream/4.19/release/4.19.1",
	}; !cmp.Equal(got, want) {
		t.Errorf("4.19.1's metadata (-want +got):\n%s", cmp.Diff(want, got))
	}
	if got := nodeMetadata(g, "4.19.0")["io.openshift.upgrades.graph.release.channels"]; got != "candidate,fast" {
		t.Errorf("4.19.0's channels %q, want candidate,fast", got)
	}

	// 4.19.1 was accepted a day ago: it joins fast a day from now.
	fast := func() cincinnatiGraph {
		g, _ := getGraph(t, base, "/graph?channel=fast")
		return g
	}
	g = fast()
	if got, want := nodeVersions(g), []string{"4.20.0", "4.19.0"}; !slices.Equal(got, want) {
		t.Errorf("fast now: nodes %v, want %v", got, want)
	}
	if got, want := graphEdges(g), []string{"4.19.0 → 4.20.0"}; !slices.Equal(got, want) {
		t.Errorf("fast now: edges %v, want %v", got, want)
	}
	clock.SetTime(t0.Add(24*time.Hour - time.Second))
	if got, want := nodeVersions(fast()), []string{"4.20.0", "4.19.0"}; !slices.Equal(got, want) {
		t.Errorf("fast a second before the delay ends: nodes %v, want %v", got, want)
	}
	clock.SetTime(t0.Add(24 * time.Hour))
	g = fast()
	if got, want := nodeVersions(g), []string{"4.20.0", "4.19.1", "4.19.0"}; !slices.Equal(got, want) {
		t.Errorf("fast once the delay ended: nodes %v, want %v", got, want)
	}
	if got, want := graphEdges(g), []string{"4.19.0 → 4.20.0", "4.19.0 → 4.19.1"}; !slices.Equal(got, want) {
		t.Errorf("fast once the delay ended: edges %v, want %v", got, want)
	}
	if got := nodeMetadata(g, "4.19.1")["io.openshift.upgrades.graph.release.channels"]; got != "candidate,fast" {
		t.Errorf("4.19.1's channels once promoted: %q", got)
	}

	// A name a stream does not declare keeps OSRC's rules for it too: stable and the default
	// list every payload, as OSRC does, whatever channels the stream declares.
	for _, channel := range []string{"stable", ""} {
		g, _ = getGraph(t, base, "/graph?channel="+channel)
		if got := nodeVersions(g); !slices.Contains(got, "4.19.1") || !slices.Contains(got, "4.20.0") {
			t.Errorf("channel %q lists %v: want the declaring stream's payloads by OSRC's rules", channel, got)
		}
	}
	check(t, base, []exchange{
		{name: "unknown channel lists the declared ones", path: "/graph?channel=beta", code: 400, body: text(
			"Unsupported ?channel, must be '', 'prerelease', 'prerelease-*', 'nightly', 'nightly-*', 'stable', or 'stable-*; channels the streams declare: candidate, fast")},
	})
}

// TestGraphChannelListBounded: the error of an unknown channel names at most 20 declared
// channels, and how many more there are.
func TestGraphChannelListBounded(t *testing.T) {
	cat := catalog.New()
	s := newStream("ocp", "many", "1.0", "registry.example/ocp/many")
	s.Spec.UpdateService = &v1alpha1.UpdateService{}
	var names []string
	for i := range 25 {
		name := fmt.Sprintf("c%02d", i)
		names = append(names, name)
		s.Spec.UpdateService.Channels = append(s.Spec.UpdateService.Channels, v1alpha1.UpdateChannel{Name: name, Versions: "^1\\..*$"})
	}
	cat.SetStream(s)
	base := serve(t, cat, osrc.Options{})
	check(t, base, []exchange{{name: "bounded", path: "/graph?channel=nope", code: 400, body: text(
		"Unsupported ?channel, must be '', 'prerelease', 'prerelease-*', 'nightly', 'nightly-*', 'stable', or 'stable-*; channels the streams declare: " +
			strings.Join(names[:20], ", ") + " and 5 more")}})
}

// TestGraphV1: a client that accepts Cincinnati's v1 media type gets it, with "version": 1
// first; any other gets today's media type and shape.
func TestGraphV1(t *testing.T) {
	base, _ := serveAt(t, updateFixture())
	_, plain := getGraph(t, base, "/graph?channel=candidate")
	for _, accept := range []string{
		"application/vnd.redhat.cincinnati.v1+json",
		"application/json;q=0.5, application/vnd.redhat.cincinnati.v1+json",
		"Application/Vnd.Redhat.Cincinnati.V1+JSON; q=0.9",
	} {
		g, got := getGraph(t, base, "/graph?channel=candidate", "Accept", accept)
		if ct := got.header.Get("Content-Type"); ct != osrc.CincinnatiV1ContentType {
			t.Errorf("Accept %q: Content-Type %q", accept, ct)
		}
		if g.Version != 1 || !strings.HasPrefix(got.body, "{\n  \"version\": 1,\n  \"nodes\": [\n") {
			t.Errorf("Accept %q: body does not start with the version: %.60q", accept, got.body)
		}
		if want := "{\n  \"version\": 1," + plain.body[1:]; got.body != want {
			t.Errorf("Accept %q: not the same graph (-want +got):\n%s", accept, cmp.Diff(want, got.body))
		}
		if !slices.Contains(got.header.Values("Vary"), "Accept") {
			t.Errorf("Accept %q: no Vary: Accept", accept)
		}
	}
	for _, accept := range []string{"application/json", "*/*", "application/vnd.redhat.cincinnati.v1+json;q=0", "application/vnd.redhat.cincinnati.v2+json"} {
		_, got := getGraph(t, base, "/graph?channel=candidate", "Accept", accept)
		if ct := got.header.Get("Content-Type"); ct != osrc.CincinnatiContentType || got.body != plain.body {
			t.Errorf("Accept %q: %q, body changed: %v", accept, ct, got.body != plain.body)
		}
	}
}

// TestGraphRiskChange: a risk declared, changed or deleted is in the next answer (the
// catalog's change reaches the cache).
func TestGraphRiskChange(t *testing.T) {
	cat := updateFixture()
	base, _ := serveAt(t, cat)
	if g, _ := getGraph(t, base, "/graph?channel=candidate"); len(g.ConditionalEdges) != 0 {
		t.Fatalf("conditional edges before any risk: %v", conditionalEdges(g))
	}
	r := risk("ocp", "new", t0, v1alpha1.UpgradeRiskSpec{Stream: "4.20", To: "4.20.0", Name: "NewRisk", MatchingRules: []v1alpha1.MatchingRule{always}})
	cat.SetRisk(r)
	g, _ := getGraph(t, base, "/graph?channel=candidate")
	if got, want := conditionalEdges(g), []string{"4.19.0 → 4.20.0: NewRisk"}; !slices.Equal(got, want) {
		t.Errorf("after the risk: %v, want %v", got, want)
	}
	if got, want := graphEdges(g), []string{"4.19.0 → 4.19.1"}; !slices.Equal(got, want) {
		t.Errorf("after the risk: edges %v, want %v", got, want)
	}
	cat.DeleteRisk(r)
	if g, _ := getGraph(t, base, "/graph?channel=candidate"); len(g.ConditionalEdges) != 0 || len(g.Edges) != 2 {
		t.Errorf("after deleting the risk: %v %v", graphEdges(g), conditionalEdges(g))
	}
}

// TestGraphOneNodePerVersion: a version found in two streams is one node, the first in graph
// order, and the upgrades of the other are left out rather than joined to it.
func TestGraphOneNodePerVersion(t *testing.T) {
	cat := catalog.New()
	for _, ns := range []string{"a", "b"} {
		s := newStream(ns, "dup", "1.0", "registry.example/"+ns+"/dup")
		cat.SetStream(s)
		setPayload(cat, newPayload(s, "1.0.1", v1alpha1.PhaseAccepted))
		setPayload(cat, newPayload(s, "1.0.0", v1alpha1.PhaseAccepted))
		cat.SetGraph(graphMap(ns, "dup", edge("1.0.0", "1.0.1", "u-"+ns, v1alpha1.JobSuccess, "https://prow.example/u-"+ns)))
	}
	base := serve(t, cat, osrc.Options{})
	g, _ := getGraph(t, base, "/graph")
	if got, want := nodeVersions(g), []string{"1.0.1", "1.0.0"}; !slices.Equal(got, want) {
		t.Errorf("nodes %v, want %v", got, want)
	}
	if g.Nodes[0].Payload != "registry.example/a/dup:1.0.1" {
		t.Errorf("the node is not the first stream's: %s", g.Nodes[0].Payload)
	}
	if got, want := graphEdges(g), []string{"1.0.0 → 1.0.1"}; !slices.Equal(got, want) {
		t.Errorf("edges %v, want %v", got, want)
	}
}

func TestParsePublicURL(t *testing.T) {
	for _, c := range []struct{ in, want, err string }{
		{in: "", want: ""},
		{in: "https://release.example.com", want: "https://release.example.com"},
		{in: "http://release.example.com:8080/rc/", want: "http://release.example.com:8080/rc"},
		{in: "release.example.com", err: `--public-url "release.example.com": want an absolute http or https URL without a query, e.g. https://release.example.com`},
		{in: "ftp://release.example.com", err: "want an absolute http or https URL"},
		{in: "https:///path", err: "want an absolute http or https URL"},
		{in: "https://release.example.com/?a=b", err: "want an absolute http or https URL"},
		{in: "https://user@release.example.com", err: "want an absolute http or https URL"},
		{in: "https://release.example.com/%zz", err: "want an absolute http or https URL"},
	} {
		got, err := osrc.ParsePublicURL(c.in)
		switch {
		case c.err == "" && (err != nil || got != c.want):
			t.Errorf("ParsePublicURL(%q) = %q, %v; want %q", c.in, got, err, c.want)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("ParsePublicURL(%q) = %q, %v; want an error with %q", c.in, got, err, c.err)
		}
	}
}

// TestReleaseInfoUpdateService: a payload's release info says what /graph does with it — the
// risks into it, its channels and pending promotions, its tombstone — and leaves the field out
// when there is nothing to say, so OSRC's clients see OSRC's shape.
func TestReleaseInfoUpdateService(t *testing.T) {
	base, _ := serveAt(t, updateFixture())
	info := func(stream, tag string) (map[string]json.RawMessage, *updateservice.PayloadView) {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, base+"/api/v1/releasestream/"+stream+"/release/"+tag, nil)
		if err != nil {
			t.Fatal(err)
		}
		got := send(t, req)
		if got.code != http.StatusOK {
			t.Fatalf("release info of %s: %d %s", tag, got.code, got.body)
		}
		var fields map[string]json.RawMessage
		if err := json.Unmarshal([]byte(got.body), &fields); err != nil {
			t.Fatal(err)
		}
		raw, ok := fields["updateService"]
		if !ok {
			return fields, nil
		}
		var v updateservice.PayloadView
		if err := json.Unmarshal(raw, &v); err != nil {
			t.Fatal(err)
		}
		return fields, &v
	}

	_, v := info("4.18", "4.18.3")
	if v == nil {
		t.Fatal("4.18.3, which risks lead into, has no updateService")
	}
	var names []string
	for _, r := range v.UpgradeRisks {
		names = append(names, r.Name)
		if r.DeclaredBy == "" || r.URL == "" || len(r.MatchingRules) == 0 {
			t.Errorf("risk %s is missing its source, url or rules: %+v", r.Name, r)
		}
	}
	if want := []string{"EtcdBug", "NetworkRegression"}; !slices.Equal(names, want) {
		t.Errorf("risks into 4.18.3: %v, want %v", names, want)
	}

	if _, v := info("4.18", "4.18.2"); v == nil || v.Tombstone == nil {
		t.Errorf("the tombstoned 4.18.2's release info says nothing of it: %+v", v)
	}
	if _, v := info("4.19", "4.19.1"); v == nil || len(v.Channels) != 1 || v.Channels[0].Name != "candidate" ||
		len(v.PendingPromotions) != 1 || v.PendingPromotions[0].Channel != "fast" {
		t.Errorf("4.19.1: want candidate now and fast pending, got %+v", v)
	}
	if fields, v := info("4.18", "4.18.0"); v != nil {
		t.Errorf("4.18.0, with nothing to say, has updateService %+v (fields %v)", v, slices.Collect(maps.Keys(fields)))
	}
}
