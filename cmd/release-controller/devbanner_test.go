package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/release-controller/release-controller/internal/devenv"
	"github.com/release-controller/release-controller/internal/shellquote/shtest"
)

// bannerCommands parses each release-controller command of a part of the banner `dev` prints,
// as sh passes it, against this binary's commands: a renamed verb or flag fails here rather
// than in a user's terminal. It returns each command with its flags parsed, by line.
func bannerCommands(t *testing.T, banner string) map[string]*cobra.Command {
	t.Helper()
	commands := map[string]*cobra.Command{}
	for _, line := range strings.Split(banner, "\n") {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "release-controller ") {
			continue
		}
		argv := shtest.Argv(t, line)
		cmd, args, err := newRootCommand().Find(argv[1:])
		if err != nil || !cmd.Runnable() {
			t.Errorf("%s: no such command (%v)", line, err)
			continue
		}
		if err := cmd.ParseFlags(args); err != nil {
			t.Errorf("%s: %v", line, err)
		}
		commands[line] = cmd
	}
	return commands
}

func TestDevBannerUpdateServiceCommands(t *testing.T) {
	var out bytes.Buffer
	devenv.PrintUpdateService(&out, "/home/a user/.data/kubeconfig", "127.0.0.1:8080")
	if !strings.Contains(out.String(), "'http://127.0.0.1:8080/graph?channel=stable'") {
		t.Errorf("the banner does not show /graph?channel=stable:\n%s", out.String())
	}
	commands := bannerCommands(t, out.String())
	for line, cmd := range commands {
		if got := cmd.Flags().Lookup("kubeconfig").Value.String(); got != "/home/a user/.data/kubeconfig" {
			t.Errorf("%s: --kubeconfig %q", line, got)
		}
	}
	if len(commands) != 3 {
		t.Errorf("%d release-controller commands in:\n%s", len(commands), out.String())
	}
}

// The pipeline's commands: prod approved with the key and with the release manager's token,
// rejected with a reason, and a stop-the-line started and ended in the demo's namespace.
func TestDevBannerPipelineCommands(t *testing.T) {
	var out bytes.Buffer
	devenv.PrintPipeline(&out, "kubectl --kubeconfig /data/kubeconfig", "/home/a user/.data", "/home/a user/.data/kubeconfig", "127.0.0.1:8080")
	commands := bannerCommands(t, out.String())
	flag := func(cmd *cobra.Command, name string) string { return cmd.Flags().Lookup(name).Value.String() }
	seen := map[string]int{}
	for line, cmd := range commands {
		seen[cmd.CommandPath()]++
		switch cmd.CommandPath() {
		case "release-controller pipeline approve", "release-controller pipeline reject":
			if flag(cmd, "server") != "http://127.0.0.1:8080" {
				t.Errorf("%s: --server %q", line, flag(cmd, "server"))
			}
			key, token := flag(cmd, "key-file"), flag(cmd, "token-file")
			if key != "/home/a user/.data/prod-approval-key" && token != "/home/a user/.data/release-manager-token" {
				t.Errorf("%s: --key-file %q, --token-file %q", line, key, token)
			}
			if !strings.Contains(line, "demo/nightly prod $(kubectl --kubeconfig /data/kubeconfig get pipeline -n demo nightly") {
				t.Errorf("%s: not prod's waiting revision of demo/nightly", line)
			}
		case "release-controller freeze start", "release-controller freeze end":
			if flag(cmd, "namespace") != "demo" || flag(cmd, "kubeconfig") != "/home/a user/.data/kubeconfig" {
				t.Errorf("%s: -n %q, --kubeconfig %q", line, flag(cmd, "namespace"), flag(cmd, "kubeconfig"))
			}
		}
	}
	want := map[string]int{
		"release-controller pipeline approve": 2, "release-controller pipeline reject": 1,
		"release-controller freeze start": 1, "release-controller freeze end": 1,
	}
	for path, n := range want {
		if seen[path] != n {
			t.Errorf("%d of %s in the banner, want %d:\n%s", seen[path], path, n, out.String())
		}
	}
	if len(commands) != 5 {
		t.Errorf("%d release-controller commands in:\n%s", len(commands), out.String())
	}
}
