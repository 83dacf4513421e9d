//go:build !unit

package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/buildinput"
)

// TestPayloadBuildFromInput: `payload build --input FILE`, as a creation job on another
// cluster runs it, builds from the JSON alone (no cluster is reachable: the kubeconfig names
// nothing) the very image `--payload` builds from the ReleasePayload, digest for digest; the
// file's format is the one written here by hand.
func TestPayloadBuildFromInput(t *testing.T) {
	reg := startRegistry(t)
	ns := env.Namespace(t)
	api := pushComponent(t, reg, "api", "1111")
	web := pushComponent(t, reg, "web", "2222")
	repo := reg.Addr() + "/product/release"
	first := v1alpha1.PinnedComponent{Name: "api", Image: api}
	createPayload(t, ns, "nightly", "4.15.0-0.nightly-2026-11-21-093000", repo, v1alpha1.PhaseAccepted, first)
	tag := "4.15.0-0.nightly-2026-11-22-093000"
	createPayload(t, ns, "nightly", tag, repo, "", v1alpha1.PinnedComponent{Name: "web", Image: web}, first)

	out, err := run(t, "payload", "build", "--payload", ns+"/"+tag, "--kubeconfig", writeKubeconfig(t))
	if err != nil {
		t.Fatalf("payload build --payload: %v\n%s", err, out)
	}
	want := lastLine(out)

	// The input as the stream controller computes it for the ConfigMap.
	var p v1alpha1.ReleasePayload
	var all v1alpha1.ReleasePayloadList
	ctx := context.Background()
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: tag}, &p); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.List(ctx, &all, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	in, err := buildinput.Of(&p, all.Items)
	if err != nil {
		t.Fatal(err)
	}
	data, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	// The format: a hand-written file of the same content parses to the same input.
	created := p.CreationTimestamp.UTC().Format("2006-01-02T15:04:05Z")
	byHand := `{"namespace": "` + ns + `", "payload": "` + tag + `", "tag": "` + tag + `", "stream": "nightly",
		"repository": "` + repo + `", "components": [{"name": "web", "image": "` + web + `"}, {"name": "api", "image": "` + api + `"}],
		"previous": ["4.15.0-0.nightly-2026-11-21-093000"], "created": "` + created + `"}`
	fromHand, err := buildinput.Parse([]byte(byHand))
	if err != nil {
		t.Fatal(err)
	}
	if a, b := mustJSON(t, fromHand), string(data); a != b {
		t.Errorf("the hand-written input reads as\n%s\nthe computed one is\n%s", a, b)
	}

	dir := t.TempDir()
	file := filepath.Join(dir, "build.json")
	if err := os.WriteFile(file, data, 0o600); err != nil {
		t.Fatal(err)
	}
	// No cluster: a kubeconfig that names none would fail any request.
	t.Setenv("KUBECONFIG", filepath.Join(dir, "absent"))
	out, err = run(t, "payload", "build", "--input", file)
	if err != nil {
		t.Fatalf("payload build --input: %v\n%s", err, out)
	}
	if !strings.Contains(out, "building "+tag+" of stream nightly: 2 components, previous releases: 4.15.0-0.nightly-2026-11-21-093000") {
		t.Errorf("build output:\n%s", out)
	}
	if got := lastLine(out); got != want {
		t.Errorf("--input built %s, --payload built %s", got, want)
	}

	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte(`{"tag": "`+tag+`", "components": []}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--input", file, "--payload", ns + "/" + tag}, "none of the others can be"},
		{nil, "give exactly one of --payload NAMESPACE/NAME and --input FILE"},
		{[]string{"--input", filepath.Join(dir, "missing.json")}, "reading the build input"},
		{[]string{"--input", bad}, "the build input has no components, repository, stream"},
	} {
		out, err := run(t, append([]string{"payload", "build"}, tc.args...)...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("payload build %v: error %v, want one saying %q\n%s", tc.args, err, tc.want, out)
		}
	}
}

func lastLine(out string) string {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	return lines[len(lines)-1]
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}
