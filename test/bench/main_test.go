//go:build !unit

// Package bench measures the release-controller binary that ships, started the way a user
// starts it: `release-controller controller --kubeconfig FILE` against a real API server, with
// leader election and no tuning flags, and `release-controller payload build` against the
// embedded registry. Nothing here runs in the test process's controllers or with the test
// client settings (internal/testenv raises its own client's QPS; the binary does not see that).
//
// Each benchmark prints one line starting with "BENCH" to stdout; `make bench` runs them:
//
//	make bench
//	RELEASE_CONTROLLER_BINARY=bin/release-controller go test -run '^$' -bench . -benchtime 1x -timeout 90m ./test/bench/
//
// RELEASE_CONTROLLER_BINARY names the binary to measure; unset, the benchmarks build it with
// `go build` into a temporary folder. BENCH_PAYLOADS sets how many payloads are put in flight
// (default 1,000; BENCH_LARGE=1 makes it 10,000), BENCH_BUILD_RUNS how many payload builds are
// timed (default 5). BENCH_LOG_DIR keeps the logs of the controller, kube-apiserver and etcd
// in that folder (one subfolder per run) instead of a temporary one; BENCH_APISERVER_ARGS adds
// flags (--flag=value, split at spaces) to kube-apiserver, for experiments. Nothing is measured without -bench: `go test ./...` compiles the package
// and runs no test.
package bench

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap/zapcore"
	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/release-controller/release-controller/internal/testbinary"
	"github.com/release-controller/release-controller/internal/testenv"
)

// binaryEnv names the release-controller binary to measure.
const binaryEnv = "RELEASE_CONTROLLER_BINARY"

var (
	// started is when the test binary started; with -test.timeout it gives deadline.
	started = time.Now()
	// builtDir holds the binary built when binaryEnv is unset; TestMain removes it.
	builtDir   string
	buildOnce  sync.Once
	builtPath  string
	builtError error
)

// TestMain only removes what the benchmarks built: it starts nothing, so `go test ./...`
// stays cheap.
func TestMain(m *testing.M) {
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(zapcore.ErrorLevel)))
	code := m.Run()
	if builtDir != "" {
		_ = os.RemoveAll(builtDir)
	}
	os.Exit(code)
}

// deadline is a minute before go test's -timeout would panic (and skip every cleanup, leaving
// the API server behind): waits past it fail the benchmark cleanly instead.
func deadline() time.Time {
	if f := flag.Lookup("test.timeout"); f != nil {
		if d, err := time.ParseDuration(f.Value.String()); err == nil && d > 0 {
			return started.Add(d - time.Minute)
		}
	}
	return time.Now().Add(24 * time.Hour)
}

// releaseControllerBinary returns the binary binaryEnv names, or builds one.
func releaseControllerBinary(b *testing.B) string {
	b.Helper()
	if path := os.Getenv(binaryEnv); path != "" {
		abs, err := filepath.Abs(path)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := os.Stat(abs); err != nil {
			b.Fatalf("%s=%s: %v (run `make build`)", binaryEnv, path, err)
		}
		return abs
	}
	buildOnce.Do(func() {
		if builtDir, builtError = os.MkdirTemp("", "bench-bin-"); builtError != nil {
			return
		}
		builtPath = filepath.Join(builtDir, "release-controller")
		progressf("%s is unset: building %s", binaryEnv, builtPath)
		builtError = testbinary.Build(builtPath)
	})
	if builtError != nil {
		b.Fatal(builtError)
	}
	return builtPath
}

// progressf prints a progress line to stdout at once (b.Log would hold it until the end).
func progressf(format string, args ...any) {
	fmt.Printf("    bench: "+format+"\n", args...)
}

// envInt reads a positive integer from the environment, or returns def.
func envInt(b *testing.B, name string, def int) int {
	b.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		b.Fatalf("%s=%q: want a positive integer", name, v)
	}
	return n
}

// auditPolicy records the lists and watches (when each ends): a client that lists again
// after losing its watch shows there.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: Metadata
  verbs: ["list", "watch"]
- level: None
`

// runDir is the folder of one run's kubeconfig and logs: under BENCH_LOG_DIR, which keeps it,
// or a temporary one.
func runDir(b *testing.B) string {
	b.Helper()
	keep := os.Getenv("BENCH_LOG_DIR")
	if keep == "" {
		return b.TempDir()
	}
	if err := os.MkdirAll(keep, 0o755); err != nil {
		b.Fatal(err)
	}
	dir, err := os.MkdirTemp(keep, strings.ReplaceAll(b.Name(), "/", "_")+"-")
	if err != nil {
		b.Fatal(err)
	}
	progressf("logs in %s", dir)
	return dir
}

// startAPIServer starts kube-apiserver and etcd with the CRDs installed, their logs and an
// admin kubeconfig in dir. The caller stops it.
func startAPIServer(b *testing.B, dir string) (*testenv.Env, string) {
	b.Helper()
	policy := filepath.Join(dir, "audit-policy.yaml")
	if err := os.WriteFile(policy, []byte(auditPolicy), 0o600); err != nil {
		b.Fatal(err)
	}
	flags := map[string][]string{
		"audit-policy-file": {policy},
		"audit-log-path":    {filepath.Join(dir, "audit.log")},
		// V(1) logs the watches the API server closes for being too slow and its watch caches'
		// incoming queues filling; checker.go at V(3) the cache consistency checks it finishes.
		"v":       {"1"},
		"vmodule": {"checker=3"},
	}
	for _, arg := range strings.Fields(os.Getenv("BENCH_APISERVER_ARGS")) {
		name, value, ok := strings.Cut(strings.TrimLeft(arg, "-"), "=")
		if !ok {
			b.Fatalf("BENCH_APISERVER_ARGS: %q: want --flag=value", arg)
		}
		flags[name] = append(flags[name], value)
	}
	env, err := testenv.StartWith(testenv.Options{LogDir: dir, APIServerFlags: flags})
	if err != nil {
		b.Fatal(err)
	}
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := env.WriteKubeconfig(kubeconfig); err != nil {
		_ = env.Stop()
		b.Fatal(err)
	}
	return env, kubeconfig
}

func stopAPIServer(env *testenv.Env) {
	if err := env.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "stopping the API server:", err)
	}
}

func createNamespace(b *testing.B, env *testenv.Env, name string) {
	b.Helper()
	if err := env.Client.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
		b.Fatalf("creating namespace %s: %v", name, err)
	}
}

// freeAddr returns a loopback address with a port free a moment ago.
func freeAddr(b *testing.B) string {
	b.Helper()
	addr, err := testbinary.FreeAddr()
	if err != nil {
		b.Fatal(err)
	}
	return addr
}

// parallelPlain calls f for 0..n-1 on workers goroutines and fails b on the first error.
func parallelPlain(b *testing.B, n, workers int, f func(i int) error) {
	b.Helper()
	var g errgroup.Group
	g.SetLimit(workers)
	for i := range n {
		g.Go(func() error { return f(i) })
	}
	if err := g.Wait(); err != nil {
		b.Fatal(err)
	}
}

// process is a running release-controller subprocess whose output goes to a file.
type process struct{ *testbinary.Process }

// startProcess starts binary with args, its stdout and stderr going to logPath. The caller
// stops it (on every path: defer p.stop()).
func startProcess(b *testing.B, binary, logPath string, args ...string) *process {
	b.Helper()
	p, err := testbinary.Start(binary, logPath, args...)
	if err != nil {
		b.Fatal(err)
	}
	return &process{p}
}

// stop ends the process: SIGTERM, then SIGKILL after 20s.
func (p *process) stop() { p.Stop(20 * time.Second) }

// checkAlive fails b, showing the end of the log, when the process has ended.
func (p *process) checkAlive(b *testing.B) {
	b.Helper()
	if !p.Running() {
		b.Fatalf("release-controller (pid %d) exited early: %s; the end of %s:\n%s", p.Pid(), p.ExitStatus(), p.LogPath, p.Tail(40))
	}
}

// waitReady polls http://addr/readyz until it answers 200.
func (p *process) waitReady(b *testing.B, addr string) {
	b.Helper()
	client := &http.Client{Timeout: 2 * time.Second}
	limit := time.Now().Add(2 * time.Minute)
	for {
		p.checkAlive(b)
		resp, err := client.Get("http://" + addr + "/readyz")
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(limit) {
			b.Fatalf("release-controller did not answer /readyz on %s within 2 minutes (last: %v); the end of its log:\n%s", addr, err, p.Tail(40))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// rssKB reads VmRSS of a process from /proc, in KB; -1 when it cannot.
func rssKB(pid int) int64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return -1
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			fields := strings.Fields(rest)
			if len(fields) > 0 {
				if kb, err := strconv.ParseInt(fields[0], 10, 64); err == nil {
					return kb
				}
			}
		}
	}
	return -1
}

// apiServerCounts are the API server's counts of status writes of one resource, of its cache
// consistency checks and of every request.
type apiServerCounts struct {
	ok        float64 // PATCH, UPDATE or APPLY answered 2xx
	conflicts float64 // the same answered 409
	// consistencyChecks the API server made of its watch cache against etcd (any resource):
	// each lists the whole resource from etcd, which takes both cores for tens of seconds at
	// 100,000 Jobs on this machine.
	consistencyChecks float64
	// requests by "VERB resource[/subresource]"
	requests map[string]float64
	// seconds the API server spent answering them (apiserver_request_duration_seconds_sum),
	// by resource, watches left out (they last as long as they are open)
	seconds map[string]float64
}

// ourResources are the resources the controller writes while payloads are verified: the
// payloads' status, their Events, the release log and its leader lease.
var ourResources = []string{"releasepayloads", "events", "releaselogs", "leases"}

// apiServerMillis is the API server's time per payload between before and after, in
// milliseconds: on the controller's resources, and on Jobs (the benchmark's job status
// writes, which stand in for the Job controller).
func apiServerMillis(before, after apiServerCounts, payloads int) (ours, jobs float64) {
	for resource, sec := range after.seconds {
		d := (sec - before.seconds[resource]) * 1000 / float64(payloads)
		switch {
		case slices.Contains(ourResources, resource):
			ours += d
		case resource == "jobs":
			jobs += d
		}
	}
	return ours, jobs
}

// scrapeAPIServerCounts reads apiserver_request_total from the API server's /metrics (as the
// admin) and sums the status writes of resource (releasepayloads, pipelines).
func scrapeAPIServerCounts(b *testing.B, cfg *rest.Config, resource string) apiServerCounts {
	b.Helper()
	metrics, err := testbinary.ScrapeAPIServer(cfg)
	if err != nil {
		b.Fatal(err)
	}
	w := apiServerCounts{requests: map[string]float64{}, seconds: map[string]float64{}}
	metrics.Each("apiserver_request_duration_seconds", func(labels map[string]string, value float64) {
		if verb := labels["verb"]; verb != "WATCH" && verb != "WATCHLIST" && verb != "CONNECT" {
			w.seconds[labels["resource"]] += value
		}
	})
	metrics.Each("apiserver_request_total", func(labels map[string]string, value float64) {
		key := labels["verb"] + " " + labels["resource"]
		if sub := labels["subresource"]; sub != "" {
			key += "/" + sub
		}
		w.requests[key] += value
		if labels["resource"] != resource || labels["subresource"] != "status" ||
			!slices.Contains([]string{"PUT", "PATCH", "UPDATE", "APPLY"}, labels["verb"]) {
			return
		}
		switch code := labels["code"]; {
		case strings.HasPrefix(code, "2"):
			w.ok += value
		case code == "409":
			w.conflicts += value
		}
	})
	metrics.Each("apiserver_storage_consistency_checks_total", func(_ map[string]string, value float64) {
		w.consistencyChecks += value
	})
	return w
}

// scrapeControllerMetrics reads the metrics the controller serves at addr.
func scrapeControllerMetrics(b *testing.B, addr string) testbinary.Metrics {
	b.Helper()
	text, err := testbinary.Get(context.Background(), "http://"+addr+"/metrics")
	if err != nil {
		b.Fatalf("scraping the controller's metrics: %v", err)
	}
	metrics, err := testbinary.ParseMetrics(text)
	if err != nil {
		b.Fatalf("reading the controller's metrics: %v", err)
	}
	return metrics
}

// queueStats are the averages of a controller's work queue, from its own /metrics.
type queueStats struct {
	waitMS, workMS float64
	// reconciles is how many items the queue handed to a worker.
	reconciles float64
}

// scrapeQueue reads controller-runtime's workqueue histograms of the controller named name
// from the metrics endpoint at addr: how long items waited in the queue and how long their
// reconcile took, on average. The queue wait includes the delays items are added with.
func scrapeQueue(b *testing.B, addr, name string) queueStats {
	b.Helper()
	metrics := scrapeControllerMetrics(b, addr)
	avgMS := func(histogram string) float64 {
		sum, count := metrics.HistogramSum(histogram, map[string]string{"name": name})
		if count == 0 {
			return 0
		}
		return 1000 * sum / float64(count)
	}
	_, reconciles := metrics.HistogramSum("workqueue_work_duration_seconds", map[string]string{"name": name})
	return queueStats{waitMS: avgMS("workqueue_queue_duration_seconds"), workMS: avgMS("workqueue_work_duration_seconds"), reconciles: float64(reconciles)}
}

// percentile returns the p-th percentile (0..100) of sorted durations, nearest rank below.
func percentile(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(len(sorted)-1, len(sorted)*p/100)]
}

// benchLine prints the BENCH line: the name, then key=value fields in order.
func benchLine(name string, fields ...any) {
	var buf bytes.Buffer
	buf.WriteString("BENCH " + name)
	for i := 0; i+1 < len(fields); i += 2 {
		fmt.Fprintf(&buf, " %v=%v", fields[i], fields[i+1])
	}
	fmt.Println(buf.String())
}

// watch starts an informer for obj's kind with opts and calls observe on every add and update,
// until the returned cancel; it fails b unless the informer syncs.
func watch(b *testing.B, cfg *rest.Config, opts cache.Options, obj client.Object, observe func(any), what string) context.CancelFunc {
	b.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	c, err := cache.New(cfg, opts)
	if err != nil {
		cancel()
		b.Fatal(err)
	}
	informer, err := c.GetInformer(ctx, obj)
	if err != nil {
		cancel()
		b.Fatal(err)
	}
	if _, err := informer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    observe,
		UpdateFunc: func(_, obj any) { observe(obj) },
	}); err != nil {
		cancel()
		b.Fatal(err)
	}
	go func() { _ = c.Start(ctx) }()
	if !c.WaitForCacheSync(ctx) {
		cancel()
		b.Fatalf("the %s informer did not sync", what)
	}
	return cancel
}

// profileCPU starts a CPU profile of the controller serving /debug/pprof/ at addr when
// BENCH_PPROF names a file; the function it returns waits for the profile (at most
// BENCH_PPROF_SECONDS, default 30) and writes it there, for `go tool pprof`.
func profileCPU(b *testing.B, addr string) func() {
	b.Helper()
	path := os.Getenv("BENCH_PPROF")
	if path == "" {
		return func() {}
	}
	seconds := envInt(b, "BENCH_PPROF_SECONDS", 30)
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Duration(seconds+30)*time.Second)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", addr, seconds), nil)
		if err != nil {
			done <- err
			return
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			done <- err
			return
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			done <- fmt.Errorf("CPU profile: %s", resp.Status)
			return
		}
		f, err := os.Create(path)
		if err != nil {
			done <- err
			return
		}
		_, err = io.Copy(f, resp.Body)
		done <- errors.Join(err, f.Close())
	}()
	return func() {
		if err := <-done; err != nil {
			b.Fatalf("profiling the controller: %v", err)
		}
		progressf("CPU profile of the controller written to %s", path)
	}
}

// apiProbe reads one small object from the API server (through to etcd) every probeInterval
// and keeps the slow reads: a pause of the API server, etcd or the machine shows as slow reads
// at one moment, which the benchmark can put next to its slow verdicts.
type apiProbe struct {
	mu     sync.Mutex
	slow   []probeRead
	max    time.Duration
	cancel context.CancelFunc
	done   chan struct{}
}

type probeRead struct {
	at   time.Time
	took time.Duration
}

const (
	probeInterval = 200 * time.Millisecond
	probeSlow     = 250 * time.Millisecond
)

func startAPIProbe(env *testenv.Env, namespace string) *apiProbe {
	ctx, cancel := context.WithCancel(context.Background())
	p := &apiProbe{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(p.done)
		tick := time.NewTicker(probeInterval)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			start := time.Now()
			var ns corev1.Namespace
			err := env.Client.Get(ctx, client.ObjectKey{Name: namespace}, &ns)
			took := time.Since(start)
			if err != nil && ctx.Err() != nil {
				return
			}
			p.mu.Lock()
			p.max = max(p.max, took)
			if took >= probeSlow {
				p.slow = append(p.slow, probeRead{at: start, took: took})
			}
			p.mu.Unlock()
		}
	}()
	return p
}

// stop ends the probe and returns the slowest read and the reads slower than probeSlow.
func (p *apiProbe) stop() (time.Duration, []probeRead) {
	p.cancel()
	<-p.done
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.max, p.slow
}

// describeSlowReads lists up to limit of the slowest reads as +t:took since start.
func describeSlowReads(reads []probeRead, start time.Time, limit int) string {
	reads = slices.Clone(reads)
	slices.SortFunc(reads, func(a, b probeRead) int { return int(b.took - a.took) })
	reads = reads[:min(len(reads), limit)]
	slices.SortFunc(reads, func(a, b probeRead) int { return a.at.Compare(b.at) })
	parts := make([]string, len(reads))
	for i, r := range reads {
		parts[i] = fmt.Sprintf("+%s:%s", r.at.Sub(start).Round(100*time.Millisecond), r.took.Round(10*time.Millisecond))
	}
	return strings.Join(parts, " ")
}

// describeRequests lists the requests made between two counts, per payload, most first.
func describeRequests(before, after apiServerCounts, payloads int) string {
	type count struct {
		key string
		n   float64
	}
	var counts []count
	for key, n := range after.requests {
		if d := n - before.requests[key]; d > 0 {
			counts = append(counts, count{key, d / float64(payloads)})
		}
	}
	slices.SortFunc(counts, func(a, b count) int { return cmp.Compare(b.n, a.n) })
	parts := make([]string, 0, len(counts))
	for _, c := range counts[:min(len(counts), 12)] {
		parts = append(parts, fmt.Sprintf("%s=%.2f", strings.ReplaceAll(c.key, " ", ":"), c.n))
	}
	return strings.Join(parts, " ")
}
