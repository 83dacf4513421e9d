//go:build containers_image_openpgp

// The build tag: go.podman.io/image needs it to build without gpgme (cgo); `make test` and
// `make unit` set it.

package policies

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"go.podman.io/image/v5/docker"
	"go.podman.io/image/v5/image"
	"go.podman.io/image/v5/signature"
	"go.podman.io/image/v5/signature/sigstore"
	"go.podman.io/image/v5/types"

	"github.com/release-controller/release-controller/internal/devenv/registry"
)

// TestContainersImagePolicy: the sample containers-policy.json and registries.d file, filled
// in, are what containers/image (podman, CRI-O, skopeo) loads, and with them it refuses a
// payload image that has no signature by the key and leaves other repositories alone.
func TestContainersImagePolicy(t *testing.T) {
	ctx := context.Background()
	reg, err := registry.Start(ctx, registry.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = reg.Close() })
	repo := reg.Addr() + "/product/release"
	conf := t.TempDir()

	key, err := sigstore.GenerateKeyPair([]byte("test passphrase"))
	if err != nil {
		t.Fatal(err)
	}

	// The samples, filled in: the policy's keyPath points at the controller's public key.
	policyJSON, err := sample("containers-policy.json", repo, "team", "nightly", nil)
	if err != nil {
		t.Fatal(err)
	}
	pubPath := filepath.Join(conf, "release-controller-cosign.pub")
	if err := os.WriteFile(pubPath, key.PublicKey, 0o644); err != nil {
		t.Fatal(err)
	}
	policyJSON = []byte(strings.ReplaceAll(string(policyJSON), "/etc/containers/release-controller-cosign.pub", pubPath))
	registriesYAML, err := sample("registries.d/release-controller.yaml", repo, "team", "nightly", nil)
	if err != nil {
		t.Fatal(err)
	}
	registriesD := filepath.Join(conf, "registries.d")
	if err := os.Mkdir(registriesD, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(registriesD, "release-controller.yaml"), registriesYAML, 0o644); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(conf, "empty.conf")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	authFile := filepath.Join(conf, "auth.json")
	if err := os.WriteFile(authFile, []byte(`{"auths":{}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	sys := &types.SystemContext{
		RegistriesDirPath:           registriesD,
		SystemRegistriesConfPath:    empty,
		SystemRegistriesConfDirPath: filepath.Join(conf, "no-registries.conf.d"),
		AuthFilePath:                authFile,
		DockerInsecureSkipTLSVerify: types.OptionalBoolTrue, // the embedded registry speaks plain HTTP
	}

	pol, err := signature.NewPolicyFromBytes(policyJSON)
	if err != nil {
		t.Fatalf("containers/image refuses the sample policy: %v\n%s", err, policyJSON)
	}
	// registries.d's own loader reads the file (a YAML error fails here).
	ref, err := docker.ParseReference("//" + repo + ":x")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := docker.SignatureStorageBaseURL(sys, ref, false); err != nil {
		t.Fatalf("containers/image refuses the sample registries.d file: %v", err)
	}

	// A payload image without a signature, and an image of another repository.
	push := func(ref string) {
		img, err := random.Image(128, 1)
		if err != nil {
			t.Fatal(err)
		}
		r, err := name.NewTag(ref)
		if err != nil {
			t.Fatal(err)
		}
		if err := remote.Write(r, img); err != nil {
			t.Fatalf("pushing %s: %v", r, err)
		}
	}
	push(repo + ":unsigned")
	push(reg.Addr() + "/product/other:1")

	pc, err := signature.NewPolicyContext(pol)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = pc.Destroy() }()
	allowed := func(ref string) (bool, error) {
		r, err := docker.ParseReference("//" + ref)
		if err != nil {
			t.Fatal(err)
		}
		src, err := r.NewImageSource(ctx, sys)
		if err != nil {
			t.Fatalf("opening %s: %v", ref, err)
		}
		defer func() { _ = src.Close() }()
		return pc.IsRunningImageAllowed(ctx, image.UnparsedInstance(src, nil))
	}
	// The repository requires a signature by the key (looked for in the sigstore tag, as
	// registries.d says), so the unsigned payload is refused; other images are left alone.
	// That signed payloads pass is shown with the controller's own signatures by the cosign
	// package's tests.
	ok, err := allowed(repo + ":unsigned")
	if ok || err == nil {
		t.Errorf("the unsigned payload image is allowed (err %v), want refused", err)
	} else if !strings.Contains(err.Error(), "signature") {
		t.Errorf("the unsigned payload image is refused for another reason than its signature: %v", err)
	}
	if ok, err := allowed(reg.Addr() + "/product/other:1"); !ok || err != nil {
		t.Errorf("an image of another repository is refused: %v", err)
	}
}
