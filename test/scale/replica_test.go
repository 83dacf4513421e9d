package scale

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/release-controller/release-controller/internal/manager"
)

// importInterval is the controllers' --import-interval: short, so idle streams import often.
const importInterval = 2 * time.Second

// leaseNamespace holds the replicas' leader election lease.
const leaseNamespace = "default"

// replica is one `release-controller controller` subprocess.
type replica struct {
	name    string
	args    []string
	cmd     *exec.Cmd
	logPath string
	metrics string // host:port of --metrics-bind-address
	probe   string // host:port of --health-probe-bind-address
	exited  chan struct{}
	waitErr error
}

// startReplica starts the shipped binary as a user would: --kubeconfig, a short import
// interval, loopback metrics and probe ports, the lease namespace and the release log's
// namespace; nothing that changes how it talks to the API server. It is stopped when the
// test ends, whatever happens.
func startReplica(t testing.TB, name, logNamespace string) *replica {
	t.Helper()
	r := &replica{
		name:    name,
		logPath: filepath.Join(workDir, "controllers", fmt.Sprintf("%s-%s-%d.log", t.Name(), name, time.Now().UnixNano())),
		metrics: freeAddr(t),
		probe:   freeAddr(t),
		exited:  make(chan struct{}),
	}
	r.args = []string{"controller",
		"--kubeconfig", kubeconfig,
		"--import-interval", importInterval.String(),
		"--metrics-bind-address", r.metrics,
		"--health-probe-bind-address", r.probe,
		"--leader-election-namespace", leaseNamespace,
		"--log-namespace", logNamespace,
	}
	if err := os.MkdirAll(filepath.Dir(r.logPath), 0o755); err != nil {
		t.Fatal(err)
	}
	logFile, err := os.Create(r.logPath)
	if err != nil {
		t.Fatal(err)
	}
	r.cmd = exec.Command(binary, r.args...)
	r.cmd.Stdout, r.cmd.Stderr = logFile, logFile
	r.cmd.SysProcAttr = dieWithParent()
	if err := r.cmd.Start(); err != nil {
		_ = logFile.Close()
		t.Fatalf("starting controller %s: %v", name, err)
	}
	go func() {
		r.waitErr = r.cmd.Wait()
		_ = logFile.Close()
		close(r.exited)
	}()
	t.Cleanup(func() {
		if r.running() {
			r.stop()
			t.Logf("stopped controller %s (SIGTERM): %v", name, exitStatus(r.waitErr))
		}
	})
	t.Logf("started controller %s (pid %d): %s %s; log %s", name, r.cmd.Process.Pid, binary, strings.Join(r.args, " "), r.logPath)
	return r
}

// freeAddr returns a loopback address with a port that was free a moment ago.
func freeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func (r *replica) running() bool {
	select {
	case <-r.exited:
		return false
	default:
		return true
	}
}

// check returns an error naming how the process ended, with the end of its log, once it has.
func (r *replica) check() error {
	if r.running() {
		return nil
	}
	return fmt.Errorf("controller %s exited (%v); the end of its log:\n%s", r.name, r.waitErr, r.logTail(40))
}

// kill ends the process at once, as a crash or a lost node would: no lease release, no cleanup.
func (r *replica) kill(t testing.TB) {
	t.Helper()
	if !r.running() {
		t.Fatalf("controller %s had exited before it was to be killed: %v", r.name, r.check())
	}
	if err := r.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatalf("killing controller %s: %v", r.name, err)
	}
	<-r.exited
}

// stop ends the process gracefully (it releases its lease), or kills it when it takes too long.
func (r *replica) stop() {
	if !r.running() {
		return
	}
	_ = r.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-r.exited:
	case <-time.After(30 * time.Second):
		_ = r.cmd.Process.Signal(syscall.SIGKILL)
		<-r.exited
	}
}

func exitStatus(err error) string {
	if err == nil {
		return "exit status 0"
	}
	return err.Error()
}

// log returns the process's output so far.
func (r *replica) log() string {
	data, _ := os.ReadFile(r.logPath)
	return string(data)
}

func (r *replica) logTail(lines int) string {
	all := strings.Split(strings.TrimRight(r.log(), "\n"), "\n")
	if len(all) > lines {
		all = all[len(all)-lines:]
	}
	return strings.Join(all, "\n")
}

// scrape reads the process's Prometheus metrics.
func (r *replica) scrape(ctx context.Context) (string, error) {
	return httpGet(ctx, "http://"+r.metrics+"/metrics")
}

// ready reports whether /readyz answers 200 (the informer caches synced; followers too).
func (r *replica) ready(ctx context.Context) bool {
	_, err := httpGet(ctx, "http://"+r.probe+"/readyz")
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
		sum, _ := metricValue(metrics, "controller_runtime_reconcile_time_seconds_sum", map[string]string{"controller": c})
		count, _ := metricValue(metrics, "controller_runtime_reconcile_time_seconds_count", map[string]string{"controller": c})
		qsum, _ := metricValue(metrics, "workqueue_queue_duration_seconds_sum", map[string]string{"name": c})
		qcount, _ := metricValue(metrics, "workqueue_queue_duration_seconds_count", map[string]string{"name": c})
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

func httpGet(ctx context.Context, url string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET %s: %s: %s", url, resp.Status, body)
	}
	return string(body), nil
}

// metricValue sums the samples of a metric in Prometheus text format whose labels include
// every one of want; found is false when there is none.
func metricValue(text, name string, want map[string]string) (sum float64, found bool) {
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, name) {
			continue
		}
		rest := line[len(name):]
		labels := ""
		if strings.HasPrefix(rest, "{") {
			end := strings.Index(rest, "}")
			if end < 0 {
				continue
			}
			labels, rest = rest[1:end], rest[end+1:]
		} else if !strings.HasPrefix(rest, " ") {
			continue // another metric whose name starts with name
		}
		if !hasLabels(labels, want) {
			continue
		}
		fields := strings.Fields(rest)
		if len(fields) == 0 {
			continue
		}
		v, err := strconv.ParseFloat(fields[0], 64)
		if err != nil {
			continue
		}
		sum, found = sum+v, true
	}
	return sum, found
}

// hasLabels reports whether a Prometheus label set (`a="x",b="y"`) holds every pair of want.
// Label values here never hold commas or quotes.
func hasLabels(labels string, want map[string]string) bool {
	have := map[string]string{}
	for pair := range strings.SplitSeq(labels, ",") {
		k, v, ok := strings.Cut(pair, "=")
		if ok {
			have[strings.TrimSpace(k)] = strings.Trim(v, `"`)
		}
	}
	for k, v := range want {
		if have[k] != v {
			return false
		}
	}
	return true
}
