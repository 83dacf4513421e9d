package changelog

import (
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

var (
	// "Merge pull request #123 from user/branch". Pull request numbers have no leading zero:
	// "(#01)" names none (found by FuzzParsePullRequest).
	mergePRRe = regexp.MustCompile(`^Merge pull request #([1-9]\d*) from \S+`)
	// "Fix x (#123)" — the GitHub squash-merge convention; the number closes the subject.
	squashPRRe = regexp.MustCompile(`\(#([1-9]\d*)\)\s*$`)
	// Jira-style issue keys: a project key of at least two characters, a dash, a number.
	issueKeyRe = regexp.MustCompile(`\b([A-Z][A-Z0-9_]+)-([1-9][0-9]*)\b`)
)

// notIssueKeys are prefixes that look like issue keys but are not (UTF-8, SHA-256, CVE-2024-…).
var notIssueKeys = map[string]bool{
	"UTF": true, "SHA": true, "CVE": true, "ISO": true, "RFC": true, "MD": true, "AES": true, "TLS": true,
	"HTTP": true, "IPV": true, "X509": true, "RSA": true, "ECDSA": true, "ED": true, "GHSA": true,
}

// ParsePullRequest returns the pull request number named by a commit subject, and whether
// the commit is a GitHub merge commit ("Merge pull request #123 from user/branch") as opposed
// to a squash-merged commit ("Fix x (#123)"). It returns 0 when the subject names no pull
// request.
func ParsePullRequest(subject string) (number int, merge bool) {
	subject = strings.TrimSpace(subject)
	if m := mergePRRe.FindStringSubmatch(subject); m != nil {
		if n, err := strconv.Atoi(m[1]); err == nil && n > 0 {
			return n, true
		}
	}
	if m := squashPRRe.FindStringSubmatch(subject); m != nil {
		if n, err := strconv.Atoi(m[1]); err == nil && n > 0 {
			return n, false
		}
	}
	return 0, false
}

// ParseIssueKeys returns the distinct issue keys (such as ABC-123) found in the texts, in
// order of first appearance. Well-known non-issue tokens such as UTF-8, SHA-256 and
// CVE-2024-1234 are ignored.
func ParseIssueKeys(texts ...string) []string {
	var keys []string
	for _, text := range texts {
		for _, m := range issueKeyRe.FindAllStringSubmatch(text, -1) {
			if notIssueKeys[m[1]] {
				continue
			}
			if !slices.Contains(keys, m[0]) {
				keys = append(keys, m[0])
			}
		}
	}
	return keys
}

// splitMessage splits a commit message into its subject (first line) and body (the rest,
// trimmed).
func splitMessage(message string) (subject, body string) {
	message = strings.TrimLeft(message, "\n")
	subject, body, _ = strings.Cut(message, "\n")
	return strings.TrimSpace(subject), strings.TrimSpace(body)
}

// WebRepo links into a hosted repository's web pages.
type WebRepo struct {
	base   string // https://host/org/repo
	gitlab bool
}

// Base is the repository's web address, https://host/org/repo.
func (w WebRepo) Base() string { return w.base }

// ParseWebRepo turns a git source URL into the repository's https web address when it looks
// like a GitHub/GitLab-style hosted repository (https://host/org/repo[.git],
// ssh://git@host/org/repo.git or git@host:org/repo.git). It returns false for anything else
// (file:// URLs, bare hosts, …).
func ParseWebRepo(source string) (WebRepo, bool) {
	s := strings.TrimSpace(source)
	if s == "" {
		return WebRepo{}, false
	}
	var host, path string
	switch {
	case strings.HasPrefix(s, "https://"), strings.HasPrefix(s, "http://"), strings.HasPrefix(s, "ssh://"), strings.HasPrefix(s, "git://"):
		u, err := url.Parse(s)
		if err != nil || u.Host == "" {
			return WebRepo{}, false
		}
		host, path = u.Hostname(), u.Path
	case !strings.Contains(s, "://") && strings.Contains(s, ":"):
		// scp-like: git@github.com:org/repo.git
		h, p, _ := strings.Cut(s, ":")
		if at := strings.LastIndex(h, "@"); at >= 0 {
			h = h[at+1:]
		}
		host, path = h, "/"+p
	default:
		return WebRepo{}, false
	}
	path = strings.TrimSuffix(strings.TrimSuffix(path, "/"), ".git")
	if host == "" || strings.Count(strings.Trim(path, "/"), "/") < 1 {
		return WebRepo{}, false
	}
	// The links must be URLs on that host: an IPv6 address goes in brackets, anything that
	// is no host name (spaces, say, in an scp-like source) is refused, and the path is
	// escaped. (Found by FuzzParseWebRepo.)
	authority := host
	if strings.Contains(host, ":") {
		authority = "[" + host + "]"
	}
	base := (&url.URL{Scheme: "https", Host: authority, Path: path}).String()
	if u, err := url.Parse(base); err != nil || u.Hostname() != host {
		return WebRepo{}, false
	}
	return WebRepo{base: base, gitlab: strings.Contains(host, "gitlab")}, true
}

func (w WebRepo) CommitURL(sha string) string {
	if w.gitlab {
		return w.base + "/-/commit/" + sha
	}
	return w.base + "/commit/" + sha
}

func (w WebRepo) PullURL(n int) string {
	if w.gitlab {
		return w.base + "/-/merge_requests/" + strconv.Itoa(n)
	}
	return w.base + "/pull/" + strconv.Itoa(n)
}

func (w WebRepo) TreeURL(sha string) string {
	if w.gitlab {
		return w.base + "/-/tree/" + sha
	}
	return w.base + "/tree/" + sha
}

func (w WebRepo) CompareURL(from, to string) string {
	if w.gitlab {
		return w.base + "/-/compare/" + from + "..." + to
	}
	return w.base + "/compare/" + from + "..." + to
}
