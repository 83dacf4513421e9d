package signing

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// gpgHome makes an empty GnuPG home for one test and a function running gpg in it.
func gpgHome(t *testing.T) func(stdin []byte, args ...string) (string, error) {
	t.Helper()
	gpg, err := exec.LookPath("gpg")
	if err != nil {
		t.Skip("gpg is not on PATH (Debian package gnupg): the check that gpg verifies our signatures did not run")
	}
	// Short path: gpg-agent's socket lives here and socket paths are limited to ~100 bytes.
	home, err := os.MkdirTemp("", "gpg")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(home, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// Stop the agent gpg started for this home (and only that one), then remove the home.
		kill := exec.Command("gpgconf", "--kill", "gpg-agent")
		kill.Env = append(os.Environ(), "GNUPGHOME="+home)
		_ = kill.Run()
		_ = os.RemoveAll(home)
	})
	return func(stdin []byte, args ...string) (string, error) {
		cmd := exec.Command(gpg, append([]string{"--batch", "--no-tty", "--status-fd", "1"}, args...)...)
		cmd.Env = append(os.Environ(), "GNUPGHOME="+home)
		cmd.Stdin = bytes.NewReader(stdin)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
}

// TestGPGVerifiesOurSignatures: gpg, as gpgme-based verifiers (CRI-O, podman) use it, accepts
// our signature and key.
func TestGPGVerifiesOurSignatures(t *testing.T) {
	gpg := gpgHome(t)
	_, key := testKey(t, 0)
	pub, err := key.ArmoredPublicKey()
	if err != nil {
		t.Fatal(err)
	}
	if out, err := gpg(pub, "--import"); err != nil {
		t.Fatalf("gpg --import: %v\n%s", err, out)
	}
	sig, err := Sign(key, testClaims())
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "signature-1")
	if err := os.WriteFile(path, sig, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := gpg(nil, "--verify", path)
	if err != nil {
		t.Fatalf("gpg --verify: %v\n%s", err, out)
	}
	for _, want := range []string{"[GNUPG:] GOODSIG " + key.ID(), "[GNUPG:] VALIDSIG " + key.Fingerprint()} {
		if !strings.Contains(out, want) {
			t.Errorf("gpg --verify output lacks %q:\n%s", want, out)
		}
	}
	// gpg reads the content we signed.
	content, err := gpg(nil, "--status-fd", "2", "--decrypt", path)
	if err != nil || !strings.Contains(content, `{"critical":{"type":"atomic container signature"`) {
		t.Errorf("gpg --decrypt: %v\n%s", err, content)
	}

	// A tampered signature is refused by gpg too.
	i := bytes.Index(sig, []byte(testDigest))
	tampered := bytes.Clone(sig)
	tampered[i] = 'x'
	if err := os.WriteFile(path, tampered, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := gpg(nil, "--verify", path); err == nil || !strings.Contains(out, "[GNUPG:] BADSIG "+key.ID()) {
		t.Errorf("gpg --verify of a tampered signature: %v\n%s", err, out)
	}
}

// TestWeVerifyGPGSignatures: a simple signing signature that gpg made with our key (as
// `podman image sign` or `skopeo copy --sign-by` make them: compressed) verifies here.
func TestWeVerifyGPGSignatures(t *testing.T) {
	gpg := gpgHome(t)
	armored, key := testKey(t, 0)
	if out, err := gpg(armored, "--import"); err != nil {
		t.Fatalf("gpg --import: %v\n%s", err, out)
	}
	body, err := testClaims().marshal()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	in, out := filepath.Join(dir, "claims.json"), filepath.Join(dir, "signature-1")
	if err := os.WriteFile(in, body, 0o644); err != nil {
		t.Fatal(err)
	}
	if msg, err := gpg(nil, "--pinentry-mode", "loopback", "--passphrase", "", "--local-user", key.Fingerprint(),
		"--output", out, "--sign", in); err != nil {
		t.Fatalf("gpg --sign: %v\n%s", err, msg)
	}
	sig, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	c, keyID, err := Verify(key.Keyring(), sig)
	if err != nil {
		t.Fatalf("verifying gpg's signature: %v", err)
	}
	if keyID != key.ID() || c.ManifestDigest != testDigest {
		t.Errorf("key %s, claims %+v", keyID, c)
	}
}
