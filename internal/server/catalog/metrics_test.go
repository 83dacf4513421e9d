package catalog

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/release-controller/release-controller/api/v1alpha1"
)

// The gauges of a watched catalog, as a registry gathers them: the last accepted payload of
// each stream that has one, and the waiting approvals and last promotions of pipelines.
func TestMetrics(t *testing.T) {
	now := time.Date(2026, 11, 22, 16, 0, 0, 0, time.UTC)
	c := New()
	c.SetStream(newStream("ns", "nightly"))
	c.SetStream(newStream("ns", "empty"))
	for i, phase := range []v1alpha1.PayloadPhase{v1alpha1.PhaseAccepted, v1alpha1.PhaseAccepted, v1alpha1.PhaseRejected} {
		p := newPayload("ns", "nightly", "4.15.0-0.nightly-2026-11-22-0"+string(rune('0'+i))+"0000", phase)
		p.CreationTimestamp = metav1.NewTime(now.Add(time.Duration(i-3) * time.Hour))
		c.SetPayload(p)
	}
	c.SetPipeline(&v1alpha1.Pipeline{
		ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "shop"},
		Status: v1alpha1.PipelineStatus{Environments: []v1alpha1.EnvironmentStatus{
			{Name: "dev", LastPromotion: &v1alpha1.PromotionRecord{Revision: "v2", Time: metav1.NewTime(now.Add(-time.Hour))}},
			{Name: "prod", WaitingApproval: &v1alpha1.WaitingApproval{Revision: "v2", Since: metav1.NewTime(now.Add(-90 * time.Minute))}},
		}},
	})

	reg := prometheus.NewRegistry()
	reg.MustRegister(collector{now: func() time.Time { return now }})
	if n, err := testutil.GatherAndCount(reg); err != nil || n != 0 {
		t.Fatalf("before Watch: %d samples, %v; want none", n, err)
	}
	ctx, stop := context.WithCancel(t.Context())
	c.collect(ctx)
	// A second catalog of the same objects adds no series twice.
	twin := New()
	for _, s := range c.Streams() {
		twin.SetStream(s.Object)
		for _, e := range s.Entries {
			twin.SetPayload(e.Payload)
		}
	}
	for _, p := range c.Pipelines() {
		twin.SetPipeline(p)
	}
	twin.collect(ctx)
	want := `
# HELP release_controller_pipeline_approval_waiting_seconds How long a promotion into the environment has waited for approval, in seconds; absent when none waits.
# TYPE release_controller_pipeline_approval_waiting_seconds gauge
release_controller_pipeline_approval_waiting_seconds{environment="prod",namespace="apps",pipeline="shop"} 5400
# HELP release_controller_pipeline_last_promotion_timestamp_seconds Time of the last promotion into the environment, in Unix seconds; absent before the first.
# TYPE release_controller_pipeline_last_promotion_timestamp_seconds gauge
release_controller_pipeline_last_promotion_timestamp_seconds{environment="dev",namespace="apps",pipeline="shop"} 1.7953596e+09
# HELP release_controller_stream_last_accepted_timestamp_seconds Creation time of the stream's newest accepted payload (by verdict.Of), in Unix seconds; absent while it has none.
# TYPE release_controller_stream_last_accepted_timestamp_seconds gauge
release_controller_stream_last_accepted_timestamp_seconds{namespace="ns",stream="nightly"} 1.795356e+09
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want)); err != nil {
		t.Error(err)
	}
	stop()
	for range 100 {
		if n, _ := testutil.GatherAndCount(reg); n == 0 {
			return
		}
		time.Sleep(10 * time.Millisecond) // context.AfterFunc runs in its own goroutine
	}
	t.Error("the catalog is still collected after its context ended")
}
