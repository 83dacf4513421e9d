package catalog

import (
	"encoding/json"
	"errors"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/upgradegraph"
	"github.com/release-controller/release-controller/internal/verdict/verdicttest"
)

func newStream(ns, name string) *v1alpha1.ReleaseStream {
	return &v1alpha1.ReleaseStream{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       v1alpha1.ReleaseStreamSpec{PayloadRepository: "registry.example/release"},
	}
}

func newPayload(ns, streamName, tag string, phase v1alpha1.PayloadPhase, runs ...v1alpha1.JobRun) *v1alpha1.ReleasePayload {
	p := &v1alpha1.ReleasePayload{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: tag},
		Spec:       v1alpha1.ReleasePayloadSpec{PayloadCoordinates: v1alpha1.PayloadCoordinates{Stream: streamName, Tag: tag}},
		Status:     v1alpha1.ReleasePayloadStatus{Phase: phase},
	}
	if len(runs) > 0 {
		p.Status.Verifications = []v1alpha1.VerificationStatus{{Name: "upgrade", Type: v1alpha1.Blocking, Runs: runs}}
	}
	verdicttest.Earn(p, phase)
	return p
}

func tags(s *Stream) []string {
	var out []string
	for _, e := range s.Entries {
		out = append(out, e.Tag())
	}
	return out
}

func TestEntriesAreInSemverOrder(t *testing.T) {
	c := New()
	// Payloads may arrive before their stream.
	for _, tag := range []string{"4.1.0-0.nightly-2026-01-02-000000", "not-semver-a", "4.10.0-0.nightly-2026-01-01-000000", "not-semver-b", "4.2.0"} {
		c.SetPayload(newPayload("ns", "s", tag, v1alpha1.PhaseAccepted))
	}
	if _, err := c.Stream("s"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("a stream without its object: got %v, want ErrNotFound", err)
	}
	c.SetStream(newStream("ns", "s"))
	s, err := c.Stream("s")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"4.10.0-0.nightly-2026-01-01-000000", "4.2.0", "4.1.0-0.nightly-2026-01-02-000000", "not-semver-b", "not-semver-a"}
	if got := tags(s); !slices.Equal(got, want) {
		t.Fatalf("order: got %v, want %v", got, want)
	}
	// An update replaces in place; the old snapshot does not change.
	c.SetPayload(newPayload("ns", "s", "4.2.0", v1alpha1.PhaseRejected))
	c.DeletePayload(newPayload("ns", "s", "not-semver-b", ""))
	if e, _ := s.Entry("4.2.0"); e.Phase() != v1alpha1.PhaseAccepted || len(s.Entries) != 5 {
		t.Fatalf("a published snapshot changed: %v %v", e.Phase(), tags(s))
	}
	s2, _ := c.Stream("s")
	if e, _ := s2.Entry("4.2.0"); e.Phase() != v1alpha1.PhaseRejected {
		t.Fatalf("new snapshot: phase %v", e.Phase())
	}
	if got, want := tags(s2), []string{"4.10.0-0.nightly-2026-01-01-000000", "4.2.0", "4.1.0-0.nightly-2026-01-02-000000", "not-semver-a"}; !slices.Equal(got, want) {
		t.Fatalf("after delete: got %v, want %v", got, want)
	}
	if s2.Index("not-semver-b") != -1 {
		t.Fatal("a deleted tag is still indexed")
	}
	if got := s2.PullSpec(s2.Entries[0]); got != "registry.example/release:4.10.0-0.nightly-2026-01-01-000000" {
		t.Fatalf("pull spec %q", got)
	}
}

func TestStreamNamesAcrossNamespaces(t *testing.T) {
	c := New()
	c.SetStream(newStream("b", "4-stable"))
	c.SetStream(newStream("a", "4-stable"))
	c.SetStream(newStream("a", "other"))
	var amb *AmbiguousError
	if _, err := c.Stream("4-stable"); !errors.As(err, &amb) || !slices.Equal(amb.Namespaces, []string{"a", "b"}) {
		t.Fatalf("got %v, want an AmbiguousError naming a and b", err)
	}
	if s, err := c.StreamIn("b", "4-stable"); err != nil || s.Namespace != "b" {
		t.Fatalf("StreamIn: %v %v", s, err)
	}
	if s, err := c.Stream("other"); err != nil || s.Namespace != "a" {
		t.Fatalf("Stream: %v %v", s, err)
	}
	c.SetPayload(newPayload("a", "other", "1.0.0", v1alpha1.PhaseAccepted))
	if l, err := c.Tag("1.0.0"); err != nil || l.Stream.Name != "other" {
		t.Fatalf("Tag: %v %v", l, err)
	}
	if _, err := c.Tag("2.0.0"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("unknown tag: %v", err)
	}
	c.DeleteStream(newStream("b", "4-stable"))
	if _, err := c.Stream("4-stable"); err != nil {
		t.Fatalf("after deleting one: %v", err)
	}
	var names []string
	for _, s := range c.Streams() {
		names = append(names, s.Namespace+"/"+s.Name)
	}
	if want := []string{"a/4-stable", "a/other"}; !slices.Equal(names, want) {
		t.Fatalf("Streams: %v, want %v", names, want)
	}
}

func TestChangedIsClosedOnEveryChange(t *testing.T) {
	c := New()
	ch := c.Changed()
	c.SetStream(newStream("ns", "s"))
	select {
	case <-ch:
	default:
		t.Fatal("Changed was not closed by SetStream")
	}
	if c.Changed() == ch {
		t.Fatal("Changed did not renew")
	}
}

func TestUpgradesMergeGraphAndRunningRuns(t *testing.T) {
	c := New()
	c.SetStream(newStream("ns", "s"))
	graph := upgradegraph.Graph{Edges: []upgradegraph.Edge{
		{From: "1.0.0", To: "1.1.0", Verification: "upgrade", Run: "r1", State: v1alpha1.JobSuccess, URL: "http://ci/r1"},
		{From: "1.0.0", To: "1.1.0", Verification: "upgrade", Run: "r2", State: v1alpha1.JobFailure, URL: "http://ci/r2"},
		{From: "0.9.0", To: "1.1.0", Verification: "upgrade", Run: "r0", State: v1alpha1.JobSuccess, URL: "http://ci/r0"},
		// Of a payload collected since: still in the graph.
		{From: "0.8.0", To: "0.9.0", Verification: "upgrade", Run: "old", State: v1alpha1.JobFailure},
	}}
	data, _ := json.Marshal(graph)
	c.SetGraph(&corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: upgradegraph.ConfigMapName("s"), Labels: map[string]string{v1alpha1.LabelStream: "s"}},
		Data:       map[string]string{upgradegraph.Key: string(data)},
	})
	c.SetPayload(newPayload("ns", "s", "1.0.0", v1alpha1.PhaseAccepted))
	c.SetPayload(newPayload("ns", "s", "1.1.0", v1alpha1.PhaseAccepted,
		v1alpha1.JobRun{Name: "r1", State: v1alpha1.JobSuccess, UpgradeFrom: "1.0.0", URL: "http://ci/r1"},
		v1alpha1.JobRun{Name: "r3", State: v1alpha1.JobPending, UpgradeFrom: "1.0.0", URL: "http://ci/r3"}))
	s, _ := c.Stream("s")

	into := s.UpgradesInto("1.1.0")
	if len(into) != 2 || into[0].From != "1.0.0" || into[1].From != "0.9.0" {
		t.Fatalf("upgrades into 1.1.0: %+v", into)
	}
	u := into[0]
	if u.Success != 1 || u.Failure != 1 || u.Pending != 1 || u.Total != 3 {
		t.Fatalf("counts of 1.0.0→1.1.0: %+v", u)
	}
	if got := []string{u.Runs[0].Name, u.Runs[1].Name, u.Runs[2].Name}; !slices.Equal(got, []string{"r1", "r2", "r3"}) {
		t.Fatalf("runs by URL: %v", got)
	}
	if out := s.UpgradesOutOf("1.0.0"); len(out) != 1 || out[0].To != "1.1.0" {
		t.Fatalf("upgrades out of 1.0.0: %+v", out)
	}
	var edges [][2]string
	for _, u := range s.Upgrades() {
		edges = append(edges, [2]string{u.From, u.To})
	}
	if want := [][2]string{{"0.8.0", "0.9.0"}, {"0.9.0", "1.1.0"}, {"1.0.0", "1.1.0"}}; !slices.Equal(edges, want) {
		t.Fatalf("edges: %v, want %v", edges, want)
	}
	// Other ConfigMaps are ignored.
	c.SetGraph(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "unrelated", Labels: map[string]string{v1alpha1.LabelStream: "s"}}})
	s, _ = c.Stream("s")
	if len(s.Graph.Edges) != 4 {
		t.Fatalf("an unrelated ConfigMap replaced the graph: %d edges", len(s.Graph.Edges))
	}
}

func TestPrevious(t *testing.T) {
	for _, tc := range []struct {
		name   string
		phases map[string]v1alpha1.PayloadPhase
		tag    string
		want   string
	}{
		{"newest older accepted", map[string]v1alpha1.PayloadPhase{"1.0.0": v1alpha1.PhaseAccepted, "1.1.0": v1alpha1.PhaseRejected, "1.2.0": v1alpha1.PhaseAccepted}, "1.2.0", "1.0.0"},
		{"no older accepted: the newest older", map[string]v1alpha1.PayloadPhase{"1.0.0": v1alpha1.PhaseFailed, "1.1.0": v1alpha1.PhaseRejected, "1.2.0": v1alpha1.PhaseAccepted}, "1.2.0", "1.1.0"},
		{"the oldest has none", map[string]v1alpha1.PayloadPhase{"1.0.0": v1alpha1.PhaseAccepted, "1.1.0": v1alpha1.PhaseAccepted}, "1.0.0", ""},
		{"newer accepted ones do not count", map[string]v1alpha1.PayloadPhase{"1.0.0": v1alpha1.PhaseRejected, "1.1.0": v1alpha1.PhaseRejected, "1.2.0": v1alpha1.PhaseAccepted}, "1.1.0", "1.0.0"},
		{"unknown tag", map[string]v1alpha1.PayloadPhase{"1.0.0": v1alpha1.PhaseAccepted}, "9.9.9", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := New()
			c.SetStream(newStream("ns", "s"))
			for tag, phase := range tc.phases {
				c.SetPayload(newPayload("ns", "s", tag, phase))
			}
			s, _ := c.Stream("s")
			e, ok := s.Previous(tc.tag)
			got := ""
			if ok {
				got = e.Tag()
			}
			if got != tc.want {
				t.Fatalf("Previous(%s) = %q, want %q", tc.tag, got, tc.want)
			}
		})
	}
}

// TestAVerdictWrittenByHandIsNotShown: pages, REST and the MCP server read a payload whose
// status someone edited to Accepted as Ready (its blocking run still goes); it is no upgrade
// source and no candidate.
func TestAVerdictWrittenByHandIsNotShown(t *testing.T) {
	c := New()
	c.SetStream(newStream("ns", "s"))
	c.SetPayload(newPayload("ns", "s", "1.0.0", v1alpha1.PhaseRejected))
	c.SetPayload(verdicttest.HandWritten("ns", "s", "1.1.0", v1alpha1.PhaseAccepted))
	c.SetPayload(newPayload("ns", "s", "1.2.0", v1alpha1.PhaseReady))
	s, _ := c.Stream("s")
	e, ok := s.Entry("1.1.0")
	if !ok || e.Phase() != v1alpha1.PhaseReady {
		t.Fatalf("the hand-written Accepted reads as %s (found %v), want Ready", e.Phase(), ok)
	}
	if prev, ok := s.Previous("1.2.0"); !ok || prev.Tag() != "1.1.0" {
		t.Fatalf("Previous(1.2.0) = %v %v: with no accepted one, the newest older", prev.Tag(), ok)
	}
	if got := s.Candidates(); len(got) != 0 {
		t.Fatalf("candidates: %+v", got)
	}
}

func TestCandidates(t *testing.T) {
	c := New()
	c.SetStream(newStream("ns", "s"))
	c.SetPayload(newPayload("ns", "s", "1.0.0-0.nightly-1", v1alpha1.PhaseAccepted))
	c.SetPayload(newPayload("ns", "s", "1.0.0-0.nightly-2", v1alpha1.PhaseRejected))
	c.SetPayload(newPayload("ns", "s", "not-semver", v1alpha1.PhaseAccepted))
	c.SetPayload(newPayload("ns", "s", "1.0.1-0.nightly-3", v1alpha1.PhaseAccepted,
		v1alpha1.JobRun{Name: "a", State: v1alpha1.JobSuccess, UpgradeFrom: "1.0.0-0.nightly-1"},
		v1alpha1.JobRun{Name: "b", State: v1alpha1.JobSuccess, UpgradeFrom: "1.0.0-0.nightly-2"},
		v1alpha1.JobRun{Name: "c", State: v1alpha1.JobFailure, UpgradeFrom: "1.0.0-0.nightly-2"}))
	s, _ := c.Stream("s")
	got := s.Candidates()
	if len(got) != 2 || got[0].Entry.Tag() != "1.0.1-0.nightly-3" || got[0].Name != "1.0.1" || got[1].Name != "1.0.0" {
		t.Fatalf("candidates: %+v", got)
	}
	if !slices.Equal(got[0].UpgradeFrom, []string{"1.0.0-0.nightly-1"}) {
		t.Fatalf("upgrades above 80%%: %v", got[0].UpgradeFrom)
	}
}
