//go:build !unit

package main

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/attestation"
	"github.com/release-controller/release-controller/internal/releaseimage"
	"github.com/release-controller/release-controller/internal/signing/cosign"
	signstore "github.com/release-controller/release-controller/internal/signing/store"
)

// newCosignKey makes a Sigstore signing key and writes its public key to a file, as the
// server publishes it as cosign.pub.
func newCosignKey(t *testing.T) (*cosign.Signer, string) {
	t.Helper()
	priv, err := cosign.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	signer, err := cosign.LoadSigner(priv, nil)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := signer.PublicKeyPEM()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "cosign.pub")
	if err := os.WriteFile(path, pub, 0o644); err != nil {
		t.Fatal(err)
	}
	return signer, path
}

// acceptedPayload is the ReleasePayload of an accepted payload image pullSpec (by digest)
// tagged tag, with one blocking verification that passed: what the attestations are built from.
func acceptedPayload(pullSpec, tag string) *v1alpha1.ReleasePayload {
	repository, _, _ := strings.Cut(pullSpec, "@")
	at := metav1.NewTime(time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC))
	return &v1alpha1.ReleasePayload{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: tag, CreationTimestamp: at},
		Spec: v1alpha1.ReleasePayloadSpec{
			PayloadCoordinates:    v1alpha1.PayloadCoordinates{Stream: "nightly", Tag: tag},
			PayloadCreationConfig: v1alpha1.PayloadCreationConfig{Repository: repository},
			PayloadVerificationConfig: v1alpha1.PayloadVerificationConfig{
				Verifications: []v1alpha1.Verification{{Name: "e2e"}},
			},
		},
		Status: v1alpha1.ReleasePayloadStatus{
			Phase: v1alpha1.PhaseAccepted,
			Conditions: []metav1.Condition{
				{Type: v1alpha1.ConditionPayloadCreated, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonCreationJobSucceeded, LastTransitionTime: at},
				{Type: v1alpha1.ConditionPayloadAccepted, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonBlockingJobsSucceeded, LastTransitionTime: metav1.NewTime(at.Add(time.Hour))},
			},
			ReleaseCreationJobResult: v1alpha1.ReleaseCreationJobResult{Namespace: "team", Name: "create-" + tag, Status: v1alpha1.CreationJobSuccess},
			PayloadImage:             pullSpec,
			Verifications: []v1alpha1.VerificationStatus{{Name: "e2e", Type: v1alpha1.Blocking, State: v1alpha1.JobSuccess, Runs: []v1alpha1.JobRun{
				{Kind: v1alpha1.RunKindJob, Namespace: "team", Name: "e2e-1", Attempt: 1, State: v1alpha1.JobSuccess, URL: "https://ci.example.com/e2e/1"},
			}}},
		},
	}
}

// sigstoreSign attaches a Sigstore signature of pullSpec naming identity, as the audit
// controller does.
func sigstoreSign(t *testing.T, signer *cosign.Signer, pullSpec, identity string) {
	t.Helper()
	image, err := name.NewDigest(pullSpec)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cosign.EnsureSigned(context.Background(), image, identity, signer); err != nil {
		t.Fatalf("signing %s: %v", pullSpec, err)
	}
}

// sigstoreAttest attaches every attestation the controller makes of payload p, or those of
// the predicate types given.
func sigstoreAttest(t *testing.T, signer *cosign.Signer, p *v1alpha1.ReleasePayload, predicateTypes ...string) {
	t.Helper()
	image, err := name.NewDigest(p.Status.PayloadImage)
	if err != nil {
		t.Fatal(err)
	}
	statements, err := attestation.Statements(p, nil, "https://release-controller.dev/controller@test")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range statements {
		if len(predicateTypes) > 0 && !slices.Contains(predicateTypes, s.PredicateType) {
			continue
		}
		if _, err := cosign.EnsureAttested(context.Background(), image, s.JSON, signer); err != nil {
			t.Fatalf("attesting %s of %s: %v", s.Name, p.Status.PayloadImage, err)
		}
	}
}

// TestPayloadVerifySigstore verifies the Sigstore signatures and attestations of payload
// images in a registry without the referrers API (so the bundles are found through the
// referrers tag), with the public key from a file and from the signatures server, and says
// why when they do not verify.
func TestPayloadVerifySigstore(t *testing.T) {
	ctx := context.Background()
	reg := startRegistry(t)
	signer, keyFile := newCosignKey(t)
	stranger, strangerKey := newCosignKey(t)
	_, openpgpKey := newSigningKey(t)

	api := releaseimage.Component{Name: "api", Image: pushComponent(t, reg, "api", "1111")}
	repo := reg.Addr() + "/product/release"
	release := buildPayloadImage(t, reg, "1.0.0", api)
	sigstoreSign(t, signer, release, repo+":1.0.0")
	sigstoreAttest(t, signer, acceptedPayload(release, "1.0.0"))

	// The server publishes the key as cosign.pub, as the audit controller writes it.
	store, err := signstore.Open(ctx, "file://"+t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	pub, err := signer.PublicKeyPEM()
	if err != nil {
		t.Fatal(err)
	}
	if err := store.PutCosignPublicKey(ctx, pub); err != nil {
		t.Fatal(err)
	}
	keyURL := serveSignatures(t, store) + "/signatures/cosign.pub"
	// A server whose controller has no Sigstore key.
	empty, err := signstore.Open(ctx, "file://"+t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = empty.Close() })
	noKeyURL := serveSignatures(t, empty) + "/signatures/cosign.pub"

	// The signature is in the .sig tag and a bundle referrer: one line each.
	wantSigs := "verified: " + release + " signed by " + signer.KeyID() + " for " + repo + ":1.0.0 (tag)\n" +
		"verified: " + release + " signed by " + signer.KeyID() + " for " + repo + ":1.0.0 (referrer)\n"
	resolved := repo + ":1.0.0 is " + release + ": verifying that digest\n"
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{release, "--format", "sigstore", "--key", keyFile}, wantSigs},
		{[]string{release, "--format", "sigstore", "--key", keyURL}, wantSigs},
		{[]string{repo + ":1.0.0", "--format", "sigstore", "--key", keyFile}, resolved + wantSigs},
	} {
		out, err := run(t, append([]string{"payload", "verify"}, tc.args...)...)
		if err != nil {
			t.Fatalf("payload verify %s: %v\n%s", strings.Join(tc.args, " "), err, out)
		}
		if !sameLines(out, tc.want) {
			t.Errorf("payload verify %s printed\n%s\nwant (in any order)\n%s", strings.Join(tc.args, " "), out, tc.want)
		}
	}

	// Every attestation, by default: each predicate type in the .att tag and a bundle referrer,
	// and the verification summary's result.
	attested := func(predicateType, where, suffix string) string {
		return "verified: " + release + " attestation " + predicateType + " signed by " + signer.KeyID() + " (" + where + ")" + suffix + "\n"
	}
	var wantAll string
	for _, where := range []string{"tag", "referrer"} {
		wantAll += attested(attestation.PredicateSLSAProvenance, where, "") + attested(attestation.PredicateTestResult, where, ": verification e2e PASSED") +
			attested(attestation.PredicateVerificationSummary, where, ": verificationResult PASSED")
	}
	out, err := run(t, "payload", "verify", release, "--format", "attestation", "--key", keyURL)
	if err != nil {
		t.Fatalf("payload verify --format attestation: %v\n%s", err, out)
	}
	if !sameLines(out, wantAll) {
		t.Errorf("payload verify --format attestation printed\n%s\nwant (in any order)\n%s", out, wantAll)
	}
	out, err = run(t, "payload", "verify", release, "--format", "attestation", "--key", keyFile, "--predicate-type", attestation.PredicateTestResult)
	if want := attested(attestation.PredicateTestResult, "tag", ": verification e2e PASSED") + attested(attestation.PredicateTestResult, "referrer", ": verification e2e PASSED"); err != nil || !sameLines(out, want) {
		t.Errorf("payload verify --predicate-type test-result: %v\n%s\nwant\n%s", err, out, want)
	}

	// Payloads whose signatures or attestations do not count.
	unsigned := buildPayloadImage(t, reg, "1.0.1", api)
	strangers := buildPayloadImage(t, reg, "1.0.2", api)
	sigstoreSign(t, stranger, strangers, repo+":1.0.2")
	sigstoreAttest(t, stranger, acceptedPayload(strangers, "1.0.2"))
	provenanceOnly := buildPayloadImage(t, reg, "1.0.3", api)
	sigstoreAttest(t, signer, acceptedPayload(provenanceOnly, "1.0.3"), attestation.PredicateSLSAProvenance)
	single := buildPayloadImage(t, reg, "1.0.4", api)

	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"unsigned", []string{unsigned, "--format", "sigstore", "--key", keyFile}, []string{unsigned + ": "}},
		{"another key's signature", []string{strangers, "--format", "sigstore", "--key", keyFile}, []string{strangers + ": "}},
		{"signed, but by the key given", []string{release, "--format", "sigstore", "--key", strangerKey}, []string{release + ": "}},
		{"not attested", []string{unsigned, "--format", "attestation", "--key", keyFile}, []string{unsigned + ": attestation " + attestation.PredicateSLSAProvenance + ": "}},
		{"another key's attestations", []string{strangers, "--format", "attestation", "--key", keyFile}, []string{strangers + ": attestation " + attestation.PredicateSLSAProvenance + ": "}},
		{"a predicate type missing", []string{provenanceOnly, "--format", "attestation", "--key", keyFile}, []string{provenanceOnly + ": attestation " + attestation.PredicateTestResult + ": "}},
		{"a predicate type never attested", []string{release, "--format", "attestation", "--key", keyFile, "--predicate-type", "https://example.com/other/v1"}, []string{release + ": attestation https://example.com/other/v1: "}},
		{"an OpenPGP key for sigstore", []string{release, "--format", "sigstore", "--key", openpgpKey}, []string{"--key " + openpgpKey + ": public key: "}},
		{"not a key", []string{release, "--format", "attestation", "--key", writeFile(t, "not a key")}, []string{"--key ", "public key: "}},
		{"a PEM key for openpgp", []string{release, "--store", "file://" + t.TempDir(), "--key", keyFile}, []string{"--key " + keyFile + ": "}},
		{"a server without a Sigstore key", []string{release, "--format", "sigstore", "--key", noKeyURL}, []string{"fetching --key " + noKeyURL + `: 404 Not Found: "no Sigstore key is configured`}},
		{"a key too large", []string{release, "--format", "sigstore", "--key", writeFile(t, strings.Repeat("k", maxKeyBytes+1))}, []string{"is larger than 1048576 bytes: not a public key"}},
		{"unknown format", []string{release, "--format", "cosign", "--key", keyFile}, []string{`--format must be openpgp, sigstore or attestation, got "cosign"`}},
		{"a store for sigstore", []string{release, "--format", "sigstore", "--key", keyFile, "--store", "file:///tmp"}, []string{"--store is for --format openpgp"}},
		{"openpgp without a store", []string{release, "--key", keyFile}, []string{"--format openpgp needs --store"}},
		{"unknown tag", []string{repo + ":9.9.9", "--format", "sigstore", "--key", keyFile}, []string{"resolving " + repo + ":9.9.9"}},
		{"a platform of one image", []string{single, "--format", "sigstore", "--key", keyFile, "--platform", "linux/arm64"}, []string{single + " is one image (of linux/amd64), not an image index of platforms"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := run(t, append([]string{"payload", "verify"}, tc.args...)...)
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

// TestPayloadVerifySigstorePlatform verifies the image of one platform of a payload built for
// platforms, signed as the audit signs it: the index and each platform's image.
func TestPayloadVerifySigstorePlatform(t *testing.T) {
	reg := startRegistry(t)
	signer, keyFile := newCosignKey(t)
	api, _ := pushPlatformComponent(t, reg, "api", "1111", "amd64", "arm64")
	repo := reg.Addr() + "/product/release"
	res := buildPlatformPayload(t, reg, "1.0.0", []string{"linux/amd64", "linux/arm64"}, releaseimage.Component{Name: "api", Image: api})
	sigstoreSign(t, signer, res.Image, repo+":1.0.0")
	arm64 := repo + "@" + res.Platforms[1].Digest.String()
	sigstoreSign(t, signer, arm64, repo+":1.0.0")
	amd64 := repo + "@" + res.Platforms[0].Digest.String()

	out, err := run(t, "payload", "verify", repo+":1.0.0", "--format", "sigstore", "--key", keyFile, "--platform", "linux/arm64")
	want := repo + ":1.0.0 is " + arm64 + ": verifying that digest\n" +
		"verified: " + arm64 + " signed by " + signer.KeyID() + " for " + repo + ":1.0.0 (tag)\n" +
		"verified: " + arm64 + " signed by " + signer.KeyID() + " for " + repo + ":1.0.0 (referrer)\n"
	if err != nil || !sameLines(out, want) {
		t.Errorf("payload verify --platform linux/arm64: %v\n%s\nwant\n%s", err, out, want)
	}
	// The amd64 image is not signed: the index's signature does not count for it.
	out, err = run(t, "payload", "verify", res.Image, "--format", "sigstore", "--key", keyFile, "--platform", "linux/amd64")
	if err == nil || !strings.Contains(err.Error(), amd64+": ") {
		t.Errorf("payload verify of the unsigned amd64 image: %v\n%s", err, out)
	}
}

// sameLines says whether got and want hold the same lines, in any order.
func sameLines(got, want string) bool {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	slices.Sort(g)
	slices.Sort(w)
	return strings.Join(g, "\n") == strings.Join(w, "\n")
}
