package releaselog_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/releaselog"
)

func TestConcurrentAddsLoseNothing(t *testing.T) {
	ns := env.Namespace(t)
	clock := clocktesting.NewFakeClock(at("2026-06-15T09:30:00Z"))
	c := start(t, ns, releaselog.Options{Namespace: ns, Clock: clock})

	// Five writers, as five replicas of the API server would have, take ten adds each: adds of
	// one writer take turns, the writers race each other and retry on conflict.
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
