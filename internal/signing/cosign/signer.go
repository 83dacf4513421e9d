// Package cosign attaches Sigstore signatures and in-toto attestations to an image in its
// registry, in the layouts every Sigstore verifier reads (cosign, Kyverno, policy-controller,
// containers/image's sigstoreSigned), and verifies them.
//
// A signature is written twice: as cosign's simple-signing layer in the sha256-<hex>.sig tag
// (what containers/image and older verifiers read) and as a Sigstore bundle (v0.3) referrer of
// the image, whose DSSE envelope carries an in-toto statement of cosign's sign predicate, as
// cosign v3 writes it (what cosign v3 verifies by default). An attestation is a DSSE envelope of
// an in-toto statement, written as a bundle referrer and as a layer of the sha256-<hex>.att tag.
// Referrers go through go-containerregistry, which keeps the referrers tag (sha256-<hex>) when
// the registry has no referrers API.
//
// Formats and cryptography come from the Sigstore libraries: sigstore/sigstore for keys,
// signers (KMS included) and simple-signing payloads, sigstore-go for bundles and their
// verification, in-toto's attestation package for statements.
package cosign

import (
	"bytes"
	"context"
	"crypto"
	"crypto/elliptic"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"

	protocommon "github.com/sigstore/protobuf-specs/gen/pb-go/common/v1"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/sigstore/sigstore/pkg/signature"
	"github.com/sigstore/sigstore/pkg/signature/kms"
	"github.com/sigstore/sigstore/pkg/signature/options"
)

// maxKeyPEM bounds a key a user hands us (a Secret's value); real keys are a few kilobytes.
const maxKeyPEM = 64 << 10

// Signer signs with one key: a PEM private key (PKCS#8/EC/RSA/ed25519, or cosign's encrypted
// "ENCRYPTED SIGSTORE PRIVATE KEY" with a password), or a KMS URI the sigstore libraries support.
type Signer struct {
	sv      signature.SignerVerifier
	pub     crypto.PublicKey
	der     []byte
	details signature.AlgorithmDetails
}

// LoadSigner reads a PEM private key; password decrypts cosign's encrypted keys (and legacy
// encrypted PEM), and is ignored for a key that is not encrypted.
func LoadSigner(pemBytes, password []byte) (*Signer, error) {
	if len(pemBytes) == 0 {
		return nil, errors.New("signing key: empty")
	}
	if len(pemBytes) > maxKeyPEM {
		return nil, fmt.Errorf("signing key: %d bytes, more than the %d a PEM key takes", len(pemBytes), maxKeyPEM)
	}
	// Never nil: cosign's encrypted keys may have an empty password, which still decrypts.
	pw := append([]byte{}, password...)
	priv, err := cryptoutils.UnmarshalPEMToPrivateKey(pemBytes, cryptoutils.StaticPasswordFunc(pw))
	if err != nil {
		return nil, fmt.Errorf("signing key: %w", err)
	}
	cs, ok := priv.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("signing key: a %T cannot sign", priv)
	}
	details, err := algorithm(cs.Public())
	if err != nil {
		return nil, err
	}
	sv, err := signature.LoadSignerVerifier(priv, details.GetHashType())
	if err != nil {
		return nil, fmt.Errorf("signing key: %w", err)
	}
	return newSigner(sv, cs.Public(), details)
}

// LoadKMSSigner signs with a KMS key through sigstore/sigstore's KMS URIs. No provider is
// linked into this binary (each pulls a cloud SDK): every scheme is served by sigstore's KMS
// plugin programs, sigstore-kms-<scheme> on PATH (the URI "<scheme>://<key>"), and by the
// providers a binary links in with a blank import.
func LoadKMSSigner(ctx context.Context, uri string) (*Signer, error) {
	if uri == "" {
		return nil, errors.New("KMS key URI: empty")
	}
	if len(uri) > 2048 {
		return nil, fmt.Errorf("KMS key URI: %d bytes, more than 2048", len(uri))
	}
	sv, err := kms.Get(ctx, uri, crypto.SHA256)
	if err != nil {
		return nil, fmt.Errorf("KMS key %q: %w", uri, err)
	}
	pub, err := sv.PublicKey(options.WithContext(ctx))
	if err != nil {
		return nil, fmt.Errorf("KMS key %q: reading its public key: %w", uri, err)
	}
	details, err := algorithm(pub)
	if err != nil {
		return nil, fmt.Errorf("KMS key %q: %w", uri, err)
	}
	if details.GetHashType() != crypto.SHA256 {
		// The key's own digest (P-384 signs SHA-384): ask again with it.
		if sv, err = kms.Get(ctx, uri, details.GetHashType()); err != nil {
			return nil, fmt.Errorf("KMS key %q: %w", uri, err)
		}
	}
	return newSigner(sv, pub, details)
}

// algorithm is the Sigstore default for the key: ECDSA P-256 with SHA-256, P-384 with SHA-384,
// P-521 with SHA-512, RSA with SHA-256 (PKCS#1 v1.5), pure ed25519.
func algorithm(pub crypto.PublicKey) (signature.AlgorithmDetails, error) {
	pkd, err := signature.GetDefaultPublicKeyDetails(pub)
	if err != nil {
		return signature.AlgorithmDetails{}, fmt.Errorf("signing key: %w", err)
	}
	details, err := signature.GetAlgorithmDetails(pkd)
	if err != nil {
		return signature.AlgorithmDetails{}, fmt.Errorf("signing key: %w", err)
	}
	return details, nil
}

func newSigner(sv signature.SignerVerifier, pub crypto.PublicKey, details signature.AlgorithmDetails) (*Signer, error) {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return nil, fmt.Errorf("signing key: its public key: %w", err)
	}
	return &Signer{sv: sv, pub: pub, der: der, details: details}, nil
}

// KeyID is "sha256:<hex>" of the DER public key (stable, shown on pages, and the public-key hint
// of the bundles this key signs).
func (s *Signer) KeyID() string {
	return keyIDOfDER(s.der)
}

// PublicKeyID is the id Signer.KeyID gives the signer of pub, so that what verifies a
// signature names its key as the pages do.
func PublicKeyID(pub crypto.PublicKey) (string, error) {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return "", err
	}
	return keyIDOfDER(der), nil
}

func keyIDOfDER(der []byte) string {
	sum := sha256.Sum256(der)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// PublicKeyPEM is the public key as `cosign verify --key` reads it.
func (s *Signer) PublicKeyPEM() ([]byte, error) {
	return cryptoutils.MarshalPublicKeyToPEM(s.pub)
}

// PublicKey is the key VerifySignatures and VerifyAttestations take.
func (s *Signer) PublicKey() crypto.PublicKey { return s.pub }

// signMessage signs payload as cosign's .sig layers carry it (the key's digest of the bytes).
func (s *Signer) signMessage(ctx context.Context, payload []byte) ([]byte, error) {
	return s.sv.SignMessage(bytes.NewReader(payload), options.WithContext(ctx))
}

// GenerateKey makes an unencrypted PKCS#8 ECDSA P-256 key, for dev and tests.
func GenerateKey() (privatePEM []byte, err error) {
	priv, _, err := cryptoutils.GeneratePEMEncodedECDSAKeyPair(elliptic.P256(), nil)
	return priv, err
}

// ParsePublicKey reads a PEM public key (PKIX "PUBLIC KEY", or a certificate's key).
func ParsePublicKey(pemBytes []byte) (crypto.PublicKey, error) {
	if len(pemBytes) == 0 {
		return nil, errors.New("public key: empty")
	}
	if len(pemBytes) > maxKeyPEM {
		return nil, fmt.Errorf("public key: %d bytes, more than the %d a PEM key takes", len(pemBytes), maxKeyPEM)
	}
	pub, err := cryptoutils.UnmarshalPEMToPublicKey(pemBytes)
	if err != nil {
		return nil, fmt.Errorf("public key: %w", err)
	}
	return pub, nil
}

// verifier checks signatures of pub with the Sigstore default algorithm for its type.
func verifier(pub crypto.PublicKey) (signature.Verifier, signature.AlgorithmDetails, error) {
	details, err := algorithm(pub)
	if err != nil {
		return nil, details, err
	}
	v, err := signature.LoadVerifier(pub, details.GetHashType())
	if err != nil {
		return nil, details, fmt.Errorf("public key: %w", err)
	}
	return v, details, nil
}

// keypair adapts a Signer to sigstore-go's sign.Keypair, so that sigstore-go writes the bundle.
type keypair struct{ s *Signer }

func (k keypair) GetHashAlgorithm() protocommon.HashAlgorithm {
	return k.s.details.GetProtoHashType()
}

func (k keypair) GetSigningAlgorithm() protocommon.PublicKeyDetails {
	return k.s.details.GetSignatureAlgorithm()
}

func (k keypair) GetHint() []byte { return []byte(k.s.KeyID()) }

func (k keypair) GetKeyAlgorithm() string {
	switch k.s.details.GetKeyType() {
	case signature.ECDSA:
		return "ECDSA"
	case signature.RSA:
		return "RSA"
	case signature.ED25519:
		return "ED25519"
	}
	return ""
}

func (k keypair) GetPublicKey() crypto.PublicKey { return k.s.pub }

func (k keypair) GetPublicKeyPem() (string, error) {
	b, err := k.s.PublicKeyPEM()
	return string(b), err
}

// SignData signs data and returns the signature and the digest signed (the data itself for
// pure ed25519), as sigstore-go's message signatures record it.
func (k keypair) SignData(ctx context.Context, data []byte) ([]byte, []byte, error) {
	sig, err := k.s.signMessage(ctx, data)
	if err != nil {
		return nil, nil, err
	}
	digest := data
	if h := k.s.details.GetHashType(); h != crypto.Hash(0) {
		hasher := h.New()
		hasher.Write(data)
		digest = hasher.Sum(nil)
	}
	return sig, digest, nil
}
