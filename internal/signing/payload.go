package signing

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/release-controller/release-controller/internal/registryclient"
)

// Errors of VerifyPayload a caller can tell apart with errors.Is.
var (
	// ErrNoSignatures: the store has no signature of the image's digest.
	ErrNoSignatures = errors.New("no signatures")
	// ErrNotVerified: the store has signatures of the digest but none is valid for the image.
	ErrNotVerified = errors.New("no valid signature")
)

// SignatureSource gives the signatures of a manifest digest ("sha256:<hex>"), in their order
// in the store; none is an empty list, not an error.
type SignatureSource interface {
	Signatures(ctx context.Context, digest string) ([][]byte, error)
}

// VerifyPayloadOptions say what VerifyPayload trusts and where it reads.
type VerifyPayloadOptions struct {
	// Keyring holds the keys whose signatures count.
	Keyring Keyring
	// Signatures is the signature store.
	Signatures SignatureSource
	// Registry resolves a pull spec given by tag; nil is registryclient.New().
	Registry *registryclient.Client
	// Platform, when set, verifies the image of that platform of a payload built for
	// platforms: the image index is read from the registry and the platform's manifest
	// digest is the one checked.
	Platform string
}

// PayloadVerification is the result of a successful VerifyPayload.
type PayloadVerification struct {
	// Image is the verified image, repository@sha256:<hex>.
	Image string
	// KeyID is the id of the key that made the first valid signature.
	KeyID string
	// Valid of Total signatures of the digest are valid for Image.
	Valid, Total int
}

// VerifyPayload checks that at least one signature of pullSpec's manifest digest was made by
// a key of opts.Keyring and names that digest and pullSpec's repository. A pull spec by tag is
// resolved to its digest through the registry; one by digest is taken as it is, so it is
// verified without the registry. The error says why each signature does not count.
func VerifyPayload(ctx context.Context, pullSpec string, opts VerifyPayloadOptions) (PayloadVerification, error) {
	ref, err := name.ParseReference(pullSpec)
	if err != nil {
		return PayloadVerification{}, fmt.Errorf("parsing image reference %q: %w", pullSpec, err)
	}
	repository := ref.Context()
	var manifestDigest string
	if opts.Platform != "" {
		registry := opts.Registry
		if registry == nil {
			registry = registryclient.New()
		}
		resolved, err := registry.ResolvePlatform(ctx, pullSpec, opts.Platform)
		if err != nil {
			return PayloadVerification{}, err
		}
		_, manifestDigest, _ = strings.Cut(resolved, "@")
	} else if d, ok := ref.(name.Digest); ok {
		manifestDigest = d.DigestStr()
	} else {
		registry := opts.Registry
		if registry == nil {
			registry = registryclient.New()
		}
		resolved, err := registry.Resolve(ctx, pullSpec)
		if err != nil {
			return PayloadVerification{}, err
		}
		_, manifestDigest, _ = strings.Cut(resolved, "@")
	}
	image := repository.Name() + "@" + manifestDigest
	sigs, err := opts.Signatures.Signatures(ctx, manifestDigest)
	if err != nil {
		return PayloadVerification{}, fmt.Errorf("reading the signatures of %s: %w", image, err)
	}
	if len(sigs) == 0 {
		return PayloadVerification{}, fmt.Errorf("%s: %w of %s in the store", image, ErrNoSignatures, manifestDigest)
	}
	result := PayloadVerification{Image: image, Total: len(sigs)}
	var reasons []string
	for i, sig := range sigs {
		keyID, err := checkImageSignature(opts.Keyring, sig, repository, manifestDigest)
		if err != nil {
			reasons = append(reasons, fmt.Sprintf("signature-%d: %v", i+1, err))
			continue
		}
		if result.Valid == 0 {
			result.KeyID = keyID
		}
		result.Valid++
	}
	if result.Valid == 0 {
		return PayloadVerification{}, fmt.Errorf("%s: %w among its %d signatures: %s", image, ErrNotVerified, len(sigs), strings.Join(reasons, "; "))
	}
	return result, nil
}

// checkImageSignature verifies sig and checks that it names manifestDigest in repository.
func checkImageSignature(kr Keyring, sig []byte, repository name.Repository, manifestDigest string) (string, error) {
	claims, keyID, err := Verify(kr, sig)
	if err != nil {
		return keyID, err
	}
	if claims.ManifestDigest != manifestDigest {
		return keyID, fmt.Errorf("digest mismatch: signed by %s for digest %s, not %s", keyID, claims.ManifestDigest, manifestDigest)
	}
	signed, err := name.ParseReference(claims.DockerReference)
	if err != nil {
		return keyID, fmt.Errorf("reference mismatch: signed by %s for %q, which is not an image reference: %w", keyID, claims.DockerReference, err)
	}
	if signed.Context().Name() != repository.Name() {
		return keyID, fmt.Errorf("reference mismatch: signed by %s for %s, not repository %s", keyID, claims.DockerReference, repository.Name())
	}
	return keyID, nil
}
