package changelog

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestMarkdownAndJSONLinksForGitHubSources(t *testing.T) {
	sha := strings.Repeat("ab", 20)
	old := strings.Repeat("cd", 20)
	cl := &ChangeLog{
		From: ReleaseInfo{Name: "4.1.0"}, To: ReleaseInfo{Name: "4.1.1", Digest: "sha256:x"},
		IssueURLPrefix: "https://issues.example.com/browse/",
		NewImages:      []ImageChange{{Name: "n", Source: "https://github.com/o/n", Revision: sha, Image: "r@sha256:1"}},
		UpdatedImages: []ImageChange{{
			Name: "api", Source: "https://github.com/o/api.git", Revision: sha, FromRevision: old,
			Commits: []Commit{toCommit(mustCommit(t, "Merge pull request #12 from user/branch\n\nAdd <b>feature</b>\n\nABC-1", sha), mustWeb(t, "https://github.com/o/api.git"), "")},
		}},
	}
	md := cl.Markdown()
	for _, want := range []string{
		"* [n](https://github.com/o/n) git [abababab](https://github.com/o/n/commit/" + sha + ") `sha256:1`",
		"### [api](https://github.com/o/api/tree/" + sha + ")",
		"* Add &lt;b&gt;feature&lt;/b&gt; [#12](https://github.com/o/api/pull/12) [abababab](https://github.com/o/api/commit/" + sha + ") [ABC-1](https://issues.example.com/browse/ABC-1)",
		"* [Full changelog](https://github.com/o/api/compare/" + old + "..." + sha + ")",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
	data, _ := json.Marshal(cl)
	for _, want := range []string{
		`"path":"https://github.com/o/api"`, `"pullURL":"https://github.com/o/api/pull/12"`,
		`"commitURL":"https://github.com/o/api/commit/` + sha + `"`, `"fullChangeLog":"https://github.com/o/api/compare/` + old + `...` + sha + `"`,
		`"issues":{"ABC-1":"https://issues.example.com/browse/ABC-1"}`,
	} {
		if !strings.Contains(string(data), want) {
			t.Errorf("json lacks %s:\n%s", want, data)
		}
	}
}
