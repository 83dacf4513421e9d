package changelog

import (
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// A component's source comes from its image's org.opencontainers.image.source label, which
// whoever built the image wrote: a repository the parser accepts gives links that are
// absolute https URLs on the source's host, whose path holds the repository.
func FuzzParseWebRepo(f *testing.F) {
	for _, seed := range []string{
		"https://github.com/example/api", "https://github.com/example/api.git/", "git@github.com:example/api.git",
		"ssh://git@gitlab.example.com:2222/group/sub/repo.git", "git://example.com/a/b", "file:///srv/git/a/b",
		"https://github.com/example", "javascript:alert(1)/x", "a b:c/d", "https://host/a/b?q=1#f", "http://[::1]:80/a/b",
		"git@:a/b", "https://user:pass@host/a/b", "x:/a/b", "",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, source string) {
		repo, ok := ParseWebRepo(source)
		if !ok {
			if repo != (WebRepo{}) {
				t.Errorf("ParseWebRepo(%q) refused it with %+v", source, repo)
			}
			return
		}
		for _, link := range []string{repo.Base(), repo.CommitURL("abc"), repo.PullURL(7), repo.TreeURL("abc")} {
			u, err := url.Parse(link)
			if err != nil || u.Scheme != "https" || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
				t.Fatalf("ParseWebRepo(%q) links to %q (%v)", source, link, err)
			}
			if strings.Count(strings.Trim(u.Path, "/"), "/") < 1 {
				t.Errorf("ParseWebRepo(%q) links to %q, with no org/repo path", source, link)
			}
		}
	})
}

// Commit subjects are whatever their authors wrote: a pull request number is positive and
// written in the subject; a merge commit says so at its start.
func FuzzParsePullRequest(f *testing.F) {
	for _, seed := range []string{
		"Merge pull request #123 from user/branch", "Fix x (#123)", "Fix x (#0)", "Fix (#99999999999999999999)",
		"Merge pull request #12 from", "  Fix y (#5)  ", "nothing", "",
		"(#01)", "Merge pull request #007 from a/b", // found by fuzzing: leading zeros name no pull request
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, subject string) {
		n, merge := ParsePullRequest(subject)
		if n == 0 {
			if merge {
				t.Errorf("ParsePullRequest(%q) = 0, merge", subject)
			}
			return
		}
		if n < 0 || !strings.Contains(subject, "#"+strconv.Itoa(n)) {
			t.Errorf("ParsePullRequest(%q) = %d, which the subject does not name", subject, n)
		}
		if merge && !strings.HasPrefix(strings.TrimSpace(subject), "Merge pull request #") {
			t.Errorf("ParsePullRequest(%q) calls it a merge commit", subject)
		}
	})
}

var issueKey = regexp.MustCompile(`^[A-Z][A-Z0-9_]+-[1-9][0-9]*$`)

// Issue keys found in commit messages are well formed, distinct, in the text, and never the
// well-known non-issue tokens.
func FuzzParseIssueKeys(f *testing.F) {
	f.Add("OCPBUGS-7: fix; see ABC-12 and OCPBUGS-7", "UTF-8 SHA-256 CVE-2024-1234")
	f.Add("A-1 AB-0 AB-01 _AB-1 AB-1x", "")
	f.Fuzz(func(t *testing.T, a, b string) {
		seen := map[string]bool{}
		for _, key := range ParseIssueKeys(a, b) {
			if !issueKey.MatchString(key) || seen[key] || (!strings.Contains(a, key) && !strings.Contains(b, key)) {
				t.Errorf("ParseIssueKeys(%q, %q) found %q", a, b, key)
			}
			seen[key] = true
			project, _, _ := strings.Cut(key, "-")
			if notIssueKeys[project] {
				t.Errorf("ParseIssueKeys(%q, %q) found the non-issue %q", a, b, key)
			}
		}
	})
}
