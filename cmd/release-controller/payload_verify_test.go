//go:build !unit

package main

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/release-controller/release-controller/internal/releaseimage"
	"github.com/release-controller/release-controller/internal/server"
	"github.com/release-controller/release-controller/internal/server/signatures"
	"github.com/release-controller/release-controller/internal/signing"
	signstore "github.com/release-controller/release-controller/internal/signing/store"
)

// newSigningKey makes a signing key and writes its public key to a file, as an administrator
// exports it for `payload verify --key`.
func newSigningKey(t *testing.T) (*signing.Key, string) {
	t.Helper()
	armored, err := signing.GenerateKey("Release Controller", "release-controller@example.com")
	if err != nil {
		t.Fatal(err)
	}
	key, err := signing.ParsePrivateKey(armored, nil, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	pub, err := key.ArmoredPublicKey()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "pubkey.asc")
	if err := os.WriteFile(path, pub, 0o644); err != nil {
		t.Fatal(err)
	}
	return key, path
}

// TestPayloadVerify verifies payload images pushed to a registry against signatures in a
// file:// store and on a signatures server, and says why when they do not verify.
func TestPayloadVerify(t *testing.T) {
	ctx := context.Background()
	reg := startRegistry(t)
	storeDir := t.TempDir()
	storeURL := "file://" + storeDir
	store, err := signstore.Open(ctx, storeURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	key, keyFile := newSigningKey(t)
	stranger, _ := newSigningKey(t)

	// Payloads differ by their tag, which the image records.
	api := releaseimage.Component{Name: "api", Image: pushComponent(t, reg, "api", "1111")}
	release := buildPayloadImage(t, reg, "1.0.0", api)
	repo, digest, _ := strings.Cut(release, "@")
	if _, _, err := signstore.EnsureSigned(ctx, store, key, signing.Claims{DockerReference: repo + ":1.0.0", ManifestDigest: digest, Timestamp: time.Now()}); err != nil {
		t.Fatal(err)
	}

	// By tag and by digest, from the store and from the server that serves it.
	base := serveSignatures(t, store)
	want := "verified: " + repo + "@" + digest + " signed by " + key.ID() + " (1 of 1 signatures valid)\n"
	for _, args := range [][]string{
		{repo + ":1.0.0", "--store", storeURL},
		{release, "--store", storeURL},
		{repo + ":1.0.0", "--store", base + "/signatures"},
	} {
		out, err := run(t, append([]string{"payload", "verify", "--key", keyFile}, args...)...)
		if err != nil {
			t.Fatalf("payload verify %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		if out != want {
			t.Errorf("payload verify %s printed %q, want %q", strings.Join(args, " "), out, want)
		}
	}

	// Payloads whose signatures do not count.
	unsigned := buildPayloadImage(t, reg, "1.0.1", api)
	strangers := buildPayloadImage(t, reg, "1.0.2", api)
	addSigned(t, store, stranger, repo+":1.0.2", strangers)
	renamed := buildPayloadImage(t, reg, "1.0.3", api)
	addSigned(t, store, key, reg.Addr()+"/product/elsewhere:1.0.3", renamed)
	copied := buildPayloadImage(t, reg, "1.0.4", api)
	// A valid signature of 1.0.0 copied under 1.0.4's digest.
	sigs, err := store.Signatures(ctx, digest)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.AddSignature(ctx, digestOf(copied), sigs[0]); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"no signatures", []string{repo + ":1.0.1", "--store", storeURL}, []string{unsigned + ": no signatures of " + digestOf(unsigned) + " in the store"}},
		{"unknown key", []string{repo + ":1.0.2", "--store", storeURL}, []string{strangers + ": no valid signature among its 1 signatures", "signature-1: signed by an unknown key " + stranger.ID()}},
		{"reference mismatch", []string{repo + ":1.0.3", "--store", storeURL}, []string{"signature-1: reference mismatch: signed by " + key.ID() + " for " + reg.Addr() + "/product/elsewhere:1.0.3, not repository " + repo}},
		{"digest mismatch", []string{repo + ":1.0.4", "--store", base + "/signatures"}, []string{"signature-1: digest mismatch: signed by " + key.ID() + " for digest " + digest + ", not " + digestOf(copied)}},
		{"unknown tag", []string{repo + ":9.9.9", "--store", storeURL}, []string{"resolving " + repo + ":9.9.9"}},
		{"no key flag", []string{release, "--store", storeURL}, []string{`required flag(s) "key" not set`}},
		{"missing key file", []string{release, "--store", storeURL, "--key", filepath.Join(t.TempDir(), "none.asc")}, []string{"reading --key", "no such file"}},
		{"not a key", []string{release, "--store", storeURL, "--key", writeFile(t, "not a key")}, []string{"--key "}},
		{"bad store", []string{release, "--store", "nope://bucket"}, []string{"opening the signature store nope://bucket"}},
		{"server down", []string{release, "--store", "http://" + freeAddr(t) + "/signatures"}, []string{"reading the signatures of " + release, "connection refused"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := []string{"payload", "verify"}
			if tc.name != "no key flag" && !strings.Contains(strings.Join(tc.args, " "), "--key") {
				args = append(args, "--key", keyFile)
			}
			out, err := run(t, append(args, tc.args...)...)
			if err == nil {
				t.Fatalf("payload verify succeeded:\n%s", out)
			}
			for _, want := range tc.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q lacks %q", err, want)
				}
			}
		})
	}
}

// TestPayloadVerifyPlatform verifies the platforms' images of a payload built for platforms,
// signed as the audit signs it: the index and each platform's image, all under the payload's
// tag.
func TestPayloadVerifyPlatform(t *testing.T) {
	ctx := context.Background()
	reg := startRegistry(t)
	storeURL := "file://" + t.TempDir()
	store, err := signstore.Open(ctx, storeURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	key, keyFile := newSigningKey(t)

	api, _ := pushPlatformComponent(t, reg, "api", "1111", "amd64", "arm64")
	platforms := []string{"linux/amd64", "linux/arm64"}
	components := []releaseimage.Component{{Name: "api", Image: api}}
	repo := reg.Addr() + "/product/release"
	res := buildPlatformPayload(t, reg, "1.0.0", platforms, components...)
	addSigned(t, store, key, repo+":1.0.0", res.Image)
	byPlatform := map[string]string{}
	for _, pi := range res.Platforms {
		byPlatform[pi.Platform] = repo + "@" + pi.Digest.String()
		addSigned(t, store, key, repo+":1.0.0", byPlatform[pi.Platform])
	}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{repo + ":1.0.0", "--platform", "linux/arm64"}, byPlatform["linux/arm64"]},
		{[]string{res.Image, "--platform", "linux/arm64"}, byPlatform["linux/arm64"]},
		{[]string{repo + ":1.0.0", "--platform", "linux/amd64"}, byPlatform["linux/amd64"]},
		// Without --platform, the index.
		{[]string{repo + ":1.0.0"}, res.Image},
	} {
		args := append([]string{"payload", "verify", "--key", keyFile, "--store", storeURL}, tc.args...)
		out, err := run(t, args...)
		if err != nil {
			t.Fatalf("payload verify %s: %v\n%s", strings.Join(tc.args, " "), err, out)
		}
		if want := "verified: " + tc.want + " signed by " + key.ID() + " (1 of 1 signatures valid)\n"; out != want {
			t.Errorf("payload verify %s printed %q, want %q", strings.Join(tc.args, " "), out, want)
		}
	}

	// A payload whose index alone is signed: its platforms' images are not verified.
	indexOnly := buildPlatformPayload(t, reg, "1.0.1", platforms, components...)
	addSigned(t, store, key, repo+":1.0.1", indexOnly.Image)
	arm64 := repo + "@" + indexOnly.Platforms[1].Digest.String()
	single := buildPayloadImage(t, reg, "1.0.2", releaseimage.Component{Name: "api", Image: pushComponent(t, reg, "plain", "1111")})

	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"missing platform", []string{repo + ":1.0.0", "--platform", "linux/s390x"}, repo + ":1.0.0 has no image of linux/s390x (it has linux/amd64, linux/arm64)"},
		{"platform image unsigned", []string{repo + ":1.0.1", "--platform", "linux/arm64"}, arm64 + ": no signatures of " + digestOf(arm64) + " in the store"},
		{"one image", []string{single, "--platform", "linux/arm64"}, single + " is one image (of linux/amd64), not an image index of platforms"},
		{"no os/arch", []string{repo + ":1.0.0", "--platform", "arm64"}, `--platform: platform "arm64" is not os/arch or os/arch/variant`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"payload", "verify", "--key", keyFile, "--store", storeURL}, tc.args...)
			out, err := run(t, args...)
			if err == nil {
				t.Fatalf("payload verify succeeded:\n%s", out)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q lacks %q", err, tc.want)
			}
		})
	}
}

func digestOf(pullSpec string) string {
	_, d, _ := strings.Cut(pullSpec, "@")
	return d
}

func addSigned(t *testing.T, store *signstore.Store, key *signing.Key, ref, pullSpec string) {
	t.Helper()
	sig, err := signing.Sign(key, signing.Claims{DockerReference: ref, ManifestDigest: digestOf(pullSpec), Timestamp: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.AddSignature(context.Background(), digestOf(pullSpec), sig); err != nil {
		t.Fatal(err)
	}
}

func writeFile(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// serveSignatures serves store's signatures on the project's HTTP server and returns its
// base URL.
func serveSignatures(t *testing.T, store *signstore.Store) string {
	t.Helper()
	srv := server.New()
	signatures.Register(srv, store)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, l, time.Second) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("signatures server: %v", err)
		}
	})
	return "http://" + l.Addr().String()
}
