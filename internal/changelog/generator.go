package changelog

import (
	"context"
	"errors"
	"time"

	"golang.org/x/sync/singleflight"
	"k8s.io/utils/lru"
)

// GeneratorOptions configures a Generator.
type GeneratorOptions struct {
	Options
	// CacheSize bounds the changelogs kept in memory (default 256).
	CacheSize int
	// Timeout bounds one computation, which runs detached from any single caller so that a
	// caller giving up does not fail the others waiting on it (default 10 minutes).
	Timeout time.Duration
	// OnCompute, if set, is called at the start of every computation (not for cache hits).
	OnCompute func(from, to Release)
}

// Generator computes changelogs through a RepoCache with an in-memory LRU of results keyed by
// the two payloads' digests: an immutable pair never changes its changelog. Concurrent
// requests for one pair share one computation. Changelogs with an error that may be
// transient (a repository that could not be fetched) are returned but not cached, and
// neither are pairs where a digest is empty.
type Generator struct {
	repos *RepoCache
	opts  GeneratorOptions
	group singleflight.Group
	cache *lru.Cache // "from..to" digests → *ChangeLog
}

// NewGenerator returns a Generator reading repositories through repos.
func NewGenerator(repos *RepoCache, opts GeneratorOptions) *Generator {
	if opts.CacheSize <= 0 {
		opts.CacheSize = 256
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 10 * time.Minute
	}
	return &Generator{repos: repos, opts: opts, cache: lru.New(opts.CacheSize)}
}

// Cached returns the cached changelog for a pair of digests, if any.
func (g *Generator) Cached(fromDigest, toDigest string) (*ChangeLog, bool) {
	v, ok := g.cache.Get(fromDigest + ".." + toDigest)
	if !ok {
		return nil, false
	}
	return v.(*ChangeLog), true
}

// Len returns the number of cached changelogs.
func (g *Generator) Len() int { return g.cache.Len() }

// ChangeLog returns the changelog from one release to another, from the cache when possible.
func (g *Generator) ChangeLog(ctx context.Context, from, to Release) (*ChangeLog, error) {
	if from.Digest == "" || to.Digest == "" {
		return g.compute(ctx, from, to)
	}
	if cl, ok := g.Cached(from.Digest, to.Digest); ok {
		return cl, nil
	}
	key := from.Digest + ".." + to.Digest
	ch := g.group.DoChan(key, func() (any, error) {
		if cl, ok := g.Cached(from.Digest, to.Digest); ok {
			return cl, nil
		}
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), g.opts.Timeout)
		defer cancel()
		cl, err := g.compute(cctx, from, to)
		if err != nil {
			return nil, err
		}
		if cl.cacheable() {
			g.cache.Add(key, cl)
		}
		return cl, nil
	})
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case r := <-ch:
		if r.Err != nil {
			return nil, r.Err
		}
		return r.Val.(*ChangeLog), nil
	}
}

func (g *Generator) compute(ctx context.Context, from, to Release) (*ChangeLog, error) {
	if g.repos == nil {
		return nil, errors.New("changelog: no repository cache")
	}
	if g.opts.OnCompute != nil {
		g.opts.OnCompute(from, to)
	}
	return Compute(ctx, g.repos, from, to, g.opts.Options)
}
