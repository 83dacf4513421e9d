//go:build !unit

package scale

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/release-controller/release-controller/internal/manager"
	"github.com/release-controller/release-controller/internal/testbinary"
)

// importInterval is the controllers' --import-interval: short, so idle streams import often.
const importInterval = 2 * time.Second

// leaseNamespace holds the replicas' leader election lease.
const leaseNamespace = "default"

// replica is one `release-controller controller` subprocess.
type replica struct {
	*testbinary.Process
	name    string
	args    []string
	metrics string // host:port of --metrics-bind-address
	probe   string // host:port of --health-probe-bind-address
}

// startReplica starts the shipped binary as a user would: --kubeconfig, a short import
// interval, loopback metrics and probe ports, the lease namespace and the release log's
// namespace; nothing that changes how it talks to the API server. It is stopped when the
// test ends, whatever happens.
func startReplica(t testing.TB, name, logNamespace string) *replica {
	t.Helper()
	return startReplicaAs(t, name, logNamespace, kubeconfig)
}

// startReplicaAs is startReplica with the credentials of the kubeconfig file kc and the
// extra flags.
func startReplicaAs(t testing.TB, name, logNamespace, kc string, extra ...string) *replica {
	t.Helper()
	r := &replica{name: name, metrics: freeAddr(t), probe: freeAddr(t)}
	r.args = []string{"controller",
		"--kubeconfig", kc,
		"--import-interval", importInterval.String(),
		"--metrics-bind-address", r.metrics,
		"--health-probe-bind-address", r.probe,
		"--leader-election-namespace", leaseNamespace,
		"--log-namespace", logNamespace,
		// The local job runner runs creation jobs' commands, not their image; outside a pod
		// the flag is required.
		"--build-image", "release-controller:scale-test",
	}
	r.args = append(r.args, extra...)
	logPath := filepath.Join(workDir, "controllers", fmt.Sprintf("%s-%s-%d.log", t.Name(), name, time.Now().UnixNano()))
	if err := os.MkdirAll(filepath.Dir(logPath), 0o755); err != nil {
		t.Fatal(err)
	}
	p, err := testbinary.Start(binary, logPath, r.args...)
	if err != nil {
		t.Fatalf("starting controller %s: %v", name, err)
	}
	r.Process = p
	t.Cleanup(func() {
		if r.Running() {
			r.stop()
			t.Logf("stopped controller %s (SIGTERM): %s", name, r.ExitStatus())
		}
	})
	t.Logf("started controller %s (pid %d): %s %s; log %s", name, r.Pid(), binary, strings.Join(r.args, " "), logPath)
	return r
}

// freeAddr returns a loopback address with a port that was free a moment ago.
func freeAddr(t testing.TB) string {
	t.Helper()
	addr, err := testbinary.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	return addr
}

// check returns an error naming how the process ended, with the end of its log, once it has.
func (r *replica) check() error {
	if r.Running() {
		return nil
	}
	return fmt.Errorf("controller %s exited (%s); the end of its log:\n%s", r.name, r.ExitStatus(), r.Tail(40))
}

// kill ends the process at once, as a crash or a lost node would: no lease release, no cleanup.
func (r *replica) kill(t testing.TB) {
	t.Helper()
	if !r.Running() {
		t.Fatalf("controller %s had exited before it was to be killed: %v", r.name, r.check())
	}
	if err := r.Kill(); err != nil {
		t.Fatalf("killing controller %s: %v", r.name, err)
	}
}

// stop ends the process gracefully (it releases its lease), or kills it when it takes too long.
func (r *replica) stop() { r.Stop(30 * time.Second) }

// scrape reads the process's Prometheus metrics.
func (r *replica) scrape(ctx context.Context) (string, error) {
	return testbinary.Get(ctx, "http://"+r.metrics+"/metrics")
}

// ready reports whether /readyz answers 200 (the informer caches synced; followers too).
func (r *replica) ready(ctx context.Context) bool {
	_, err := testbinary.Get(ctx, "http://"+r.probe+"/readyz")
	return err == nil
}

// isLeader reads controller-runtime's leader_election_master_status gauge for our lease:
// 1 while the process holds the lease and runs the controllers.
func (r *replica) isLeader(ctx context.Context) (bool, error) {
	metrics, err := r.scrape(ctx)
	if err != nil {
		return false, err
	}
	v, found := metricValue(metrics, "leader_election_master_status", map[string]string{"name": manager.LeaderElectionID})
	if !found {
		return false, nil
	}
	return v == 1, nil
}

// logWork logs, from the process's metrics, how much each controller reconciled, how long a
// reconcile took and how long requests waited in its queue, on average: data for whoever
// tunes the controllers, asserted on nowhere.
func (r *replica) logWork(t testing.TB) {
	t.Helper()
	metrics, err := r.scrape(context.Background())
	if err != nil {
		t.Logf("reading the metrics of controller %s: %v", r.name, err)
		return
	}
	var lines []string
	for _, c := range []string{"releasestream", "releasepayload", "releaselog-payloads", "releaselog"} {
		total, _ := metricValue(metrics, "controller_runtime_reconcile_total", map[string]string{"controller": c})
		errs, _ := metricValue(metrics, "controller_runtime_reconcile_errors_total", map[string]string{"controller": c})
		sum, count := histogram(metrics, "controller_runtime_reconcile_time_seconds", map[string]string{"controller": c})
		qsum, qcount := histogram(metrics, "workqueue_queue_duration_seconds", map[string]string{"name": c})
		lines = append(lines, fmt.Sprintf("%s: %.0f reconciles (%.0f errors), %s per reconcile, %s queued", c, total, errs, avg(sum, count), avg(qsum, qcount)))
	}
	patches, _ := metricValue(metrics, "rest_client_requests_total", map[string]string{"method": "PATCH"})
	creates, _ := metricValue(metrics, "rest_client_requests_total", map[string]string{"method": "POST"})
	gets, _ := metricValue(metrics, "rest_client_requests_total", map[string]string{"method": "GET"})
	t.Logf("controller %s: %s; API requests: %.0f GET, %.0f POST, %.0f PATCH", r.name, strings.Join(lines, "; "), gets, creates, patches)
}

func avg(sum, count float64) string {
	if count == 0 {
		return "-"
	}
	return (time.Duration(sum / count * float64(time.Second))).Round(100 * time.Microsecond).String()
}

// metricValue sums the samples of a metric in Prometheus text format whose labels include
// every one of want; found is false when there is none (or the text does not parse).
func metricValue(text, name string, want map[string]string) (sum float64, found bool) {
	metrics, err := testbinary.ParseMetrics(text)
	if err != nil {
		return 0, false
	}
	return metrics.Sum(name, want)
}

// histogram sums the sums and counts of a histogram in Prometheus text format.
func histogram(text, name string, want map[string]string) (sum, count float64) {
	metrics, err := testbinary.ParseMetrics(text)
	if err != nil {
		return 0, 0
	}
	s, c := metrics.HistogramSum(name, want)
	return s, float64(c)
}
