package payload_test

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"golang.org/x/sync/errgroup"
	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/jobstatus"
	"github.com/release-controller/release-controller/internal/payload"
)

// BenchmarkAcceptanceLatency puts 1,000 payloads with 10 blocking Job verifications each in
// flight on a real API server, then finishes the jobs payload by payload (the 10 jobs of a
// payload together) and measures, per payload, the time from the last job's status write to
// the informer event that shows PayloadAccepted=True, and the status writes the controller
// made from the payload's creation to its acceptance (its own counter,
// release_controller_payload_status_writes_total).
//
// Two paces: "paced" finishes one payload every 100ms (100 job status writes a second, more
// than a real release cluster sees), so the figure is the controller's own delay, the 200ms
// batching delay included; "flood" finishes payloads as fast as 8 workers can, which saturates
// the API server of a 2-core machine, so that figure is mostly the API server's queueing.
//
//	make bench   (or: go test -run '^$' -bench AcceptanceLatency -benchtime 1x ./internal/payload/)
func BenchmarkAcceptanceLatency(b *testing.B) {
	b.Run("paced", func(b *testing.B) { benchmarkAcceptance(b, 100*time.Millisecond) })
	b.Run("flood", func(b *testing.B) { benchmarkAcceptance(b, 0) })
}

func benchmarkAcceptance(b *testing.B, interval time.Duration) {
	const (
		payloads       = 1000
		jobsPerPayload = 10
		setupWorkers   = 32
		floodWorkers   = 8
	)
	for b.Loop() {
		ctx := context.Background()
		ns := env.Namespace(b)
		w := watchPayloads(b, ns)
		writesBefore := testutil.ToFloat64(payload.StatusWrites)
		reconcilesBefore := reconcileCounts(b)

		names := make([]string, payloads)
		verifications := make([]v1alpha1.Verification, jobsPerPayload)
		for j := range verifications {
			verifications[j] = jobVerification(fmt.Sprintf("e2e-%d", j))
		}
		start := time.Now()
		runs := make([][]*batchv1.Job, payloads)
		parallel(b, payloads, setupWorkers, func(i int) error {
			names[i] = fmt.Sprintf("4.15.0-0.nightly-2026-11-22-%06d", i)
			if err := env.Client.Create(ctx, newPayload(ns, names[i], verifications...)); err != nil {
				return err
			}
			creation := benchJob(ns, "create-"+names[i], jobLabels(names[i], v1alpha1.JobTypeCreation, ""), nil)
			if err := env.Client.Create(ctx, creation); err != nil {
				return err
			}
			if err := setJobStatus(ctx, creation, true); err != nil {
				return err
			}
			for j := range jobsPerPayload {
				verify := fmt.Sprintf("e2e-%d", j)
				job := benchJob(ns, fmt.Sprintf("%s-%s", names[i], verify), jobLabels(names[i], v1alpha1.JobTypeVerification, verify),
					map[string]string{v1alpha1.AnnotationAttempt: "1"})
				if err := env.Client.Create(ctx, job); err != nil {
					return err
				}
				runs[i] = append(runs[i], job)
			}
			return nil
		})
		b.Logf("created %d payloads, %d creation jobs and %d verification jobs in %s", payloads, payloads, payloads*jobsPerPayload, time.Since(start).Round(time.Millisecond))

		// Wait until every payload is Ready with all its runs recorded: all in flight.
		w.waitAll(b, names, func(p *v1alpha1.ReleasePayload) bool {
			if p.Status.Phase != v1alpha1.PhaseReady {
				return false
			}
			for _, v := range p.Status.Verifications {
				if len(v.Runs) != 1 {
					return false
				}
			}
			return len(p.Status.Verifications) == jobsPerPayload
		})
		b.Logf("all %d payloads in flight after %s", payloads, time.Since(start).Round(time.Millisecond))

		lastJobDone := make([]time.Time, payloads)
		finishPayload := func(i int) error {
			var g errgroup.Group
			for _, job := range runs[i] {
				g.Go(func() error { return setJobStatus(ctx, job, true) })
			}
			err := g.Wait()
			lastJobDone[i] = time.Now()
			return err
		}
		finishStart := time.Now()
		if interval == 0 {
			parallel(b, payloads, floodWorkers, finishPayload)
		} else {
			tick := time.NewTicker(interval)
			var g errgroup.Group
			for i := range payloads {
				<-tick.C
				g.Go(func() error { return finishPayload(i) })
			}
			tick.Stop()
			if err := g.Wait(); err != nil {
				b.Fatal(err)
			}
		}
		b.Logf("finished %d jobs in %s", payloads*jobsPerPayload, time.Since(finishStart).Round(time.Millisecond))
		w.waitAll(b, names, isAccepted)

		latencies := make([]time.Duration, payloads)
		for i, name := range names {
			latencies[i] = w.acceptedAt(name).Sub(lastJobDone[i])
		}
		slices.Sort(latencies)
		p50, p99 := latencies[payloads/2], latencies[payloads*99/100]
		writesPerPayload := (testutil.ToFloat64(payload.StatusWrites) - writesBefore) / payloads
		b.ReportMetric(float64(p50.Milliseconds()), "p50-ms")
		b.ReportMetric(float64(p99.Milliseconds()), "p99-ms")
		b.ReportMetric(float64(latencies[payloads-1].Milliseconds()), "max-ms")
		b.ReportMetric(writesPerPayload, "writes/payload")
		b.Logf("last job done -> PayloadAccepted=True: p50 %s, p99 %s, max %s; status writes per payload from creation to acceptance: %.2f (job event delay %s)",
			p50, p99, latencies[payloads-1], writesPerPayload, payload.DefaultJobEventDelay)
		after := reconcileCounts(b)
		b.Logf("reconciles: %.0f success, %.0f requeue (write conflicts), %.0f error",
			after["success"]-reconcilesBefore["success"], after["requeue"]-reconcilesBefore["requeue"], after["error"]-reconcilesBefore["error"])
		w.stop()
		// What stays in the heap is mostly the controllers' caches of every payload and job
		// the API server holds now (this run's and any earlier run's).
		runtime.GC()
		var mem runtime.MemStats
		runtime.ReadMemStats(&mem)
		b.ReportMetric(float64(mem.HeapInuse)/(1<<20), "heap-MiB")
		b.Logf("heap in use after GC: %.0f MiB", float64(mem.HeapInuse)/(1<<20))
	}
}

// reconcileCounts reads controller-runtime's reconcile counter of the payload controller by result.
func reconcileCounts(b *testing.B) map[string]float64 {
	families, err := metrics.Registry.Gather()
	if err != nil {
		b.Fatal(err)
	}
	counts := map[string]float64{}
	for _, f := range families {
		if f.GetName() != "controller_runtime_reconcile_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["controller"] == "releasepayload" {
				counts[labels["result"]] += m.GetCounter().GetValue()
			}
		}
	}
	return counts
}

func benchJob(ns, name string, labels, annotations map[string]string) *batchv1.Job {
	return &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels, Annotations: annotations}, Spec: podJobSpec()}
}

// setJobStatus finishes a job as the Kubernetes job controller would.
func setJobStatus(ctx context.Context, job *batchv1.Job, succeeded bool) error {
	now := metav1.NewTime(time.Now().Truncate(time.Second))
	if succeeded {
		jobstatus.Succeeded(job, now)
	} else {
		jobstatus.Failed(job, now, 1, "", "")
	}
	return env.Client.Status().Update(ctx, job)
}

// parallel calls f for 0..n-1 on workers goroutines and fails b on the first error.
func parallel(b *testing.B, n, workers int, f func(i int) error) {
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

// payloadWatch follows the payloads of a namespace through an informer, which re-lists and
// re-watches when the API server drops a slow watch, and notes when each was first seen accepted.
type payloadWatch struct {
	mu       sync.Mutex
	latest   map[string]*v1alpha1.ReleasePayload
	accepted map[string]time.Time // when the event showing PayloadAccepted=True arrived
	changed  chan struct{}
	cancel   context.CancelFunc
}

func watchPayloads(b *testing.B, ns string) *payloadWatch {
	ctx, cancel := context.WithCancel(context.Background())
	c, err := cache.New(env.Config, cache.Options{Scheme: env.Client.Scheme(), DefaultNamespaces: map[string]cache.Config{ns: {}}})
	if err != nil {
		b.Fatal(err)
	}
	informer, err := c.GetInformer(ctx, &v1alpha1.ReleasePayload{})
	if err != nil {
		b.Fatal(err)
	}
	pw := &payloadWatch{latest: map[string]*v1alpha1.ReleasePayload{}, accepted: map[string]time.Time{}, changed: make(chan struct{}, 1), cancel: cancel}
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
	if _, err := informer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    observe,
		UpdateFunc: func(_, obj any) { observe(obj) },
	}); err != nil {
		b.Fatal(err)
	}
	go func() { _ = c.Start(ctx) }()
	if !c.WaitForCacheSync(ctx) {
		b.Fatal("payload informer did not sync")
	}
	return pw
}

func isAccepted(p *v1alpha1.ReleasePayload) bool {
	return meta.IsStatusConditionTrue(p.Status.Conditions, v1alpha1.ConditionPayloadAccepted)
}

// waitAll waits until ready holds for the latest version of every named payload.
func (pw *payloadWatch) waitAll(b *testing.B, names []string, ready func(*v1alpha1.ReleasePayload) bool) {
	b.Helper()
	deadline := time.After(30 * time.Minute)
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
		select {
		case <-pw.changed:
		case <-deadline:
			b.Fatalf("only %d of %d payloads reached the state", done, len(names))
		}
	}
}

func (pw *payloadWatch) acceptedAt(name string) time.Time {
	pw.mu.Lock()
	defer pw.mu.Unlock()
	return pw.accepted[name]
}

func (pw *payloadWatch) stop() { pw.cancel() }
