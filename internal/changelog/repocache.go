package changelog

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/transport"

	"github.com/release-controller/release-controller/api/v1alpha1"
)

// RepoCacheOptions configures a RepoCache.
type RepoCacheOptions struct {
	// Dir holds one bare clone per repository URL. It is created if missing; clones left by
	// an earlier process are reused.
	Dir string
	// MaxRepos bounds the number of clones; MaxBytes their total size on disk. Zero means no
	// bound. Beyond a bound the least recently used clones not in use are deleted whole.
	MaxRepos int
	MaxBytes int64
	// FetchTimeout bounds each fetch (default 5 minutes).
	FetchTimeout time.Duration
	// Credentials for private repositories.
	Credentials Credentials
	// Allow, if set, is the only sources Open clones or fetches; any other is refused before
	// anything touches the disk or the network. Nil allows every source (commands set it
	// through Config).
	Allow *SourceAllowList
	// OnFetch, if set, is called before a repository is cloned (clone true) or fetched
	// because a revision is missing, e.g. to show progress.
	OnFetch func(url string, clone bool)
	// OnFetchError, if set, gets the whole error of each failed clone or fetch, for the
	// server's log; what callers get is a *FetchError saying only what kind of failure it was.
	OnFetchError func(url string, err error)

	// Network says which addresses clones and fetches may dial besides the public internet's
	// (zero: none).
	Network NetworkPolicy
	// MaxFetchBytes bounds what one clone or fetch receives over HTTP (zero:
	// DefaultMaxFetchBytes; negative: no bound).
	MaxFetchBytes int64
	// FailureTTL is how long a failed clone or fetch of a repository is remembered: meanwhile
	// it is not tried again and its error is returned at once (zero: DefaultFailureTTL;
	// negative: not remembered).
	FailureTTL time.Duration
	// Now is the clock of FailureTTL (nil: time.Now).
	Now func() time.Time
}

// Defaults of RepoCacheOptions.
const (
	DefaultMaxFetchBytes int64 = 4 << 30
	DefaultFailureTTL          = 5 * time.Minute
)

// failure is a remembered failed fetch.
type failure struct {
	at  time.Time
	err *FetchError
}

// RepoCache is a bounded on-disk cache of bare clones. It is safe for concurrent use: one
// repository is used (fetched or read) by one caller at a time.
type RepoCache struct {
	opts RepoCacheOptions

	guard *fetchGuard

	mu       sync.Mutex
	tick     uint64
	total    int64
	entries  map[string]*repoEntry // by URL
	failures map[string]failure    // by URL, within FailureTTL
}

type repoEntry struct {
	url  string
	dir  string
	size int64
	used uint64 // LRU clock
	refs int    // open handles (entries in use are never evicted)
	// fetched is false until a first fetch succeeded.
	fetched bool
	// lastFetchErr is the error of the last fetch (under lock).
	lastFetchErr error
	lock         sync.Mutex
}

// RepoHandle is an open repository; Close releases it for others and for eviction.
type RepoHandle struct {
	Repo *git.Repository
	// Missing lists the requested revisions that are not in the clone even after fetching.
	Missing []string
	// FetchError is the error of a fetch that failed while revisions were missing (the clone
	// may still hold some of them).
	FetchError error

	c    *RepoCache
	e    *repoEntry
	once sync.Once
}

// Close releases the handle.
func (h *RepoHandle) Close() {
	h.once.Do(func() {
		h.e.lock.Unlock()
		h.c.mu.Lock()
		h.e.refs--
		trash := h.c.evictLocked()
		h.c.mu.Unlock()
		removeAll(trash)
	})
}

// NewRepoCache opens (creating if needed) a clone cache directory, adopting its existing
// clones (oldest modification time first in the LRU order) and trimming it to the bounds.
func NewRepoCache(opts RepoCacheOptions) (*RepoCache, error) {
	if opts.Dir == "" {
		return nil, errors.New("changelog: RepoCacheOptions.Dir is required")
	}
	if opts.FetchTimeout <= 0 {
		opts.FetchTimeout = 5 * time.Minute
	}
	if opts.MaxFetchBytes == 0 {
		opts.MaxFetchBytes = DefaultMaxFetchBytes
	}
	if opts.FailureTTL == 0 {
		opts.FailureTTL = DefaultFailureTTL
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
		return nil, err
	}
	c := &RepoCache{opts: opts, entries: map[string]*repoEntry{}, failures: map[string]failure{},
		guard: newFetchGuard(opts.Network, max(opts.MaxFetchBytes, 0))}
	dirents, err := os.ReadDir(opts.Dir)
	if err != nil {
		return nil, err
	}
	type found struct {
		e     *repoEntry
		mtime time.Time
	}
	var existing []found
	for _, d := range dirents {
		path := filepath.Join(opts.Dir, d.Name())
		if !d.IsDir() {
			continue
		}
		if strings.HasPrefix(d.Name(), "trash-") {
			_ = os.RemoveAll(path)
			continue
		}
		url := clonedURL(path)
		if url == "" || dirName(url) != d.Name() {
			_ = os.RemoveAll(path) // a partial or foreign directory
			continue
		}
		info, err := d.Info()
		if err != nil {
			continue
		}
		existing = append(existing, found{&repoEntry{url: url, dir: path, size: dirSize(path), fetched: true}, info.ModTime()})
	}
	sort.Slice(existing, func(i, j int) bool { return existing[i].mtime.Before(existing[j].mtime) })
	for _, f := range existing {
		c.tick++
		f.e.used = c.tick
		c.entries[f.e.url] = f.e
		c.total += f.e.size
	}
	removeAll(c.evictLocked())
	return c, nil
}

// Repos returns the URLs of the cached clones, most recently used first.
func (c *RepoCache) Repos() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	es := make([]*repoEntry, 0, len(c.entries))
	for _, e := range c.entries {
		es = append(es, e)
	}
	sort.Slice(es, func(i, j int) bool { return es[i].used > es[j].used })
	urls := make([]string, len(es))
	for i, e := range es {
		urls[i] = e.url
	}
	return urls
}

// Size returns the total size in bytes of the clones as last measured.
func (c *RepoCache) Size() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.total
}

// Dir returns the directory of the clone for url (whether or not it exists).
func (c *RepoCache) Dir(url string) string { return filepath.Join(c.opts.Dir, dirName(url)) }

var unsafeChars = regexp.MustCompile(`[^a-zA-Z0-9._-]+`)

// dirName is a safe, collision-resistant directory name for a URL: a hash, plus a readable
// tail for people looking at the disk.
func dirName(url string) string {
	sum := sha256.Sum256([]byte(url))
	base := strings.TrimSuffix(strings.TrimRight(url, "/"), ".git")
	if i := strings.LastIndexAny(base, "/:"); i >= 0 {
		base = base[i+1:]
	}
	base = strings.Trim(unsafeChars.ReplaceAllString(base, "_"), "._-")
	if len(base) > 40 {
		base = base[:40]
	}
	name := hex.EncodeToString(sum[:12])
	if base != "" {
		name += "-" + base
	}
	return name
}

func clonedURL(dir string) string {
	r, err := git.PlainOpen(dir)
	if err != nil {
		return ""
	}
	rem, err := r.Remote("origin")
	if err != nil || len(rem.Config().URLs) == 0 {
		return ""
	}
	return rem.Config().URLs[0]
}

func dirSize(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if info, err := d.Info(); err == nil {
				n += info.Size()
			}
		}
		return nil
	})
	return n
}

// Open returns the clone of url holding the given revisions, cloning or fetching when one is
// missing. The caller must Close the handle. An error means the repository could not be
// cloned at all; revisions still missing after a fetch are listed in Missing.
func (c *RepoCache) Open(ctx context.Context, url string, revisions ...string) (*RepoHandle, error) {
	url = strings.TrimSpace(url)
	if url == "" {
		return nil, errors.New("no source repository")
	}
	if c.opts.Allow != nil {
		if err := c.opts.Allow.Check(url); err != nil {
			return nil, err
		}
	}
	c.mu.Lock()
	e, ok := c.entries[url]
	if !ok {
		e = &repoEntry{url: url, dir: c.Dir(url)}
		c.entries[url] = e
	}
	c.tick++
	e.used = c.tick
	e.refs++
	c.mu.Unlock()

	e.lock.Lock()
	h := &RepoHandle{c: c, e: e}
	repo, err := c.ensure(ctx, e, revisions)
	if err != nil {
		e.lock.Unlock()
		c.mu.Lock()
		e.refs--
		if !e.fetched && e.refs == 0 && c.entries[url] == e {
			delete(c.entries, url) // do not keep a slot for a repository never fetched
			c.total -= e.size
		}
		c.mu.Unlock()
		return nil, err
	}
	h.Repo = repo
	for _, rev := range revisions {
		if !hasCommit(repo, rev) {
			h.Missing = append(h.Missing, rev)
		}
	}
	h.FetchError = e.lastFetchErr
	return h, nil
}

func hasCommit(r *git.Repository, rev string) bool {
	if !plumbing.IsHash(rev) {
		return false
	}
	_, err := r.CommitObject(plumbing.NewHash(rev))
	return err == nil
}

// ensure opens or creates the clone and fetches when a revision is missing. It runs with
// e.lock held.
func (c *RepoCache) ensure(ctx context.Context, e *repoEntry, revisions []string) (*git.Repository, error) {
	e.lastFetchErr = nil
	var repo *git.Repository
	if e.fetched {
		r, err := git.PlainOpen(e.dir)
		if err == nil {
			repo = r
		} else {
			e.fetched = false // damaged; start again
		}
	}
	if repo == nil {
		_ = os.RemoveAll(e.dir)
		r, err := git.PlainInit(e.dir, true)
		if err != nil {
			return nil, fmt.Errorf("creating clone of %s: %w", e.url, err)
		}
		if _, err := r.CreateRemote(&config.RemoteConfig{Name: "origin", URLs: []string{e.url}}); err != nil {
			_ = os.RemoveAll(e.dir)
			return nil, fmt.Errorf("creating clone of %s: %w", e.url, err)
		}
		repo = r
	}
	var missing []string
	for _, rev := range revisions {
		if !hasCommit(repo, rev) {
			missing = append(missing, rev)
		}
	}
	if e.fetched && len(missing) == 0 {
		return repo, nil
	}
	// A repository that failed a moment ago is not tried again on every page view.
	if fe := c.recentFailure(e.url); fe != nil {
		if !e.fetched {
			_ = os.RemoveAll(e.dir)
			return nil, fe
		}
		e.lastFetchErr = fe
		return repo, nil
	}
	auth, authErr := c.opts.Credentials.authFor(e.url)
	st := &fetchState{guard: c.guard}
	timedOut := false
	fetch := func(specs ...config.RefSpec) error {
		fctx, cancel := context.WithTimeout(ctx, c.opts.FetchTimeout)
		defer cancel()
		err := repo.FetchContext(withFetchState(fctx, st), &git.FetchOptions{RemoteName: "origin", RefSpecs: specs, Auth: auth, Tags: git.NoTags, Force: true})
		if errors.Is(err, git.NoErrAlreadyUpToDate) {
			return nil
		}
		if err != nil && fctx.Err() != nil && ctx.Err() == nil {
			timedOut = true
		}
		return err
	}
	err := authErr
	if err == nil {
		err = c.checkBeforeFetch(ctx, e.url)
	}
	if err == nil {
		if c.opts.OnFetch != nil {
			c.opts.OnFetch(e.url, !e.fetched)
		}
		// Branches and tags, without pruning: commits of force-pushed history fetched earlier
		// stay in the clone, so changelogs from them can still be computed.
		err = fetch("+refs/heads/*:refs/heads/*", "+refs/tags/*:refs/tags/*")
	}
	defer func() {
		size := dirSize(e.dir)
		c.mu.Lock()
		c.total += size - e.size
		e.size = size
		c.mu.Unlock()
	}()
	if err != nil {
		fe := c.failed(ctx, e.url, err, st, timedOut)
		if !e.fetched {
			_ = os.RemoveAll(e.dir)
			return nil, fe
		}
		e.lastFetchErr = fe
		return repo, nil
	}
	c.mu.Lock()
	delete(c.failures, e.url)
	c.mu.Unlock()
	e.fetched = true
	// A revision no branch or tag reaches (a pull request head, history since rewritten):
	// ask for it by id, which servers that allow it answer.
	for _, rev := range missing {
		if plumbing.IsHash(rev) && !hasCommit(repo, rev) {
			_ = fetch(config.RefSpec("+" + rev + ":refs/changelog/" + rev))
		}
	}
	return repo, nil
}

// checkBeforeFetch checks the addresses of an ssh:// or git:// source, whose transports go-git
// dials itself (see checkResolved); http(s) is checked when dialing, file:// dials nothing.
func (c *RepoCache) checkBeforeFetch(ctx context.Context, url string) error {
	ep, err := transport.NewEndpoint(url)
	if err != nil {
		return err
	}
	switch ep.Protocol {
	case "ssh", "git":
		return checkResolved(ctx, c.opts.Network, ep.Host)
	}
	return nil
}

// recentFailure is the error of the repository's last fetch when it failed within FailureTTL.
func (c *RepoCache) recentFailure(url string) *FetchError {
	c.mu.Lock()
	defer c.mu.Unlock()
	f, ok := c.failures[url]
	if !ok {
		return nil
	}
	if c.opts.Now().Sub(f.at) >= c.opts.FailureTTL {
		delete(c.failures, url)
		return nil
	}
	return f.err
}

// failed turns a fetch's error into the FetchError callers see, reports the whole error, and
// remembers the failure for FailureTTL, unless it is the caller's context that ended.
func (c *RepoCache) failed(ctx context.Context, url string, err error, st *fetchState, timedOut bool) *FetchError {
	fe := &FetchError{URL: url, Status: fetchStatus(err, st, c.opts.FetchTimeout, timedOut), Err: err}
	var refused *CredentialRefusedError
	if errors.As(err, &refused) {
		fe.Status = fmt.Sprintf("refused: the git credentials Secret does not allow this URL (annotations %s, %s)",
			v1alpha1.AnnotationAllowedURLs, v1alpha1.AnnotationAllowInsecureHTTP)
	}
	if c.opts.OnFetchError != nil {
		c.opts.OnFetchError(url, err)
	}
	if ctx.Err() != nil || c.opts.FailureTTL < 0 {
		return fe
	}
	c.mu.Lock()
	c.failures[url] = failure{at: c.opts.Now(), err: fe}
	if len(c.failures) > maxFailures {
		c.trimFailuresLocked()
	}
	c.mu.Unlock()
	return fe
}

// maxFailures bounds the failures remembered: source URLs come from image labels.
const maxFailures = 4096

// trimFailuresLocked forgets the expired failures, and the oldest while over maxFailures.
func (c *RepoCache) trimFailuresLocked() {
	now := c.opts.Now()
	for url, f := range c.failures {
		if now.Sub(f.at) >= c.opts.FailureTTL {
			delete(c.failures, url)
		}
	}
	for len(c.failures) > maxFailures {
		oldest := ""
		for url, f := range c.failures {
			if oldest == "" || f.at.Before(c.failures[oldest].at) {
				oldest = url
			}
		}
		delete(c.failures, oldest)
	}
}

// evictLocked deletes least recently used clones not in use until the cache is within its
// bounds. The directories are renamed away under the lock; the caller deletes the returned
// paths after unlocking.
func (c *RepoCache) evictLocked() (trash []string) {
	for {
		over := (c.opts.MaxRepos > 0 && len(c.entries) > c.opts.MaxRepos) ||
			(c.opts.MaxBytes > 0 && c.total > c.opts.MaxBytes)
		if !over {
			return trash
		}
		var victim *repoEntry
		for _, e := range c.entries {
			if e.refs == 0 && (victim == nil || e.used < victim.used) {
				victim = e
			}
		}
		if victim == nil {
			return trash
		}
		delete(c.entries, victim.url)
		c.total -= victim.size
		c.tick++
		t := filepath.Join(c.opts.Dir, fmt.Sprintf("trash-%s-%d", filepath.Base(victim.dir), c.tick))
		if err := os.Rename(victim.dir, t); err != nil {
			if !os.IsNotExist(err) {
				_ = os.RemoveAll(victim.dir)
			}
			continue
		}
		trash = append(trash, t)
	}
}

func removeAll(paths []string) {
	for _, p := range paths {
		_ = os.RemoveAll(p)
	}
}
