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

	"go.podman.io/image/v5/docker"
	"go.podman.io/image/v5/signature"

	"github.com/release-controller/release-controller/internal/devenv/registry"
	"github.com/release-controller/release-controller/internal/signing/cosign"
	"github.com/release-controller/release-controller/internal/signing/cosign/cosigntest"
)

// TestContainersImagePolicy: the sample containers-policy.json and registries.d file, filled
// in, are what containers/image (podman, CRI-O, skopeo) loads, and with them it allows a
// payload image signed by the controller's key, refuses one with no signature or another
// key's, and leaves other repositories alone.
func TestContainersImagePolicy(t *testing.T) {
	ctx := context.Background()
	reg, err := registry.Start(ctx, registry.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = reg.Close() })
	repo := reg.Addr() + "/product/release"
	conf := t.TempDir()
	signer, other := newSigner(t), newSigner(t)

	// The samples, filled in: the policy's keyPath points at the controller's public key.
	policyJSON, err := sample("containers-policy.json", repo, "team", "nightly", nil)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := signer.PublicKeyPEM()
	if err != nil {
		t.Fatal(err)
	}
	pubPath := filepath.Join(conf, "release-controller-cosign.pub")
	if err := os.WriteFile(pubPath, pub, 0o644); err != nil {
		t.Fatal(err)
	}
	policyJSON = []byte(strings.ReplaceAll(string(policyJSON), "/etc/containers/release-controller-cosign.pub", pubPath))
	policyPath := filepath.Join(conf, "policy.json")
	if err := os.WriteFile(policyPath, policyJSON, 0o644); err != nil {
		t.Fatal(err)
	}
	registriesYAML, err := sample("registries.d/release-controller.yaml", repo, "team", "nightly", nil)
	if err != nil {
		t.Fatal(err)
	}
	sys := cosigntest.SystemContext(t, conf, policyPath, string(registriesYAML))

	if _, err := signature.NewPolicyFromBytes(policyJSON); err != nil {
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

	// Payload images signed as the controller signs them (the identity is <repository>:<tag>),
	// by its key and by another; one unsigned; an image of another repository.
	for tag, s := range map[string]*cosign.Signer{"signed": signer, "other-key": other} {
		image := cosigntest.PushRandom(t, repo+":"+tag)
		if _, err := cosign.EnsureSigned(ctx, image, repo+":"+tag, s); err != nil {
			t.Fatal(err)
		}
	}
	cosigntest.PushRandom(t, repo+":unsigned")
	cosigntest.PushRandom(t, reg.Addr()+"/product/other:1")

	if ok, err := cosigntest.Allowed(ctx, t, sys, repo+":signed"); !ok || err != nil {
		t.Errorf("the payload image signed by the controller's key is refused: %v", err)
	}
	for _, tag := range []string{"unsigned", "other-key"} {
		ok, err := cosigntest.Allowed(ctx, t, sys, repo+":"+tag)
		if ok || err == nil {
			t.Errorf("the %s payload image is allowed (err %v), want refused", tag, err)
		} else if !strings.Contains(err.Error(), "signature") {
			t.Errorf("the %s payload image is refused for another reason than its signature: %v", tag, err)
		}
	}
	if ok, err := cosigntest.Allowed(ctx, t, sys, reg.Addr()+"/product/other:1"); !ok || err != nil {
		t.Errorf("an image of another repository is refused: %v", err)
	}
}

func newSigner(t *testing.T) *cosign.Signer {
	t.Helper()
	key, err := cosign.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	s, err := cosign.LoadSigner(key, nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
