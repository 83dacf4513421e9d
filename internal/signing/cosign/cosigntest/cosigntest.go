// Package cosigntest holds what the tests of Sigstore signing share: the cosign CLI built by
// `make bin/cosign`, an image pushed to a test registry, and a containers/image configuration
// of files in a directory.
package cosigntest

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"go.podman.io/image/v5/types"
)

// Cosign is the path of the cosign CLI: $COSIGN, else bin/cosign of this repository, which
// `make test` builds first. The test fails (never skips) when it is missing.
func Cosign(t testing.TB) string {
	t.Helper()
	p := os.Getenv("COSIGN")
	if p == "" {
		_, file, _, ok := runtime.Caller(0)
		if !ok {
			t.Fatal("cosigntest: cannot locate the repository")
		}
		p = filepath.Join(filepath.Dir(file), "..", "..", "..", "..", "bin", "cosign")
	}
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("no cosign CLI at %s (%v): run make bin/cosign, or set COSIGN", p, err)
	}
	return p
}

// PushRandom pushes a small random image as ref ("<repository>:<tag>") and returns it by digest.
func PushRandom(t testing.TB, ref string) name.Digest {
	t.Helper()
	img, err := random.Image(256, 1)
	if err != nil {
		t.Fatal(err)
	}
	tag, err := name.NewTag(ref)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(tag, img); err != nil {
		t.Fatalf("pushing %s: %v", ref, err)
	}
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return tag.Context().Digest(d.String())
}

// SystemContext configures containers/image from files in dir alone, as an administrator
// writes them: policyPath, registries.d holding registriesD (the file release-controller.yaml),
// no registries.conf and no credentials; plain HTTP to the test registries.
func SystemContext(t testing.TB, dir, policyPath, registriesD string) *types.SystemContext {
	t.Helper()
	d := filepath.Join(dir, "registries.d")
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		filepath.Join(d, "release-controller.yaml"): registriesD,
		filepath.Join(dir, "empty.conf"):            "",
		filepath.Join(dir, "auth.json"):             `{"auths":{}}`,
	}
	for path, content := range files {
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return &types.SystemContext{
		SignaturePolicyPath:         policyPath,
		RegistriesDirPath:           d,
		SystemRegistriesConfPath:    filepath.Join(dir, "empty.conf"),
		SystemRegistriesConfDirPath: filepath.Join(dir, "no-registries.conf.d"),
		AuthFilePath:                filepath.Join(dir, "auth.json"),
		DockerInsecureSkipTLSVerify: types.OptionalBoolTrue,
	}
}
