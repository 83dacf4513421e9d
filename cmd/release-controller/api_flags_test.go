package main

import (
	"io"
	"strings"
	"testing"
)

// TestAPIPublicURL: a --public-url that is not an absolute http(s) URL stops api at start,
// saying what it wants, before it contacts any cluster; a good one gets past (to the missing
// kubeconfig).
func TestAPIPublicURL(t *testing.T) {
	run := func(publicURL string) error {
		cmd := newAPICommand()
		cmd.SetArgs([]string{"--public-url", publicURL, "--kubeconfig", "/nonexistent"})
		cmd.SetOut(io.Discard)
		cmd.SetErr(io.Discard)
		return cmd.Execute()
	}
	if err := run("https://release.example.com/"); err == nil || strings.Contains(err.Error(), "--public-url") {
		t.Errorf("a good --public-url: %v", err)
	}
	for _, bad := range []string{"release.example.com", "ftp://release.example.com", "https://release.example.com/?x=1"} {
		if err := run(bad); err == nil || !strings.Contains(err.Error(), "--public-url") || !strings.Contains(err.Error(), "absolute http or https URL") {
			t.Errorf("--public-url %q: %v", bad, err)
		}
	}
}
