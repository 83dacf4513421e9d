package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/release-controller/release-controller/internal/devenv"
	"github.com/release-controller/release-controller/internal/shellquote/shtest"
)

// TestDevBannerUpdateServiceCommands parses each release-controller command `dev` prints about
// the update service, as sh passes it, against this binary's commands: a renamed verb or flag
// fails here rather than in a user's terminal.
func TestDevBannerUpdateServiceCommands(t *testing.T) {
	var out bytes.Buffer
	devenv.PrintUpdateService(&out, "/home/a user/.data/kubeconfig", "127.0.0.1:8080")
	if !strings.Contains(out.String(), "'http://127.0.0.1:8080/graph?channel=stable'") {
		t.Errorf("the banner does not show /graph?channel=stable:\n%s", out.String())
	}
	var commands int
	for _, line := range strings.Split(out.String(), "\n") {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "release-controller ") {
			continue
		}
		commands++
		argv := shtest.Argv(t, line)
		cmd, args, err := newRootCommand().Find(argv[1:])
		if err != nil || !cmd.Runnable() {
			t.Errorf("%s: no such command (%v)", line, err)
			continue
		}
		if err := cmd.ParseFlags(args); err != nil {
			t.Errorf("%s: %v", line, err)
		}
		if got := cmd.Flags().Lookup("kubeconfig").Value.String(); got != "/home/a user/.data/kubeconfig" {
			t.Errorf("%s: --kubeconfig %q", line, got)
		}
	}
	if commands != 3 {
		t.Errorf("%d release-controller commands in:\n%s", commands, out.String())
	}
}
