package cosign

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/sigstore/sigstore/pkg/cryptoutils"

	// Registers fakekms://, sigstore's in-process KMS for tests.
	_ "github.com/sigstore/sigstore/pkg/signature/kms/fake"
)

// keyPEMs are a key of each kind LoadSigner reads.
func keyPEMs(t *testing.T) map[string][]byte {
	t.Helper()
	pkcs8, err := GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	ec, err := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	ecDER, err := x509.MarshalECPrivateKey(ec)
	if err != nil {
		t.Fatal(err)
	}
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	_, edKey, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	edDER, err := x509.MarshalPKCS8PrivateKey(edKey)
	if err != nil {
		t.Fatal(err)
	}
	return map[string][]byte{
		"PKCS#8 P-256":   pkcs8,
		"SEC 1 P-384":    pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: ecDER}),
		"PKCS#1 RSA":     pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(rsaKey)}),
		"PKCS#8 ed25519": pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: edDER}),
	}
}

// TestLoadSignerKinds signs with each kind of key: a .sig payload and a bundle that the public
// key verifies, and that another key does not.
func TestLoadSignerKinds(t *testing.T) {
	ctx := context.Background()
	image := testDigest(t, "ab")
	other := testSigner(t)
	for kind, p := range keyPEMs(t) {
		t.Run(kind, func(t *testing.T) {
			s, err := LoadSigner(p, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !regexp.MustCompile(`^sha256:[0-9a-f]{64}$`).MatchString(s.KeyID()) {
				t.Errorf("KeyID %q", s.KeyID())
			}
			again, err := LoadSigner(p, nil)
			if err != nil || again.KeyID() != s.KeyID() {
				t.Errorf("KeyID not stable: %s, %s (%v)", s.KeyID(), again.KeyID(), err)
			}
			pubPEM, err := s.PublicKeyPEM()
			if err != nil {
				t.Fatal(err)
			}
			pub, err := ParsePublicKey(pubPEM)
			if err != nil {
				t.Fatal(err)
			}
			st, err := signStatement(image, "registry.example/product/release:1.0.0")
			if err != nil {
				t.Fatal(err)
			}
			b, envelope, err := dsseBundle(ctx, s, st)
			if err != nil {
				t.Fatal(err)
			}
			got, err := verifyBundle(b, image, pub, SignPredicateType)
			if err != nil {
				t.Fatalf("bundle: %v", err)
			}
			if got.name != "registry.example/product/release:1.0.0" || !bytes.Equal(got.raw, st) {
				t.Errorf("bundle statement %s for %q", got.raw, got.name)
			}
			if _, err := verifyBundle(b, image, other.PublicKey(), SignPredicateType); err == nil {
				t.Error("another key verified the bundle")
			}
			v, _, err := verifier(pub)
			if err != nil {
				t.Fatal(err)
			}
			att := attached{desc: v1.Descriptor{MediaType: DSSEMediaType}, content: envelope}
			if _, err := verifyEnvelope(att, image, v, SignPredicateType); err != nil {
				t.Errorf(".att envelope: %v", err)
			}
		})
	}
}

// TestLoadSignerEncrypted reads cosign's encrypted keys with their password only.
func TestLoadSignerEncrypted(t *testing.T) {
	priv, pub, err := cryptoutils.GeneratePEMEncodedECDSAKeyPair(elliptic.P256(), cryptoutils.StaticPasswordFunc([]byte("hunter2")))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(priv, []byte("ENCRYPTED SIGSTORE PRIVATE KEY")) {
		t.Fatalf("not cosign's encrypted format:\n%s", priv)
	}
	s, err := LoadSigner(priv, []byte("hunter2"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.PublicKeyPEM()
	if err != nil || !bytes.Equal(got, pub) {
		t.Errorf("public key %s, want %s (%v)", got, pub, err)
	}
	for _, pw := range [][]byte{nil, []byte("wrong")} {
		if _, err := LoadSigner(priv, pw); err == nil {
			t.Errorf("password %q opened the key", pw)
		}
	}
}

func TestLoadSignerRefuses(t *testing.T) {
	_, pub, err := cryptoutils.GeneratePEMEncodedECDSAKeyPair(elliptic.P256(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		pem  []byte
		want string
	}{
		{"empty", nil, "empty"},
		{"not PEM", []byte("hello"), "PEM decoding failed"},
		{"a public key", pub, "unknown private key PEM file type"},
		{"too large", bytes.Repeat([]byte("A"), maxKeyPEM+1), "more than"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := LoadSigner(tc.pem, nil); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("LoadSigner: %v, want an error saying %q", err, tc.want)
			}
		})
	}
	if _, err := ParsePublicKey([]byte("hello")); err == nil {
		t.Error("ParsePublicKey read garbage")
	}
}

// TestLoadKMSSigner signs through sigstore's KMS interface (its in-process fake provider) and
// names the URI when no provider serves it.
func TestLoadKMSSigner(t *testing.T) {
	ctx := context.Background()
	s, err := LoadKMSSigner(ctx, "fakekms://release-controller")
	if err != nil {
		t.Fatal(err)
	}
	image := testDigest(t, "cd")
	st, err := signStatement(image, "registry.example/product/release:1.0.0")
	if err != nil {
		t.Fatal(err)
	}
	b, _, err := dsseBundle(ctx, s, st)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := verifyBundle(b, image, s.PublicKey(), SignPredicateType); err != nil {
		t.Errorf("a KMS-signed bundle: %v", err)
	}
	if _, err := LoadKMSSigner(ctx, "nokms://key"); err == nil || !strings.Contains(err.Error(), "nokms://key") {
		t.Errorf("an unknown KMS: %v", err)
	}
}

func TestAttachmentTag(t *testing.T) {
	hexDigest := strings.Repeat("0f", 32)
	for _, tc := range []struct {
		ref, suffix, want, err string
	}{
		{"r.example/a/b@sha256:" + hexDigest, "sig", "r.example/a/b:sha256-" + hexDigest + ".sig", ""},
		{"r.example/a/b@sha256:" + hexDigest, "att", "r.example/a/b:sha256-" + hexDigest + ".att", ""},
		{"r.example/a/b@sha512:" + strings.Repeat("0f", 64), "sig", "", "only sha256"},
	} {
		d, err := name.NewDigest(tc.ref)
		if err != nil {
			t.Fatal(err)
		}
		got, err := attachmentTag(d, tc.suffix)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: %v, want %q", tc.ref, err, tc.err)
			}
			continue
		}
		if err != nil || got.String() != tc.want {
			t.Errorf("%s %s: %s (%v), want %s", tc.ref, tc.suffix, got, err, tc.want)
		}
	}
}

func TestWantReferrer(t *testing.T) {
	bundle := func(artifactType, predicate string) v1.Descriptor {
		d := v1.Descriptor{MediaType: "application/vnd.oci.image.manifest.v1+json", ArtifactType: artifactType}
		if predicate != "" {
			d.Annotations = map[string]string{bundlePredicateAnnotation: predicate}
		}
		return d
	}
	for _, tc := range []struct {
		name      string
		d         v1.Descriptor
		predicate string
		want      bool
	}{
		{"a bundle", bundle(BundleMediaType, SignPredicateType), SignPredicateType, true},
		{"a bundle of another predicate", bundle(BundleMediaType, predicateTestResult), SignPredicateType, false},
		{"any predicate", bundle(BundleMediaType, predicateTestResult), "", true},
		{"no annotation", bundle(BundleMediaType, ""), SignPredicateType, true},
		{"the config's media type for artifactType", bundle(emptyConfigMediaType, ""), SignPredicateType, true},
		{"no artifactType", bundle("", ""), SignPredicateType, true},
		{"an SBOM", bundle("application/spdx+json", ""), "", false},
		{"an index", v1.Descriptor{MediaType: "application/vnd.oci.image.index.v1+json", ArtifactType: BundleMediaType}, "", false},
	} {
		if got := wantReferrer(tc.d, tc.predicate); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestCheckIdentity(t *testing.T) {
	for _, tc := range []struct {
		identity string
		ok       bool
	}{
		{"registry.example/product/release:4.22.0", true},
		{"127.0.0.1:5000/product/release:4.22.0", true},
		{"", false},
		{"Registry.Example/UPPER:tag", false},
		{"registry.example/product/release:" + strings.Repeat("x", 1100), false},
		{"registry.example/product release:1", false},
	} {
		if err := checkIdentity(tc.identity); (err == nil) != tc.ok {
			t.Errorf("%q: %v, want ok %v", tc.identity, err, tc.ok)
		}
	}
}

func TestCheckStatement(t *testing.T) {
	image := testDigest(t, "ab")
	other := testDigest(t, "cd")
	for _, tc := range []struct {
		name      string
		statement []byte
		want      string // the predicate type, or the error's words
		ok        bool
	}{
		{"about the image", statement(t, image, predicateSLSAProvenance, map[string]any{}), predicateSLSAProvenance, true},
		{"about another image", statement(t, other, predicateSLSAProvenance, map[string]any{}), "no subject with the digest", false},
		{"empty", nil, "empty statement", false},
		{"not JSON", []byte("{"), "in-toto statement", false},
		{"no subject", []byte(`{"_type":"https://in-toto.io/Statement/v1","predicateType":"x","predicate":{}}`), "in-toto statement", false},
		{"too large", bytes.Repeat([]byte(" "), maxLayerBytes+1), "more than", false},
	} {
		got, err := checkStatement(tc.statement, image)
		if tc.ok {
			if err != nil || got != tc.want {
				t.Errorf("%s: %q (%v), want %q", tc.name, got, err, tc.want)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error saying %q", tc.name, err, tc.want)
		}
	}
}

// testDigest is an image by digest (of hex repeated) in no registry: for what needs none.
func testDigest(t *testing.T, hex string) name.Digest {
	t.Helper()
	d, err := name.NewDigest("registry.example/product/release@sha256:" + strings.Repeat(hex, 32))
	if err != nil {
		t.Fatal(err)
	}
	return d
}
