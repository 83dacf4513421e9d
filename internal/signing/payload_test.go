package signing_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/release-controller/release-controller/internal/devenv/registry"
	"github.com/release-controller/release-controller/internal/signing"
	signstore "github.com/release-controller/release-controller/internal/signing/store"
)

func newKey(t *testing.T) *signing.Key {
	t.Helper()
	armored, err := signing.GenerateKey("Payload Test", "payload@example.com")
	if err != nil {
		t.Fatal(err)
	}
	k, err := signing.ParsePrivateKey(armored, nil, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func push(t *testing.T, ref string) string {
	t.Helper()
	img, err := random.Image(64, 1)
	if err != nil {
		t.Fatal(err)
	}
	tag, err := name.NewTag(ref)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(tag, img); err != nil {
		t.Fatal(err)
	}
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d.String()
}

func TestVerifyPayload(t *testing.T) {
	ctx := context.Background()
	reg, err := registry.Start(ctx, registry.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = reg.Close() })
	store, err := signstore.Open(ctx, "file://"+t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	key, stranger := newKey(t), newKey(t)
	repo := reg.Addr() + "/product/release"

	sign := func(k *signing.Key, ref, digest, under string) {
		t.Helper()
		sig, err := signing.Sign(k, signing.Claims{DockerReference: ref, ManifestDigest: digest, Timestamp: time.Now()})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := store.AddSignature(ctx, under, sig); err != nil {
			t.Fatal(err)
		}
	}
	good := push(t, repo+":1.0.0")
	sign(stranger, repo+":1.0.0", good, good) // a stranger's signature does not spoil a good one
	sign(key, repo+":1.0.0", good, good)
	push(t, repo+":unsigned")
	unknown := push(t, repo+":unknown")
	sign(stranger, repo+":unknown", unknown, unknown)
	elsewhere := push(t, repo+":elsewhere")
	sign(key, reg.Addr()+"/product/other:elsewhere", elsewhere, elsewhere)
	copied := push(t, repo+":copied")
	sign(key, repo+":copied", good, copied)

	opts := signing.VerifyPayloadOptions{Keyring: key.Keyring(), Signatures: store}
	res, err := signing.VerifyPayload(ctx, repo+":1.0.0", opts)
	if err != nil {
		t.Fatal(err)
	}
	want := signing.PayloadVerification{Image: repo + "@" + good, KeyID: key.ID(), Valid: 1, Total: 2}
	if res != want {
		t.Errorf("result %+v, want %+v", res, want)
	}
	// By digest: the signature names the repository; its tag does not matter.
	if res, err := signing.VerifyPayload(ctx, repo+"@"+good, opts); err != nil || res != want {
		t.Errorf("by digest: %+v, %v", res, err)
	}

	for _, tc := range []struct {
		pullSpec string
		is       error
		want     []string
	}{
		{repo + ":unsigned", signing.ErrNoSignatures, []string{"no signatures of sha256:"}},
		{repo + ":unknown", signing.ErrNotVerified, []string{"signature-1: signed by an unknown key " + stranger.ID()}},
		{repo + ":elsewhere", signing.ErrNotVerified, []string{"signature-1: reference mismatch", reg.Addr() + "/product/other:elsewhere", "not repository " + repo}},
		{repo + ":copied", signing.ErrNotVerified, []string{"signature-1: digest mismatch", "for digest " + good + ", not " + copied}},
		{reg.Addr() + "/product/other@" + good, signing.ErrNotVerified, []string{"signature-1: signed by an unknown key", "signature-2: reference mismatch"}},
		{repo + ":9.9.9", nil, []string{"resolving " + repo + ":9.9.9"}},
		{"Not A Pull Spec", nil, []string{`parsing image reference "Not A Pull Spec"`}},
	} {
		t.Run(tc.pullSpec, func(t *testing.T) {
			res, err := signing.VerifyPayload(ctx, tc.pullSpec, opts)
			if err == nil {
				t.Fatalf("verified: %+v", res)
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("error %q is not %q", err, tc.is)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}

	// A pull spec by digest needs no registry.
	if err := reg.Close(); err != nil {
		t.Fatal(err)
	}
	if res, err := signing.VerifyPayload(ctx, repo+"@"+good, opts); err != nil || res != want {
		t.Errorf("by digest with the registry down: %+v, %v", res, err)
	}
}
