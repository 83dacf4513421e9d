package changelog

import (
	"strings"
	"testing"
)

func TestHTML(t *testing.T) {
	cl := &ChangeLog{
		From: ReleaseInfo{Name: "1.0.0"},
		To:   ReleaseInfo{Name: "1.1.0"},
		UpdatedImages: []ImageChange{{
			Name: "api", Source: "https://github.com/example/api", Revision: "bbbbbbbbbbbb", FromRevision: "aaaaaaaaaaaa",
			Commits: []Commit{{SHA: "bbbbbbbbbbbb", Title: "Fix <script>alert(1)</script> in *parser*", PullRequest: 7,
				PullURL: "https://github.com/example/api/pull/7", URL: "https://github.com/example/api/commit/bbbbbbbbbbbb"}},
		}},
	}
	html, err := cl.HTML()
	if err != nil {
		t.Fatal(err)
	}
	got := string(html)
	for _, want := range []string{
		"<h1>1.1.0</h1>",
		"<h2>Changes from 1.0.0</h2>",
		`<h3><a href="https://github.com/example/api/tree/bbbbbbbbbbbb">api</a></h3>`,
		`<a href="https://github.com/example/api/pull/7">#7</a>`,
		"Fix &lt;script&gt;alert(1)&lt;/script&gt; in *parser*",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the HTML lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "<script>") {
		t.Errorf("commit text became markup:\n%s", got)
	}
}
