//go:build !unit

// Package soak runs `release-controller dev` — the environment `make run` starts — accelerated
// for SOAK_DURATION (make soak: an hour; go test: two minutes): its build system publishes a
// component build every 10 seconds, and at random moments the test publishes a broken one
// (`dev bump --break e2e` or `--break platform`). Every 30 seconds it samples dev's resident memory
// and goroutines from its metrics endpoint. Then it restarts dev with the build system
// quiet, waits until every payload has its verdict, and checks that the release log holds
// every acceptance and rejection exactly once and that dev logged no error it should not.
//
// It prints one line starting with "SOAK": the duration, payloads by phase, and the slopes of
// memory (MB per hour) and goroutines (per hour) over the run, by least squares.
package soak

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/devenv"
	"github.com/release-controller/release-controller/internal/manager"
	"github.com/release-controller/release-controller/internal/testbinary"
	"github.com/release-controller/release-controller/internal/verdict"
)

const (
	// buildInterval is how often the demo's build system publishes while soaking.
	buildInterval = 10 * time.Second
	// sampleEvery is how often memory and goroutines are read.
	sampleEvery = 30 * time.Second
	// settleTimeout bounds the wait for the last verdicts once the builds stopped: generous,
	// no measurement.
	settleTimeout = 6 * time.Minute
	// flatAfter is the shortest soak whose slopes are judged: shorter runs are mostly warm-up.
	flatAfter = 20 * time.Minute
)

// expectedErrors are the error log lines a soak may show, each for a reason that is no fault:
// none so far (requests that the test's own stop of dev cut short are told apart by
// canceledByStop). A line is matched by substring.
var expectedErrors = []string{}

type sample struct {
	at         time.Duration
	rssMB      float64
	goroutines float64
}

func TestSoak(t *testing.T) {
	ctrl.SetLogger(logr.Discard()) // the test's own client logs nothing worth reading
	duration := 2 * time.Minute
	if v := os.Getenv("SOAK_DURATION"); v != "" {
		var err error
		if duration, err = time.ParseDuration(v); err != nil || duration <= 0 {
			t.Fatalf("SOAK_DURATION=%q: want a positive duration", v)
		}
	}
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv("SOAK_SEED"); v != "" {
		var err error
		if seed, err = strconv.ParseUint(v, 10, 64); err != nil {
			t.Fatalf("SOAK_SEED=%q: %v", v, err)
		}
	}
	t.Logf("SOAK_DURATION=%s SOAK_SEED=%d", duration, seed)
	rng := rand.New(rand.NewPCG(seed, seed))
	dir, binary, assets := buildDev(t)
	dataDir := filepath.Join(dir, "data")
	start := func(name string, interval time.Duration) (*testbinary.Process, string) {
		t.Helper()
		listen, metrics := freeAddr(t), freeAddr(t)
		dev, err := testbinary.Start(binary, filepath.Join(dir, name+".log"), "dev", "--data-dir", dataDir,
			"--listen", listen, "--metrics-bind-address", metrics, "--control-plane-bin", assets,
			"--build-interval", interval.String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { dev.Stop(time.Minute) })
		return dev, metrics
	}

	dev, metrics := start("dev", buildInterval)
	began := time.Now()
	var samples []sample
	var breaks []string
	nextSample := began
	for time.Since(began) < duration {
		if !dev.Running() {
			t.Fatalf("dev exited: %s; the end of its log:\n%s", dev.ExitStatus(), dev.Tail(40))
		}
		if !time.Now().Before(nextSample) {
			if s, ok := sampleOf(metrics, time.Since(began)); ok {
				samples = append(samples, s)
			}
			nextSample = nextSample.Add(sampleEvery)
		}
		// About one broken build a minute, between the build system's own.
		if rng.IntN(6) == 0 {
			breakage := []string{"e2e", "platform"}[rng.IntN(2)]
			if out, err := exec.Command(binary, "dev", "bump", "--data-dir", dataDir, "--break", breakage).CombinedOutput(); err != nil {
				// dev may not have its registry up in the first seconds.
				t.Logf("dev bump --break %s: %v: %s", breakage, err, out)
			} else {
				breaks = append(breaks, breakage)
			}
		}
		time.Sleep(buildInterval)
	}
	if s, ok := sampleOf(metrics, time.Since(began)); ok {
		samples = append(samples, s)
	}
	soaked := time.Since(began)
	stopped := time.Now()
	dev.Stop(time.Minute)
	if status := dev.ExitStatus(); status != "exit status 0" {
		t.Errorf("dev ended with %s after the soak", status)
	}
	soakLog := dev.Log()

	// Again, with the build system quiet: every payload reaches its verdict.
	quiet, _ := start("dev-quiet", 24*time.Hour)
	var c client.Client
	var payloads []v1alpha1.ReleasePayload
	deadline := time.Now().Add(settleTimeout)
	lastReport := ""
	for {
		if !quiet.Running() {
			t.Fatalf("dev exited: %s; the end of its log:\n%s", quiet.ExitStatus(), quiet.Tail(40))
		}
		// dev writes its kubeconfig (new certificates) once its API server is up again.
		var list v1alpha1.ReleasePayloadList
		var err error
		if c, err = demoClient(dataDir); err == nil {
			err = c.List(context.Background(), &list, client.InNamespace(devenv.DemoNamespace))
		}
		waiting := -1
		if err == nil {
			payloads, waiting = list.Items, 0
			for i := range payloads {
				if !verdict.IsVerdict(verdict.Of(&payloads[i])) {
					waiting++
				}
			}
		}
		if waiting == 0 && len(payloads) > 0 {
			break
		}
		if report := fmt.Sprintf("%d of %d payloads wait for a verdict (list error: %v)", waiting, len(payloads), err); report != lastReport {
			t.Log(report)
			lastReport = report
		}
		if time.Now().After(deadline) {
			var why []string
			for i := range payloads {
				if p := &payloads[i]; !verdict.IsVerdict(verdict.Of(p)) {
					why = append(why, fmt.Sprintf("%s: %s %s", p.Name, p.Status.Phase, conditionsOf(p)))
				}
			}
			t.Fatalf("%d payloads still wait for a verdict %s after the soak (last error: %v):\n%s", waiting, settleTimeout, err, strings.Join(why, "\n"))
		}
		time.Sleep(2 * time.Second)
	}
	phases := map[v1alpha1.PayloadPhase]int{}
	for i := range payloads {
		phases[verdict.Of(&payloads[i])]++
	}
	logged := waitReleaseLog(t, c, payloads)
	for tag, n := range logged {
		if n != 1 {
			t.Errorf("the release log holds %d entries of %s, want 1", n, tag)
		}
	}
	var unexpected []string
	for i, log := range []string{soakLog, quiet.Log()} {
		for line := range strings.SplitSeq(log, "\n") {
			if !strings.Contains(line, `"level":"error"`) || expected(line) || (i == 0 && canceledByStop(line, stopped)) {
				continue
			}
			unexpected = append(unexpected, line)
		}
	}
	if len(unexpected) > 0 {
		t.Errorf("dev logged %d unexpected errors, e.g.:\n%s", len(unexpected), strings.Join(unexpected[:min(5, len(unexpected))], "\n"))
	}

	rssSlope := slope(samples, func(s sample) float64 { return s.rssMB })
	goroutineSlope := slope(samples, func(s sample) float64 { return s.goroutines })
	for _, s := range samples {
		t.Logf("sample at %s: RSS %.1f MB, %.0f goroutines", s.at.Round(time.Second), s.rssMB, s.goroutines)
	}
	if len(samples) < 2 {
		t.Errorf("only %d samples of dev's metrics", len(samples))
	}
	// Judged on long soaks only, past the first third (warm-up: caches filling, the first
	// clones): memory may grow by at most 10 MB an hour, goroutines by at most 20.
	if soaked >= flatAfter {
		late := samples[len(samples)/3:]
		if s := slope(late, func(s sample) float64 { return s.rssMB }); s > 10 {
			t.Errorf("dev's memory grows by %.1f MB per hour after warm-up", s)
		}
		if s := slope(late, func(s sample) float64 { return s.goroutines }); s > 20 {
			t.Errorf("dev's goroutines grow by %.1f per hour after warm-up", s)
		}
	}
	fmt.Printf("SOAK duration=%s payloads=%d accepted=%d rejected=%d failed=%d broken_builds=%d logged=%d rss_first_mb=%.1f rss_last_mb=%.1f rss_slope_mb_per_h=%.1f goroutines_first=%.0f goroutines_last=%.0f goroutines_slope_per_h=%.1f unexpected_errors=%d seed=%d\n",
		soaked.Round(time.Second), len(payloads), phases[v1alpha1.PhaseAccepted], phases[v1alpha1.PhaseRejected], phases[v1alpha1.PhaseFailed],
		len(breaks), len(logged), first(samples).rssMB, last(samples).rssMB, rssSlope, first(samples).goroutines, last(samples).goroutines,
		goroutineSlope, len(unexpected), seed)
}

// conditionsOf is the payload's conditions and verifications in one line.
func conditionsOf(p *v1alpha1.ReleasePayload) string {
	var parts []string
	for _, c := range p.Status.Conditions {
		parts = append(parts, fmt.Sprintf("%s=%s(%s: %s)", c.Type, c.Status, c.Reason, c.Message))
	}
	for _, v := range p.Status.Verifications {
		parts = append(parts, fmt.Sprintf("%s:%s(%d runs)", v.Name, v.State, len(v.Runs)))
	}
	return strings.Join(parts, " ")
}

// buildDev builds the binary into a folder of the test, which it returns with the binary and
// the control plane's folder.
func buildDev(t testing.TB) (dir, binary, assets string) {
	t.Helper()
	assets = os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		t.Fatal("KUBEBUILDER_ASSETS is unset: run `make test` or `make soak`, which build the control plane")
	}
	dir = t.TempDir()
	binary = filepath.Join(dir, "release-controller")
	if err := testbinary.Build(binary); err != nil {
		t.Fatal(err)
	}
	return dir, binary, assets
}

// canceledByStop reports whether an error log line is a request that our stop of dev cut
// short: its error is "context canceled" (the manager cancels its context only when it
// stops) and it was logged once the stop signal had been sent (the log's times are whole
// seconds).
func canceledByStop(line string, stopped time.Time) bool {
	var entry struct {
		TS    string `json:"ts"`
		Error string `json:"error"`
	}
	if json.Unmarshal([]byte(line), &entry) != nil || !strings.HasSuffix(entry.Error, context.Canceled.Error()) {
		return false
	}
	at, err := time.Parse(time.RFC3339, entry.TS)
	return err == nil && !at.Before(stopped.Truncate(time.Second))
}

func expected(line string) bool {
	for _, e := range expectedErrors {
		if strings.Contains(line, e) {
			return true
		}
	}
	return false
}

// sampleOf reads dev's resident memory and goroutines from its metrics.
func sampleOf(addr string, at time.Duration) (sample, bool) {
	text, err := testbinary.Get(context.Background(), "http://"+addr+"/metrics")
	if err != nil {
		return sample{}, false
	}
	m, err := testbinary.ParseMetrics(text)
	if err != nil {
		return sample{}, false
	}
	rss, ok1 := m.Sum("process_resident_memory_bytes", nil)
	goroutines, ok2 := m.Sum("go_goroutines", nil)
	return sample{at: at, rssMB: rss / (1 << 20), goroutines: goroutines}, ok1 && ok2
}

// slope is the least-squares slope of value over time, per hour.
func slope(samples []sample, value func(sample) float64) float64 {
	n := float64(len(samples))
	if n < 2 {
		return 0
	}
	var sx, sy, sxx, sxy float64
	for _, s := range samples {
		x, y := s.at.Hours(), value(s)
		sx, sy, sxx, sxy = sx+x, sy+y, sxx+x*x, sxy+x*y
	}
	d := n*sxx - sx*sx
	if d == 0 {
		return 0
	}
	return (n*sxy - sx*sy) / d
}

func first(s []sample) sample {
	if len(s) == 0 {
		return sample{}
	}
	return s[0]
}

func last(s []sample) sample {
	if len(s) == 0 {
		return sample{}
	}
	return s[len(s)-1]
}

// demoClient is a client of dev's API server, from the kubeconfig in its data folder.
func demoClient(dataDir string) (client.Client, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(dataDir, devenv.KubeconfigFile))
	if err != nil {
		return nil, err
	}
	return client.New(cfg, client.Options{Scheme: manager.NewScheme()})
}

// waitReleaseLog waits until the release log (in the demo namespace) holds an entry for every
// accepted and rejected payload, and returns the entries per version.
func waitReleaseLog(t testing.TB, c client.Client, payloads []v1alpha1.ReleasePayload) map[string]int {
	t.Helper()
	want := map[string]bool{}
	for i := range payloads {
		if ph := verdict.Of(&payloads[i]); ph == v1alpha1.PhaseAccepted || ph == v1alpha1.PhaseRejected {
			want[payloads[i].Name] = true
		}
	}
	deadline := time.Now().Add(settleTimeout)
	for {
		var logs v1alpha1.ReleaseLogList
		if err := c.List(context.Background(), &logs, client.InNamespace(devenv.DemoNamespace)); err != nil {
			t.Fatal(err)
		}
		counts := map[string]int{}
		for _, l := range logs.Items {
			for _, e := range l.Spec.Entries {
				// The verdicts' entries; promotions of a payload are entries of their own.
				if want[e.Version] && (e.Type == "release" || e.Type == "rejected") {
					counts[e.Version]++
				}
			}
		}
		var missing []string
		for tag := range want {
			if counts[tag] == 0 {
				missing = append(missing, tag)
			}
		}
		if len(missing) == 0 {
			return counts
		}
		if time.Now().After(deadline) {
			sort.Strings(missing)
			t.Fatalf("the release log lacks %d verdicts after %s: %v", len(missing), settleTimeout, missing)
		}
		time.Sleep(2 * time.Second)
	}
}

func freeAddr(t testing.TB) string {
	t.Helper()
	addr, err := testbinary.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	return addr
}
