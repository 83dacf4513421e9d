package devenv

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/release-controller/release-controller/internal/devenv/registry"
	"github.com/release-controller/release-controller/internal/imagebuild"
	"github.com/release-controller/release-controller/internal/version"
)

// The environment pushes its binary as the creation Jobs' image, once per binary.
func TestPushBuildImage(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("packages a Linux binary")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	reg, err := registry.Start(ctx, registry.Options{Dir: t.TempDir(), Addr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Close()
	dataDir := t.TempDir()
	// The test binary stands in for release-controller: any ELF binary does.
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	exe := filepath.Join(t.TempDir(), "release-controller")
	if err := os.WriteFile(exe, data, 0o755); err != nil {
		t.Fatal(err)
	}

	push := func() (string, string) {
		t.Helper()
		var said strings.Builder
		ref, err := pushBuildImage(ctx, dataDir, reg.Addr(), exe, func(format string, args ...any) {
			fmt.Fprintf(&said, format+"\n", args...)
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Log(said.String())
		return ref, said.String()
	}
	first, said := push()
	if !strings.Contains(said, "pushed this binary") {
		t.Errorf("first start: %q, want a push", said)
	}
	digest, err := name.NewDigest(first)
	if err != nil {
		t.Fatalf("the image %q is not by digest: %v", first, err)
	}
	if want := reg.Addr() + "/" + BuildImageRepository; digest.Context().String() != want {
		t.Errorf("image repository %s, want %s", digest.Context(), want)
	}
	img, err := remote.Image(digest)
	if err != nil {
		t.Fatal(err)
	}
	config, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if config.Config.User != imagebuild.User || config.Architecture != runtime.GOARCH || config.Config.Entrypoint[0] != imagebuild.BinaryPath {
		t.Errorf("config: user %q, architecture %q, entrypoint %q", config.Config.User, config.Architecture, config.Config.Entrypoint)
	}
	// The tag names the same image.
	tagged, err := remote.Head(digest.Context().Tag(imagebuild.Tag(version.Version)))
	if err != nil {
		t.Error(err)
	} else if tagged.Digest.String() != digest.DigestStr() {
		t.Errorf("the tag names %s, want %s", tagged.Digest, digest.DigestStr())
	}

	again, said := push()
	if again != first || !strings.Contains(said, "pushed before") {
		t.Errorf("restart with the same binary: %s, %q; want %s, not pushed again", again, said, first)
	}

	// Another binary is pushed again.
	if err := os.WriteFile(exe, append(data, 0), 0o755); err != nil {
		t.Fatal(err)
	}
	other, said := push()
	if other == first || !strings.Contains(said, "pushed this binary") {
		t.Errorf("another binary: %s, %q; want a new push", other, said)
	}
}
