// Package changelog computes the changelog between two release payloads from the source
// repository (org.opencontainers.image.source) and revision (org.opencontainers.image.revision)
// recorded for each component, reading history with go-git from a bounded on-disk clone cache
// (RepoCache). Generator adds an in-memory LRU of results keyed by the payloads' digests with
// one computation per pair at a time. A ChangeLog marshals to JSON in the shape of the
// OpenShift release-controller's ChangeLog (see MarshalJSON) and renders as Markdown.
package changelog

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"golang.org/x/sync/errgroup"
)

// Component is one image of a payload.
type Component struct {
	Name string
	// Image is the component's pull spec by digest.
	Image string
	// Source is the git URL of the component's source repository and Revision the commit it
	// was built from (the image's OCI source and revision labels); either may be empty.
	Source   string
	Revision string
}

// Release is one payload.
type Release struct {
	// Name is the release tag.
	Name string
	// Digest identifies the payload image (sha256:…); with the other release's digest it keys
	// the results cache.
	Digest       string
	Created      time.Time
	PromotedFrom string
	Components   []Component
}

// ReleaseInfo describes one side of a changelog.
type ReleaseInfo struct {
	Name         string
	Created      time.Time
	Digest       string
	PromotedFrom string
}

// ChangeLog is the difference between two releases. Treat it as read-only: Generator shares
// one value between callers.
type ChangeLog struct {
	From, To ReleaseInfo
	// NewImages are components only in To, RemovedImages only in From. RebuiltImages have the
	// same revision but a different image. UpdatedImages have a different revision, or lack
	// the revision needed to compare (see ImageChange.Note).
	NewImages, RemovedImages, RebuiltImages, UpdatedImages []ImageChange
	// IssueURLPrefix, when set, links issue keys: prefix + key.
	IssueURLPrefix string
}

// ImageChange is one component in a changelog.
type ImageChange struct {
	Name string
	// Source is the repository URL in To (in From for removed images).
	Source string
	// Image and Revision are the component in To (in From for removed images); FromImage and
	// FromRevision in From (updated and rebuilt images).
	Image, FromImage       string
	Revision, FromRevision string
	// Commits are reachable from Revision and not from FromRevision along first parents,
	// newest first.
	Commits []Commit
	// ForcePushed is set when FromRevision is not an ancestor of Revision (history was
	// rewritten, or the component moved to another branch); Commits are then those of
	// Revision since MergeBase (empty when the histories share no commit).
	ForcePushed bool
	MergeBase   string
	// Truncated is set when Commits was cut at Options.MaxCommits.
	Truncated bool
	// Note explains something unusual that is not an error (force push, rollback, moved
	// source, missing revision labels).
	Note string
	// Error explains why the commits could not be computed (unreachable repository, revision
	// not found); the rest of the changelog is still valid.
	Error string

	// retry marks an Error that may go away (fetch failures); such changelogs are not cached.
	retry bool
}

// Commit is one commit of an updated component.
type Commit struct {
	SHA string
	// Subject is the first line of the message, Body the rest.
	Subject string
	Body    string
	// Title is what to show: for a merge commit of a pull request the first line of its body
	// (GitHub puts the PR title there), otherwise the subject.
	Title       string
	Author      string
	AuthorEmail string
	// Time is the committer time.
	Time time.Time
	// PullRequest is the number from "Merge pull request #N from …" (Merge is then true) or
	// from a squash subject "… (#N)"; 0 if none.
	PullRequest int
	Merge       bool
	// Issues are the issue keys (ABC-123) in the subject and body.
	Issues []string
	// URL and PullURL link to the commit and pull request when the source is a GitHub or
	// GitLab-like https (or ssh) URL.
	URL, PullURL string
}

// Options tune a computation.
type Options struct {
	// MaxCommits bounds the commits listed per component (default 1000).
	MaxCommits int
	// Parallelism bounds the repositories read at once (default 4).
	Parallelism int
	// IssueURLPrefix links issue keys (e.g. "https://issues.example.com/browse/").
	IssueURLPrefix string
}

func (o Options) withDefaults() Options {
	if o.MaxCommits <= 0 {
		o.MaxCommits = 1000
	}
	if o.Parallelism <= 0 {
		o.Parallelism = 4
	}
	return o
}

func info(r Release) ReleaseInfo {
	return ReleaseInfo{Name: r.Name, Created: r.Created, Digest: r.Digest, PromotedFrom: r.PromotedFrom}
}

func imageDigest(pullSpec string) string {
	if _, d, ok := strings.Cut(pullSpec, "@"); ok {
		return d
	}
	return pullSpec
}

// Compute computes the changelog from one release to another, reading repositories through
// repos. Per-component problems (unreachable repository, unknown revision, force push) are
// reported on the component; an error is returned only when ctx ends.
func Compute(ctx context.Context, repos *RepoCache, from, to Release, opts Options) (*ChangeLog, error) {
	opts = opts.withDefaults()
	cl := &ChangeLog{From: info(from), To: info(to), IssueURLPrefix: opts.IssueURLPrefix}
	old := map[string]Component{}
	for _, c := range from.Components {
		old[c.Name] = c
	}
	seen := map[string]bool{}
	var updated []*ImageChange
	for _, c := range to.Components {
		seen[c.Name] = true
		o, ok := old[c.Name]
		switch {
		case !ok:
			cl.NewImages = append(cl.NewImages, ImageChange{Name: c.Name, Source: c.Source, Image: c.Image, Revision: c.Revision})
		case o.Revision == c.Revision && c.Revision != "":
			if imageDigest(o.Image) != imageDigest(c.Image) {
				cl.RebuiltImages = append(cl.RebuiltImages, ImageChange{Name: c.Name, Source: c.Source,
					Image: c.Image, FromImage: o.Image, Revision: c.Revision, FromRevision: o.Revision})
			}
		case o.Revision == "" && c.Revision == "":
			if imageDigest(o.Image) != imageDigest(c.Image) {
				cl.RebuiltImages = append(cl.RebuiltImages, ImageChange{Name: c.Name, Source: c.Source,
					Image: c.Image, FromImage: o.Image, Note: "no source revision recorded in either image"})
			}
		default:
			ic := &ImageChange{Name: c.Name, Source: c.Source, Image: c.Image, FromImage: o.Image, Revision: c.Revision, FromRevision: o.Revision}
			switch {
			case c.Revision == "":
				ic.Note = "the new image records no source revision"
			case o.Revision == "":
				ic.Note = "the old image records no source revision"
			case c.Source == "":
				ic.Note = "the new image records no source repository"
			}
			updated = append(updated, ic)
		}
	}
	for _, c := range from.Components {
		if !seen[c.Name] {
			cl.RemovedImages = append(cl.RemovedImages, ImageChange{Name: c.Name, Source: c.Source, Image: c.Image, Revision: c.Revision})
		}
	}

	// One task per repository; components sharing a range share its commits.
	bySource := map[string][]*ImageChange{}
	var sources []string
	for _, ic := range updated {
		if ic.Note != "" {
			continue
		}
		if o := old[ic.Name]; o.Source != "" && o.Source != ic.Source {
			ic.Note = fmt.Sprintf("source moved from %s", o.Source)
		}
		if _, ok := bySource[ic.Source]; !ok {
			sources = append(sources, ic.Source)
		}
		bySource[ic.Source] = append(bySource[ic.Source], ic)
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(opts.Parallelism)
	for _, src := range sources {
		g.Go(func() error {
			fillRepo(gctx, repos, src, bySource[src], opts)
			return nil
		})
	}
	_ = g.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	for _, ic := range updated {
		cl.UpdatedImages = append(cl.UpdatedImages, *ic)
	}
	for _, l := range [][]ImageChange{cl.NewImages, cl.RemovedImages, cl.RebuiltImages, cl.UpdatedImages} {
		sort.Slice(l, func(i, j int) bool { return l[i].Name < l[j].Name })
	}
	return cl, nil
}

// cacheable reports whether the changelog has no error that a later attempt could fix.
func (c *ChangeLog) cacheable() bool {
	for _, ic := range c.UpdatedImages {
		if ic.retry {
			return false
		}
	}
	return true
}

func fillRepo(ctx context.Context, repos *RepoCache, source string, ics []*ImageChange, opts Options) {
	var revs []string
	for _, ic := range ics {
		revs = append(revs, ic.Revision, ic.FromRevision)
	}
	slices.Sort(revs)
	revs = slices.Compact(revs)
	h, err := repos.Open(ctx, source, revs...)
	if errors.Is(err, ErrSourceNotAllowed) {
		for _, ic := range ics {
			ic.Error = err.Error() // final: the flags decide, not the network
		}
		return
	}
	if err != nil {
		// A *FetchError says what kind of failure it was, never what the remote answered.
		msg := fmt.Sprintf("repository unavailable: %v", err)
		var fe *FetchError
		if errors.As(err, &fe) {
			msg = fe.Error()
		}
		for _, ic := range ics {
			ic.Error, ic.retry = msg, true
		}
		return
	}
	defer h.Close()
	web, _ := ParseWebRepo(source)
	type result struct {
		r   rangeResult
		err error
	}
	done := map[string]result{}
	for _, ic := range ics {
		if slices.Contains(h.Missing, ic.Revision) || slices.Contains(h.Missing, ic.FromRevision) {
			var miss []string
			for _, r := range []string{ic.FromRevision, ic.Revision} {
				if slices.Contains(h.Missing, r) {
					miss = append(miss, r)
				}
			}
			ic.Error = fmt.Sprintf("revision %s not found in %s", strings.Join(miss, ", "), source)
			if h.FetchError != nil {
				ic.Error += fmt.Sprintf(" (%v)", h.FetchError)
				ic.retry = true
			}
			continue
		}
		key := ic.FromRevision + ".." + ic.Revision
		res, ok := done[key]
		if !ok {
			res.r, res.err = commitRange(ctx, h.Repo, ic.FromRevision, ic.Revision, opts.MaxCommits)
			done[key] = res
		}
		if res.err != nil {
			ic.Error = res.err.Error()
			continue
		}
		ic.ForcePushed, ic.MergeBase, ic.Truncated = res.r.forced, res.r.mergeBase, res.r.truncated
		if res.r.note != "" {
			if ic.Note != "" {
				ic.Note += "; "
			}
			ic.Note += res.r.note
		}
		for _, c := range res.r.commits {
			ic.Commits = append(ic.Commits, toCommit(c, web, source))
		}
	}
}

func toCommit(c *object.Commit, web WebRepo, source string) Commit {
	subject, body := splitMessage(c.Message)
	out := Commit{
		SHA: c.Hash.String(), Subject: subject, Body: body, Title: subject,
		Author: c.Author.Name, AuthorEmail: c.Author.Email, Time: c.Committer.When,
		Issues: ParseIssueKeys(subject, body),
	}
	out.PullRequest, out.Merge = ParsePullRequest(subject)
	if out.Merge && body != "" {
		out.Title, _ = splitMessage(body)
	}
	if web.base != "" {
		out.URL = web.CommitURL(out.SHA)
		if out.PullRequest > 0 {
			out.PullURL = web.PullURL(out.PullRequest)
		}
	}
	return out
}

type rangeResult struct {
	commits   []*object.Commit
	forced    bool
	mergeBase string
	truncated bool
	note      string
}

// commitRange lists the first-parent commits of newRev not reachable from oldRev.
func commitRange(ctx context.Context, r *git.Repository, oldRev, newRev string, limit int) (rangeResult, error) {
	var res rangeResult
	oldC, err := r.CommitObject(plumbing.NewHash(oldRev))
	if err != nil {
		return res, fmt.Errorf("reading commit %s: %w", oldRev, err)
	}
	newC, err := r.CommitObject(plumbing.NewHash(newRev))
	if err != nil {
		return res, fmt.Errorf("reading commit %s: %w", newRev, err)
	}
	// Fast path: oldRev on the first-parent line of newRev (the usual linear main branch).
	var chain []*object.Commit
	for c := newC; c != nil && len(chain) <= limit; {
		if c.Hash == oldC.Hash {
			res.commits = chain
			if len(chain) > limit {
				res.commits, res.truncated = chain[:limit], true
			}
			res.mergeBase = oldRev
			return res, nil
		}
		chain = append(chain, c)
		c = firstParent(r, c)
	}
	if err := ctx.Err(); err != nil {
		return res, err
	}
	// Slow path: stop at the first commit that oldRev reaches.
	bases, err := newC.MergeBase(oldC)
	if err != nil {
		return res, fmt.Errorf("computing merge base: %w", err)
	}
	res.forced = !slices.ContainsFunc(bases, func(b *object.Commit) bool { return b.Hash == oldC.Hash })
	if len(bases) > 0 {
		res.mergeBase = bases[0].Hash.String()
	}
	reach := map[plumbing.Hash]bool{}
	iter := object.NewCommitPreorderIter(oldC, nil, nil)
	_ = iter.ForEach(func(c *object.Commit) error {
		reach[c.Hash] = true
		return ctx.Err()
	})
	if err := ctx.Err(); err != nil {
		return res, err
	}
	res.commits = nil
	for c := newC; c != nil; c = firstParent(r, c) {
		if reach[c.Hash] {
			break
		}
		if len(res.commits) == limit {
			res.truncated = true
			break
		}
		res.commits = append(res.commits, c)
	}
	switch {
	case reach[newC.Hash]:
		res.forced = false
		res.note = "the new revision is an ancestor of the old one (rolled back)"
	case res.forced && len(bases) == 0:
		res.note = fmt.Sprintf("history rewritten: %s and %s share no history", short(oldRev), short(newRev))
	case res.forced:
		res.note = fmt.Sprintf("history rewritten (force push): %s is not an ancestor of %s; showing commits since the merge base %s",
			short(oldRev), short(newRev), short(res.mergeBase))
	}
	return res, nil
}

func firstParent(r *git.Repository, c *object.Commit) *object.Commit {
	if len(c.ParentHashes) == 0 {
		return nil
	}
	p, err := r.CommitObject(c.ParentHashes[0])
	if err != nil {
		return nil // shallow or missing: stop
	}
	return p
}

func short(sha string) string {
	if len(sha) > 8 {
		return sha[:8]
	}
	return sha
}
