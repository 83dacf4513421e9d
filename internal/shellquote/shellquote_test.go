package shellquote_test

import (
	"slices"
	"testing"

	"github.com/release-controller/release-controller/internal/shellquote"
	"github.com/release-controller/release-controller/internal/shellquote/shtest"
)

func TestJoinIsParsedBackToTheWords(t *testing.T) {
	for _, argv := range [][]string{
		{"release-controller", "pipeline", "approve", "ns/web", "prod", "1.2.3"},
		{"a b", "", "'", `"`, `\`, "$(touch /tmp/x)", "`id`", "$HOME", "a;b", "a|b", "a&b", "a\nb", "*", "?", "~", "#", "!", "{a,b}", "-rf", "é", "\t"},
		{"it's", "'; rm -rf / #", `'"'"'`},
	} {
		line := shellquote.Join(argv...)
		if got := shtest.Argv(t, line); !slices.Equal(got, argv) {
			t.Errorf("Join(%q) = %s, which sh parses as %q", argv, line, got)
		}
	}
}

func TestQuote(t *testing.T) {
	for in, want := range map[string]string{
		"1.2.3":           "1.2.3",
		"ns/web":          "ns/web",
		"https://x:8080/": "https://x:8080/",
		"":                "''",
		"a b":             "'a b'",
		"it's":            `'it'\''s'`,
		"$(x)":            "'$(x)'",
	} {
		if got := shellquote.Quote(in); got != want {
			t.Errorf("Quote(%q) = %s, want %s", in, got, want)
		}
	}
}
