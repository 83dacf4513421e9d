package pipeline

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// running holds the clusters managers between Start and its end; the gauges below sum their
// Stats when scraped (one manager in the controller; tests may start several in turn).
var (
	runningMu sync.Mutex
	running   = map[*Clusters]struct{}{}
)

func runningStats() Stats {
	runningMu.Lock()
	defer runningMu.Unlock()
	var sum Stats
	for c := range running {
		s := c.Stats()
		sum.Clusters += s.Clusters
		sum.Informers += s.Informers
	}
	return sum
}

func setRunning(c *Clusters, on bool) {
	runningMu.Lock()
	defer runningMu.Unlock()
	if on {
		running[c] = struct{}{}
	} else {
		delete(running, c)
	}
}

// Metrics names of Stats, on the controller's /metrics.
const (
	MetricClusters  = "release_controller_pipeline_clusters"
	MetricInformers = "release_controller_pipeline_informers"
)

func init() {
	metrics.Registry.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: MetricClusters,
			Help: "Clusters the pipeline controller holds a client and cache for (the local one included), while it leads.",
		}, func() float64 { return float64(runningStats().Clusters) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: MetricInformers,
			Help: "Informers the pipeline controller runs: one per cluster and app kind, however many pipelines share it.",
		}, func() float64 { return float64(runningStats().Informers) }),
	)
}
