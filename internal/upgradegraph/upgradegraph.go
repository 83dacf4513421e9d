// Package upgradegraph is the format of a stream's upgrade graph: every upgrade result (from,
// to, state) in a ConfigMap of its own, labelled with the stream, so that it outlives the
// payloads it speaks of. The stream controller writes it; the read side (the catalog, /graph,
// the pages) reads it. It is pure and imports no controller.
package upgradegraph

import (
	"cmp"
	"slices"

	"github.com/release-controller/release-controller/internal/jobcontract"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/release-controller/release-controller/api/v1alpha1"
)

// Key is the ConfigMap key holding a stream's upgrade graph as JSON.
const Key = "graph.json"

// ConfigMapName is the name of the ConfigMap holding a stream's upgrade graph.
func ConfigMapName(stream string) string {
	return jobcontract.ObjectName(stream, "upgrade-graph")
}

// MaxEdges bounds the upgrade graph so its ConfigMap stays far below the 1 MiB object
// limit; the oldest results go first.
const MaxEdges = 2000

// Edge is the result of one upgrade run.
type Edge struct {
	From         string            `json:"from"`
	To           string            `json:"to"`
	Verification string            `json:"verification"`
	Run          string            `json:"run"`
	State        v1alpha1.JobState `json:"state"`
	URL          string            `json:"url,omitempty"`
	Completed    *metav1.Time      `json:"completed,omitempty"`
}

// Graph is every upgrade result of a stream. It lives in a ConfigMap of its own, so it
// survives the collection of the payloads it speaks of.
type Graph struct {
	Edges []Edge `json:"edges"`
}

// Record adds the finished upgrade runs of payloads to graph; changed is false when
// there was nothing new.
func Record(graph Graph, payloads []v1alpha1.ReleasePayload) (Graph, bool) {
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
				edge := Edge{From: r.UpgradeFrom, To: p.Name, Verification: v.Name, Run: r.Name, State: r.State, URL: r.URL, Completed: r.CompletionTime}
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
	slices.SortStableFunc(edges, func(a, b Edge) int {
		return cmp.Or(completedTime(a).Compare(completedTime(b).Time), cmp.Compare(a.To, b.To), cmp.Compare(a.Run, b.Run))
	})
	if len(edges) > MaxEdges {
		edges = edges[len(edges)-MaxEdges:]
	}
	// Edges trimmed before may come back from payloads still around and be trimmed again.
	if len(edges) == len(graph.Edges) && slices.EqualFunc(edges, graph.Edges, equalEdge) {
		return graph, false
	}
	return Graph{Edges: edges}, true
}

func completedTime(e Edge) metav1.Time {
	if e.Completed == nil {
		return metav1.Time{}
	}
	return *e.Completed
}

func equalEdge(a, b Edge) bool {
	return a.From == b.From && a.To == b.To && a.Verification == b.Verification && a.Run == b.Run &&
		a.State == b.State && a.URL == b.URL && completedTime(a).Time.Equal(completedTime(b).Time)
}
