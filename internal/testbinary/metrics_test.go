package testbinary

import "testing"

const exposition = `# HELP apiserver_request_total Counter of apiserver requests.
# TYPE apiserver_request_total counter
apiserver_request_total{code="200",resource="releasepayloads",subresource="status",verb="PATCH"} 12
apiserver_request_total{code="409",resource="releasepayloads",subresource="status",verb="PATCH"} 3
apiserver_request_total{code="201",resource="jobs",subresource="",verb="POST"} 40
# HELP leader_election_master_status Leader.
# TYPE leader_election_master_status gauge
leader_election_master_status{name="release-controller.release-controller.dev"} 1
# HELP workqueue_queue_duration_seconds How long in the queue.
# TYPE workqueue_queue_duration_seconds histogram
workqueue_queue_duration_seconds_bucket{name="releasepayload",le="+Inf"} 4
workqueue_queue_duration_seconds_sum{name="releasepayload"} 0.5
workqueue_queue_duration_seconds_count{name="releasepayload"} 4
workqueue_queue_duration_seconds_bucket{name="releasestream",le="+Inf"} 1
workqueue_queue_duration_seconds_sum{name="releasestream"} 2
workqueue_queue_duration_seconds_count{name="releasestream"} 1
`

func TestMetrics(t *testing.T) {
	m, err := ParseMetrics(exposition)
	if err != nil {
		t.Fatal(err)
	}
	sums := []struct {
		name      string
		want      map[string]string
		value     float64
		wantFound bool
	}{
		{"apiserver_request_total", map[string]string{"resource": "releasepayloads"}, 15, true},
		{"apiserver_request_total", map[string]string{"resource": "releasepayloads", "code": "409"}, 3, true},
		{"apiserver_request_total", nil, 55, true},
		{"apiserver_request_total", map[string]string{"resource": "pods"}, 0, false},
		{"leader_election_master_status", map[string]string{"name": "release-controller.release-controller.dev"}, 1, true},
		{"no_such_metric", nil, 0, false},
	}
	for _, s := range sums {
		if v, found := m.Sum(s.name, s.want); v != s.value || found != s.wantFound {
			t.Errorf("Sum(%s, %v) = %v, %v; want %v, %v", s.name, s.want, v, found, s.value, s.wantFound)
		}
	}
	if sum, count := m.HistogramSum("workqueue_queue_duration_seconds", map[string]string{"name": "releasepayload"}); sum != 0.5 || count != 4 {
		t.Errorf("HistogramSum = %v, %v; want 0.5, 4", sum, count)
	}
	var patches float64
	m.Each("apiserver_request_total", func(labels map[string]string, value float64) {
		if labels["verb"] == "PATCH" {
			patches += value
		}
	})
	if patches != 15 {
		t.Errorf("Each over PATCH samples: %v, want 15", patches)
	}
	if _, err := ParseMetrics("not { valid"); err == nil {
		t.Error("ParseMetrics accepted text that is not the exposition format")
	}
}
