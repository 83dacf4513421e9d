package cosign

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
	attestationv1 "github.com/in-toto/attestation/go/v1"
	securedsse "github.com/secure-systems-lab/go-securesystemslib/dsse"
	"github.com/sigstore/sigstore-go/pkg/sign"
	"github.com/sigstore/sigstore/pkg/signature/payload"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"
)

// EnsureSigned attaches a signature of image (by digest) claiming identity (the docker-reference,
// "<repository>:<tag>"): the cosign simple-signing layer in the sha256-<hex>.sig tag, and a
// Sigstore bundle (v0.3, a DSSE envelope of cosign's sign statement, public-key hint) as an
// OCI 1.1 referrer of the image, written with the referrers-tag fallback when the registry has
// no referrers API. Idempotent: what a signature by this key for this digest already exists for
// is not written again. created reports whether anything was written.
func EnsureSigned(ctx context.Context, image name.Digest, identity string, s *Signer, opts ...remote.Option) (created bool, err error) {
	if s == nil {
		return false, errors.New("signing: no key")
	}
	if err := checkIdentity(identity); err != nil {
		return false, err
	}
	opts = append([]remote.Option{remote.WithContext(ctx)}, opts...)
	subject, err := remote.Head(image, opts...)
	if err != nil {
		return false, fmt.Errorf("signing %s: %w", image, err)
	}
	v, _, err := verifier(s.pub)
	if err != nil {
		return false, err
	}

	tag, err := attachmentTag(image, "sig")
	if err != nil {
		return false, err
	}
	desc, layers, err := readTagImage(tag, opts)
	if err != nil {
		return false, err
	}
	if !anySignature(layers, image, v) {
		p, err := payload.Cosign{Image: image, ClaimedIdentity: identity}.MarshalJSON()
		if err != nil {
			return false, err
		}
		sig, err := s.signMessage(ctx, p)
		if err != nil {
			return false, fmt.Errorf("signing %s: %w", image, err)
		}
		layer := mutate.Addendum{
			Layer:       static.NewLayer(p, SimpleSigningMediaType),
			Annotations: map[string]string{signatureAnnotation: base64.StdEncoding.EncodeToString(sig)},
		}
		if err := appendToTag(tag, desc, layer, opts); err != nil {
			return false, err
		}
		created = true
	}

	bundles, err := readReferrerBundles(image, SignPredicateType, opts)
	if err != nil {
		return created, err
	}
	if !anyBundle(bundles, image, s.pub, SignPredicateType, nil) {
		statement, err := signStatement(image, identity)
		if err != nil {
			return created, err
		}
		b, _, err := dsseBundle(ctx, s, statement)
		if err != nil {
			return created, fmt.Errorf("signing %s: %w", image, err)
		}
		if err := writeReferrer(image, *subject, b, bundleAnnotations(SignPredicateType), opts); err != nil {
			return created, err
		}
		created = true
	}
	return created, nil
}

// EnsureAttested attaches a signed in-toto statement (DSSE, payloadType application/vnd.in-toto+json)
// about image: as a Sigstore bundle referrer (artifactType application/vnd.dev.sigstore.bundle.v0.3+json)
// and in cosign's sha256-<hex>.att tag layout. Idempotent by the statement's bytes: the same
// statement (builders are deterministic) by this key is not written twice.
func EnsureAttested(ctx context.Context, image name.Digest, statement []byte, s *Signer, opts ...remote.Option) (created bool, err error) {
	if s == nil {
		return false, errors.New("attesting: no key")
	}
	predicateType, err := checkStatement(statement, image)
	if err != nil {
		return false, err
	}
	opts = append([]remote.Option{remote.WithContext(ctx)}, opts...)
	subject, err := remote.Head(image, opts...)
	if err != nil {
		return false, fmt.Errorf("attesting %s: %w", image, err)
	}
	v, _, err := verifier(s.pub)
	if err != nil {
		return false, err
	}
	tag, err := attachmentTag(image, "att")
	if err != nil {
		return false, err
	}
	desc, layers, err := readTagImage(tag, opts)
	if err != nil {
		return false, err
	}
	bundles, err := readReferrerBundles(image, predicateType, opts)
	if err != nil {
		return false, err
	}
	inTag := anyEnvelope(layers, image, v, predicateType, statement)
	inReferrer := anyBundle(bundles, image, s.pub, predicateType, statement)
	if inTag && inReferrer {
		return false, nil
	}

	// One signature serves both layouts: the bundle's envelope is the .att layer.
	b, envelope, err := dsseBundle(ctx, s, statement)
	if err != nil {
		return false, fmt.Errorf("attesting %s: %w", image, err)
	}
	if !inTag {
		layer := mutate.Addendum{
			Layer: static.NewLayer(envelope, DSSEMediaType),
			Annotations: map[string]string{
				signatureAnnotation:    "",
				attPredicateAnnotation: predicateType,
			},
		}
		if err := appendToTag(tag, desc, layer, opts); err != nil {
			return false, err
		}
		created = true
	}
	if !inReferrer {
		if err := writeReferrer(image, *subject, b, bundleAnnotations(predicateType), opts); err != nil {
			return created, err
		}
		created = true
	}
	return created, nil
}

// checkIdentity refuses what is not a docker reference with a repository: the identity every
// simple-signing verifier compares with the reference it pulled.
func checkIdentity(identity string) error {
	if identity == "" {
		return errors.New("signing: empty identity (the docker-reference)")
	}
	if len(identity) > 1024 {
		return fmt.Errorf("signing: identity of %d bytes, more than 1024", len(identity))
	}
	if _, err := name.ParseReference(identity, name.StrictValidation); err != nil {
		return fmt.Errorf("signing: identity %q: %w", identity, err)
	}
	return nil
}

// checkStatement parses an in-toto statement and requires it to be about image; it returns
// its predicate type.
func checkStatement(statement []byte, image name.Digest) (string, error) {
	if len(statement) == 0 {
		return "", errors.New("attesting: empty statement")
	}
	if len(statement) > maxLayerBytes {
		return "", fmt.Errorf("attesting: a statement of %d bytes, more than %d", len(statement), maxLayerBytes)
	}
	st, err := parseStatement(statement)
	if err != nil {
		return "", fmt.Errorf("attesting: %w", err)
	}
	if err := aboutImage(st, image); err != nil {
		return "", fmt.Errorf("attesting: %w", err)
	}
	return st.GetPredicateType(), nil
}

func parseStatement(b []byte) (*attestationv1.Statement, error) {
	st := &attestationv1.Statement{}
	if err := protojson.Unmarshal(b, st); err != nil {
		return nil, fmt.Errorf("in-toto statement: %w", err)
	}
	if err := st.Validate(); err != nil {
		return nil, fmt.Errorf("in-toto statement: %w", err)
	}
	return st, nil
}

// aboutImage requires a subject whose sha256 is image's digest.
func aboutImage(st *attestationv1.Statement, image name.Digest) error {
	_, hexDigest, _ := splitDigest(image)
	for _, sub := range st.GetSubject() {
		if sub.GetDigest()["sha256"] == hexDigest {
			return nil
		}
	}
	return fmt.Errorf("the statement (%s) has no subject with the digest %s", st.GetPredicateType(), image.DigestStr())
}

func splitDigest(image name.Digest) (alg, hexDigest string, ok bool) {
	d, err := v1.NewHash(image.DigestStr())
	if err != nil {
		return "", "", false
	}
	return d.Algorithm, d.Hex, true
}

// signStatement is what cosign v3 signs for an image signature: cosign's sign predicate
// (empty) about the image's digest. The subject's name is the identity claimed.
func signStatement(image name.Digest, identity string) ([]byte, error) {
	_, hexDigest, ok := splitDigest(image)
	if !ok {
		return nil, fmt.Errorf("image %s: not a digest", image)
	}
	st := &attestationv1.Statement{
		Type:          attestationv1.StatementTypeUri,
		Subject:       []*attestationv1.ResourceDescriptor{{Name: identity, Digest: map[string]string{"sha256": hexDigest}}},
		PredicateType: SignPredicateType,
		Predicate:     &structpb.Struct{},
	}
	return protojson.Marshal(st)
}

// dsseBundle signs statement into a Sigstore bundle (DSSE, public-key hint) with sigstore-go,
// and returns it with its envelope as cosign's .att layer carries it.
func dsseBundle(ctx context.Context, s *Signer, statement []byte) (bundle, envelope []byte, err error) {
	pb, err := sign.Bundle(&sign.DSSEData{Data: statement, PayloadType: InTotoPayloadType}, keypair{s}, sign.BundleOptions{Context: ctx})
	if err != nil {
		return nil, nil, err
	}
	bundle, err = protojson.Marshal(pb)
	if err != nil {
		return nil, nil, err
	}
	env := pb.GetDsseEnvelope()
	out := securedsse.Envelope{
		PayloadType: env.GetPayloadType(),
		Payload:     base64.StdEncoding.EncodeToString(env.GetPayload()),
	}
	for _, sig := range env.GetSignatures() {
		out.Signatures = append(out.Signatures, securedsse.Signature{KeyID: sig.GetKeyid(), Sig: base64.StdEncoding.EncodeToString(sig.GetSig())})
	}
	envelope, err = json.Marshal(out)
	if err != nil {
		return nil, nil, err
	}
	return bundle, envelope, nil
}

func bundleAnnotations(predicateType string) map[string]string {
	return map[string]string{
		createdAnnotation:         time.Now().UTC().Format(time.RFC3339),
		bundleContentAnnotation:   "dsse-envelope",
		bundlePredicateAnnotation: predicateType,
	}
}

// appendToTag adds layer to the attachments image at tag (desc, or a new OCI image when nil)
// and writes it back.
func appendToTag(tag name.Tag, desc *remote.Descriptor, layer mutate.Addendum, opts []remote.Option) error {
	base := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	if desc != nil {
		img, err := desc.Image()
		if err != nil {
			return fmt.Errorf("%s: %w", tag, err)
		}
		base = img
	}
	img, err := mutate.Append(base, layer)
	if err != nil {
		return fmt.Errorf("%s: %w", tag, err)
	}
	if err := remote.Write(tag, img, opts...); err != nil {
		return fmt.Errorf("writing %s: %w", tag, err)
	}
	return nil
}
