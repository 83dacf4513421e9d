//go:build !unit

package scale

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/manager"
)

const (
	// fleetSize is how many busy streams each test runs.
	fleetSize = 100
	// convergeTimeout bounds the waits for a fleet's payloads: generous, it is no measurement.
	convergeTimeout = 8 * time.Minute
	// quietIntervals is how many import intervals the idle streams' status writes are counted over.
	quietIntervals = 5
)

func never(int) bool { return false }

// TestNewStreamAmongBusyStreamsGetsItsPayload runs one controller with a hundred streams that
// import every two seconds, then adds one more stream and sees it get its payload, built,
// verified and accepted. On the way it counts how often the idle streams write their status.
func TestNewStreamAmongBusyStreamsGetsItsPayload(t *testing.T) {
	f := newFleet(t)
	c := startReplica(t, "solo", f.logNS)
	running := []*replica{c}
	waitLeader(t, running...)

	f.addStreams(t, fleetSize, never)
	start := time.Now()
	snap := f.waitAllAccepted(t, f.streams, convergeTimeout, running)
	t.Logf("%d streams each have an accepted payload %s after they were created: %s", fleetSize, time.Since(start).Round(time.Second), snap.summary())
	f.checkVerdicts(t, snap, f.streams)

	// The streams are idle now: their components do not change. Once every status says so,
	// count the status writes over a few import intervals.
	f.waitStatusSettled(t, f.streams, running)
	time.Sleep(importInterval)
	f.measureIdleStatusWrites(t, running)

	// A new stream among the busy ones gets its payload.
	start = time.Now()
	f.addStream(t, fleetSize, "s-new", false)
	snap = f.waitAllAccepted(t, []string{"s-new"}, convergeTimeout, running)
	t.Logf("the new stream's payload %s is accepted %s after the stream was created", snap.payloads["s-new"][0].Name, time.Since(start).Round(100*time.Millisecond))
	f.checkVerdicts(t, snap, f.streams)
	f.waitStatusSettled(t, []string{"s-new"}, running)
	f.checkJobsOncePerRun(t, snap)
	f.waitReleaseLogged(t, snap, running)
	if err := c.check(); err != nil {
		t.Error(err)
	}
	c.logWork(t)
}

// TestLeaderKilledMidFlightConverges runs two replicas with leader election and a hundred
// streams, kills the leader with SIGKILL while payloads are being built and verified, and
// sees the other replica take over and every stream and payload converge, with no job run
// twice and every acceptance logged once. The killed replica, started again, stays a follower.
func TestLeaderKilledMidFlightConverges(t *testing.T) {
	f := newFleet(t)
	a := startReplica(t, "a", f.logNS)
	b := startReplica(t, "b", f.logNS)
	leader := waitLeader(t, a, b)
	survivor := a
	if leader == a {
		survivor = b
	}
	firstHolder, err := leaseHolder(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("controller %s leads (lease holder %q)", leader.name, firstHolder)

	// Every 25th stream's verification waits for a gate, so that payloads are still in
	// flight however fast the others go.
	gated := func(i int) bool { return i%25 == 0 }
	f.addStreams(t, fleetSize, gated)
	waitFor(t, "a quarter of the payloads are built", convergeTimeout, []*replica{a, b}, func(ctx context.Context) (bool, string, error) {
		s, err := f.snapshot(ctx)
		if err != nil {
			return false, "", err
		}
		return s.created() >= fleetSize/4, s.summary(), nil
	})
	before, err := f.snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	leader.kill(t)
	killedAt := time.Now()
	t.Logf("killed the leader %s (SIGKILL) with %s", leader.name, before.summary())
	if before.count(v1alpha1.PhaseAccepted) == fleetSize {
		t.Fatalf("every payload was accepted before the leader was killed, despite the gated verifications: %s", before.summary())
	}

	var newHolder string
	waitFor(t, fmt.Sprintf("controller %s takes over the lease", survivor.name), 2*time.Minute, []*replica{survivor}, func(ctx context.Context) (bool, string, error) {
		holder, err := leaseHolder(ctx)
		if err != nil {
			return false, "", err
		}
		lead, err := survivor.isLeader(ctx)
		if err != nil {
			return false, "", err
		}
		newHolder = holder
		return lead && holder != "" && holder != firstHolder, fmt.Sprintf("lease holder %q (the killed leader was %q); %s reports leading: %v", holder, firstHolder, survivor.name, lead), nil
	})
	t.Logf("controller %s leads %s after the kill (lease holder %q)", survivor.name, time.Since(killedAt).Round(100*time.Millisecond), newHolder)

	f.openGate(t)
	running := []*replica{survivor}
	snap := f.waitAllAccepted(t, f.streams, convergeTimeout, running)
	t.Logf("every stream has an accepted payload %s after the kill: %s", time.Since(killedAt).Round(time.Second), snap.summary())
	f.checkVerdicts(t, snap, f.streams)
	f.checkJobsOncePerRun(t, snap)
	f.waitStatusSettled(t, f.streams, running)
	f.waitReleaseLogged(t, snap, running)

	// The killed replica comes back as a follower and disturbs nothing.
	restarted := startReplica(t, leader.name+"-restarted", f.logNS)
	running = append(running, restarted)
	waitFor(t, "the restarted controller is ready and campaigns for the lease", 2*time.Minute, running, func(ctx context.Context) (bool, string, error) {
		campaigning := strings.Contains(strings.ToLower(restarted.Log()), "attempting to acquire leader lease")
		return restarted.ready(ctx) && campaigning, fmt.Sprintf("ready: %v, campaigning: %v; log:\n%s", restarted.ready(ctx), campaigning, restarted.Tail(20)), nil
	})
	settled, err := f.snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for end := time.Now().Add(3 * importInterval); time.Now().Before(end); time.Sleep(500 * time.Millisecond) {
		for _, r := range running {
			if err := r.check(); err != nil {
				t.Fatal(err)
			}
		}
		lead, err := leaders(ctx, survivor, restarted)
		if err != nil {
			t.Fatal(err)
		}
		if len(lead) != 1 || lead[0] != survivor {
			t.Fatalf("after the killed replica restarted, the replicas reporting to lead are %v, want only %s", names(lead), survivor.name)
		}
		if holder, err := leaseHolder(ctx); err != nil || holder != newHolder {
			t.Fatalf("after the killed replica restarted, the lease holder is %q (%v), want %q still", holder, err, newHolder)
		}
		now, err := f.snapshot(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if now.count(v1alpha1.PhaseAccepted) != fleetSize || len(now.jobs) != len(settled.jobs) {
			t.Fatalf("after the killed replica restarted, the fleet changed: %s, was %s", now.summary(), settled.summary())
		}
	}
	survivor.logWork(t)
	if strings.Contains(strings.ToLower(restarted.Log()), "successfully acquired lease") {
		t.Errorf("the restarted replica acquired the lease while %s held it; its log:\n%s", survivor.name, restarted.Tail(40))
	}
}

// clientPatches sums the PATCH requests the replicas' clients sent (client-go's
// rest_client_requests_total), for the log; -1 when a replica's metrics cannot be read.
func clientPatches(ctx context.Context, replicas []*replica) float64 {
	total := 0.0
	for _, r := range replicas {
		metrics, err := r.scrape(ctx)
		if err != nil {
			return -1
		}
		v, _ := metricValue(metrics, "rest_client_requests_total", map[string]string{"method": "PATCH"})
		total += v
	}
	return total
}

func names(rs []*replica) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.name)
	}
	return out
}

// waitLeader waits until every replica is ready and exactly one reports leading, and returns it.
func waitLeader(t testing.TB, replicas ...*replica) *replica {
	t.Helper()
	var leader *replica
	waitFor(t, "the controllers are ready and one leads", 2*time.Minute, replicas, func(ctx context.Context) (bool, string, error) {
		var notReady []string
		for _, r := range replicas {
			if !r.ready(ctx) {
				notReady = append(notReady, r.name)
			}
		}
		lead, err := leaders(ctx, replicas...)
		if err != nil {
			return false, "", err
		}
		holder, err := leaseHolder(ctx)
		if err != nil {
			return false, "", err
		}
		if len(lead) == 1 {
			leader = lead[0]
		}
		return len(notReady) == 0 && len(lead) == 1 && holder != "",
			fmt.Sprintf("not ready: %v; reporting to lead: %v; lease holder %q", notReady, names(lead), holder), nil
	})
	return leader
}

// waitStatusSettled waits until each stream's status records its payloads' verdicts: its
// newest payload, its newest accepted one (published) and how many were accepted and rejected.
func (f *fleet) waitStatusSettled(t testing.TB, streams []string, running []*replica) {
	t.Helper()
	waitFor(t, fmt.Sprintf("the status of %d streams records their verdicts", len(streams)), 2*time.Minute, running, func(ctx context.Context) (bool, string, error) {
		s, err := f.progress(ctx)
		if err != nil {
			return false, "", err
		}
		var behind []string
		for _, name := range streams {
			st, list := s.streams[name], s.payloads[name]
			if st == nil || len(list) != f.perStream {
				behind = append(behind, name)
				continue
			}
			var accepted, rejected int32
			var latestAccepted, published string
			for _, p := range list {
				switch p.Status.Phase {
				case v1alpha1.PhaseAccepted:
					accepted++
					latestAccepted, published = p.Name, p.Status.PayloadImage
				case v1alpha1.PhaseRejected:
					rejected++
				}
			}
			if st.Status.LatestPayload != list[len(list)-1].Name || st.Status.LatestAccepted != latestAccepted || st.Status.PublishedImage != published ||
				st.Status.Payloads.Accepted != accepted || st.Status.Payloads.Rejected != rejected || !meta.IsStatusConditionTrue(st.Status.Conditions, v1alpha1.ConditionReady) {
				behind = append(behind, name)
			}
		}
		return len(behind) == 0, fmt.Sprintf("%d streams' status does not record their verdicts:\n%s", len(behind), s.describe(behind, 10)), nil
	})
}

// measureIdleStatusWrites counts, over quietIntervals import intervals, the status writes the
// API server received for releasestreams/status and the changes its watch delivered for the
// fleet's streams, logs them, and checks that idle streams do not write on every import.
func (f *fleet) measureIdleStatusWrites(t testing.TB, running []*replica) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	wc, err := client.NewWithWatch(env.Config, client.Options{Scheme: manager.NewScheme()})
	if err != nil {
		t.Fatal(err)
	}
	var list v1alpha1.ReleaseStreamList
	if err := wc.List(ctx, &list, client.InNamespace(f.ns)); err != nil {
		t.Fatal(err)
	}
	w, err := wc.Watch(ctx, &v1alpha1.ReleaseStreamList{}, client.InNamespace(f.ns), &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: list.ResourceVersion}})
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu       sync.Mutex
		modified int
		changed  = map[string]int{}
		done     = make(chan struct{})
	)
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			if ev.Type != watch.Modified {
				continue
			}
			if s, ok := ev.Object.(*v1alpha1.ReleaseStream); ok {
				mu.Lock()
				modified++
				changed[s.Name]++
				mu.Unlock()
			}
		}
	}()
	before, err := statusWrites(ctx)
	if err != nil {
		t.Fatal(err)
	}
	patchesBefore := clientPatches(ctx, running)
	window := quietIntervals * importInterval
	time.Sleep(window)
	after, err := statusWrites(ctx)
	if err != nil {
		t.Fatal(err)
	}
	patches := clientPatches(ctx, running) - patchesBefore
	w.Stop()
	<-done
	for _, r := range running {
		if err := r.check(); err != nil {
			t.Fatal(err)
		}
	}
	writes := int(after - before)
	mu.Lock()
	defer mu.Unlock()
	t.Logf("idle streams: %d status writes to releasestreams/status (API server's apiserver_request_total) in %s = %d import intervals of %s by %d streams: %.2f per stream per import interval; the watch saw %d changes of %d streams; the controller sent %.0f PATCH requests in all",
		writes, window, quietIntervals, importInterval, len(f.streams), float64(writes)/float64(len(f.streams)*quietIntervals), modified, len(changed), patches)
	if writes >= len(f.streams) {
		t.Errorf("idle streams wrote their status %d times in %d import intervals (%d streams; %d writes would be one per stream per import): a stream whose components did not change should not write its status on each import",
			writes, quietIntervals, len(f.streams), len(f.streams)*quietIntervals)
	}
}
