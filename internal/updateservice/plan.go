package updateservice

import (
	"cmp"
	"slices"
	"strings"

	"github.com/release-controller/release-controller/internal/server/catalog"
)

// Node is what a plan needs of a graph node: the stream it belongs to, its version and
// whether it is tombstoned.
type Node struct {
	Namespace, Stream, Version string
	Tombstoned                 bool
}

// Plan is what the update service does with the edges of one graph.
type Plan struct {
	// Edges are the edges served to every cluster, in the order given.
	Edges [][2]int
	// Conditional are the edges served with risks, grouped by their set of risks; groups
	// ordered by their first edge.
	Conditional []Conditional
	// Blocked counts the edges removed by risks without matching rules; Withdrawn those
	// removed because they lead into a tombstoned node.
	Blocked, Withdrawn int
}

// Conditional is a set of edges that carry the same risks (Cincinnati's conditionalEdges
// entry).
type Conditional struct {
	Edges [][2]int
	Risks []*Risk
}

// PlanEdges sorts the edges of a graph (by node index) into those served plainly, those
// served with risks and those removed: an edge into a tombstoned node is removed, as is one a
// risk without matching rules applies to; one with other risks is conditional. A risk belongs
// to the stream of the edge's target.
func PlanEdges(nodes []Node, edges [][2]int, risks *Index) Plan {
	p := Plan{Edges: make([][2]int, 0, len(edges))}
	groups := map[string]int{}
	for _, e := range edges {
		from, to := nodes[e[0]], nodes[e[1]]
		if to.Tombstoned {
			p.Withdrawn++
			continue
		}
		on := risks.On(to.Namespace, to.Stream, from.Version, to.Version)
		if len(on) == 0 {
			p.Edges = append(p.Edges, e)
			continue
		}
		if slices.ContainsFunc(on, (*Risk).Blocks) {
			p.Blocked++
			continue
		}
		keys := make([]string, len(on))
		for i, r := range on {
			keys[i] = r.Key()
		}
		key := strings.Join(keys, "\x00")
		g, ok := groups[key]
		if !ok {
			g = len(p.Conditional)
			groups[key] = g
			p.Conditional = append(p.Conditional, Conditional{Risks: on})
		}
		p.Conditional[g].Edges = append(p.Conditional[g].Edges, e)
	}
	slices.SortStableFunc(p.Conditional, func(a, b Conditional) int {
		return cmp.Or(cmp.Compare(a.Edges[0][0], b.Edges[0][0]), cmp.Compare(a.Edges[0][1], b.Edges[0][1]))
	})
	return p
}

// RisksOf gathers the risks of one answer: the UpgradeRisks given and those each stream
// detects (Detect), indexed.
func RisksOf(declared []Risk, streams []*catalog.Stream, pageURL func(namespace, stream, tag string) string) *Index {
	all := slices.Clone(declared)
	for _, s := range streams {
		all = append(all, Detect(s, func(tag string) string { return pageURL(s.Namespace, s.Name, tag) })...)
	}
	return NewIndex(all)
}
