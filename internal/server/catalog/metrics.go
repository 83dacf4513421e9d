package catalog

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// The read side's gauges, for the alerts and the dashboard (config/components/alerts): what
// the controller's counters cannot say after a restart — when each stream last had an
// accepted payload — and what the pipelines wait for. They are computed from the catalogs
// being watched when /metrics is scraped (the API server's, or dev's).

// Names of the read side's metrics.
const (
	MetricLastAccepted    = "release_controller_stream_last_accepted_timestamp_seconds"
	MetricApprovalWaiting = "release_controller_pipeline_approval_waiting_seconds"
	MetricLastPromotion   = "release_controller_pipeline_last_promotion_timestamp_seconds"
)

var (
	lastAcceptedDesc = prometheus.NewDesc(MetricLastAccepted,
		"Creation time of the stream's newest accepted payload (by verdict.Of), in Unix seconds; absent while it has none.",
		[]string{"namespace", "stream"}, nil)
	approvalWaitingDesc = prometheus.NewDesc(MetricApprovalWaiting,
		"How long a promotion into the environment has waited for approval, in seconds; absent when none waits.",
		[]string{"namespace", "pipeline", "environment"}, nil)
	lastPromotionDesc = prometheus.NewDesc(MetricLastPromotion,
		"Time of the last promotion into the environment, in Unix seconds; absent before the first.",
		[]string{"namespace", "pipeline", "environment"}, nil)
)

// watched are the catalogs between Watch and the end of its context.
var (
	watchedMu sync.Mutex
	watched   = map[*Catalog]struct{}{}
)

func init() {
	metrics.Registry.MustRegister(collector{now: time.Now})
}

// collect adds c to the catalogs /metrics reports until ctx ends.
func (c *Catalog) collect(ctx context.Context) {
	watchedMu.Lock()
	watched[c] = struct{}{}
	watchedMu.Unlock()
	context.AfterFunc(ctx, func() {
		watchedMu.Lock()
		delete(watched, c)
		watchedMu.Unlock()
	})
}

type collector struct{ now func() time.Time }

func (collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- lastAcceptedDesc
	ch <- approvalWaitingDesc
	ch <- lastPromotionDesc
}

func (m collector) Collect(ch chan<- prometheus.Metric) {
	watchedMu.Lock()
	cats := make([]*Catalog, 0, len(watched))
	for c := range watched {
		cats = append(cats, c)
	}
	watchedMu.Unlock()
	now := m.now()
	// Two catalogs of one process (tests run several servers) may watch the same objects:
	// a series is sent once, or the registry would refuse the whole scrape.
	sent := map[string]bool{}
	for _, c := range cats {
		for _, s := range c.samples(now) {
			key := s.desc.String() + "\x00" + strings.Join(s.labels, "\x00")
			if sent[key] {
				continue
			}
			sent[key] = true
			ch <- prometheus.MustNewConstMetric(s.desc, prometheus.GaugeValue, s.value, s.labels...)
		}
	}
}

// sample is one gauge value of the read side's metrics.
type sample struct {
	desc   *prometheus.Desc
	labels []string
	value  float64
}

// samples are the read side's gauges as of now: each stream's last accepted payload, and
// each pipeline environment's waiting approval and last promotion.
func (c *Catalog) samples(now time.Time) []sample {
	var out []sample
	for _, s := range c.Streams() {
		if e, ok := s.lastAccepted(); ok {
			out = append(out, sample{lastAcceptedDesc, []string{s.Namespace, s.Name}, float64(e.Payload.CreationTimestamp.Unix())})
		}
	}
	for _, p := range c.Pipelines() {
		for _, env := range p.Status.Environments {
			labels := []string{p.Namespace, p.Name, env.Name}
			if w := env.WaitingApproval; w != nil {
				out = append(out, sample{approvalWaitingDesc, labels, max(0, now.Sub(w.Since.Time).Seconds())})
			}
			if l := env.LastPromotion; l != nil {
				out = append(out, sample{lastPromotionDesc, labels, float64(l.Time.Unix())})
			}
		}
	}
	return out
}
