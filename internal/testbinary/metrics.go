package testbinary

import (
	"fmt"
	"io"
	"net/http"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"k8s.io/client-go/rest"
)

// Metrics are the metric families of one scrape of a /metrics endpoint.
type Metrics map[string]*dto.MetricFamily

// ParseMetrics reads Prometheus text exposition format.
func ParseMetrics(text string) (Metrics, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	return parser.TextToMetricFamilies(strings.NewReader(text))
}

// ScrapeAPIServer reads the /metrics of the API server cfg reaches (as cfg's user, who must
// be allowed to).
func ScrapeAPIServer(cfg *rest.Config) (Metrics, error) {
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, err
	}
	resp, err := hc.Get(strings.TrimRight(cfg.Host, "/") + "/metrics")
	if err != nil {
		return nil, fmt.Errorf("scraping the API server's metrics: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("scraping the API server's metrics: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("scraping the API server's metrics: %s: %.512s", resp.Status, body)
	}
	return ParseMetrics(string(body))
}

// Sum adds up the counter, gauge or untyped samples of the metric name whose labels hold every
// pair of want; found is false when none matched.
func (m Metrics) Sum(name string, want map[string]string) (value float64, found bool) {
	family := m[name]
	if family == nil {
		return 0, false
	}
	for _, metric := range family.GetMetric() {
		if !hasLabels(metric, want) {
			continue
		}
		found = true
		switch {
		case metric.Counter != nil:
			value += metric.Counter.GetValue()
		case metric.Gauge != nil:
			value += metric.Gauge.GetValue()
		case metric.Untyped != nil:
			value += metric.Untyped.GetValue()
		}
	}
	return value, found
}

// HistogramSum adds up the sums and counts of the histogram name's series whose labels hold
// every pair of want.
func (m Metrics) HistogramSum(name string, want map[string]string) (sum float64, count uint64) {
	family := m[name]
	if family == nil {
		return 0, 0
	}
	for _, metric := range family.GetMetric() {
		if h := metric.GetHistogram(); h != nil && hasLabels(metric, want) {
			sum += h.GetSampleSum()
			count += h.GetSampleCount()
		}
	}
	return sum, count
}

// Each calls f with the labels and value of every sample of name: a counter's, gauge's or
// untyped value, or a histogram's sum.
func (m Metrics) Each(name string, f func(labels map[string]string, value float64)) {
	for _, metric := range m[name].GetMetric() {
		f(labelsOf(metric), metric.GetCounter().GetValue()+metric.GetGauge().GetValue()+metric.GetUntyped().GetValue()+metric.GetHistogram().GetSampleSum())
	}
}

func labelsOf(metric *dto.Metric) map[string]string {
	labels := make(map[string]string, len(metric.GetLabel()))
	for _, l := range metric.GetLabel() {
		labels[l.GetName()] = l.GetValue()
	}
	return labels
}

// hasLabels reports whether metric carries every label of want with its value.
func hasLabels(metric *dto.Metric, want map[string]string) bool {
	have := labelsOf(metric)
	for k, v := range want {
		if got, ok := have[k]; !ok || got != v {
			return false
		}
	}
	return true
}
