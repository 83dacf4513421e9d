package demo

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/release-controller/release-controller/internal/registryclient"
	"github.com/release-controller/release-controller/internal/releaseimage"
)

// Breakage is a fault a build carries on purpose, so that payloads reach Rejected and Failed.
type Breakage string

const (
	// NoBreakage is an ordinary build; it repairs an earlier broken build of its component.
	NoBreakage Breakage = ""
	// BreakE2E puts MarkerBreaksE2E in the commit message: the e2e check fails on any
	// payload holding that revision, so the payload is rejected.
	BreakE2E Breakage = "BreakE2E"
	// MissingPlatform builds the image for linux/amd64 only, while the stream is built for
	// every one of Platforms: the stream refuses the component (its Imported condition names
	// the missing platform) and creates no payload until a later build has every platform.
	MissingPlatform Breakage = "MissingPlatform"
	// BreakSmoke puts MarkerBreaksSmoke in the commit message: the stream's checks pass, so
	// the payload is accepted, but the smoke check the demo pipeline runs in dev fails, and
	// dev is rolled back.
	BreakSmoke Breakage = "BreakSmoke"
)

// Markers in a commit's first line that make a check fail.
const (
	// MarkerBreaksE2E makes the e2e check fail.
	MarkerBreaksE2E = "[breaks-e2e]"
	// MarkerBreaksSmoke makes the smoke check fail.
	MarkerBreaksSmoke = "[breaks-smoke]"
)

// Labels of the component images.
const (
	LabelTitle = "org.opencontainers.image.title"
	// LabelMessage holds the first line of the commit the image was built from.
	LabelMessage = "demo.release-controller.dev/message"
)

// The build system signs every commit.
const (
	AuthorName  = "Demo Build System"
	AuthorEmail = "builds@demo.local"
)

// Files of a component repository.
const (
	buildFile   = "BUILD"
	changesFile = "CHANGES.md"
)

// Build is one pushed component build.
type Build struct {
	Component string
	// Commit is the full sha of the commit the image was built from.
	Commit string
	// Message is the commit message's first line.
	Message string
	// Image is the pushed image by digest.
	Image string
}

// subjects vary the commit messages; %s is the component.
var subjects = []string{
	"Speed up %s start-up",
	"Fix a race in the %s request handler",
	"Log the %s configuration at start",
	"Retry %s registry calls with backoff",
	"Update the %s dependencies",
	"Clarify %s error messages",
	"Add a readiness endpoint to %s",
	"Cache %s lookups for a minute",
}

// Bump makes one build of component: a new commit in its repository, an image of it
// (broken as breakage says), pushed as the component's :latest. Builds of the same Dir are
// serialised, also between processes.
func Bump(ctx context.Context, opts Options, component string, breakage Breakage) (Build, error) {
	if err := opts.validate(); err != nil {
		return Build{}, err
	}
	if !slices.Contains(Components, component) {
		return Build{}, fmt.Errorf("unknown demo component %q (known: %s)", component, strings.Join(Components, ", "))
	}
	if !slices.Contains([]Breakage{NoBreakage, BreakE2E, MissingPlatform, BreakSmoke}, breakage) {
		return Build{}, fmt.Errorf("unknown breakage %q (known: %s, %s, %s)", breakage, BreakE2E, MissingPlatform, BreakSmoke)
	}
	var b Build
	err := withLock(opts, func() error {
		repo, err := git.PlainOpen(opts.GitDir(component))
		if errors.Is(err, git.ErrRepositoryNotExists) {
			return fmt.Errorf("the repository of %s does not exist: set the demo up first", component)
		}
		if err != nil {
			return err
		}
		commit, err := commitBuild(repo, opts.GitDir(component), component, breakage)
		if err != nil {
			return fmt.Errorf("committing a build of %s: %w", component, err)
		}
		platforms := Platforms
		if breakage == MissingPlatform {
			platforms = Platforms[:1]
		}
		b, err = pushImage(ctx, opts, component, commit, platforms)
		return err
	})
	return b, err
}

// withLock runs fn holding an exclusive lock on Dir's lock file. flock locks belong to the
// open file, so the lock also serialises goroutines of one process.
func withLock(opts Options, fn func() error) error {
	if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(filepath.Join(opts.Dir, "demo.lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return err
	}
	// Closing the file releases the lock, also when fn panics.
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		return fmt.Errorf("locking the demo directory: %w", err)
	}
	return fn()
}

// ensureComponent creates the component's repository when missing and pushes an image of its
// newest commit when the :latest tag is missing. The caller holds the lock.
func ensureComponent(ctx context.Context, opts Options, component string) error {
	dir := opts.GitDir(component)
	repo, err := git.PlainOpen(dir)
	if errors.Is(err, git.ErrRepositoryNotExists) {
		repo, err = initRepo(dir, component)
	}
	if err != nil {
		return err
	}
	latest, err := name.ParseReference(opts.ComponentRepository(component) + ":latest")
	if err != nil {
		return err
	}
	_, err = remote.Head(latest, append(slices.Clone(opts.Remote), remote.WithContext(ctx))...)
	if err == nil {
		return nil
	}
	if !registryclient.IsNotFound(err) {
		return fmt.Errorf("looking up %s: %w", latest, err)
	}
	head, err := repo.Head()
	if err != nil {
		return err
	}
	commit, err := repo.CommitObject(head.Hash())
	if err != nil {
		return err
	}
	// The image of a commit is deterministic, so a repush gives the digest it had before.
	_, err = pushImage(ctx, opts, component, commit, Platforms)
	return err
}

// initRepo creates the component's repository with a first commit holding a README and a
// small program.
func initRepo(dir, component string) (*git.Repository, error) {
	// A half-made repository from an interrupted start is made again.
	if err := os.RemoveAll(dir); err != nil {
		return nil, err
	}
	repo, err := git.PlainInitWithOptions(dir, &git.PlainInitOptions{InitOptions: git.InitOptions{DefaultBranch: plumbing.Main}})
	if err != nil {
		return nil, err
	}
	files := map[string]string{
		"README.md": fmt.Sprintf("# %s\n\nThe %s component of the release-controller demo product. "+
			"The demo build system commits here and builds an image of every commit.\n", component, component),
		"main.go": fmt.Sprintf("package main\n\nimport \"fmt\"\n\nfunc main() {\n\tfmt.Println(%q)\n}\n", component+" is running"),
		buildFile: "1\n",
	}
	names := slices.Sorted(maps.Keys(files))
	for _, f := range names {
		if err := os.WriteFile(filepath.Join(dir, f), []byte(files[f]), 0o644); err != nil {
			return nil, err
		}
	}
	if err := commitFiles(repo, names, fmt.Sprintf("Start the %s component\n", component)); err != nil {
		return nil, err
	}
	return repo, nil
}

// commitBuild writes the next build number and a line in the change log, and commits them.
func commitBuild(repo *git.Repository, dir, component string, breakage Breakage) (*object.Commit, error) {
	data, err := os.ReadFile(filepath.Join(dir, buildFile))
	if err != nil {
		return nil, err
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		return nil, fmt.Errorf("%s holds %q, not a build number", buildFile, data)
	}
	n++
	subject := fmt.Sprintf(subjects[n%len(subjects)], component)
	body := fmt.Sprintf("Build %d of the %s component.", n, component)
	switch breakage {
	case BreakE2E:
		subject += " " + MarkerBreaksE2E
		body += " It breaks the end-to-end tests on purpose."
	case MissingPlatform:
		body += " The build system built its image for " + Platforms[0] + " only, by mistake."
	case BreakSmoke:
		subject += " " + MarkerBreaksSmoke
		body += " It passes the stream's checks but breaks the smoke test of a rolled-out app on purpose."
	}
	if err := os.WriteFile(filepath.Join(dir, buildFile), []byte(strconv.Itoa(n)+"\n"), 0o644); err != nil {
		return nil, err
	}
	changes, err := os.OpenFile(filepath.Join(dir, changesFile), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, err
	}
	_, err = fmt.Fprintf(changes, "- build %d: %s\n", n, subject)
	if cerr := changes.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	if err := commitFiles(repo, []string{buildFile, changesFile}, subject+"\n\n"+body+"\n"); err != nil {
		return nil, err
	}
	head, err := repo.Head()
	if err != nil {
		return nil, err
	}
	return repo.CommitObject(head.Hash())
}

// commitFiles stages files (paths relative to the worktree) and commits them as the build system.
func commitFiles(repo *git.Repository, files []string, message string) error {
	wt, err := repo.Worktree()
	if err != nil {
		return err
	}
	for _, f := range files {
		if _, err := wt.Add(f); err != nil {
			return err
		}
	}
	// Git keeps seconds; truncating keeps the in-memory and stored commit the same.
	when := time.Now().Truncate(time.Second)
	_, err = wt.Commit(message, &git.CommitOptions{
		Author: &object.Signature{Name: AuthorName, Email: AuthorEmail, When: when},
	})
	return err
}

// pushImage builds the image of commit for linux/arch and pushes it as the component's :latest.
func pushImage(ctx context.Context, opts Options, component string, commit *object.Commit, platforms []string) (Build, error) {
	subject, _, _ := strings.Cut(commit.Message, "\n")
	b := Build{Component: component, Commit: commit.Hash.String(), Message: subject}
	entries := make([]releaseimage.IndexEntry, 0, len(platforms))
	for _, platform := range platforms {
		pl, err := releaseimage.ParsePlatform(platform)
		if err != nil {
			return Build{}, err
		}
		img, err := componentImage(opts, b, commit, pl.Architecture)
		if err != nil {
			return Build{}, fmt.Errorf("building the %s image of %s: %w", platform, component, err)
		}
		entries = append(entries, releaseimage.IndexEntry{Platform: pl, Image: img})
	}
	index := releaseimage.NewPlatformIndex(entries...)
	ref, err := name.NewTag(opts.ComponentRepository(component) + ":latest")
	if err != nil {
		return Build{}, err
	}
	if err := remote.WriteIndex(ref, index, append(slices.Clone(opts.Remote), remote.WithContext(ctx))...); err != nil {
		return Build{}, fmt.Errorf("pushing %s: %w", ref, err)
	}
	digest, err := index.Digest()
	if err != nil {
		return Build{}, err
	}
	b.Image = ref.Context().Digest(digest.String()).String()
	return b, nil
}

// componentImage is a one-layer image holding /app/<component>/VERSION, labelled with its
// source and revision. Everything in it comes from the commit, so the same commit and arch
// always give the same digest.
func componentImage(opts Options, b Build, commit *object.Commit, arch string) (v1.Image, error) {
	created := commit.Author.When.UTC()
	content := fmt.Sprintf("%s %s\ncommit %s\n\n%s", b.Component, arch, b.Commit, commit.Message)
	layerData, err := versionLayer(b.Component, []byte(content), created)
	if err != nil {
		return nil, err
	}
	source, err := filepath.Abs(opts.GitDir(b.Component))
	if err != nil {
		return nil, err
	}
	return releaseimage.SingleLayerImage(layerData, releaseimage.SingleLayerConfig{
		Created: created, CreatedBy: "demo build system: " + b.Message, OS: "linux", Architecture: arch,
		Labels: map[string]string{
			releaseimage.LabelSource:   "file://" + source,
			releaseimage.LabelRevision: b.Commit,
			LabelTitle:                 b.Component,
			LabelMessage:               b.Message,
		},
	})
}

// versionLayer is the tar of app/<component>/VERSION with fixed owners and modes.
func versionLayer(component string, content []byte, modTime time.Time) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	headers := []*tar.Header{
		{Typeflag: tar.TypeDir, Name: "app/", Mode: 0o755},
		{Typeflag: tar.TypeDir, Name: "app/" + component + "/", Mode: 0o755},
		{Typeflag: tar.TypeReg, Name: "app/" + component + "/VERSION", Mode: 0o644, Size: int64(len(content))},
	}
	for _, h := range headers {
		h.ModTime, h.Format = modTime, tar.FormatPAX
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
	}
	if _, err := tw.Write(content); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
