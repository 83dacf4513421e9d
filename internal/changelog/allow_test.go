package changelog

import (
	"strings"
	"testing"
)

func TestSourceAllowList(t *testing.T) {
	for _, tc := range []struct {
		entries []string
		allowed []string
		refused []string
	}{{
		entries: DefaultSourceAllow,
		allowed: []string{"https://github.com/openshift/api", "HTTPS://github.com/a/b.git", "https://git.example.com:8443/x"},
		refused: []string{
			"file:///etc", "/etc", "../../etc", "./repo", "http://127.0.0.1:8080/org/repo.git", "http://github.com/a/b",
			"git://github.com/a/b", "ssh://git@github.com/a/b", "git@github.com:a/b.git", "", "not a url",
		},
	}, {
		entries: []string{"github.com"},
		allowed: []string{"https://github.com/a/b", "ssh://git@github.com/a/b", "git@github.com:a/b.git", "http://github.com/a"},
		refused: []string{
			"https://github.com.evil.example/a", "https://evil.example/github.com", "https://github.com@127.0.0.1/a",
			"https://github.com:8443/a", "file:///github.com/a", "/github.com",
		},
	}, {
		entries: []string{"https://git.example.com/org/"},
		allowed: []string{"https://git.example.com/org/repo", "https://git.example.com/org", "https://GIT.example.com/org/a/b"},
		refused: []string{
			"https://git.example.com/organization/repo", "https://git.example.com/org/../admin/repo", "https://git.example.com/other",
			"http://git.example.com/org/repo", "ssh://git.example.com/org/repo", "https://git.example.com:444/org/repo",
			"https://user@git.example.com.evil/org/repo",
		},
	}, {
		entries: []string{"file:///srv/git/", "git.example.com:2222"},
		allowed: []string{"file:///srv/git/a", "/srv/git/a/b", "ssh://git@git.example.com:2222/a"},
		refused: []string{"file:///srv/git/../../etc", "/srv/gitx", "file:///etc", "ssh://git@git.example.com/a", "../srv/git/a"},
	}, {
		entries: []string{"file://"},
		allowed: []string{"file:///etc", "/anything"},
		refused: []string{"https://github.com/a"},
	}, {
		entries: []string{},
		refused: []string{"https://github.com/a", "file:///x"},
	}} {
		l, err := ParseSourceAllowList(tc.entries)
		if err != nil {
			t.Fatalf("%q: %v", tc.entries, err)
		}
		for _, s := range tc.allowed {
			if !l.Allows(s) {
				t.Errorf("%q refuses %q", tc.entries, s)
			}
			if err := l.Check(s); err != nil {
				t.Errorf("%q: Check(%q) = %v", tc.entries, s, err)
			}
		}
		for _, s := range tc.refused {
			if l.Allows(s) {
				t.Errorf("%q allows %q", tc.entries, s)
			}
		}
	}
}

func TestSourceAllowListRefusal(t *testing.T) {
	l, err := ParseSourceAllowList(DefaultSourceAllow)
	if err != nil {
		t.Fatal(err)
	}
	want := "not fetched: file:///etc is not an allowed git source (--git-source-allow: https://)"
	if err := l.Check("file:///etc"); err == nil || err.Error() != want {
		t.Errorf("Check = %v, want %s", err, want)
	}
	for entry, want := range map[string]string{
		"":                         "empty entry",
		"github.com/org":           "want a scheme",
		"user@github.com":          "want a scheme",
		"://":                      "not a scheme",
		"https://user@github.com/": "no user or password",
		"https:///path":            "no host",
	} {
		if _, err := ParseSourceAllowList([]string{entry}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("entry %q: %v, want %q", entry, err, want)
		}
	}
}
