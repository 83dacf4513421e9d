//go:build !unit

// This test runs the cosign CLI that `make bin/cosign` builds (make test builds it first).

package cosign

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/release-controller/release-controller/internal/signing/cosign/cosigntest"
)

// TestCosignCLIVerifies is the proof by the reference verifier: cosign v3 verifies the
// signature and each attestation we attach, in either registry, in both layouts (the bundle
// referrers it reads by default, and the .sig/.att tags with --new-bundle-format=false), and
// refuses them with another key.
func TestCosignCLIVerifies(t *testing.T) {
	ctx := context.Background()
	cosign := cosigntest.Cosign(t)
	for _, reg := range registries(t) {
		t.Run(reg.name, func(t *testing.T) {
			repo := reg.host + "/product/release"
			image := cosigntest.PushRandom(t, repo+":4.22.0")
			key, other := testSigner(t), testSigner(t)
			if _, err := EnsureSigned(ctx, image, repo+":4.22.0", key); err != nil {
				t.Fatal(err)
			}
			for _, st := range statements(t, image) {
				if _, err := EnsureAttested(ctx, image, st, key); err != nil {
					t.Fatal(err)
				}
			}
			// Signed only: cosign verify's bundle path accepts any DSSE bundle about the image,
			// so this one shows the signature's own bundle suffices.
			signedOnly := cosigntest.PushRandom(t, repo+":signed-only")
			if _, err := EnsureSigned(ctx, signedOnly, repo+":signed-only", key); err != nil {
				t.Fatal(err)
			}
			// Our own verification agrees with cosign's (below): both layouts, and not another key.
			if sigs, err := VerifySignatures(ctx, image, key.PublicKey()); err != nil || len(sigs) != 2 {
				t.Fatalf("VerifySignatures: %v (%v), want the tag's and the referrer's", sigs, err)
			}
			for _, p := range []string{predicateSLSAProvenance, predicateTestResult, predicateVerificationSummary} {
				if atts, err := VerifyAttestations(ctx, image, key.PublicKey(), p); err != nil || len(atts) != 2 {
					t.Fatalf("VerifyAttestations %s: %d (%v), want the tag's and the referrer's", p, len(atts), err)
				}
			}
			if _, err := VerifySignatures(ctx, image, other.PublicKey()); err == nil {
				t.Fatal("VerifySignatures accepted another key")
			}
			dir := t.TempDir()
			pub, otherPub := writePub(t, dir, "pub.pem", key), writePub(t, dir, "other.pem", other)

			// The flags a key-signed image with no transparency log entry needs:
			// --insecure-ignore-tlog=true (no Rekor entry to look up).
			layouts := []struct{ name, flag string }{
				{"bundle referrers (cosign's default)", ""},
				{"the .sig and .att tags", "--new-bundle-format=false"},
			}
			for _, layout := range layouts {
				t.Run(layout.name, func(t *testing.T) {
					args := func(cmd string, extra ...string) []string {
						a := []string{cmd, "--key", pub, "--insecure-ignore-tlog=true"}
						if layout.flag != "" {
							a = append(a, layout.flag)
						}
						return append(append(a, extra...), image.String())
					}
					out := runCosign(t, cosign, dir, args("verify")...)
					if !strings.Contains(out, image.DigestStr()) {
						t.Errorf("cosign verify says nothing of %s:\n%s", image.DigestStr(), out)
					}
					onlyArgs := append(args("verify")[:len(args("verify"))-1], signedOnly.String())
					if out := runCosign(t, cosign, dir, onlyArgs...); !strings.Contains(out, signedOnly.DigestStr()) {
						t.Errorf("cosign verify says nothing of %s:\n%s", signedOnly.DigestStr(), out)
					}
					for _, typ := range []string{"slsaprovenance1", predicateTestResult, predicateVerificationSummary} {
						out := runCosign(t, cosign, dir, args("verify-attestation", "--type", typ)...)
						if !strings.Contains(out, "payloadType") {
							t.Errorf("verify-attestation --type %s printed no envelope:\n%s", typ, out)
						}
					}
					refused := func(cmd string, extra ...string) {
						a := args(cmd, extra...)
						a[2] = otherPub
						if out, err := cosignCmd(ctx, cosign, dir, a...).CombinedOutput(); err == nil {
							t.Errorf("cosign %s accepted another key:\n%s", strings.Join(a, " "), out)
						} else {
							t.Logf("cosign %s with another key: %v\n%s", cmd, err, lastLine(out))
						}
					}
					refused("verify")
					refused("verify-attestation", "--type", "slsaprovenance1")
				})
			}
		})
	}
}

func writePub(t *testing.T, dir, file string, s *Signer) string {
	t.Helper()
	b, err := s.PublicKeyPEM()
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, file)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// cosignCmd runs cosign with a home of its own (no user's config, TUF cache or credentials).
func cosignCmd(ctx context.Context, cosign, dir string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, cosign, args...)
	cmd.Env = append(os.Environ(), "HOME="+dir, "TUF_ROOT="+filepath.Join(dir, "tuf"), "DOCKER_CONFIG="+filepath.Join(dir, "docker"))
	return cmd
}

func runCosign(t *testing.T, cosign, dir string, args ...string) string {
	t.Helper()
	out, err := cosignCmd(context.Background(), cosign, dir, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("cosign %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	t.Logf("cosign %s: ok", strings.Join(args, " "))
	return string(out)
}

func lastLine(out []byte) string {
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return lines[len(lines)-1]
}

// TestCosignCLIMultiPlatform signs an image index and each platform's image, as the caller
// does for a multi-platform payload: cosign verifies the index and every platform by digest.
func TestCosignCLIMultiPlatform(t *testing.T) {
	ctx := context.Background()
	cosign := cosigntest.Cosign(t)
	reg := registries(t)[1] // the referrers tag: the harder case
	repo := reg.host + "/product/release"
	idx, err := random.Index(256, 1, 2)
	if err != nil {
		t.Fatal(err)
	}
	tag, err := name.NewTag(repo + ":multi")
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.WriteIndex(tag, idx); err != nil {
		t.Fatal(err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	idxDigest, err := idx.Digest()
	if err != nil {
		t.Fatal(err)
	}
	images := []name.Digest{tag.Context().Digest(idxDigest.String())}
	for _, m := range im.Manifests {
		images = append(images, tag.Context().Digest(m.Digest.String()))
	}
	key := testSigner(t)
	dir := t.TempDir()
	pub := writePub(t, dir, "pub.pem", key)
	for _, image := range images {
		if _, err := EnsureSigned(ctx, image, repo+":multi", key); err != nil {
			t.Fatal(err)
		}
		if _, err := EnsureAttested(ctx, image, statements(t, image)[predicateSLSAProvenance], key); err != nil {
			t.Fatal(err)
		}
	}
	for _, image := range images {
		for _, args := range [][]string{
			{"verify", "--key", pub, "--insecure-ignore-tlog=true", image.String()},
			{"verify", "--key", pub, "--insecure-ignore-tlog=true", "--new-bundle-format=false", image.String()},
			{"verify-attestation", "--key", pub, "--insecure-ignore-tlog=true", "--type", "slsaprovenance1", image.String()},
		} {
			runCosign(t, cosign, dir, args...)
		}
	}
}
