package stream

import (
	"cmp"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/release-controller/release-controller/api/v1alpha1"
)

// MaxUpgradeEdges bounds the upgrade graph so its ConfigMap stays far below the 1 MiB object
// limit; the oldest results go first.
const MaxUpgradeEdges = 2000

// UpgradeEdge is the result of one upgrade run.
type UpgradeEdge struct {
	From         string            `json:"from"`
	To           string            `json:"to"`
	Verification string            `json:"verification"`
	Run          string            `json:"run"`
	State        v1alpha1.JobState `json:"state"`
	URL          string            `json:"url,omitempty"`
	Completed    *metav1.Time      `json:"completed,omitempty"`
}

// UpgradeGraph is every upgrade result of a stream. It lives in a ConfigMap of its own, so it
// survives the collection of the payloads it speaks of.
type UpgradeGraph struct {
	Edges []UpgradeEdge `json:"edges"`
}

// RecordUpgrades adds the finished upgrade runs of payloads to graph; changed is false when
// there was nothing new.
func RecordUpgrades(graph UpgradeGraph, payloads []v1alpha1.ReleasePayload) (UpgradeGraph, bool) {
	type key struct{ to, run string }
	index := make(map[key]int, len(graph.Edges))
	edges := slices.Clone(graph.Edges)
	for i, e := range edges {
		index[key{e.To, e.Run}] = i
	}
	changed := false
	for i := range payloads {
		p := &payloads[i]
		for _, v := range p.Status.Verifications {
			for _, r := range v.Runs {
				if r.UpgradeFrom == "" || !r.State.IsTerminal() {
					continue
				}
				edge := UpgradeEdge{From: r.UpgradeFrom, To: p.Name, Verification: v.Name, Run: r.Name, State: r.State, URL: r.URL, Completed: r.CompletionTime}
				if at, ok := index[key{p.Name, r.Name}]; ok {
					if !equalEdge(edges[at], edge) {
						edges[at], changed = edge, true
					}
					continue
				}
				index[key{p.Name, r.Name}] = len(edges)
				edges = append(edges, edge)
				changed = true
			}
		}
	}
	if !changed {
		return graph, false
	}
	slices.SortStableFunc(edges, func(a, b UpgradeEdge) int {
		return cmp.Or(completedTime(a).Compare(completedTime(b).Time), cmp.Compare(a.To, b.To), cmp.Compare(a.Run, b.Run))
	})
	if len(edges) > MaxUpgradeEdges {
		edges = edges[len(edges)-MaxUpgradeEdges:]
	}
	// Edges trimmed before may come back from payloads still around and be trimmed again.
	if len(edges) == len(graph.Edges) && slices.EqualFunc(edges, graph.Edges, equalEdge) {
		return graph, false
	}
	return UpgradeGraph{Edges: edges}, true
}

func completedTime(e UpgradeEdge) metav1.Time {
	if e.Completed == nil {
		return metav1.Time{}
	}
	return *e.Completed
}

func equalEdge(a, b UpgradeEdge) bool {
	return a.From == b.From && a.To == b.To && a.Verification == b.Verification && a.Run == b.Run &&
		a.State == b.State && a.URL == b.URL && completedTime(a).Time.Equal(completedTime(b).Time)
}
