package changelog

import (
	"slices"
	"testing"
)

func TestParsePullRequest(t *testing.T) {
	for _, tc := range []struct {
		subject string
		want    int
		merge   bool
	}{
		{"Merge pull request #12 from user/branch", 12, true},
		{"Merge pull request #4567 from openshift-cherrypick-robot/cherry-pick-1-to-release-4.17", 4567, true},
		{"  Merge pull request #3 from a/b  ", 3, true},
		{"Add thing (#34)", 34, false},
		{"Add thing (#34) ", 34, false},
		{"OCPBUGS-1: fix a (b) (#9001)", 9001, false},
		{"Fix #34 in the middle", 0, false},
		{"Add thing (#34) and more", 0, false},
		{"Merge branch 'main' into feature", 0, false},
		{"Merge pull request from nowhere", 0, false},
		{"Revert \"Add thing (#34)\"", 0, false},
		{"(#0)", 0, false},
		{"", 0, false},
	} {
		n, merge := ParsePullRequest(tc.subject)
		if n != tc.want || merge != tc.merge {
			t.Errorf("ParsePullRequest(%q) = %d, %v; want %d, %v", tc.subject, n, merge, tc.want, tc.merge)
		}
	}
}

func TestParseIssueKeys(t *testing.T) {
	for _, tc := range []struct {
		texts []string
		want  []string
	}{
		{[]string{"ABC-123: fix"}, []string{"ABC-123"}},
		{[]string{"OCPBUGS-1234, OCPBUGS-99 and ABC-123", "again ABC-123"}, []string{"OCPBUGS-1234", "OCPBUGS-99", "ABC-123"}},
		{[]string{"subject", "body fixes ABC-123\n\nSigned-off-by: x"}, []string{"ABC-123"}},
		{[]string{"[MCO-7] bracketed"}, []string{"MCO-7"}},
		{[]string{"UTF-8 and SHA-256 and CVE-2024-1234 are not issues"}, nil},
		{[]string{"lowercase abc-123, single A-1, zero ABC-0, embedded xABC-12"}, nil},
		{[]string{"K8S-12 digits in key"}, []string{"K8S-12"}},
		{nil, nil},
	} {
		got := ParseIssueKeys(tc.texts...)
		if !slices.Equal(got, tc.want) {
			t.Errorf("ParseIssueKeys(%q) = %q; want %q", tc.texts, got, tc.want)
		}
	}
}

func TestRepoWebURL(t *testing.T) {
	for _, tc := range []struct {
		in, base string
		gitlab   bool
		ok       bool
	}{
		{"https://github.com/openshift/api", "https://github.com/openshift/api", false, true},
		{"https://github.com/openshift/api.git", "https://github.com/openshift/api", false, true},
		{"https://github.com/openshift/api/", "https://github.com/openshift/api", false, true},
		{"git@github.com:openshift/api.git", "https://github.com/openshift/api", false, true},
		{"ssh://git@gitlab.com/group/sub/proj.git", "https://gitlab.com/group/sub/proj", true, true},
		{"https://gitlab.example.com/group/proj", "https://gitlab.example.com/group/proj", true, true},
		{"file:///tmp/repo", "", false, false},
		{"https://github.com/onlyorg", "", false, false},
		{"", "", false, false},
		{"/abs/path", "", false, false},
	} {
		w, ok := ParseWebRepo(tc.in)
		if ok != tc.ok || w.base != tc.base || w.gitlab != tc.gitlab {
			t.Errorf("repoWebURL(%q) = %+v, %v; want %q gitlab=%v, %v", tc.in, w, ok, tc.base, tc.gitlab, tc.ok)
		}
	}
	gh, _ := ParseWebRepo("https://github.com/o/r")
	if got := gh.PullURL(12); got != "https://github.com/o/r/pull/12" {
		t.Error(got)
	}
	if got := gh.CommitURL("abc"); got != "https://github.com/o/r/commit/abc" {
		t.Error(got)
	}
	gl, _ := ParseWebRepo("https://gitlab.com/g/p")
	if got := gl.PullURL(5); got != "https://gitlab.com/g/p/-/merge_requests/5" {
		t.Error(got)
	}
	if got := gl.CommitURL("abc"); got != "https://gitlab.com/g/p/-/commit/abc" {
		t.Error(got)
	}
}

func TestDirName(t *testing.T) {
	a := dirName("https://github.com/openshift/api.git")
	b := dirName("https://github.com/openshift/api")
	if a == b {
		t.Fatalf("different URLs share a directory: %s", a)
	}
	for _, u := range []string{"https://github.com/openshift/api.git", "file:///../../etc/passwd", "git@host:a/b c?d", "https://x/../..", ""} {
		d := dirName(u)
		if d == "" || d == "." || d == ".." || slices.ContainsFunc([]rune(d), func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.')
		}) {
			t.Errorf("dirName(%q) = %q is not a safe name", u, d)
		}
	}
}
