package changelog

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
)

// apiRepo: c1 <- c2 "Add thing (#34)" <- m1 merge of feature f1 <- c3.
type apiRepo struct {
	*testRepo
	c1, c2, f1, m1, c3 plumbing.Hash
}

func newAPIRepo(t *testing.T) *apiRepo {
	r := &apiRepo{testRepo: newTestRepo(t)}
	r.c1 = r.commit("Initial commit")
	r.c2 = r.commit("Add thing (#34)\n\nA longer description.\n\nFixes ABC-123.\n", r.c1)
	r.f1 = r.commit("Feature work on the branch\n", r.c2)
	r.setBranch("branch", r.f1)
	r.m1 = r.commit("Merge pull request #12 from user/branch\n\nAdd the feature\n\nImplements XYZ-9", r.c2, r.f1)
	r.c3 = r.commit("DEF-7: direct fix\n", r.m1)
	r.setBranch("master", r.c3)
	return r
}

func img(d string) string { return "registry.example.com/rel@sha256:" + strings.Repeat(d, 64)[:64] }

func TestComputeCommitsAndImageSets(t *testing.T) {
	api := newAPIRepo(t)
	cache := newCache(t, RepoCacheOptions{})
	missing := "file://" + t.TempDir() + "/does-not-exist"
	from := Release{Name: "1.0.0", Digest: "sha256:from", Components: []Component{
		{Name: "api", Image: img("1"), Source: api.url(), Revision: api.c1.String()},
		{Name: "api-tests", Image: img("2"), Source: api.url(), Revision: api.c1.String()},
		{Name: "removed", Image: img("3"), Source: api.url(), Revision: api.c1.String()},
		{Name: "rebuilt", Image: img("4"), Source: api.url(), Revision: api.c2.String()},
		{Name: "same", Image: img("5"), Source: api.url(), Revision: api.c2.String()},
		{Name: "broken", Image: img("6"), Source: missing, Revision: api.c1.String()},
		{Name: "unlabelled", Image: img("7")},
	}}
	to := Release{Name: "1.0.1", Digest: "sha256:to", PromotedFrom: "ci:1.0.1", Components: []Component{
		{Name: "api", Image: img("a"), Source: api.url(), Revision: api.c3.String()},
		{Name: "api-tests", Image: img("b"), Source: api.url(), Revision: api.c2.String()},
		{Name: "new", Image: img("c"), Source: api.url(), Revision: api.c3.String()},
		{Name: "rebuilt", Image: img("d"), Source: api.url(), Revision: api.c2.String()},
		{Name: "same", Image: img("5"), Source: api.url(), Revision: api.c2.String()},
		{Name: "broken", Image: img("e"), Source: missing, Revision: api.c3.String()},
		{Name: "unlabelled", Image: img("f")},
	}}
	cl, err := Compute(context.Background(), cache, from, to, Options{IssueURLPrefix: "https://issues.example.com/browse/"})
	if err != nil {
		t.Fatal(err)
	}
	if got := names(cl.NewImages); !slices.Equal(got, []string{"new"}) {
		t.Errorf("new = %v", got)
	}
	if got := names(cl.RemovedImages); !slices.Equal(got, []string{"removed"}) {
		t.Errorf("removed = %v", got)
	}
	if got := names(cl.RebuiltImages); !slices.Equal(got, []string{"rebuilt", "unlabelled"}) {
		t.Errorf("rebuilt = %v", got)
	}
	if got := names(cl.UpdatedImages); !slices.Equal(got, []string{"api", "api-tests", "broken"}) {
		t.Errorf("updated = %v", got)
	}
	rb := findImage(t, cl.RebuiltImages, "rebuilt")
	if rb.Image != img("d") || rb.FromImage != img("4") || rb.Revision != api.c2.String() {
		t.Errorf("rebuilt = %+v", rb)
	}

	a := findImage(t, cl.UpdatedImages, "api")
	if a.Error != "" || a.ForcePushed || a.Truncated {
		t.Fatalf("api: %+v", a)
	}
	var shas []string
	for _, c := range a.Commits {
		shas = append(shas, c.SHA)
	}
	if want := []string{api.c3.String(), api.m1.String(), api.c2.String()}; !slices.Equal(shas, want) {
		t.Fatalf("api commits = %v, want %v (first parents only, no %s)", shas, want, api.f1)
	}
	c3, m1, c2 := a.Commits[0], a.Commits[1], a.Commits[2]
	if c3.PullRequest != 0 || c3.Merge || !slices.Equal(c3.Issues, []string{"DEF-7"}) || c3.Subject != "DEF-7: direct fix" {
		t.Errorf("c3 = %+v", c3)
	}
	if m1.PullRequest != 12 || !m1.Merge || m1.Subject != "Merge pull request #12 from user/branch" ||
		m1.Title != "Add the feature" || !slices.Equal(m1.Issues, []string{"XYZ-9"}) {
		t.Errorf("m1 = %+v", m1)
	}
	if c2.PullRequest != 34 || c2.Merge || c2.Title != "Add thing (#34)" || !slices.Equal(c2.Issues, []string{"ABC-123"}) {
		t.Errorf("c2 = %+v", c2)
	}
	if c2.Author != "Jane Dev" || c2.AuthorEmail != "jane@example.com" || c2.Time.IsZero() || !c3.Time.After(c2.Time) {
		t.Errorf("c2 author/time = %+v", c2)
	}
	if c2.URL != "" || c2.PullURL != "" {
		t.Errorf("file:// sources must not get web links: %+v", c2)
	}

	at := findImage(t, cl.UpdatedImages, "api-tests")
	if len(at.Commits) != 1 || at.Commits[0].SHA != api.c2.String() {
		t.Errorf("api-tests commits = %+v", at.Commits)
	}

	b := findImage(t, cl.UpdatedImages, "broken")
	// The status of the failure, never the remote's own text (see netguard_test.go).
	if b.Error != "the repository could not be fetched (repository not found)" || len(b.Commits) != 0 {
		t.Errorf("broken = %+v", b)
	}
	if cl.cacheable() {
		t.Error("a changelog with an unreachable repository must not be cacheable")
	}

	// JSON in the OSRC shape.
	data, err := json.Marshal(cl)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		From, To      map[string]any
		UpdatedImages []map[string]any `json:"updatedImages"`
		NewImages     []map[string]any `json:"newImages"`
		RemovedImages []map[string]any `json:"removedImages"`
		RebuiltImages []map[string]any `json:"rebuiltImages"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.To["name"] != "1.0.1" || doc.To["digest"] != "sha256:to" || doc.To["promotedFrom"] != "ci:1.0.1" || doc.From["created"] != "0001-01-01T00:00:00Z" {
		t.Errorf("from/to = %v %v", doc.From, doc.To)
	}
	if len(doc.NewImages) != 1 || len(doc.RemovedImages) != 1 || len(doc.RebuiltImages) != 2 || len(doc.UpdatedImages) != 3 {
		t.Fatalf("json sets: %s", data)
	}
	ja := doc.UpdatedImages[0]
	if ja["name"] != "api" || ja["path"] != api.url() || ja["commit"] != api.c3.String() || ja["shortCommit"] != api.c3.String()[:8] ||
		ja["imageRef"] != "sha256:"+strings.Repeat("a", 64) || ja["fromCommit"] != api.c1.String() {
		t.Errorf("updated api json = %v", ja)
	}
	jm := ja["commits"].([]any)[1].(map[string]any)
	if jm["subject"] != "Add the feature" || jm["pullID"] != float64(12) || jm["commitID"] != api.m1.String()[:8] ||
		jm["issues"].(map[string]any)["XYZ-9"] != "https://issues.example.com/browse/XYZ-9" || jm["commitDate"] == nil {
		t.Errorf("merge commit json = %v", jm)
	}
	if doc.UpdatedImages[2]["error"] == nil {
		t.Errorf("broken json has no error: %v", doc.UpdatedImages[2])
	}

	md := cl.Markdown()
	for _, want := range []string{"# 1.0.1", "Promoted from ci:1.0.1", "## Changes from 1.0.0", "### New images", "### Removed images",
		"### Rebuilt images without code change", "### api\n", "* Add the feature #12 " + api.m1.String()[:8] + " [XYZ-9](https://issues.example.com/browse/XYZ-9)",
		"* Add thing (#34) #34", "### broken\n\n* Error: the repository could not be fetched (repository not found)"} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
}

func TestForcePush(t *testing.T) {
	r := newTestRepo(t)
	a1 := r.commit("one")
	a2 := r.commit("two (#1)", a1)
	a3 := r.commit("three (#2)", a2)
	r.setBranch("master", a3)
	cache := newCache(t, RepoCacheOptions{})
	rel := func(name, rev string) Release {
		return Release{Name: name, Digest: "sha256:" + name, Components: []Component{{Name: "op", Image: img(name[:1]), Source: r.url(), Revision: rev}}}
	}
	cl, err := Compute(context.Background(), cache, rel("1", a2.String()), rel("2", a3.String()), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if op := findImage(t, cl.UpdatedImages, "op"); len(op.Commits) != 1 || op.Commits[0].SHA != a3.String() || op.ForcePushed {
		t.Fatalf("before the force push: %+v", op)
	}

	// Rewrite history: master now a2 <- b3 <- b4; a3 is reachable from no ref of origin.
	b3 := r.commit("rewritten three (#3)", a2)
	b4 := r.commit("four (#4)", b3)
	r.setBranch("master", b4)

	cl, err = Compute(context.Background(), cache, rel("2", a3.String()), rel("3", b4.String()), Options{})
	if err != nil {
		t.Fatal(err)
	}
	op := findImage(t, cl.UpdatedImages, "op")
	if op.Error != "" || !op.ForcePushed || op.MergeBase != a2.String() || !strings.Contains(op.Note, "force push") {
		t.Fatalf("force push not reported: %+v", op)
	}
	if len(op.Commits) != 2 || op.Commits[0].SHA != b4.String() || op.Commits[1].SHA != b3.String() {
		t.Fatalf("commits since merge base = %+v", op.Commits)
	}
	if !cl.cacheable() {
		t.Error("a force push is not a transient error")
	}
	if md := cl.Markdown(); !strings.Contains(md, "Note: history rewritten (force push)") {
		t.Errorf("markdown lacks the note:\n%s", md)
	}

	// A revision the clone never saw and no ref reaches: a per-component error.
	orphan := r.commit("orphan", a1)
	cl, err = Compute(context.Background(), newCache(t, RepoCacheOptions{}), rel("4", orphan.String()), rel("5", b4.String()), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if op := findImage(t, cl.UpdatedImages, "op"); !strings.Contains(op.Error, "revision "+orphan.String()+" not found") {
		t.Fatalf("orphan: %+v", op)
	}

	// Rollback: new is an ancestor of old.
	cl, err = Compute(context.Background(), cache, rel("6", b4.String()), rel("7", a2.String()), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if op := findImage(t, cl.UpdatedImages, "op"); len(op.Commits) != 0 || op.ForcePushed || !strings.Contains(op.Note, "rolled back") {
		t.Fatalf("rollback: %+v", op)
	}
}

func TestMaxCommitsAndSideBranch(t *testing.T) {
	r := newTestRepo(t)
	base := r.commit("base")
	side := r.commit("side release fix", base) // old revision built from a release branch
	r.setBranch("release", side)
	head := base
	for i := 0; i < 5; i++ {
		head = r.commit("main commit", head)
	}
	head = r.commit("Merge pull request #9 from x/release", head, side)
	r.setBranch("master", head)
	cache := newCache(t, RepoCacheOptions{})
	rel := func(name, rev string) Release {
		return Release{Name: name, Components: []Component{{Name: "c", Image: img(name), Source: r.url(), Revision: rev}}}
	}
	cl, err := Compute(context.Background(), cache, rel("1", side.String()), rel("2", head.String()), Options{})
	if err != nil {
		t.Fatal(err)
	}
	c := findImage(t, cl.UpdatedImages, "c")
	if c.ForcePushed || c.Truncated || len(c.Commits) != 6 || c.Commits[0].PullRequest != 9 {
		t.Fatalf("side branch: %+v", c)
	}
	cl, err = Compute(context.Background(), cache, rel("1", base.String()), rel("2", head.String()), Options{MaxCommits: 2})
	if err != nil {
		t.Fatal(err)
	}
	if c := findImage(t, cl.UpdatedImages, "c"); !c.Truncated || len(c.Commits) != 2 {
		t.Fatalf("truncation: %+v", c)
	}
}

func TestGeneratorCachesAndSingleflight(t *testing.T) {
	api := newAPIRepo(t)
	var computations atomic.Int32
	gate := make(chan struct{})
	started := make(chan struct{}, 100)
	gen := NewGenerator(newCache(t, RepoCacheOptions{}), GeneratorOptions{CacheSize: 2, OnCompute: func(from, to Release) {
		computations.Add(1)
		started <- struct{}{}
		<-gate
	}})
	rel := func(d, rev string) Release {
		return Release{Name: d, Digest: "sha256:" + d, Components: []Component{{Name: "api", Image: img(d), Source: api.url(), Revision: rev}}}
	}
	from, to := rel("a", api.c1.String()), rel("b", api.c3.String())

	const n = 8
	results := make([]*ChangeLog, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cl, err := gen.ChangeLog(context.Background(), from, to)
			if err != nil {
				t.Error(err)
			}
			results[i] = cl
		}()
	}
	<-started // one computation is under way; the others wait on it or later hit the cache
	close(gate)
	wg.Wait()
	if got := computations.Load(); got != 1 {
		t.Fatalf("%d computations for one pair, want 1", got)
	}
	for _, cl := range results {
		if cl != results[0] || cl == nil {
			t.Fatal("callers got different results")
		}
	}
	if len(results[0].UpdatedImages) != 1 || len(results[0].UpdatedImages[0].Commits) != 3 {
		t.Fatalf("result = %+v", results[0])
	}
	again, err := gen.ChangeLog(context.Background(), from, to)
	if err != nil || again != results[0] || computations.Load() != 1 {
		t.Fatalf("cache miss: %v %d", err, computations.Load())
	}

	// LRU bound: two more pairs push the first out.
	for _, d := range []string{"c", "d"} {
		if _, err := gen.ChangeLog(context.Background(), from, rel(d, api.c2.String())); err != nil {
			t.Fatal(err)
		}
	}
	if gen.Len() != 2 {
		t.Fatalf("cache holds %d", gen.Len())
	}
	if _, ok := gen.Cached("sha256:a", "sha256:b"); ok {
		t.Fatal("least recently used pair not evicted")
	}
	if _, err := gen.ChangeLog(context.Background(), from, to); err != nil || computations.Load() != 4 {
		t.Fatalf("recompute after eviction: %v %d", err, computations.Load())
	}

	// A transient error (unreachable repository) is not cached.
	bad := func(d, rev string) Release {
		return Release{Name: d, Digest: "sha256:" + d, Components: []Component{{Name: "x", Image: img(d), Source: "file://" + t.TempDir() + "/nope", Revision: rev}}}
	}
	before := computations.Load()
	for range 2 {
		cl, err := gen.ChangeLog(context.Background(), bad("e", "1111111111111111111111111111111111111111"), bad("f", "2222222222222222222222222222222222222222"))
		if err != nil || cl.UpdatedImages[0].Error == "" {
			t.Fatalf("unreachable: %v %+v", err, cl)
		}
	}
	if got := computations.Load() - before; got != 2 {
		t.Fatalf("errors were cached: %d computations", got)
	}
}
