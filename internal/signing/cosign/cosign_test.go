package cosign

import (
	"bytes"
	"context"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/release-controller/release-controller/internal/signing/cosign/cosigntest"
)

// TestSignAttestVerify signs and attests an image in each registry, twice (the second writes
// nothing), and reads both layouts back with the key, and not with another key.
func TestSignAttestVerify(t *testing.T) {
	ctx := context.Background()
	for _, reg := range registries(t) {
		t.Run(reg.name, func(t *testing.T) {
			repo := reg.host + "/product/release"
			image := cosigntest.PushRandom(t, repo+":4.22.0")
			key, other := testSigner(t), testSigner(t)

			assertReferrersAPI(t, reg, image)

			for i, want := range []bool{true, false} {
				created, err := EnsureSigned(ctx, image, repo+":4.22.0", key)
				if err != nil {
					t.Fatalf("EnsureSigned #%d: %v", i+1, err)
				}
				if created != want {
					t.Errorf("EnsureSigned #%d: created %v, want %v", i+1, created, want)
				}
			}
			sts := statements(t, image)
			for _, p := range sortedKeys(sts) {
				for i, want := range []bool{true, false} {
					created, err := EnsureAttested(ctx, image, sts[p], key)
					if err != nil {
						t.Fatalf("EnsureAttested %s #%d: %v", p, i+1, err)
					}
					if created != want {
						t.Errorf("EnsureAttested %s #%d: created %v, want %v", p, i+1, created, want)
					}
				}
			}

			// Exactly one of each, in each layout.
			assertLayers(t, image, "sig", 1)
			assertLayers(t, image, "att", len(sts))
			assertBundles(t, image, 1+len(sts))
			if !reg.referrersAPI {
				fallback := image.Repository.Tag(strings.Replace(image.DigestStr(), ":", "-", 1))
				if _, err := remote.Head(fallback); err != nil {
					t.Errorf("no referrers tag %s on a registry without the API: %v", fallback, err)
				}
			}

			sigs, err := VerifySignatures(ctx, image, key.PublicKey())
			if err != nil {
				t.Fatal(err)
			}
			if got := wheres(sigs); got != "referrer tag" {
				t.Errorf("signatures found in %q, want one in the tag and one referrer", got)
			}
			for _, s := range sigs {
				if s.Identity != repo+":4.22.0" || s.Digest != image.DigestStr() {
					t.Errorf("signature %+v: want identity %s:4.22.0 and digest %s", s, repo, image.DigestStr())
				}
			}
			for _, p := range sortedKeys(sts) {
				atts, err := VerifyAttestations(ctx, image, key.PublicKey(), p)
				if err != nil {
					t.Fatal(err)
				}
				if got := attWheres(atts); got != "referrer tag" {
					t.Errorf("%s found in %q, want one in the tag and one referrer", p, got)
				}
				for _, a := range atts {
					if a.PredicateType != p || !bytes.Equal(a.Statement, sts[p]) {
						t.Errorf("%s: got %s %s", p, a.PredicateType, a.Statement)
					}
				}
			}
			all, err := VerifyAttestations(ctx, image, key.PublicKey(), "")
			if err != nil {
				t.Fatal(err)
			}
			if len(all) != 2*len(sts) {
				t.Errorf("every attestation: %d, want %d", len(all), 2*len(sts))
			}

			if _, err := VerifySignatures(ctx, image, other.PublicKey()); err == nil || !strings.Contains(err.Error(), "none of the 2 signature(s)") {
				t.Errorf("another key: %v, want none of the 2 signatures verifying", err)
			} else {
				t.Logf("another key: %v", err)
			}
			if _, err := VerifyAttestations(ctx, image, other.PublicKey(), predicateSLSAProvenance); err == nil || !strings.Contains(err.Error(), "none of the 2") {
				t.Errorf("another key: %v, want none of the 2 attestations verifying", err)
			}

			// Another key signs too: one more of each; ours still verify.
			if created, err := EnsureSigned(ctx, image, repo+":4.22.0", other); err != nil || !created {
				t.Fatalf("EnsureSigned by another key: %v %v", created, err)
			}
			assertLayers(t, image, "sig", 2)
			if sigs, err := VerifySignatures(ctx, image, key.PublicKey()); err != nil || len(sigs) != 2 {
				t.Errorf("with another key's signature beside: %v %v", sigs, err)
			}

			// A changed statement is a new attestation.
			changed := statement(t, image, predicateTestResult, map[string]any{"result": "FAILED"})
			if created, err := EnsureAttested(ctx, image, changed, key); err != nil || !created {
				t.Fatalf("EnsureAttested of a changed statement: %v %v", created, err)
			}
			if atts, err := VerifyAttestations(ctx, image, key.PublicKey(), predicateTestResult); err != nil || len(atts) != 4 {
				t.Errorf("test results: %d (%v), want 4", len(atts), err)
			}
		})
	}
}

// TestUnsigned: nothing attached is an error saying so.
func TestUnsigned(t *testing.T) {
	ctx := context.Background()
	reg := registries(t)[1]
	image := cosigntest.PushRandom(t, reg.host+"/product/release:unsigned")
	key := testSigner(t)
	if _, err := VerifySignatures(ctx, image, key.PublicKey()); err == nil || !strings.Contains(err.Error(), "no signature of") {
		t.Errorf("unsigned: %v", err)
	}
	if _, err := VerifyAttestations(ctx, image, key.PublicKey(), predicateSLSAProvenance); err == nil || !strings.Contains(err.Error(), "no attestation of "+predicateSLSAProvenance) {
		t.Errorf("unattested: %v", err)
	}
	other := cosigntest.PushRandom(t, reg.host+"/product/release:other")
	if _, err := EnsureAttested(ctx, image, statement(t, other, predicateSLSAProvenance, map[string]any{}), key); err == nil || !strings.Contains(err.Error(), "no subject with the digest") {
		t.Errorf("a statement about another image: %v", err)
	}
	missing := image.Repository.Digest("sha256:" + strings.Repeat("0", 64))
	if _, err := EnsureSigned(ctx, missing, reg.host+"/product/release:x", key); err == nil {
		t.Error("signed an image the registry does not have")
	}
}

// assertReferrersAPI checks the registry is what the test says: with or without the API.
func assertReferrersAPI(t *testing.T, reg testRegistry, image name.Digest) {
	t.Helper()
	resp, err := http.Get("http://" + reg.host + "/v2/" + image.RepositoryStr() + "/referrers/" + image.DigestStr())
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if got := resp.StatusCode == http.StatusOK; got != reg.referrersAPI {
		t.Fatalf("referrers API answers %d; want the API: %v", resp.StatusCode, reg.referrersAPI)
	}
}

func assertLayers(t *testing.T, image name.Digest, suffix string, want int) {
	t.Helper()
	tag, err := attachmentTag(image, suffix)
	if err != nil {
		t.Fatal(err)
	}
	_, layers, err := readTagImage(tag, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(layers) != want {
		t.Errorf("%s: %d layers, want %d", tag, len(layers), want)
	}
}

func assertBundles(t *testing.T, image name.Digest, want int) {
	t.Helper()
	bundles, err := readReferrerBundles(image, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(bundles) != want {
		t.Errorf("%d bundle referrers, want %d", len(bundles), want)
	}
}

func wheres(sigs []VerifiedSignature) string {
	var w []string
	for _, s := range sigs {
		w = append(w, s.Where)
	}
	sort.Strings(w)
	return strings.Join(w, " ")
}

func attWheres(atts []VerifiedAttestation) string {
	var w []string
	for _, a := range atts {
		w = append(w, a.Where)
	}
	sort.Strings(w)
	return strings.Join(w, " ")
}

func sortedKeys(m map[string][]byte) []string {
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// TestHostileAttachments: what a registry hands back is bounded and checked, and garbage beside
// our attachments neither breaks signing nor verifies.
func TestHostileAttachments(t *testing.T) {
	ctx := context.Background()
	reg := registries(t)[0]
	repo := reg.host + "/product/release"
	key := testSigner(t)

	// More layers in the .sig tag than a signature image has.
	crowded := cosigntest.PushRandom(t, repo+":crowded")
	sigTag, err := attachmentTag(crowded, "sig")
	if err != nil {
		t.Fatal(err)
	}
	var adds []mutate.Addendum
	for i := range maxLayers + 1 {
		adds = append(adds, mutate.Addendum{Layer: static.NewLayer([]byte(strconv.Itoa(i)), SimpleSigningMediaType)})
	}
	pushAttachments(t, sigTag, adds...)
	if _, err := EnsureSigned(ctx, crowded, repo+":crowded", key); err == nil || !strings.Contains(err.Error(), "257 layers, more than 256") {
		t.Errorf("a crowded .sig tag: %v", err)
	}
	if _, err := VerifySignatures(ctx, crowded, key.PublicKey()); err == nil || !strings.Contains(err.Error(), "more than 256") {
		t.Errorf("a crowded .sig tag: %v", err)
	}

	// A layer larger than any statement.
	large := cosigntest.PushRandom(t, repo+":large")
	attTag, err := attachmentTag(large, "att")
	if err != nil {
		t.Fatal(err)
	}
	pushAttachments(t, attTag, mutate.Addendum{Layer: static.NewLayer(bytes.Repeat([]byte("x"), maxLayerBytes+1), DSSEMediaType)})
	if _, err := VerifyAttestations(ctx, large, key.PublicKey(), ""); err == nil || !strings.Contains(err.Error(), "more than 4194304") {
		t.Errorf("a large .att layer: %v", err)
	}

	// Garbage where signatures go: a payload signed by nobody, a bundle that is not one.
	junk := cosigntest.PushRandom(t, repo+":junk")
	junkTag, err := attachmentTag(junk, "sig")
	if err != nil {
		t.Fatal(err)
	}
	pushAttachments(t, junkTag, mutate.Addendum{
		Layer:       static.NewLayer([]byte(`{"critical":{}}`), SimpleSigningMediaType),
		Annotations: map[string]string{signatureAnnotation: "bm90IGEgc2lnbmF0dXJl"},
	})
	subject, err := remote.Head(junk)
	if err != nil {
		t.Fatal(err)
	}
	if err := writeReferrer(junk, *subject, []byte("not a bundle"), bundleAnnotations(SignPredicateType), nil); err != nil {
		t.Fatal(err)
	}
	_, err = VerifySignatures(ctx, junk, key.PublicKey())
	if err == nil || !strings.Contains(err.Error(), "none of the 2 signature(s)") || !strings.Contains(err.Error(), "bundle:") {
		t.Errorf("junk: %v", err)
	}
	if created, err := EnsureSigned(ctx, junk, repo+":junk", key); err != nil || !created {
		t.Fatalf("signing beside junk: %v %v", created, err)
	}
	if sigs, err := VerifySignatures(ctx, junk, key.PublicKey()); err != nil || len(sigs) != 2 {
		t.Errorf("beside junk: %v (%v), want ours in the tag and as a referrer", sigs, err)
	}
}

// pushAttachments writes an attachments image of adds at tag, as another tool might.
func pushAttachments(t *testing.T, tag name.Tag, adds ...mutate.Addendum) {
	t.Helper()
	img, err := mutate.Append(mutate.MediaType(empty.Image, types.OCIManifestSchema1), adds...)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(tag, img); err != nil {
		t.Fatal(err)
	}
}
