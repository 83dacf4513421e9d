package jobrunner

import (
	"os"
	"path/filepath"
	"testing"
)

func TestExpand(t *testing.T) {
	env := []string{"A=0", "B=2", "A=1"}
	for in, want := range map[string]string{
		"plain":        "plain",
		"$(A)":         "1",
		"x$(A)y$(B)z":  "x1y2z",
		"$(MISSING)":   "$(MISSING)",
		"$$(A)":        "$(A)",
		"$$":           "$",
		"$A and $":     "$A and $",
		"open $(A":     "open $(A",
		"$()":          "$()",
		"$(A)$(B)$$$$": "12$$",
	} {
		if got := expand(in, env); got != want {
			t.Errorf("expand(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestLookPathUsesProcessPath(t *testing.T) {
	dir := t.TempDir()
	tool := filepath.Join(dir, "tool")
	if err := os.WriteFile(tool, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "data"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	env := []string{"PATH=/nonexistent", "PATH=" + dir}
	if got, err := lookPath("tool", env); err != nil || got != tool {
		t.Errorf("lookPath(tool) = %q, %v; want %q", got, err, tool)
	}
	if _, err := lookPath("data", env); err == nil {
		t.Error("lookPath found a file that is not executable")
	}
	if got, err := lookPath("./relative", env); err != nil || got != "./relative" {
		t.Errorf("lookPath(./relative) = %q, %v", got, err)
	}
}
