// Package shellquote quotes words for a POSIX shell, so that a command shown to people (on a
// page, by an MCP tool) runs with exactly the arguments meant, whatever they hold.
package shellquote

import (
	"regexp"
	"strings"
)

// safe is what a word may hold unquoted: nothing a shell gives a meaning to.
var safe = regexp.MustCompile(`^[A-Za-z0-9._:/@+=,-]+$`)

// Quote is s as one shell word: unchanged when it holds only safe characters, else in single
// quotes (inside which a shell expands nothing); a single quote in s closes the quotes, is
// escaped with a backslash and opens them again.
func Quote(s string) string {
	if safe.MatchString(s) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// Join is the command line of argv, each word quoted.
func Join(argv ...string) string {
	words := make([]string, len(argv))
	for i, a := range argv {
		words[i] = Quote(a)
	}
	return strings.Join(words, " ")
}
