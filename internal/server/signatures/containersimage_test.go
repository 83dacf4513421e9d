//go:build containers_image_openpgp

// This test needs the build tag: go.podman.io/image verifies OpenPGP signatures with gpgme
// (cgo) unless containers_image_openpgp selects its pure-Go mechanism. `make test` sets it.

package signatures

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"go.podman.io/image/v5/docker"
	"go.podman.io/image/v5/image"
	"go.podman.io/image/v5/signature"
	"go.podman.io/image/v5/types"

	"github.com/release-controller/release-controller/internal/devenv/registry"
	"github.com/release-controller/release-controller/internal/signing"
	signstore "github.com/release-controller/release-controller/internal/signing/store"
)

// pushRandom pushes a small random image as ref and returns its manifest digest.
func pushRandom(t *testing.T, ref string) string {
	t.Helper()
	img, err := random.Image(128, 1)
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
	return d.String()
}

// TestContainersImageAcceptsOurSignatures is the proof by a real consumer: containers/image
// (what podman, CRI-O and skopeo use), with a policy requiring our key for the registry and
// a registries.d lookaside pointing at our signatures server, runs an image we signed and
// refuses the ones we did not sign validly.
func TestContainersImageAcceptsOurSignatures(t *testing.T) {
	ctx := context.Background()
	reg, err := registry.Start(ctx, registry.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = reg.Close() })
	repo := reg.Addr() + "/product/release"

	key, other := testKey(t, 0), testKey(t, 1)
	store := openDir(t, t.TempDir())
	pub, err := key.ArmoredPublicKey()
	if err != nil {
		t.Fatal(err)
	}
	if err := store.PutPublicKeys(ctx, pub); err != nil {
		t.Fatal(err)
	}
	base := serve(t, store)

	signedDigest := pushRandom(t, repo+":1.0.0")
	if _, _, err := signstore.EnsureSigned(ctx, store, key, signing.Claims{DockerReference: repo + ":1.0.0", ManifestDigest: signedDigest, Creator: "test", Timestamp: time.Now()}); err != nil {
		t.Fatal(err)
	}
	pushRandom(t, repo+":unsigned")

	// One valid signature among others that do not count still admits the image.
	rotatedDigest := pushRandom(t, repo+":rotated")
	otherSig, err := signing.Sign(other, signing.Claims{DockerReference: repo + ":rotated", ManifestDigest: rotatedDigest, Timestamp: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.AddSignature(ctx, rotatedDigest, otherSig); err != nil {
		t.Fatal(err)
	}
	if _, _, err := signstore.EnsureSigned(ctx, store, key, signing.Claims{DockerReference: repo + ":rotated", ManifestDigest: rotatedDigest, Timestamp: time.Now()}); err != nil {
		t.Fatal(err)
	}

	tamperedDigest := pushRandom(t, repo+":tampered")
	sig, err := signing.Sign(key, signing.Claims{DockerReference: repo + ":tampered", ManifestDigest: tamperedDigest, Timestamp: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	i := strings.Index(string(sig), "product/release:tampered")
	sig[i] = 'P' // same length, another name
	if _, err := store.AddSignature(ctx, tamperedDigest, sig); err != nil {
		t.Fatal(err)
	}

	// A valid signature of another image copied under this image's digest.
	copiedDigest := pushRandom(t, repo+":copied")
	sig, err = signing.Sign(key, signing.Claims{DockerReference: repo + ":copied", ManifestDigest: signedDigest, Timestamp: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.AddSignature(ctx, copiedDigest, sig); err != nil {
		t.Fatal(err)
	}

	// Only another key signed this one.
	strangerDigest := pushRandom(t, repo+":stranger")
	sig, err = signing.Sign(other, signing.Claims{DockerReference: repo + ":stranger", ManifestDigest: strangerDigest, Timestamp: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.AddSignature(ctx, strangerDigest, sig); err != nil {
		t.Fatal(err)
	}

	// The consumer's configuration, as an administrator writes it.
	conf := t.TempDir()
	keyPath := filepath.Join(conf, "release-controller.asc")
	if err := os.WriteFile(keyPath, pub, 0o644); err != nil {
		t.Fatal(err)
	}
	policy := map[string]any{
		"default": []any{map[string]any{"type": "reject"}},
		"transports": map[string]any{"docker": map[string]any{
			reg.Addr(): []any{map[string]any{"type": "signedBy", "keyType": "GPGKeys", "keyPath": keyPath}},
		}},
	}
	policyJSON, err := json.Marshal(policy)
	if err != nil {
		t.Fatal(err)
	}
	policyPath := filepath.Join(conf, "policy.json")
	if err := os.WriteFile(policyPath, policyJSON, 0o644); err != nil {
		t.Fatal(err)
	}
	registriesD := filepath.Join(conf, "registries.d")
	if err := os.Mkdir(registriesD, 0o755); err != nil {
		t.Fatal(err)
	}
	lookaside := fmt.Sprintf("docker:\n  %s:\n    lookaside: %s/signatures\n", reg.Addr(), base)
	if err := os.WriteFile(filepath.Join(registriesD, "release-controller.yaml"), []byte(lookaside), 0o644); err != nil {
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
		SignaturePolicyPath:         policyPath,
		RegistriesDirPath:           registriesD,
		SystemRegistriesConfPath:    empty,
		SystemRegistriesConfDirPath: filepath.Join(conf, "no-registries.conf.d"),
		AuthFilePath:                authFile,
		DockerInsecureSkipTLSVerify: types.OptionalBoolTrue, // the embedded registry speaks plain HTTP
	}

	pol, err := signature.NewPolicyFromFile(policyPath)
	if err != nil {
		t.Fatal(err)
	}
	pc, err := signature.NewPolicyContext(pol)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = pc.Destroy() }()

	allowed := func(t *testing.T, ref string) (bool, error) {
		t.Helper()
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

	for _, tc := range []struct{ name, ref string }{
		{"by tag", repo + ":1.0.0"},
		{"by digest", repo + "@" + signedDigest},
		{"with a signature by another key too", repo + ":rotated"},
	} {
		t.Run("allowed "+tc.name, func(t *testing.T) {
			ok, err := allowed(t, tc.ref)
			if err != nil || !ok {
				t.Fatalf("containers/image refused %s: %v", tc.ref, err)
			}
		})
	}
	for _, tc := range []struct {
		tag, why string
	}{
		{"unsigned", "A signature was required, but no signature exists"},
		{"tampered", "invalid signature"},
		{"copied", "does not match"},
		{"stranger", "Key not found"},
	} {
		t.Run("refused "+tc.tag, func(t *testing.T) {
			ok, err := allowed(t, repo+":"+tc.tag)
			if ok || err == nil {
				t.Fatalf("containers/image allowed %s:%s (%v)", repo, tc.tag, err)
			}
			if !strings.Contains(err.Error(), tc.why) {
				t.Errorf("refusal %q does not say %q", err, tc.why)
			}
			t.Logf("refused: %v", err)
		})
	}
}
