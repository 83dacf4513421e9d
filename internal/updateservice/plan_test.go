package updateservice

import (
	"slices"
	"testing"

	"github.com/release-controller/release-controller/api/v1alpha1"
)

func TestPlanEdges(t *testing.T) {
	nodes := []Node{
		{Namespace: "product", Stream: "4.15", Version: "4.14.9"},
		{Namespace: "product", Stream: "4.15", Version: "4.15.1"},
		{Namespace: "product", Stream: "4.15", Version: "4.15.2", Tombstoned: true},
		{Namespace: "product", Stream: "4.15", Version: "4.15.3"},
		{Namespace: "product", Stream: "4.15", Version: "4.15.4"},
		{Namespace: "other", Stream: "4.15", Version: "4.15.3"},
	}
	always := []v1alpha1.MatchingRule{{Type: v1alpha1.MatchingRuleAlways}}
	x := mustIndex(t,
		risk("aws", t0, v1alpha1.UpgradeRiskSpec{Name: "AWSBoot", To: "4.15.1", From: `^4\.14\..*$`, MatchingRules: promql}),
		risk("from-4151", t0, v1alpha1.UpgradeRiskSpec{Name: "Broken", To: "4.15.3", From: `^4\.15\.1$`}),
		risk("everyone", t0, v1alpha1.UpgradeRiskSpec{Name: "Slow", To: "4.15.3", MatchingRules: always}),
	)
	edges := [][2]int{{0, 1}, {0, 2}, {0, 3}, {1, 2}, {1, 3}, {1, 4}, {3, 4}, {4, 5}}
	p := PlanEdges(nodes, edges, x)

	if want := [][2]int{{1, 4}, {3, 4}, {4, 5}}; !slices.Equal(p.Edges, want) {
		t.Errorf("plain edges %v, want %v (a risk of another namespace does not apply)", p.Edges, want)
	}
	if p.Blocked != 1 || p.Withdrawn != 2 {
		t.Errorf("blocked %d, withdrawn %d; want 1 (4.15.1 → 4.15.3) and 2 (into the tombstoned 4.15.2)", p.Blocked, p.Withdrawn)
	}
	type group struct {
		edges [][2]int
		risks []string
	}
	var got []group
	for _, c := range p.Conditional {
		g := group{edges: c.Edges}
		for _, r := range c.Risks {
			g.risks = append(g.risks, r.Name)
		}
		got = append(got, g)
	}
	want := []group{{[][2]int{{0, 1}}, []string{"AWSBoot"}}, {[][2]int{{0, 3}}, []string{"Slow"}}}
	if !slices.EqualFunc(got, want, func(a, b group) bool {
		return slices.Equal(a.edges, b.edges) && slices.Equal(a.risks, b.risks)
	}) {
		t.Errorf("conditional %v, want %v", got, want)
	}
	for _, c := range p.Conditional {
		for _, e := range c.Edges {
			if slices.Contains(p.Edges, e) {
				t.Errorf("edge %v is both conditional and plain", e)
			}
		}
	}
}

func TestEdgesSharingRisksAreOneGroup(t *testing.T) {
	nodes := []Node{{Namespace: "p", Stream: "s", Version: "1.0.0"}, {Namespace: "p", Stream: "s", Version: "1.0.1"}, {Namespace: "p", Stream: "s", Version: "1.1.0"}}
	r := risk("r", t0, v1alpha1.UpgradeRiskSpec{To: "1.1.0", MatchingRules: promql})
	r.Namespace = "p"
	p := PlanEdges(nodes, [][2]int{{0, 2}, {1, 2}}, mustIndex(t, r))
	if len(p.Conditional) != 1 || !slices.Equal(p.Conditional[0].Edges, [][2]int{{0, 2}, {1, 2}}) || len(p.Edges) != 0 {
		t.Errorf("plan %+v: want one group of both edges", p)
	}
}
