//go:build !unit

package releaselog_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/manager"
	"github.com/release-controller/release-controller/internal/releaselog"
)

func TestConcurrentAddsLoseNothing(t *testing.T) {
	ns := env.Namespace(t)
	clock := clocktesting.NewFakeClock(at("2026-06-15T09:30:00Z"))
	c := start(t, ns, releaselog.Options{Namespace: ns, Clock: clock})

	// Five writers, as five replicas of the API server would have, take ten adds each: the adds
	// of one writer are put into shared writes, the writers race each other and retry on
	// conflict.
	const writers = 50
	var replicas []*releaselog.Writer
	for range 5 {
		replicas = append(replicas, releaselog.NewWriter(c.Client, c.APIReader, releaselog.Options{Namespace: ns, Clock: clock}))
	}
	errs := make([]error, writers)
	days := make([]string, writers)
	var wg sync.WaitGroup
	for i := range writers {
		wg.Go(func() {
			days[i], errs[i] = replicas[i%len(replicas)].AddRelease(context.Background(), releaselog.Entry{
				Type: "release", Version: fmt.Sprintf("1.0.%d", i), Origin: "test", Author: "writer",
			})
		})
	}
	wg.Wait()
	for i := range writers {
		if errs[i] != nil || days[i] != "2026-06-15" {
			t.Errorf("writer %d: day %q, error %v", i, days[i], errs[i])
		}
	}

	l, err := getLog(ns, "release-2026-06-15")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, e := range l.Spec.Entries {
		seen[e.Version] = true
		if !e.Date.Time.Equal(clock.Now()) {
			t.Errorf("entry %s dated %s, want now", e.Version, e.Date)
		}
	}
	if len(l.Spec.Entries) != writers || len(seen) != writers {
		t.Errorf("%d entries, %d distinct; want %d of each", len(l.Spec.Entries), len(seen), writers)
	}
	waitLog(t, ns, "release-2026-06-15", func(g Gomega, l *v1alpha1.ReleaseLog) {
		g.Expect(l.Status.EntryCount).To(BeEquivalentTo(writers))
		g.Expect(l.Status.ObservedGeneration).To(Equal(l.Generation))
	})
	eventually(t, func(g Gomega) { g.Expect(c.Store.Entries("2026-06-15")).To(HaveLen(writers)) })
}

func TestAddReleaseChoosesTheDayAndCountsEntries(t *testing.T) {
	ns := env.Namespace(t)
	clock := clocktesting.NewFakeClock(at("2026-06-15T09:30:00Z"))
	c := start(t, ns, releaselog.Options{Namespace: ns, Clock: clock})
	ctx := context.Background()

	// A date in another zone lands on its UTC day; sub-second precision is dropped, as the API
	// keeps whole seconds.
	berlin := time.FixedZone("CEST", 2*3600)
	day, err := c.Writer.AddRelease(ctx, releaselog.Entry{Type: "hotfix", Version: "2.0.1", Origin: "ci",
		Date: time.Date(2026, 6, 15, 1, 30, 0, 5e8, berlin), Message: "fix", Link: "https://ci.example.com/1"})
	if err != nil || day != "2026-06-14" {
		t.Fatalf("day %q, error %v; want 2026-06-14", day, err)
	}
	l := waitLog(t, ns, "release-2026-06-14", func(g Gomega, l *v1alpha1.ReleaseLog) {
		g.Expect(l.Status.EntryCount).To(BeEquivalentTo(1))
	})
	got := l.Spec.Entries[0]
	if got.Type != "hotfix" || got.Message != "fix" || got.Link != "https://ci.example.com/1" || !got.Date.Time.Equal(at("2026-06-14T23:30:00Z")) {
		t.Errorf("stored entry %+v", got)
	}
	eventually(t, func(g Gomega) {
		g.Expect(c.Store.Entries("2026-06-14")).To(HaveLen(1))
		g.Expect(c.Store.Entries("2026-06-14")[0].Date).To(Equal(at("2026-06-14T23:30:00Z")))
	})
}

func TestAddReleaseChecksTheTypeAgainstTheAllowlist(t *testing.T) {
	ns := env.Namespace(t)
	clock := clocktesting.NewFakeClock(at("2026-06-15T09:30:00Z"))
	c := start(t, ns, releaselog.Options{Namespace: ns, Clock: clock, Types: releaselog.DefaultTypes()})
	ctx := context.Background()

	_, err := c.Writer.AddRelease(ctx, releaselog.Entry{Type: "deployment", Version: "1.0.0", Origin: "argocd"})
	if !errors.Is(err, releaselog.ErrTypeNotAllowed) || releaselog.KindOf(err) != releaselog.KindInvalidArgument {
		t.Errorf("a type outside the allowlist: %v", err)
	}
	if _, err := c.Writer.AddRelease(ctx, releaselog.Entry{Type: "promotion", Version: "1.0.0", Origin: "argocd"}); err != nil {
		t.Errorf("an allowed type: %v", err)
	}

	// Without types every type goes.
	open := releaselog.NewWriter(env.Client, env.Client, releaselog.Options{Namespace: ns, Clock: clock})
	if _, err := open.AddRelease(ctx, releaselog.Entry{Type: "deployment", Version: "1.0.0", Origin: "argocd"}); err != nil {
		t.Errorf("with an empty allowlist: %v", err)
	}
	l, err := getLog(ns, "release-2026-06-15")
	if err != nil || len(l.Spec.Entries) != 2 {
		t.Fatalf("want the 2 allowed entries, got %v (%v)", l.Spec.Entries, err)
	}
}

func TestAddReleaseChecksTheEntry(t *testing.T) {
	ns := env.Namespace(t)
	clock := clocktesting.NewFakeClock(at("2026-06-15T09:30:00Z"))
	c := start(t, ns, releaselog.Options{Namespace: ns, Clock: clock, TTL: 30 * 24 * time.Hour, FutureSkew: 5 * time.Minute})
	entry := func(date string) releaselog.Entry {
		return releaselog.Entry{Type: "release", Version: "1.0.0", Origin: "test", Date: at(date)}
	}
	withLink := entry("2026-06-15T09:00:00Z")
	withLink.Link = "ftp://example.com/file"
	tests := []struct {
		name     string
		entry    releaselog.Entry
		wantErr  error
		wantKind releaselog.Kind
	}{
		{"the oldest day kept", entry("2026-05-17T00:00:00Z"), nil, 0},
		{"a day older than the log keeps", entry("2026-05-16T23:59:59Z"), releaselog.ErrDateExpired, releaselog.KindFailedPrecondition},
		{"within the future skew", entry("2026-06-15T09:35:00Z"), nil, 0},
		{"beyond the future skew", entry("2026-06-15T09:35:01Z"), releaselog.ErrDateInFuture, releaselog.KindInvalidArgument},
		{"no version", releaselog.Entry{Type: "release", Origin: "test"}, releaselog.ErrInvalidEntry, releaselog.KindInvalidArgument},
		{"a link the API refuses", withLink, releaselog.ErrInvalidEntry, releaselog.KindInvalidArgument},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := c.Writer.AddRelease(context.Background(), tt.entry)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("error %v, want %v", err, tt.wantErr)
			}
			if err != nil && releaselog.KindOf(err) != tt.wantKind {
				t.Errorf("kind %d, want %d", releaselog.KindOf(err), tt.wantKind)
			}
		})
	}
	if _, err := getLog(ns, "release-2026-05-16"); err == nil {
		t.Error("an object was created for the expired day")
	}
}

func TestAddingAnIDTwiceAddsOnce(t *testing.T) {
	ns := env.Namespace(t)
	clock := clocktesting.NewFakeClock(at("2026-06-15T09:30:00Z"))
	c := start(t, ns, releaselog.Options{Namespace: ns, Clock: clock})
	ctx := context.Background()
	add := func(id, version string) {
		t.Helper()
		if _, err := c.Writer.AddRelease(ctx, releaselog.Entry{ID: id, Type: "release", Version: version, Origin: "test"}); err != nil {
			t.Fatal(err)
		}
	}
	add("pipeline/42", "1.0.0")
	add("pipeline/42", "1.0.0")
	add("pipeline/43", "1.0.1")
	add("", "1.0.2")
	add("", "1.0.2") // without an id nothing says it is the same event
	waitLog(t, ns, "release-2026-06-15", func(g Gomega, l *v1alpha1.ReleaseLog) {
		g.Expect(l.Spec.Entries).To(HaveLen(4))
		g.Expect(l.Status.EntryCount).To(BeEquivalentTo(4))
	})
	eventually(t, func(g Gomega) { g.Expect(c.Store.HasEntry("2026-06-15", "pipeline/42")).To(BeTrue()) })
}

// countingClient is a client that counts the writes going through it (creates, updates and
// patches, refused ones included) and holds each of them until open is closed.
type countingClient struct {
	client.Client
	open   <-chan struct{}
	writes atomic.Int64
}

func (c *countingClient) count() { <-c.open; c.writes.Add(1) }

func (c *countingClient) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	c.count()
	return c.Client.Create(ctx, obj, opts...)
}

func (c *countingClient) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	c.count()
	return c.Client.Update(ctx, obj, opts...)
}

func (c *countingClient) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	c.count()
	return c.Client.Patch(ctx, obj, patch, opts...)
}

// replica starts a second manager with nothing but its caches, as another replica of the API
// server would have, and returns its client and API reader.
func replica(t *testing.T, ns string, opts releaselog.Options) (client.Client, client.Reader) {
	t.Helper()
	mgr, err := manager.New(env.Config, manager.Options{MetricsAddr: "0", ProbeAddr: "0", Namespace: ns, ReleaseLog: opts})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("replica stopped with: %v", err)
		}
	})
	return mgr.GetClient(), mgr.GetAPIReader()
}

func TestTwoReplicasAddHundredsOfEntriesToOneDay(t *testing.T) {
	ns := env.Namespace(t)
	clock := clocktesting.NewFakeClock(at("2026-06-15T09:30:00Z"))
	opts := releaselog.Options{Namespace: ns, Clock: clock}
	c := start(t, ns, opts)
	otherClient, otherReader := replica(t, ns, opts)

	// Two replicas, each with its own cache, each called by 300 callers at once: 250 entries
	// of their own, and 50 events both log (the same ids). The first write of each replica is
	// held until every caller runs, so that the callers queue as a busy log's do.
	open := make(chan struct{})
	clients := []*countingClient{{Client: c.Client, open: open}, {Client: otherClient, open: open}}
	writers := []*releaselog.Writer{
		releaselog.NewWriter(clients[0], c.APIReader, opts),
		releaselog.NewWriter(clients[1], otherReader, opts),
	}
	const own, shared = 250, 50
	var running, wg sync.WaitGroup
	var failures atomic.Int64
	for r, w := range writers {
		for i := range own + shared {
			e := releaselog.Entry{ID: fmt.Sprintf("replica-%d/%d", r, i), Type: "release", Version: fmt.Sprintf("1.%d.%d", r, i), Origin: "test"}
			if i >= own {
				e.ID, e.Version = fmt.Sprintf("shared/%d", i), fmt.Sprintf("2.0.%d", i)
			}
			running.Add(1)
			wg.Go(func() {
				running.Done()
				if _, err := w.AddRelease(context.Background(), e); err != nil {
					failures.Add(1)
					t.Errorf("replica %d, %s: %v", r, e.Version, err)
				}
			})
		}
	}
	running.Wait()
	close(open)
	wg.Wait()
	if failures.Load() > 0 {
		t.FailNow()
	}

	l, err := getLog(ns, "release-2026-06-15")
	if err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	for _, e := range l.Spec.Entries {
		count[e.ID]++
	}
	for id, n := range count {
		if n != 1 {
			t.Errorf("%s is logged %d times", id, n)
		}
	}
	const entries = 2*own + shared
	if len(l.Spec.Entries) != entries || len(count) != entries {
		t.Errorf("%d entries, %d distinct ids; want %d of each", len(l.Spec.Entries), len(count), entries)
	}
	writes := clients[0].writes.Load() + clients[1].writes.Load()
	t.Logf("%d entries of 600 adds in %d writes (%d and %d)", entries, writes, clients[0].writes.Load(), clients[1].writes.Load())
	if writes > entries/10 {
		t.Errorf("%d writes for %d entries: the adds were not put together", writes, entries)
	}
	waitLog(t, ns, "release-2026-06-15", func(g Gomega, l *v1alpha1.ReleaseLog) {
		g.Expect(l.Status.EntryCount).To(BeEquivalentTo(entries))
	})
	eventually(t, func(g Gomega) { g.Expect(c.Store.Entries("2026-06-15")).To(HaveLen(entries)) })
}

func TestAddReleaseRefusesAnEntryWhenTheDayIsFull(t *testing.T) {
	ns := env.Namespace(t)
	clock := clocktesting.NewFakeClock(at("2026-06-15T09:30:00Z"))
	c := start(t, ns, releaselog.Options{Namespace: ns, Clock: clock, MaxEntriesPerDay: 3})
	ctx := context.Background()
	add := func(id, version, date string) error {
		_, err := c.Writer.AddRelease(ctx, releaselog.Entry{ID: id, Type: "release", Version: version, Origin: "test", Date: at(date)})
		return err
	}
	for i := range 3 {
		if err := add(fmt.Sprintf("event/%d", i), fmt.Sprintf("1.0.%d", i), "2026-06-15T09:00:00Z"); err != nil {
			t.Fatal(err)
		}
	}

	err := add("event/3", "1.0.3", "2026-06-15T09:00:00Z")
	if !errors.Is(err, releaselog.ErrDayFull) || releaselog.KindOf(err) != releaselog.KindFailedPrecondition {
		t.Fatalf("the fourth entry of a day of three: %v", err)
	}
	for _, want := range []string{"release-2026-06-15", "limit of 3 entries a day (--log-max-entries)"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error %q does not say %q", err, want)
		}
	}
	// An entry the day holds is no error at the cap: adding it again changes nothing.
	if err := add("event/1", "1.0.1", "2026-06-15T09:00:00Z"); err != nil {
		t.Errorf("adding a held id again at the cap: %v", err)
	}
	// Other days have room.
	if err := add("event/3", "1.0.3", "2026-06-14T09:00:00Z"); err != nil {
		t.Errorf("another day: %v", err)
	}
	if l, err := getLog(ns, "release-2026-06-15"); err != nil || len(l.Spec.Entries) != 3 {
		t.Errorf("the full day holds %v (%v), want its 3 entries", l.Spec.Entries, err)
	}
}

func TestAddReleaseKeepsADayOfLongEntriesWithinTheByteBudget(t *testing.T) {
	ns := env.Namespace(t)
	clock := clocktesting.NewFakeClock(at("2026-06-15T09:30:00Z"))
	const budget = 8000
	c := start(t, ns, releaselog.Options{Namespace: ns, Clock: clock, MaxDayBytes: budget})
	ctx := context.Background()
	long := strings.Repeat("é", v1alpha1.MaxReleaseLogMessageLength)

	// Entries of about 2.3 KB: a few fit in 8,000 bytes, then the day is full for them.
	var added int
	var err error
	for ; added < 10; added++ {
		_, err = c.Writer.AddRelease(ctx, releaselog.Entry{Type: "hotfix", Version: fmt.Sprintf("1.0.%d", added), Origin: "test", Message: long})
		if err != nil {
			break
		}
	}
	if !errors.Is(err, releaselog.ErrDayFull) || releaselog.KindOf(err) != releaselog.KindFailedPrecondition {
		t.Fatalf("after %d long entries: %v, want the day full", added, err)
	}
	if !strings.Contains(err.Error(), "8000 bytes") {
		t.Errorf("the error %q does not name the budget", err)
	}
	l, err := getLog(ns, "release-2026-06-15")
	if err != nil {
		t.Fatal(err)
	}
	if added < 2 || len(l.Spec.Entries) != added {
		t.Errorf("%d entries added, the day holds %d; want the same, at least 2", added, len(l.Spec.Entries))
	}
	spec, err := json.Marshal(l.Spec)
	if err != nil || len(spec) > budget {
		t.Errorf("the day's entries take %d bytes (%v), more than the budget of %d", len(spec), err, budget)
	}
}

func TestAnEntryTheAPIRefusesDoesNotFailTheOthersOfItsWrite(t *testing.T) {
	ns := env.Namespace(t)
	clock := clocktesting.NewFakeClock(at("2026-06-15T09:30:00Z"))
	opts := releaselog.Options{Namespace: ns, Clock: clock}
	c := start(t, ns, opts)
	createLog(t, ns, "release-2026-06-15", apiEntry("0.9.0", "2026-06-15T08:00:00Z"))

	// Twenty entries queue together, two of them with a link the API server refuses.
	open := make(chan struct{})
	w := releaselog.NewWriter(&countingClient{Client: c.Client, open: open}, c.APIReader, opts)
	errs := make([]error, 20)
	var running, wg sync.WaitGroup
	for i := range errs {
		e := releaselog.Entry{Type: "release", Version: fmt.Sprintf("1.0.%d", i), Origin: "test", Link: "https://ci.example.com/" + strconv.Itoa(i)}
		if i%10 == 3 {
			e.Link = "ftp://example.com/file"
		}
		running.Add(1)
		wg.Go(func() {
			running.Done()
			_, errs[i] = w.AddRelease(context.Background(), e)
		})
	}
	running.Wait()
	close(open)
	wg.Wait()

	for i, err := range errs {
		if i%10 == 3 {
			if !errors.Is(err, releaselog.ErrInvalidEntry) || !strings.Contains(err.Error(), "link") {
				t.Errorf("entry %d, with a bad link: %v", i, err)
			}
		} else if err != nil {
			t.Errorf("entry %d: %v", i, err)
		}
	}
	l, err := getLog(ns, "release-2026-06-15")
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Spec.Entries) != 1+18 {
		t.Errorf("the day holds %d entries, want the first and the 18 valid ones", len(l.Spec.Entries))
	}
}
