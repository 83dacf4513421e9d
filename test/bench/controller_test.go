//go:build !unit

package bench

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"
	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/devenv/jobstatus"
	"github.com/release-controller/release-controller/internal/manager"
	"github.com/release-controller/release-controller/internal/releaselog"
	"github.com/release-controller/release-controller/internal/stream"
	"github.com/release-controller/release-controller/internal/testenv"
)

const (
	// jobsPerPayload blocking batch/v1 Job verifications per payload.
	jobsPerPayload = 10
	// setupWorkers create payloads and their jobs at once.
	setupWorkers = 32
	// finishWorkers finish payloads at once (the jobs of one payload together).
	finishWorkers = 8
	// payloadNamespace holds the payloads and their jobs.
	payloadNamespace = "bench"
	// stallTimeout fails a wait during which no payload moved.
	stallTimeout = 5 * time.Minute
	// logWait bounds the wait for the release log to hold every verdict.
	logWait = 2 * time.Minute
)

// BenchmarkShippedController runs the built binary as `release-controller controller
// --kubeconfig FILE` (leader election on, no tuning flags) against a real API server, puts N
// payloads with 10 blocking Job verifications each in flight, then finishes the jobs payload by
// payload as fast as the API server takes them (8 payloads at once, the 10 jobs of a payload
// together) and measures, per payload, the time from its last job status write returning to
// the informer event that shows PayloadAccepted=True.
//
// The releasepayloads/status writes are counted by the API server (apiserver_request_total);
// the controller's memory is its VmRSS. One line per run:
//
//	BENCH shipped-controller payloads=N jobs=10 p50_ms=… p99_ms=… max_ms=… setup_writes=…
//	verify_writes=… conflicts=… rss_mb=… log_entries=… log_cap=… kb_per_payload=… log_lag_ms=… …
//
// log_entries is how many verdicts the release log holds when the last payload is accepted;
// log_lag_ms how much later it holds all of them, or log_cap (a day's entries,
// --log-max-entries) when there are more verdicts than that; -1 when it did not within logWait.
//
// N is 1,000, 10,000 with BENCH_LARGE=1, or BENCH_PAYLOADS. BENCH_CONTROLLER_ARGS adds flags to the
// controller (split at spaces), for experiments.
func BenchmarkShippedController(b *testing.B) {
	n := 1000
	if os.Getenv("BENCH_LARGE") == "1" {
		n = 10000
	}
	n = envInt(b, "BENCH_PAYLOADS", n)
	binary := releaseControllerBinary(b)
	for b.Loop() {
		r := runShippedController(b, binary, n)
		b.ReportMetric(float64(r.p50.Milliseconds()), "p50-ms")
		b.ReportMetric(float64(r.p99.Milliseconds()), "p99-ms")
		b.ReportMetric(r.setupWrites+r.verifyWrites, "writes/payload")
	}
}

type shippedResult struct {
	p50, p99                  time.Duration
	setupWrites, verifyWrites float64
}

func runShippedController(b *testing.B, binary string, n int) shippedResult {
	runStart := time.Now()
	ctx := context.Background()
	dir := runDir(b)
	progressf("shipped controller: %d payloads x %d jobs; binary %s", n, jobsPerPayload, binary)

	env, kubeconfig := startAPIServer(b, dir)
	defer stopAPIServer(env)
	createNamespace(b, env, releaselog.DefaultNamespace)
	createNamespace(b, env, payloadNamespace)

	metricsAddr, probeAddr := freeAddr(b), freeAddr(b)
	args := append([]string{"controller", "--kubeconfig", kubeconfig,
		"--metrics-bind-address", metricsAddr, "--health-probe-bind-address", probeAddr,
		"--leader-election-namespace", "default", "--build-image", "release-controller:bench"},
		strings.Fields(os.Getenv("BENCH_CONTROLLER_ARGS"))...)
	ctl := startProcess(b, binary, filepath.Join(dir, "controller.log"), args...)
	defer ctl.stop()
	ctl.waitReady(b, probeAddr)
	waitLeader(b, env, ctl)
	progressf("release-controller pid %d ready and leader after %s", ctl.Pid(), time.Since(runStart).Round(time.Millisecond))

	w := watchPayloads(b, env)
	defer w.stop()
	// Let the controller settle after its caches filled, then take its size without payloads.
	time.Sleep(2 * time.Second)
	rssBefore := rssKB(ctl.Pid())
	writesStart := scrapeAPIServerCounts(b, env.Config, "releasepayloads")

	// Create the payloads, their succeeded creation jobs and their verification jobs.
	names := make([]string, n)
	runs := make([][]*batchv1.Job, n)
	verifications := make([]v1alpha1.Verification, jobsPerPayload)
	for j := range verifications {
		verifications[j] = jobVerification(fmt.Sprintf("e2e-%d", j))
	}
	templates, _ := templatesConfigMap(payloadNamespace, verifications)
	if err := env.Client.Create(ctx, templates); err != nil {
		b.Fatalf("creating the verification templates: %v", err)
	}
	setupStart := time.Now()
	var created atomic.Int64
	parallel(b, ctl, n, setupWorkers, func(i int) error {
		names[i] = fmt.Sprintf("4.15.0-0.nightly-2026-11-22-%06d", i)
		if err := env.Client.Create(ctx, newPayload(payloadNamespace, names[i], verifications...)); err != nil {
			return fmt.Errorf("creating payload %s: %w", names[i], err)
		}
		creation := benchJob("create-"+names[i], jobLabels(names[i], v1alpha1.JobTypeCreation, ""), nil)
		if err := env.Client.Create(ctx, creation); err != nil {
			return fmt.Errorf("creating job %s: %w", creation.Name, err)
		}
		if err := finishJob(ctx, env, creation); err != nil {
			return err
		}
		for j := range jobsPerPayload {
			verify := fmt.Sprintf("e2e-%d", j)
			job := benchJob(fmt.Sprintf("%s-%s", names[i], verify), jobLabels(names[i], v1alpha1.JobTypeVerification, verify),
				map[string]string{v1alpha1.AnnotationAttempt: "1"})
			if err := env.Client.Create(ctx, job); err != nil {
				return fmt.Errorf("creating job %s: %w", job.Name, err)
			}
			runs[i] = append(runs[i], job)
		}
		if c := created.Add(1); c%1000 == 0 || int(c) == n {
			progressf("created %d/%d payloads with their %d jobs (%s)", c, n, c*(jobsPerPayload+1), time.Since(setupStart).Round(time.Millisecond))
		}
		return nil
	})

	// Wait until every payload is Ready with all its runs recorded: all in flight.
	w.waitAll(b, ctl, "in flight", names, inFlight)
	inflightAfter := time.Since(setupStart)
	writesInflight := scrapeAPIServerCounts(b, env.Config, "releasepayloads")
	rssInflight := rssKB(ctl.Pid())
	progressf("all %d payloads in flight %s after the first was created; controller RSS %d MB (%d MB before)",
		n, inflightAfter.Round(time.Millisecond), rssInflight>>10, rssBefore>>10)

	// Finish the jobs payload by payload, as fast as the API server takes them.
	lastJobDone := make([]time.Time, n)
	writesFinish := scrapeAPIServerCounts(b, env.Config, "releasepayloads")
	probe := startAPIProbe(env, payloadNamespace)
	profiling := profileAPIServer(env.Config, envInt(b, "BENCH_PROFILE_SECONDS", 30), filepath.Join(dir, "apiserver-cpu.pprof"))
	finishStart := time.Now()
	progressf("finishing the jobs from %s (the +t times below count from it)", finishStart.Format("15:04:05.000"))
	var finished atomic.Int64
	parallel(b, ctl, n, finishWorkers, func(i int) error {
		var g errgroup.Group
		for _, job := range runs[i] {
			g.Go(func() error { return finishJob(ctx, env, job) })
		}
		err := g.Wait()
		lastJobDone[i] = time.Now()
		if c := finished.Add(1); c%1000 == 0 || int(c) == n {
			progressf("finished the jobs of %d/%d payloads (%s)", c, n, time.Since(finishStart).Round(time.Millisecond))
		}
		return err
	})
	finishTook := time.Since(finishStart)
	w.waitAll(b, ctl, "accepted", names, isAccepted)
	allAccepted := w.lastAccepted()
	probeMax, slowReads := probe.stop()
	writesAccepted := scrapeAPIServerCounts(b, env.Config, "releasepayloads")
	progressf("API server requests per payload during the finish: %s", describeRequests(writesFinish, writesAccepted, n))
	progressf("API server reads during the finish: slowest %s, %d of them %s or slower: %s",
		probeMax.Round(time.Millisecond), len(slowReads), probeSlow, describeSlowReads(slowReads, finishStart, 10))
	tags := make(map[string]bool, n)
	for _, name := range names {
		tags[name] = true
	}
	oursMS, jobsMS := apiServerMillis(writesFinish, writesAccepted, n)
	payloadBytes, managedBytes := payloadSize(b, env, names[n-1], filepath.Join(dir, "payload.json"))
	prof := <-profiling
	if prof.err != nil {
		b.Fatalf("profiling the API server: %v", prof.err)
	}
	oursCPU, jobsCPU := prof.perPayload(prof.ours, lastJobDone), prof.perPayload(prof.jobs, lastJobDone)
	progressf("API server CPU profile over %s of the finish (%s): %s in all; per payload finished meanwhile %.2f ms on the controller's writes, %.2f ms on the Job status writes, %.2f ms garbage collection, %.2f ms the rest",
		prof.end.Sub(prof.start).Round(time.Second), filepath.Join(dir, "apiserver-cpu.pprof"), prof.total.Round(time.Millisecond), oursCPU, jobsCPU, prof.perPayload(prof.gc, lastJobDone), prof.perPayload(prof.rest, lastJobDone))
	progressf("API server request time per payload during the finish (latency sums, queueing included): %.2f ms on the controller's resources, %.2f ms on Jobs; a payload is %d bytes (%d of managed fields)",
		oursMS, jobsMS, payloadBytes, managedBytes)
	logAtAccept := countLogEntries(b, env, tags)
	countedAt := time.Now()
	progressf("all %d payloads accepted %s after the first jobs were finished (jobs finished in %s); release log holds %d of %d",
		n, allAccepted.Sub(finishStart).Round(time.Millisecond), finishTook.Round(time.Millisecond), logAtAccept, n)

	// The release log is written after acceptance: wait (bounded) until it holds every verdict,
	// or as many as a day holds (--log-max-entries, at its default: all verdicts fall on one
	// day unless the run crosses midnight).
	logLag, logEntries := time.Duration(-1), logAtAccept
	logWant := min(n, releaselog.DefaultMaxEntriesPerDay)
	for limit := time.Now().Add(logWait); ; time.Sleep(200 * time.Millisecond) {
		if logEntries >= logWant {
			logLag = countedAt.Sub(allAccepted)
			break
		}
		if time.Now().After(limit) {
			progressf("the release log holds %d of %d verdicts %s after the last acceptance", logEntries, logWant, logWait)
			break
		}
		ctl.checkAlive(b)
		logEntries = countLogEntries(b, env, tags)
		countedAt = time.Now()
	}
	latencies := make([]time.Duration, n)
	for i, name := range names {
		latencies[i] = w.acceptedAt(name).Sub(lastJobDone[i])
	}
	reportSlowest(names, latencies, lastJobDone, finishStart)
	reportWindows(latencies, lastJobDone, finishStart, 30*time.Second)
	if notes, err := apiServerWatchNotes(filepath.Join(dir, "kube-apiserver.log"), finishStart, allAccepted, "jobs", "releasepayloads", "releaselogs"); err != nil {
		progressf("reading the API server's log: %v", err)
	} else {
		progressf("the API server's watch caches during the finish (from its log): %s", notes)
	}
	slices.Sort(latencies)
	res := shippedResult{
		p50: percentile(latencies, 50), p99: percentile(latencies, 99),
		setupWrites:  (writesInflight.ok - writesStart.ok) / float64(n),
		verifyWrites: (writesAccepted.ok - writesInflight.ok) / float64(n),
	}
	logLagMS := int64(-1)
	if logLag >= 0 {
		logLagMS = logLag.Milliseconds()
	}
	ctl.checkAlive(b)
	queue := scrapeQueue(b, metricsAddr, "releasepayload")
	benchLine("shipped-controller",
		"payloads", n, "jobs", jobsPerPayload,
		"p50_ms", res.p50.Milliseconds(), "p99_ms", res.p99.Milliseconds(), "max_ms", latencies[n-1].Milliseconds(),
		"setup_writes", fmt.Sprintf("%.2f", res.setupWrites), "verify_writes", fmt.Sprintf("%.2f", res.verifyWrites),
		"conflicts", int64(writesAccepted.conflicts-writesStart.conflicts),
		"rss_mb", rssInflight>>10, "log_entries", logAtAccept, "log_cap", releaselog.DefaultMaxEntriesPerDay,
		"kb_per_payload", fmt.Sprintf("%.1f", float64(rssInflight-rssBefore)/float64(n)),
		"log_lag_ms", logLagMS,
		"inflight_s", fmt.Sprintf("%.1f", inflightAfter.Seconds()),
		"finish_s", fmt.Sprintf("%.1f", allAccepted.Sub(finishStart).Seconds()),
		"seconds", fmt.Sprintf("%.0f", time.Since(runStart).Seconds()),
		"payload_queue_ms", fmt.Sprintf("%.0f", queue.waitMS), "payload_reconcile_ms", fmt.Sprintf("%.1f", queue.workMS),
		"reconciles_per_payload", fmt.Sprintf("%.1f", queue.reconciles/float64(n)),
		"api_read_max_ms", probeMax.Milliseconds(), "api_slow_reads", len(slowReads),
		"api_consistency_checks", int64(writesAccepted.consistencyChecks-writesFinish.consistencyChecks),
		"apiserver_cpu_ms_per_payload_ours", fmt.Sprintf("%.2f", oursCPU), "apiserver_cpu_ms_per_payload_jobs", fmt.Sprintf("%.2f", jobsCPU),
		"payload_bytes", payloadBytes, "payload_managed_fields_bytes", managedBytes,
	)
	return res
}

// payloadSize is the JSON size of a payload as the API server returns it (managed fields
// included), and of its managed fields alone. The payload is kept in file.
func payloadSize(b *testing.B, env *testenv.Env, name, file string) (total, managed int) {
	b.Helper()
	hc, err := rest.HTTPClientFor(env.Config)
	if err != nil {
		b.Fatal(err)
	}
	url := strings.TrimRight(env.Config.Host, "/") + "/apis/" + v1alpha1.GroupVersion.String() + "/namespaces/" + payloadNamespace + "/releasepayloads/" + name
	resp, err := hc.Get(url)
	if err != nil {
		b.Fatalf("reading payload %s: %v", name, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		b.Fatalf("reading payload %s: %s %v", name, resp.Status, err)
	}
	if err := os.WriteFile(file, body, 0o644); err != nil {
		b.Fatal(err)
	}
	var obj struct {
		Metadata struct {
			ManagedFields json.RawMessage `json:"managedFields"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(body, &obj); err != nil {
		b.Fatalf("decoding payload %s: %v", name, err)
	}
	return len(body), len(obj.Metadata.ManagedFields)
}

// waitLeader waits until the controller holds the leader election lease: only then does it
// reconcile.
func waitLeader(b *testing.B, env *testenv.Env, ctl *process) {
	b.Helper()
	limit := time.Now().Add(2 * time.Minute)
	for {
		ctl.checkAlive(b)
		var lease coordinationv1.Lease
		err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: manager.LeaderElectionID}, &lease)
		if err == nil && lease.Spec.HolderIdentity != nil && *lease.Spec.HolderIdentity != "" {
			return
		}
		if time.Now().After(limit) {
			b.Fatalf("release-controller did not take the lease default/%s within 2 minutes (last: %v); the end of its log:\n%s", manager.LeaderElectionID, err, ctl.Tail(40))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// parallel calls f for 0..n-1 on workers goroutines and fails b on the first error, or when
// the controller exits meanwhile.
func parallel(b *testing.B, ctl *process, n, workers int, f func(i int) error) {
	b.Helper()
	var g errgroup.Group
	g.SetLimit(workers)
	for i := range n {
		if !ctl.Running() {
			break
		}
		g.Go(func() error { return f(i) })
	}
	err := g.Wait()
	ctl.checkAlive(b)
	if err != nil {
		b.Fatal(err)
	}
}

func jobVerification(name string) v1alpha1.Verification {
	return v1alpha1.Verification{Name: name, Job: &v1alpha1.JobBackend{Template: batchv1.JobTemplateSpec{Spec: podJobSpec()}}}
}

func podJobSpec() batchv1.JobSpec {
	return batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
		RestartPolicy: corev1.RestartPolicyNever,
		Containers:    []corev1.Container{{Name: "test", Image: "registry.example.com/tests:latest", Command: []string{"true"}}},
	}}}
}

func component(name string) v1alpha1.PinnedComponent {
	return v1alpha1.PinnedComponent{Name: name, Image: "registry.example.com/product/" + name + "@sha256:" + fmt.Sprintf("%064x", len(name))}
}

// newPayload is a payload of stream nightly with verifications as the stream controller
// writes it: the job templates kept in the stream's templates ConfigMap (templatesConfigMap),
// the payload naming it.
func newPayload(ns, tag string, verifications ...v1alpha1.Verification) *v1alpha1.ReleasePayload {
	_, ref := templatesConfigMap(ns, verifications)
	return &v1alpha1.ReleasePayload{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: tag},
		Spec: v1alpha1.ReleasePayloadSpec{
			PayloadCoordinates:    v1alpha1.PayloadCoordinates{Stream: "nightly", Tag: tag},
			Components:            []v1alpha1.PinnedComponent{component("api"), component("web")},
			PayloadCreationConfig: v1alpha1.PayloadCreationConfig{Repository: "registry.example.com/product/release"},
			PayloadVerificationConfig: v1alpha1.PayloadVerificationConfig{
				Verifications: stream.WithoutBackends(verifications), TemplatesFrom: ref,
			},
		},
	}
}

// templatesConfigMap is the templates ConfigMap of stream nightly in ns with verifications
// (without the owner reference: the benchmarks create no stream) and a payload's reference
// to it.
func templatesConfigMap(ns string, verifications []v1alpha1.Verification) (*corev1.ConfigMap, *v1alpha1.VerificationTemplates) {
	cm, ref, err := stream.VerificationTemplates(&v1alpha1.ReleaseStream{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "nightly"}}, verifications)
	if err != nil {
		panic(err) // a verification list always encodes
	}
	cm.OwnerReferences = nil
	return cm, ref
}

// jobLabels are the labels the controller puts on the jobs it creates.
func jobLabels(tag, jobType, verify string) map[string]string {
	l := map[string]string{v1alpha1.LabelStream: "nightly", v1alpha1.LabelPayload: tag, v1alpha1.LabelJobType: jobType}
	if verify != "" {
		l[v1alpha1.LabelVerify] = verify
	}
	return l
}

func benchJob(name string, labels, annotations map[string]string) *batchv1.Job {
	return &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: payloadNamespace, Name: name, Labels: labels, Annotations: annotations}, Spec: podJobSpec()}
}

// finishJob lets a job succeed as the Kubernetes job controller would, reading it again when
// it changed since it was read.
func finishJob(ctx context.Context, env *testenv.Env, job *batchv1.Job) error {
	first := true
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if !first {
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(job), job); err != nil {
				return err
			}
		}
		first = false
		jobstatus.Succeeded(job, metav1.NewTime(time.Now().Truncate(time.Second)))
		return env.Client.Status().Update(ctx, job)
	})
	if err != nil {
		return fmt.Errorf("finishing job %s: %w", job.Name, err)
	}
	return nil
}

// inFlight: Ready, with one run recorded for every verification.
func inFlight(p *v1alpha1.ReleasePayload) bool {
	if p.Status.Phase != v1alpha1.PhaseReady || len(p.Status.Verifications) != jobsPerPayload {
		return false
	}
	for _, v := range p.Status.Verifications {
		if len(v.Runs) != 1 {
			return false
		}
	}
	return true
}

func isAccepted(p *v1alpha1.ReleasePayload) bool {
	return meta.IsStatusConditionTrue(p.Status.Conditions, v1alpha1.ConditionPayloadAccepted)
}

// countLogEntries counts the payloads of tags that have an entry in the release log.
func countLogEntries(b *testing.B, env *testenv.Env, tags map[string]bool) int {
	b.Helper()
	var logs v1alpha1.ReleaseLogList
	if err := env.Client.List(context.Background(), &logs, client.InNamespace(releaselog.DefaultNamespace)); err != nil {
		b.Fatalf("listing the release log: %v", err)
	}
	seen := map[string]bool{}
	for _, day := range logs.Items {
		for _, e := range day.Spec.Entries {
			if tags[e.Version] {
				seen[e.Version] = true
			}
		}
	}
	return len(seen)
}

// payloadWatch follows the payloads through an informer (which re-lists and re-watches when
// the API server drops a slow watch) and notes when each was first seen accepted.
type payloadWatch struct {
	mu       sync.Mutex
	latest   map[string]*v1alpha1.ReleasePayload
	accepted map[string]time.Time // when the event showing PayloadAccepted=True arrived
	changed  chan struct{}
	cancel   context.CancelFunc
}

func watchPayloads(b *testing.B, env *testenv.Env) *payloadWatch {
	b.Helper()
	pw := &payloadWatch{latest: map[string]*v1alpha1.ReleasePayload{}, accepted: map[string]time.Time{}, changed: make(chan struct{}, 1)}
	observe := func(obj any) {
		p, ok := obj.(*v1alpha1.ReleasePayload)
		if !ok {
			return
		}
		received := time.Now()
		pw.mu.Lock()
		pw.latest[p.Name] = p
		if _, done := pw.accepted[p.Name]; !done && isAccepted(p) {
			pw.accepted[p.Name] = received
		}
		pw.mu.Unlock()
		select {
		case pw.changed <- struct{}{}:
		default:
		}
	}
	pw.cancel = watch(b, env.Config, cache.Options{Scheme: env.Client.Scheme(), DefaultNamespaces: map[string]cache.Config{payloadNamespace: {}}}, &v1alpha1.ReleasePayload{}, observe, "payload")
	return pw
}

// waitAll waits until ready holds for the latest version of every named payload, printing
// progress every 15s. It fails when no payload moved for stallTimeout, when the benchmark's
// deadline passes or when the controller exits.
func (pw *payloadWatch) waitAll(b *testing.B, ctl *process, what string, names []string, ready func(*v1alpha1.ReleasePayload) bool) {
	b.Helper()
	start := time.Now()
	end := deadline()
	report := time.NewTicker(15 * time.Second)
	defer report.Stop()
	check := time.NewTicker(time.Second)
	defer check.Stop()
	last, lastMoved := -1, time.Now()
	for {
		pw.mu.Lock()
		var done int
		for _, name := range names {
			if p := pw.latest[name]; p != nil && ready(p) {
				done++
			}
		}
		pw.mu.Unlock()
		if done == len(names) {
			return
		}
		if done != last {
			last, lastMoved = done, time.Now()
		}
		select {
		case <-pw.changed:
		case <-report.C:
			progressf("%s: %d/%d (%s)", what, done, len(names), time.Since(start).Round(time.Second))
		case <-check.C:
		case <-ctl.Exited():
		}
		ctl.checkAlive(b)
		if time.Since(lastMoved) > stallTimeout {
			b.Fatalf("%s: stuck at %d of %d payloads for %s; the end of the controller's log:\n%s", what, done, len(names), stallTimeout, ctl.Tail(40))
		}
		if time.Now().After(end) {
			b.Fatalf("%s: only %d of %d payloads before the benchmark's deadline (go test -timeout)", what, done, len(names))
		}
	}
}

func (pw *payloadWatch) acceptedAt(name string) time.Time {
	pw.mu.Lock()
	defer pw.mu.Unlock()
	return pw.accepted[name]
}

// lastAccepted is when the last payload was seen accepted.
func (pw *payloadWatch) lastAccepted() time.Time {
	pw.mu.Lock()
	defer pw.mu.Unlock()
	var last time.Time
	for _, t := range pw.accepted {
		if t.After(last) {
			last = t
		}
	}
	return last
}

func (pw *payloadWatch) stop() { pw.cancel() }

// reportSlowest prints when the slowest payloads' jobs were finished (since the first) and how
// long their verdicts took: slow verdicts bunched at one moment point at a stall of the
// machine or the API server, spread ones at the controller.
func reportSlowest(names []string, latencies []time.Duration, done []time.Time, start time.Time) {
	order := make([]int, len(names))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return cmp.Compare(latencies[b], latencies[a]) })
	var slowest []string
	for _, i := range order[:min(len(order), 10)] {
		slowest = append(slowest, fmt.Sprintf("+%s:%s", done[i].Sub(start).Round(100*time.Millisecond), latencies[i].Round(10*time.Millisecond)))
	}
	progressf("slowest verdicts (jobs finished at +t : verdict after): %s", strings.Join(slowest, " "))
}

// reportWindows prints p50, p99 and max of the verdicts whose jobs finished in each window of
// the finish phase: a slow window against steady ones is a pause, a slow end a backlog.
func reportWindows(latencies []time.Duration, done []time.Time, start time.Time, window time.Duration) {
	var windows [][]time.Duration
	for i, d := range latencies {
		w := int(done[i].Sub(start) / window)
		for len(windows) <= w {
			windows = append(windows, nil)
		}
		windows[w] = append(windows[w], d)
	}
	parts := make([]string, 0, len(windows))
	for w, ds := range windows {
		if len(ds) == 0 {
			continue
		}
		slices.Sort(ds)
		parts = append(parts, fmt.Sprintf("+%s:%d/%d/%d", time.Duration(w)*window, percentile(ds, 50).Milliseconds(),
			percentile(ds, 99).Milliseconds(), ds[len(ds)-1].Milliseconds()))
	}
	progressf("verdicts by when their jobs finished (+t: p50/p99/max ms): %s", strings.Join(parts, " "))
}
