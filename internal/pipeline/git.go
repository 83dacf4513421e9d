package pipeline

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"path"
	"strings"
	"time"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/storage/memory"
	corev1 "k8s.io/api/core/v1"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/secreturl"
)

// GitChange is one promotion by the pullRequest strategy: Revision written at YAMLPath of the
// file Path, on Branch of the repository URL (started from BaseBranch when Branch does not
// exist yet).
type GitChange struct {
	URL        string
	BaseBranch string
	// Branch is the branch's name (PromotionBranch renders the template).
	Branch   string
	Path     string
	YAMLPath string
	Revision string
	// Auth is nil for an anonymous repository.
	Auth        transport.AuthMethod
	AuthorName  string
	AuthorEmail string
	Message     string
}

// GitResult is what a push came to.
type GitResult struct {
	// Branch pushed (or that would have been).
	Branch string
	// Commit is the branch's head after the promotion: the commit pushed, or, when nothing
	// was pushed, the head of the branch (or base branch) that holds the revision already.
	Commit string
	// Pushed is false when the branch, or the base branch when there is no branch, held the
	// revision already: nothing was committed.
	Pushed bool
	// On names the branch Commit is the head of.
	On string
}

// GitPusher carries out the pullRequest strategy with go-git, in memory: it fetches the head
// commit of one branch (depth 1: the files of one commit, not the repository's history),
// writes one blob, one tree per directory of the file's path and one commit, and
// pushes without force (the update of a branch someone else moved in the meantime is not a
// fast-forward and is refused; the promotion is retried from the new head).
type GitPusher struct {
	// Timeout bounds one promotion (listing, fetch and push).
	Timeout time.Duration
	Now     func() time.Time
}

// NewGitPusher returns a pusher with a 2-minute timeout per promotion.
func NewGitPusher() *GitPusher {
	return &GitPusher{Timeout: 2 * time.Minute, Now: time.Now}
}

// Push commits c.Revision into c.Path on c.Branch and pushes the branch. It is idempotent:
// when the branch already has the revision there (or, with no branch yet, the base branch has
// it, e.g. the pull request was merged and its branch deleted) nothing is committed. The
// branch is never forced: an existing branch gets a commit on top of its head, whoever wrote
// its commits.
func (g *GitPusher) Push(ctx context.Context, c GitChange) (GitResult, error) {
	res := GitResult{Branch: c.Branch}
	if g.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, g.Timeout)
		defer cancel()
	}
	now := time.Now
	if g.Now != nil {
		now = g.Now
	}
	repoName := redactURL(c.URL)
	branchRef := plumbing.NewBranchReferenceName(c.Branch)
	baseRef := plumbing.NewBranchReferenceName(c.BaseBranch)
	if err := branchRef.Validate(); err != nil {
		return res, fmt.Errorf("branch %q is not a valid branch name", c.Branch)
	}
	if err := baseRef.Validate(); err != nil {
		return res, fmt.Errorf("base branch %q is not a valid branch name", c.BaseBranch)
	}
	filePath := path.Clean(c.Path)
	if filePath == "." || strings.HasPrefix(filePath, "../") || filePath == ".." || path.IsAbs(filePath) {
		return res, fmt.Errorf("path %q is not a file of the repository", c.Path)
	}

	// Which branches exist: the promotion branch continues from its head, else from the base.
	remote := git.NewRemote(memory.NewStorage(), &config.RemoteConfig{Name: git.DefaultRemoteName, URLs: []string{c.URL}})
	refs, err := remote.ListContext(ctx, &git.ListOptions{Auth: c.Auth})
	if err != nil {
		return res, fmt.Errorf("listing the branches of %s: %w", repoName, err)
	}
	var start plumbing.ReferenceName
	for _, r := range refs {
		switch r.Name() {
		case branchRef:
			start = branchRef
		case baseRef:
			if start == "" {
				start = baseRef
			}
		}
	}
	if start == "" {
		return res, fmt.Errorf("%s has neither the branch %s nor the base branch %s", repoName, c.Branch, c.BaseBranch)
	}
	res.On = start.Short()

	repo, err := git.CloneContext(ctx, memory.NewStorage(), nil, &git.CloneOptions{
		URL: c.URL, Auth: c.Auth, ReferenceName: start, SingleBranch: true, NoCheckout: true, Tags: git.NoTags, Depth: 1,
	})
	if err != nil {
		return res, fmt.Errorf("fetching %s of %s: %w", start.Short(), repoName, err)
	}
	head, err := repo.Reference(start, true)
	if err != nil {
		return res, fmt.Errorf("fetching %s of %s: %w", start.Short(), repoName, err)
	}
	parent, err := repo.CommitObject(head.Hash())
	if err != nil {
		return res, err
	}
	res.Commit = parent.Hash.String()
	file, err := parent.File(filePath)
	if err != nil {
		if errors.Is(err, object.ErrFileNotFound) || errors.Is(err, object.ErrDirectoryNotFound) || errors.Is(err, object.ErrEntryNotFound) {
			return res, fmt.Errorf("file %s not found on branch %s of %s", filePath, start.Short(), repoName)
		}
		return res, fmt.Errorf("reading %s on branch %s of %s: %w", filePath, start.Short(), repoName, err)
	}
	if file.Mode != filemode.Regular && file.Mode != filemode.Executable {
		return res, fmt.Errorf("%s on branch %s of %s is not a regular file", filePath, start.Short(), repoName)
	}
	content, err := file.Contents()
	if err != nil {
		return res, err
	}
	updated, err := SetYAMLScalar([]byte(content), c.YAMLPath, c.Revision)
	if err != nil {
		return res, fmt.Errorf("%s on branch %s of %s: %w", filePath, start.Short(), repoName, err)
	}
	if string(updated) == content {
		return res, nil // there already
	}

	// One blob, the trees from the file's folder up to the root, one commit.
	s := repo.Storer
	blob := s.NewEncodedObject()
	blob.SetType(plumbing.BlobObject)
	w, err := blob.Writer()
	if err != nil {
		return res, err
	}
	if _, err := w.Write(updated); err != nil {
		return res, err
	}
	if err := w.Close(); err != nil {
		return res, err
	}
	blobHash, err := s.SetEncodedObject(blob)
	if err != nil {
		return res, err
	}
	tree, err := replaceInTree(s, parent.TreeHash, strings.Split(filePath, "/"), blobHash)
	if err != nil {
		return res, err
	}
	sig := object.Signature{Name: c.AuthorName, Email: c.AuthorEmail, When: now()}
	commit := &object.Commit{Author: sig, Committer: sig, Message: c.Message, TreeHash: tree, ParentHashes: []plumbing.Hash{parent.Hash}}
	obj := s.NewEncodedObject()
	if err := commit.Encode(obj); err != nil {
		return res, err
	}
	commitHash, err := s.SetEncodedObject(obj)
	if err != nil {
		return res, err
	}
	if err := s.SetReference(plumbing.NewHashReference(branchRef, commitHash)); err != nil {
		return res, err
	}
	// No force: the update is refused unless it fast-forwards the branch as it is on the
	// server (or creates it, still absent).
	spec := config.RefSpec(branchRef.String() + ":" + branchRef.String())
	if err := repo.PushContext(ctx, &git.PushOptions{RemoteName: git.DefaultRemoteName, RefSpecs: []config.RefSpec{spec}, Auth: c.Auth}); err != nil {
		return res, fmt.Errorf("pushing %s to %s: %w", c.Branch, repoName, err)
	}
	res.Commit, res.Pushed, res.On = commitHash.String(), true, c.Branch
	return res, nil
}

// replaceInTree stores the trees of treeHash with the file at parts set to blob, and returns
// the new root's hash.
func replaceInTree(s storer.EncodedObjectStorer, treeHash plumbing.Hash, parts []string, blob plumbing.Hash) (plumbing.Hash, error) {
	tree, err := object.GetTree(s, treeHash)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	entries := make([]object.TreeEntry, len(tree.Entries))
	copy(entries, tree.Entries)
	i := -1
	for j, e := range entries {
		if e.Name == parts[0] {
			i = j
			break
		}
	}
	if i < 0 {
		return plumbing.ZeroHash, fmt.Errorf("%s not found in tree %s", parts[0], treeHash)
	}
	if len(parts) == 1 {
		entries[i].Hash = blob
	} else {
		h, err := replaceInTree(s, entries[i].Hash, parts[1:], blob)
		if err != nil {
			return plumbing.ZeroHash, err
		}
		entries[i].Hash = h
	}
	obj := s.NewEncodedObject()
	if err := (&object.Tree{Entries: entries}).Encode(obj); err != nil {
		return plumbing.ZeroHash, err
	}
	return s.SetEncodedObject(obj)
}

// PromotionBranch renders a branch template: {pipeline}, {environment} and {revision} are
// replaced, each with the characters a branch name cannot hold replaced by "-".
func PromotionBranch(template, pipeline, environment, revision string) (string, error) {
	b := strings.NewReplacer(
		"{pipeline}", branchPart(pipeline),
		"{environment}", branchPart(environment),
		"{revision}", branchPart(revision),
	).Replace(template)
	if err := plumbing.NewBranchReferenceName(b).Validate(); err != nil || strings.ContainsAny(b, "{}") {
		return "", fmt.Errorf("branch template %q gives %q, not a valid branch name", template, b)
	}
	return b, nil
}

// branchPart keeps letters, digits, dots, underscores and dashes; anything else becomes "-".
func branchPart(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			b[i] = '-'
		}
	}
	s = string(b)
	for strings.Contains(s, "..") {
		s = strings.ReplaceAll(s, "..", ".")
	}
	s = strings.TrimLeft(s, ".-")
	s = strings.TrimRight(s, ".")
	if strings.HasSuffix(s, ".lock") {
		s = strings.TrimSuffix(s, ".lock") + "-lock"
	}
	if s == "" {
		s = "-"
	}
	return s
}

// CheckGitSecret refuses a git credentials Secret for url (the pipeline's field, named in the
// message) unless the Secret's annotations allow it (secreturl.Check): the URL is the
// pipeline author's, the Secret says where its credentials may go.
func CheckGitSecret(s *corev1.Secret, url, field string) error {
	if err := secreturl.Check(s.Annotations, url); err != nil {
		return fmt.Errorf("the git credentials Secret %s is not sent to %s: %w", s.Name, field, err)
	}
	return nil
}

// PullRequestURLField is the field of the URL the pullRequest strategy pushes to for an
// environment: its own promotion's, else the pipeline's.
func PullRequestURLField(p *v1alpha1.Pipeline, env string) string {
	for i, e := range p.Spec.Environments {
		if e.Name == env && e.Promotion != nil {
			return fmt.Sprintf("spec.environments[%d].promotion.pullRequest.url", i)
		}
	}
	return "spec.promotion.pullRequest.url"
}

// redactURL is u without a password, for messages.
func redactURL(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return "the repository"
	}
	return p.Redacted()
}
