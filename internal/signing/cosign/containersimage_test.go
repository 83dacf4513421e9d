//go:build containers_image_openpgp

// This test needs the build tag: go.podman.io/image's signature package verifies OpenPGP with
// gpgme (cgo) unless containers_image_openpgp selects its pure-Go mechanism. `make test` sets it.

package cosign

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/release-controller/release-controller/internal/signing/cosign/cosigntest"
)

// TestContainersImageSigstoreSigned is the proof by another consumer: containers/image (podman,
// CRI-O, skopeo) with a sigstoreSigned policy for our key and registries.d's
// use-sigstore-attachments admits an image we signed, in either registry, and refuses one
// signed by another key and one not signed.
func TestContainersImageSigstoreSigned(t *testing.T) {
	ctx := context.Background()
	for _, reg := range registries(t) {
		t.Run(reg.name, func(t *testing.T) {
			repo := reg.host + "/product/release"
			key, other := testSigner(t), testSigner(t)
			signed := cosigntest.PushRandom(t, repo+":signed")
			if _, err := EnsureSigned(ctx, signed, repo+":signed", key); err != nil {
				t.Fatal(err)
			}
			stranger := cosigntest.PushRandom(t, repo+":stranger")
			if _, err := EnsureSigned(ctx, stranger, repo+":stranger", other); err != nil {
				t.Fatal(err)
			}
			// Signed for another name: the identity does not match the reference pulled.
			renamed := cosigntest.PushRandom(t, repo+":renamed")
			if _, err := EnsureSigned(ctx, renamed, reg.host+"/elsewhere/release:renamed", key); err != nil {
				t.Fatal(err)
			}
			cosigntest.PushRandom(t, repo+":unsigned")

			conf := t.TempDir()
			pub, err := key.PublicKeyPEM()
			if err != nil {
				t.Fatal(err)
			}
			keyPath := filepath.Join(conf, "release-controller.pub")
			if err := os.WriteFile(keyPath, pub, 0o644); err != nil {
				t.Fatal(err)
			}
			policy := map[string]any{
				"default": []any{map[string]any{"type": "reject"}},
				"transports": map[string]any{"docker": map[string]any{
					reg.host: []any{map[string]any{
						"type":           "sigstoreSigned",
						"keyPath":        keyPath,
						"signedIdentity": map[string]any{"type": "matchRepoDigestOrExact"},
					}},
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
			attachments := fmt.Sprintf("docker:\n  %s:\n    use-sigstore-attachments: true\n", reg.host)
			sys := cosigntest.SystemContext(t, conf, policyPath, attachments)

			for _, ref := range []string{repo + ":signed", signed.String()} {
				if ok, err := cosigntest.Allowed(ctx, t, sys, ref); err != nil || !ok {
					t.Errorf("containers/image refused %s: %v", ref, err)
				}
			}
			for _, tc := range []struct{ tag, why string }{
				{"stranger", "cryptographic signature verification failed"},
				{"renamed", "not accepted"},
				{"unsigned", "A signature was required, but no signature exists"},
			} {
				ok, err := cosigntest.Allowed(ctx, t, sys, repo+":"+tc.tag)
				if ok || err == nil {
					t.Errorf("containers/image allowed %s:%s", repo, tc.tag)
					continue
				}
				if !strings.Contains(err.Error(), tc.why) {
					t.Errorf("refusal of %s %q does not say %q", tc.tag, err, tc.why)
				}
				t.Logf("%s refused: %v", tc.tag, err)
			}
		})
	}
}
