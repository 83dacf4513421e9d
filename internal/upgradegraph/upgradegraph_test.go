package upgradegraph

import (
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/release-controller/release-controller/api/v1alpha1"
)

var now = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)

func accepted(tag string) v1alpha1.ReleasePayload {
	p := v1alpha1.ReleasePayload{ObjectMeta: metav1.ObjectMeta{Name: tag}}
	p.Status.Phase = v1alpha1.PhaseAccepted
	return p
}

func TestRecord(t *testing.T) {
	completed := metav1.NewTime(now)
	p := accepted("4.15.1-2026-11-22-093000")
	p.Status.Verifications = []v1alpha1.VerificationStatus{{Name: "upgrade", Runs: []v1alpha1.JobRun{
		{Name: "u-1", UpgradeFrom: "4.15.0-2026-11-21-000000", State: v1alpha1.JobFailure, URL: "http://logs/u-1", CompletionTime: &completed},
		{Name: "u-2", UpgradeFrom: "4.15.0-2026-11-21-000000", State: v1alpha1.JobPending},
	}}, {Name: "e2e", Runs: []v1alpha1.JobRun{{Name: "e-1", State: v1alpha1.JobSuccess}}}}

	graph, changed := Record(Graph{}, []v1alpha1.ReleasePayload{p})
	if !changed || len(graph.Edges) != 1 || graph.Edges[0].From != "4.15.0-2026-11-21-000000" || graph.Edges[0].State != v1alpha1.JobFailure {
		t.Fatalf("first record: changed=%v %+v", changed, graph)
	}
	if _, changed := Record(graph, []v1alpha1.ReleasePayload{p}); changed {
		t.Error("recording the same results again changed the graph")
	}
	// The payload is collected: its edges stay.
	if g, changed := Record(graph, nil); changed || len(g.Edges) != 1 {
		t.Errorf("collection lost edges: %+v", g)
	}
	p.Status.Verifications[0].Runs[1].State = v1alpha1.JobSuccess
	if g, changed := Record(graph, []v1alpha1.ReleasePayload{p}); !changed || len(g.Edges) != 2 {
		t.Errorf("second run not recorded: %+v", g)
	}
}

func TestRecordPastTheLimitSettles(t *testing.T) {
	completed := metav1.NewTime(now)
	p := accepted("4.15.1-2026-11-22-093000")
	var runs []v1alpha1.JobRun
	for i := range MaxEdges + 10 {
		runs = append(runs, v1alpha1.JobRun{Name: fmt.Sprintf("u-%05d", i), UpgradeFrom: "4.15.0-2026-11-21-000000", State: v1alpha1.JobSuccess, CompletionTime: &completed})
	}
	p.Status.Verifications = []v1alpha1.VerificationStatus{{Name: "upgrade", Runs: runs}}
	graph, changed := Record(Graph{}, []v1alpha1.ReleasePayload{p})
	if !changed || len(graph.Edges) != MaxEdges {
		t.Fatalf("first record: changed=%v, %d edges", changed, len(graph.Edges))
	}
	if _, changed := Record(graph, []v1alpha1.ReleasePayload{p}); changed {
		t.Error("recording the same runs again past the limit reports a change (and rewrites the ConfigMap every pass)")
	}
}
