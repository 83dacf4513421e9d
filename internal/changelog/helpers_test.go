package changelog

import (
	"testing"
	"time"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// testRepo is a real bare repository in a temp dir, written with go-git's object API and
// served to the cache through file://.
type testRepo struct {
	t     *testing.T
	r     *git.Repository
	dir   string
	clock time.Time
}

func newTestRepo(t *testing.T) *testRepo {
	t.Helper()
	dir := t.TempDir()
	r, err := git.PlainInit(dir, true)
	if err != nil {
		t.Fatal(err)
	}
	return &testRepo{t: t, r: r, dir: dir, clock: time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)}
}

func (tr *testRepo) url() string { return "file://" + tr.dir }

func (tr *testRepo) commit(msg string, parents ...plumbing.Hash) plumbing.Hash {
	tr.t.Helper()
	s := tr.r.Storer
	blob := s.NewEncodedObject()
	blob.SetType(plumbing.BlobObject)
	w, _ := blob.Writer()
	_, _ = w.Write([]byte(msg + tr.clock.String()))
	_ = w.Close()
	bh, err := s.SetEncodedObject(blob)
	if err != nil {
		tr.t.Fatal(err)
	}
	tree := &object.Tree{Entries: []object.TreeEntry{{Name: "file", Mode: filemode.Regular, Hash: bh}}}
	to := s.NewEncodedObject()
	if err := tree.Encode(to); err != nil {
		tr.t.Fatal(err)
	}
	th, err := s.SetEncodedObject(to)
	if err != nil {
		tr.t.Fatal(err)
	}
	tr.clock = tr.clock.Add(time.Hour)
	sig := object.Signature{Name: "Jane Dev", Email: "jane@example.com", When: tr.clock}
	c := &object.Commit{Author: sig, Committer: sig, Message: msg, TreeHash: th, ParentHashes: parents}
	co := s.NewEncodedObject()
	if err := c.Encode(co); err != nil {
		tr.t.Fatal(err)
	}
	h, err := s.SetEncodedObject(co)
	if err != nil {
		tr.t.Fatal(err)
	}
	return h
}

func (tr *testRepo) setBranch(name string, h plumbing.Hash) {
	tr.t.Helper()
	if err := tr.r.Storer.SetReference(plumbing.NewHashReference(plumbing.NewBranchReferenceName(name), h)); err != nil {
		tr.t.Fatal(err)
	}
}

func newCache(t *testing.T, opts RepoCacheOptions) *RepoCache {
	t.Helper()
	if opts.Dir == "" {
		opts.Dir = t.TempDir()
	}
	c, err := NewRepoCache(opts)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func findImage(t *testing.T, ics []ImageChange, name string) ImageChange {
	t.Helper()
	for _, ic := range ics {
		if ic.Name == name {
			return ic
		}
	}
	t.Fatalf("no image %q in %+v", name, ics)
	return ImageChange{}
}

func names(ics []ImageChange) []string {
	var out []string
	for _, ic := range ics {
		out = append(out, ic.Name)
	}
	return out
}

func mustCommit(t *testing.T, msg, sha string) *object.Commit {
	t.Helper()
	return &object.Commit{Hash: plumbing.NewHash(sha), Message: msg}
}

func mustWeb(t *testing.T, src string) WebRepo {
	t.Helper()
	w, ok := ParseWebRepo(src)
	if !ok {
		t.Fatalf("no web URL for %s", src)
	}
	return w
}
