package cosign

import (
	"bytes"
	"context"
	"crypto"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	protobundle "github.com/sigstore/protobuf-specs/gen/pb-go/bundle/v1"
	sgbundle "github.com/sigstore/sigstore-go/pkg/bundle"
	"github.com/sigstore/sigstore-go/pkg/root"
	sgverify "github.com/sigstore/sigstore-go/pkg/verify"
	"github.com/sigstore/sigstore/pkg/signature"
	sigdsse "github.com/sigstore/sigstore/pkg/signature/dsse"
	"github.com/sigstore/sigstore/pkg/signature/payload"
	"google.golang.org/protobuf/encoding/protojson"
)

// VerifiedSignature is a signature of an image that a key verified.
type VerifiedSignature struct {
	// Identity is the docker-reference the signature claims (the .sig payload's, or the
	// bundle statement's subject name).
	Identity string
	// Digest is the image's manifest digest the signature is about.
	Digest string
	// Where is FoundInTag (the .sig tag) or FoundInReferrer (a bundle).
	Where string
}

// VerifiedAttestation is an in-toto statement about an image that a key verified.
type VerifiedAttestation struct {
	PredicateType string
	// Statement is the statement's bytes as signed.
	Statement []byte
	// Where is FoundInTag (the .att tag) or FoundInReferrer (a bundle).
	Where string
}

// VerifySignatures returns every signature of image that pub verifies, in the .sig tag and in
// bundle referrers; an error when none does, saying what was found and why each failed.
func VerifySignatures(ctx context.Context, image name.Digest, pub crypto.PublicKey, opts ...remote.Option) ([]VerifiedSignature, error) {
	v, _, err := verifier(pub)
	if err != nil {
		return nil, err
	}
	opts = append([]remote.Option{remote.WithContext(ctx)}, opts...)
	tag, err := attachmentTag(image, "sig")
	if err != nil {
		return nil, err
	}
	_, layers, err := readTagImage(tag, opts)
	if err != nil {
		return nil, err
	}
	bundles, err := readReferrerBundles(image, SignPredicateType, opts)
	if err != nil {
		return nil, err
	}
	var out []VerifiedSignature
	var failed []string
	for i, l := range layers {
		identity, err := verifySigLayer(l, image, v)
		if err != nil {
			failed = append(failed, fmt.Sprintf("%s layer %d: %v", tag.TagStr(), i, err))
			continue
		}
		out = append(out, VerifiedSignature{Identity: identity, Digest: image.DigestStr(), Where: FoundInTag})
	}
	for _, b := range bundles {
		st, err := verifyBundle(b.bundle, image, pub, SignPredicateType)
		if err != nil {
			failed = append(failed, fmt.Sprintf("bundle %s: %v", b.manifest, err))
			continue
		}
		out = append(out, VerifiedSignature{Identity: st.name, Digest: image.DigestStr(), Where: FoundInReferrer})
	}
	if len(out) == 0 {
		return nil, noneVerified("signature", image, len(layers)+len(bundles), failed)
	}
	return out, nil
}

// VerifyAttestations returns every attestation of image with predicateType (every predicate
// when empty) that pub verifies, in the .att tag and in bundle referrers; an error when none
// does, saying what was found and why each failed.
func VerifyAttestations(ctx context.Context, image name.Digest, pub crypto.PublicKey, predicateType string, opts ...remote.Option) ([]VerifiedAttestation, error) {
	v, _, err := verifier(pub)
	if err != nil {
		return nil, err
	}
	opts = append([]remote.Option{remote.WithContext(ctx)}, opts...)
	tag, err := attachmentTag(image, "att")
	if err != nil {
		return nil, err
	}
	_, layers, err := readTagImage(tag, opts)
	if err != nil {
		return nil, err
	}
	bundles, err := readReferrerBundles(image, predicateType, opts)
	if err != nil {
		return nil, err
	}
	var out []VerifiedAttestation
	var failed []string
	found := 0
	for i, l := range layers {
		if p := l.desc.Annotations[attPredicateAnnotation]; predicateType != "" && p != "" && p != predicateType {
			continue
		}
		st, err := verifyEnvelope(l, image, v, predicateType)
		if errors.Is(err, errOtherPredicate) {
			continue
		}
		found++
		if err != nil {
			failed = append(failed, fmt.Sprintf("%s layer %d: %v", tag.TagStr(), i, err))
			continue
		}
		out = append(out, VerifiedAttestation{PredicateType: st.predicateType, Statement: st.raw, Where: FoundInTag})
	}
	for _, b := range bundles {
		if predicateType == "" && claimedPredicate(b.bundle) == SignPredicateType {
			continue // a signature, not an attestation
		}
		st, err := verifyBundle(b.bundle, image, pub, predicateType)
		if errors.Is(err, errOtherPredicate) {
			continue
		}
		found++
		if err != nil {
			failed = append(failed, fmt.Sprintf("bundle %s: %v", b.manifest, err))
			continue
		}
		out = append(out, VerifiedAttestation{PredicateType: st.predicateType, Statement: st.raw, Where: FoundInReferrer})
	}
	if len(out) == 0 {
		what := "attestation"
		if predicateType != "" {
			what = "attestation of " + predicateType
		}
		return nil, noneVerified(what, image, found, failed)
	}
	return out, nil
}

func noneVerified(what string, image name.Digest, found int, failed []string) error {
	if found == 0 {
		return fmt.Errorf("no %s of %s found (neither in its tag nor as a referrer)", what, image)
	}
	return fmt.Errorf("none of the %d %s(s) of %s verifies with the key: %s", found, what, image, strings.Join(failed, "; "))
}

// anySignature reports whether a .sig layer is a signature of image that v verifies.
func anySignature(layers []attached, image name.Digest, v signature.Verifier) bool {
	for _, l := range layers {
		if _, err := verifySigLayer(l, image, v); err == nil {
			return true
		}
	}
	return false
}

// anyEnvelope reports whether a .att layer is statement, about image, verified by v.
func anyEnvelope(layers []attached, image name.Digest, v signature.Verifier, predicateType string, statement []byte) bool {
	for _, l := range layers {
		if st, err := verifyEnvelope(l, image, v, predicateType); err == nil && bytes.Equal(st.raw, statement) {
			return true
		}
	}
	return false
}

// anyBundle reports whether a bundle verified by pub carries a statement of predicateType
// about image (statement itself when not nil).
func anyBundle(bundles []referrerBundle, image name.Digest, pub crypto.PublicKey, predicateType string, statement []byte) bool {
	for _, b := range bundles {
		st, err := verifyBundle(b.bundle, image, pub, predicateType)
		if err == nil && (statement == nil || bytes.Equal(st.raw, statement)) {
			return true
		}
	}
	return false
}

// verifySigLayer checks a .sig layer: its signature by v over the payload, a cosign
// simple-signing payload about image. It returns the identity claimed.
func verifySigLayer(l attached, image name.Digest, v signature.Verifier) (string, error) {
	if l.desc.MediaType != SimpleSigningMediaType {
		return "", fmt.Errorf("media type %s, not a signature", l.desc.MediaType)
	}
	b64, ok := l.desc.Annotations[signatureAnnotation]
	if !ok || b64 == "" {
		return "", fmt.Errorf("no %s annotation", signatureAnnotation)
	}
	sig, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		return "", fmt.Errorf("signature annotation: %w", err)
	}
	if err := v.VerifySignature(bytes.NewReader(sig), bytes.NewReader(l.content)); err != nil {
		return "", fmt.Errorf("signature: %w", err)
	}
	var p payload.SimpleContainerImage
	if err := json.Unmarshal(l.content, &p); err != nil {
		return "", fmt.Errorf("payload: %w", err)
	}
	if p.Critical.Type != payload.CosignSignatureType {
		return "", fmt.Errorf("payload of type %q, not %q", p.Critical.Type, payload.CosignSignatureType)
	}
	if p.Critical.Image.DockerManifestDigest != image.DigestStr() {
		return "", fmt.Errorf("payload about %s, not %s", p.Critical.Image.DockerManifestDigest, image.DigestStr())
	}
	return p.Critical.Identity.DockerReference, nil
}

// verifiedStatement is an in-toto statement whose signature was verified.
type verifiedStatement struct {
	raw           []byte
	predicateType string
	name          string // the subject's name for image (the identity of a signature)
}

var errOtherPredicate = errors.New("another predicate type")

// verifyEnvelope checks a .att layer: a DSSE envelope of an in-toto statement signed by v,
// about image, of predicateType (any when empty).
func verifyEnvelope(l attached, image name.Digest, v signature.Verifier, predicateType string) (verifiedStatement, error) {
	if l.desc.MediaType != DSSEMediaType {
		return verifiedStatement{}, fmt.Errorf("media type %s, not a DSSE envelope", l.desc.MediaType)
	}
	var decoded []byte
	dv := sigdsse.WrapVerifier(v, sigdsse.WithExpectedPayloadType(InTotoPayloadType), sigdsse.WithDecodedPayload(&decoded))
	if err := dv.VerifySignature(bytes.NewReader(l.content), nil); err != nil {
		return verifiedStatement{}, fmt.Errorf("envelope: %w", err)
	}
	return checkVerified(decoded, image, predicateType)
}

// verifyBundle checks a Sigstore bundle with sigstore-go: a DSSE envelope signed by pub (no
// transparency log or timestamp: a key of our own), whose in-toto statement is about image
// and of predicateType (any when empty).
func verifyBundle(raw []byte, image name.Digest, pub crypto.PublicKey, predicateType string) (verifiedStatement, error) {
	pb := &protobundle.Bundle{}
	if err := protojson.Unmarshal(raw, pb); err != nil {
		return verifiedStatement{}, fmt.Errorf("bundle: %w", err)
	}
	b, err := sgbundle.NewBundle(pb)
	if err != nil {
		return verifiedStatement{}, fmt.Errorf("bundle: %w", err)
	}
	env := pb.GetDsseEnvelope()
	if env == nil {
		return verifiedStatement{}, errors.New("bundle: no DSSE envelope (a message signature of something else)")
	}
	if env.GetPayloadType() != InTotoPayloadType {
		return verifiedStatement{}, fmt.Errorf("bundle: payload type %q, not %q", env.GetPayloadType(), InTotoPayloadType)
	}
	// Cheap before the signature: skip other predicates without calling them failures.
	if p := claimedPredicate(raw); predicateType != "" && p != "" && p != predicateType {
		return verifiedStatement{}, errOtherPredicate
	}
	v, _, err := verifier(pub)
	if err != nil {
		return verifiedStatement{}, err
	}
	key := root.NewExpiringKey(v, time.Time{}, time.Time{})
	trusted := root.NewTrustedPublicKeyMaterial(func(string) (root.TimeConstrainedVerifier, error) { return key, nil })
	sv, err := sgverify.NewVerifier(trusted, sgverify.WithNoObserverTimestamps())
	if err != nil {
		return verifiedStatement{}, err
	}
	alg, hexDigest, ok := splitDigest(image)
	if !ok {
		return verifiedStatement{}, fmt.Errorf("image %s: not a digest", image)
	}
	digest, err := hex.DecodeString(hexDigest)
	if err != nil {
		return verifiedStatement{}, err
	}
	if _, err := sv.Verify(b, sgverify.NewPolicy(sgverify.WithArtifactDigest(alg, digest), sgverify.WithKey())); err != nil {
		return verifiedStatement{}, fmt.Errorf("bundle: %w", err)
	}
	return checkVerified(env.GetPayload(), image, predicateType)
}

// checkVerified reads a verified statement: about image, of predicateType (any when empty).
func checkVerified(raw []byte, image name.Digest, predicateType string) (verifiedStatement, error) {
	st, err := parseStatement(raw)
	if err != nil {
		return verifiedStatement{}, err
	}
	if predicateType != "" && st.GetPredicateType() != predicateType {
		return verifiedStatement{}, fmt.Errorf("%w: %s", errOtherPredicate, st.GetPredicateType())
	}
	if err := aboutImage(st, image); err != nil {
		return verifiedStatement{}, err
	}
	out := verifiedStatement{raw: raw, predicateType: st.GetPredicateType()}
	_, hexDigest, _ := splitDigest(image)
	for _, sub := range st.GetSubject() {
		if sub.GetDigest()["sha256"] == hexDigest {
			out.name = sub.GetName()
			break
		}
	}
	return out, nil
}

// claimedPredicate is the predicate type a bundle's statement claims, before any check of its
// signature ("" when it has none): only to skip what was not asked for.
func claimedPredicate(raw []byte) string {
	pb := &protobundle.Bundle{}
	if err := protojson.Unmarshal(raw, pb); err != nil {
		return ""
	}
	st, err := parseStatement(pb.GetDsseEnvelope().GetPayload())
	if err != nil {
		return ""
	}
	return st.GetPredicateType()
}
