package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/release-controller/release-controller/internal/devenv"
	"github.com/release-controller/release-controller/internal/shellquote/shtest"
)

// The banner's Sigstore commands: cosign verify and verify-attestation with the data dir's
// public key, without a transparency log (the controller signs with a key, offline), of the
// newest accepted payload; and the same through payload verify, whose flags parse.
func TestDevBannerCosignCommands(t *testing.T) {
	var out bytes.Buffer
	devenv.PrintCosign(&out, "/home/a user/.data", "127.0.0.1:8080")
	latest := devenv.LatestPullSpecCommand("127.0.0.1:8080")
	if latest != `"$(curl -s 'http://127.0.0.1:8080/api/v1/releasestream/nightly/latest?format=pullSpec')"` {
		t.Errorf("the latest payload's pull spec comes from %s", latest)
	}
	// sh runs no curl here: the pull spec stands in for it.
	banner := strings.ReplaceAll(out.String(), latest, "127.0.0.1:5000/demo/release:4.15.0")
	want := map[string][]string{
		"verify":             {"bin/cosign", "verify", "--key", "/home/a user/.data/cosign.pub", "--insecure-ignore-tlog=true", "127.0.0.1:5000/demo/release:4.15.0"},
		"verify-attestation": {"bin/cosign", "verify-attestation", "--key", "/home/a user/.data/cosign.pub", "--insecure-ignore-tlog=true", "--type", "slsaprovenance1", "127.0.0.1:5000/demo/release:4.15.0"},
	}
	for _, line := range strings.Split(banner, "\n") {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "bin/cosign ") {
			continue
		}
		argv := shtest.Argv(t, line)
		if w, ok := want[argv[1]]; !ok || strings.Join(argv, "\x00") != strings.Join(w, "\x00") {
			t.Errorf("%s: argv %q, want %q", line, argv, w)
		}
		delete(want, argv[1])
	}
	if len(want) > 0 {
		t.Errorf("the banner lacks cosign %v:\n%s", want, out.String())
	}
	commands := bannerCommands(t, banner)
	if len(commands) != 1 {
		t.Fatalf("%d release-controller commands in:\n%s", len(commands), out.String())
	}
	for line, cmd := range commands {
		if cmd.Name() != "verify" || cmd.Flags().Lookup("format").Value.String() != "attestation" || cmd.Flags().Lookup("key").Value.String() != "/home/a user/.data/cosign.pub" {
			t.Errorf("%s: not payload verify --format attestation with the key", line)
		}
	}
}
