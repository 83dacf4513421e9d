// Package shtest runs command lines through a real POSIX shell in tests, to check that the
// commands this project shows people run with the arguments meant.
package shtest

import (
	"os/exec"
	"strings"
	"testing"
)

// Argv is what sh makes of a command line: its words, as the program would receive them. The
// line is not run: set -- puts its words in "$@", and printf writes each followed by a NUL,
// which no word can hold.
func Argv(t testing.TB, line string) []string {
	t.Helper()
	out, err := exec.Command("sh", "-c", "set -- "+line+"\nprintf '%s\\0' \"$@\"").Output()
	if err != nil {
		t.Fatalf("sh -c %q: %v", line, err)
	}
	words := strings.Split(string(out), "\x00")
	return words[:len(words)-1]
}
