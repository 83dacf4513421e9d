package pipeline

import (
	"context"
	"strings"
	"testing"
	"time"

	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"

	"github.com/release-controller/release-controller/internal/pipeline/gittest"
)

const stagingRelease = `# The web app in staging.
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: web
spec:
  chart:
    spec:
      chart: web
      version: "1.0.0"  # set by the release controller
      sourceRef: {kind: HelmRepository, name: charts}
`

// TestGitPusher pushes promotions to a real git server (git http-backend over HTTP, basic
// auth): one commit changing only the value, by the author given; the same revision again
// changes nothing; another revision adds a commit; someone else's commit is kept; a merged
// promotion is not pushed again; wrong or missing credentials, a missing file or path fail
// with a clear message.
func TestGitPusher(t *testing.T) {
	ctx := context.Background()
	srv := gittest.NewServer(t, "bot", "s3cret")
	url := srv.CreateRepo(t, "fleet", map[string]string{
		"apps/web/staging/release.yaml": stagingRelease,
		"README.md":                     "fleet\n",
	})
	bare := srv.Bare("fleet")
	git := func(args ...string) string { return gittest.Git(t, bare, args...) }
	mainHead := git("rev-parse", "main")
	when := time.Date(2026, 3, 25, 12, 0, 0, 0, time.UTC)
	g := &GitPusher{Timeout: time.Minute, Now: func() time.Time { return when }}
	auth := &githttp.BasicAuth{Username: "bot", Password: "s3cret"}
	change := func(branch, revision string) GitChange {
		return GitChange{
			URL: url, BaseBranch: "main", Branch: branch, Path: "apps/web/staging/release.yaml", YAMLPath: "spec.chart.spec.version",
			Revision: revision, Auth: auth, AuthorName: "Release Bot", AuthorEmail: "bot@example.com",
			Message: "Promote web to " + revision + "\n",
		}
	}

	// A new branch with one commit on main's head changing that one value.
	res, err := g.Push(ctx, change("promote/web/staging/1.1.0", "1.1.0"))
	if err != nil {
		t.Fatalf("Push: %v", err)
	}
	head := git("rev-parse", "promote/web/staging/1.1.0")
	if !res.Pushed || res.Commit != head || res.Branch != "promote/web/staging/1.1.0" {
		t.Errorf("result %+v; branch head %s", res, head)
	}
	if parents := git("log", "-1", "--format=%P", head); parents != mainHead {
		t.Errorf("parents %q, want main's head %s", parents, mainHead)
	}
	if who := git("log", "-1", "--format=%an <%ae>|%cn <%ce>|%aI|%s", head); who != "Release Bot <bot@example.com>|Release Bot <bot@example.com>|2026-03-25T12:00:00+00:00|Promote web to 1.1.0" {
		t.Errorf("author, committer, date, subject: %q", who)
	}
	if files := git("diff", "--name-only", "main", head); files != "apps/web/staging/release.yaml" {
		t.Errorf("files changed: %q", files)
	}
	if got := git("show", head+":apps/web/staging/release.yaml"); got+"\n" != strings.Replace(stagingRelease, `"1.0.0"`, `"1.1.0"`, 1) {
		t.Errorf("file on the branch:\n%s", got)
	}
	if diff := git("diff", "-U0", "main", head); strings.Count(diff, "\n-") != 2 || strings.Count(diff, "\n+") != 2 { // --- and +++ headers, one line each
		t.Errorf("more than one line changed:\n%s", diff)
	}
	if srv.Authorized.Load() == 0 || srv.Refused.Load() != 0 {
		t.Errorf("credentials: %d requests let in, %d refused", srv.Authorized.Load(), srv.Refused.Load())
	}

	// The same promotion again: nothing to do.
	res, err = g.Push(ctx, change("promote/web/staging/1.1.0", "1.1.0"))
	if err != nil || res.Pushed || res.Commit != head {
		t.Errorf("second Push: %+v, %v; want nothing pushed, head %s", res, err, head)
	}
	if now := git("rev-parse", "promote/web/staging/1.1.0"); now != head {
		t.Errorf("the branch moved to %s", now)
	}

	// Another revision: a branch of its own, from main.
	res, err = g.Push(ctx, change("promote/web/staging/1.2.0", "1.2.0"))
	if err != nil || !res.Pushed {
		t.Fatalf("Push 1.2.0: %+v, %v", res, err)
	}
	if parents := git("log", "-1", "--format=%P", "promote/web/staging/1.2.0"); parents != mainHead {
		t.Errorf("1.2.0's parent %q, want main's head", parents)
	}

	// One branch per environment (a template without {revision}): each revision is a commit
	// on top, after someone else's commit, which stays.
	if _, err := g.Push(ctx, change("release/staging", "1.1.0")); err != nil {
		t.Fatal(err)
	}
	srv.Commit(t, "fleet", "release/staging", map[string]string{"README.md": "fleet, reviewed\n"}, "Review")
	theirs := git("rev-parse", "release/staging")
	res, err = g.Push(ctx, change("release/staging", "1.2.0"))
	if err != nil || !res.Pushed {
		t.Fatalf("Push 1.2.0 on release/staging: %+v, %v", res, err)
	}
	if parents := git("log", "-1", "--format=%P", "release/staging"); parents != theirs {
		t.Errorf("the promotion's parent %q, want the other commit %s (never forced)", parents, theirs)
	}
	if got := git("show", "release/staging:README.md"); got != "fleet, reviewed" {
		t.Errorf("someone else's change lost: %q", got)
	}
	if n := git("rev-list", "--count", "main..release/staging"); n != "3" {
		t.Errorf("%s commits on release/staging, want 3", n)
	}

	// Merged and its branch deleted: main has the revision, nothing is pushed.
	git("update-ref", "refs/heads/main", "promote/web/staging/1.2.0")
	git("update-ref", "-d", "refs/heads/promote/web/staging/1.2.0")
	res, err = g.Push(ctx, change("promote/web/staging/1.2.0", "1.2.0"))
	if err != nil || res.Pushed || res.On != "main" {
		t.Errorf("Push of a merged revision: %+v, %v", res, err)
	}
	if refs := git("for-each-ref", "refs/heads/promote/web/staging/1.2.0"); refs != "" {
		t.Errorf("branch pushed again: %s", refs)
	}

	// Failures say what is wrong.
	failures := []struct {
		name   string
		mutate func(c *GitChange)
		want   string
	}{
		{"missing file", func(c *GitChange) { c.Path = "apps/web/prod/release.yaml" }, "file apps/web/prod/release.yaml not found on branch main of " + url},
		{"missing field", func(c *GitChange) { c.YAMLPath = "spec.chart.spec.revision" }, `spec.chart.spec has no key "revision"`},
		{"missing base branch", func(c *GitChange) { c.BaseBranch = "develop" }, "has neither the branch promote/web/staging/9 nor the base branch develop"},
		{"wrong password", func(c *GitChange) { c.Auth = &githttp.BasicAuth{Username: "bot", Password: "wrong"} }, "authentication required"},
		{"no credentials", func(c *GitChange) { c.Auth = nil }, "authentication required"},
	}
	for _, f := range failures {
		c := change("promote/web/staging/9", "9")
		f.mutate(&c)
		_, err := g.Push(ctx, c)
		if err == nil || !strings.Contains(err.Error(), f.want) {
			t.Errorf("%s: error %v, want one containing %q", f.name, err, f.want)
		}
		if err != nil && strings.Contains(err.Error(), "s3cret") {
			t.Errorf("%s: the error shows a password: %v", f.name, err)
		}
	}
	if refs := git("for-each-ref", "refs/heads/promote/web/staging/9"); refs != "" {
		t.Errorf("a failed promotion pushed: %s", refs)
	}
}
