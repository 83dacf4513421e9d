package cosign

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// The layouts cosign writes and reads (cosign v3.1.3, pkg/oci and pkg/types).
const (
	// SimpleSigningMediaType is the media type of a .sig layer: the simple-signing payload.
	SimpleSigningMediaType = "application/vnd.dev.cosign.simplesigning.v1+json"
	// DSSEMediaType is the media type of a .att layer: a DSSE envelope (JSON).
	DSSEMediaType = "application/vnd.dsse.envelope.v1+json"
	// InTotoPayloadType is the DSSE payload type of an in-toto statement.
	InTotoPayloadType = "application/vnd.in-toto+json"
	// BundleMediaType is the Sigstore bundle v0.3: a referrer's artifactType and its one layer.
	BundleMediaType = "application/vnd.dev.sigstore.bundle.v0.3+json"
	// SignPredicateType is the predicate of the statement cosign v3 signs for an image signature.
	SignPredicateType = "https://sigstore.dev/cosign/sign/v1"

	// signatureAnnotation holds a .sig layer's base64 signature (empty on .att layers, whose
	// envelope carries it).
	signatureAnnotation = "dev.cosignproject.cosign/signature"
	// attPredicateAnnotation names a .att layer's predicate type (cosign's attest writes
	// "predicateType", not a prefixed key).
	attPredicateAnnotation = "predicateType"
	// bundlePredicateAnnotation names a bundle referrer's predicate type.
	bundlePredicateAnnotation = "dev.sigstore.bundle.predicateType"
	bundleContentAnnotation   = "dev.sigstore.bundle.content"
	createdAnnotation         = "org.opencontainers.image.created"
	// emptyConfigMediaType and emptyConfig are OCI 1.1's empty descriptor, an artifact's config.
	emptyConfigMediaType = "application/vnd.oci.empty.v1+json"
)

var emptyConfig = []byte("{}")

// Bounds on what a registry hands us: a manifest of attachments, its layers, the referrers of
// an image, one layer. Ours are a few kilobytes; more than this is not ours, or is an attack.
const (
	maxManifestBytes = 4 << 20
	maxLayers        = 256
	maxReferrers     = 1024
	maxLayerBytes    = 4 << 20
)

// Where a signature or attestation was found.
const (
	FoundInTag      = "tag"
	FoundInReferrer = "referrer"
)

// attachmentTag is cosign's tag for image's signatures (suffix "sig") or attestations ("att"):
// sha256-<hex>.<suffix> in the image's repository.
func attachmentTag(image name.Digest, suffix string) (name.Tag, error) {
	alg, hexDigest, ok := strings.Cut(image.DigestStr(), ":")
	if !ok || alg != "sha256" || len(hexDigest) != 64 {
		return name.Tag{}, fmt.Errorf("image %s: only sha256 digests are signed", image)
	}
	return image.Repository.Tag(alg + "-" + hexDigest + "." + suffix), nil
}

// attached is one layer of a .sig or .att tag image, read within bounds.
type attached struct {
	desc    v1.Descriptor
	content []byte
}

// readTagImage reads the attachments image at tag: nil when the tag does not exist yet.
// Everything is bounded: the manifest's size, its layer count, each layer's size.
func readTagImage(tag name.Tag, opts []remote.Option) (*remote.Descriptor, []attached, error) {
	head, err := remote.Head(tag, opts...)
	if isNotFound(err) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("reading %s: %w", tag, err)
	}
	if head.Size > maxManifestBytes {
		return nil, nil, fmt.Errorf("%s: a manifest of %d bytes, more than %d", tag, head.Size, maxManifestBytes)
	}
	desc, err := remote.Get(tag.Digest(head.Digest.String()), opts...)
	if err != nil {
		return nil, nil, fmt.Errorf("reading %s: %w", tag, err)
	}
	if len(desc.Manifest) > maxManifestBytes { // the registry's HEAD said otherwise
		return nil, nil, fmt.Errorf("%s: a manifest of %d bytes, more than %d", tag, len(desc.Manifest), maxManifestBytes)
	}
	m, err := v1.ParseManifest(bytes.NewReader(desc.Manifest))
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", tag, err)
	}
	if len(m.Layers) > maxLayers {
		return nil, nil, fmt.Errorf("%s: %d layers, more than %d", tag, len(m.Layers), maxLayers)
	}
	var out []attached
	for _, l := range m.Layers {
		if l.MediaType != SimpleSigningMediaType && l.MediaType != DSSEMediaType {
			continue // another tool's attachment
		}
		b, err := readBlob(tag.Repository, l, opts)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", tag, err)
		}
		out = append(out, attached{desc: l, content: b})
	}
	return desc, out, nil
}

// readBlob reads the blob desc names, refusing one larger than maxLayerBytes.
func readBlob(repo name.Repository, desc v1.Descriptor, opts []remote.Option) ([]byte, error) {
	if desc.Size < 0 || desc.Size > maxLayerBytes {
		return nil, fmt.Errorf("layer %s: %d bytes, more than %d", desc.Digest, desc.Size, maxLayerBytes)
	}
	l, err := remote.Layer(repo.Digest(desc.Digest.String()), opts...)
	if err != nil {
		return nil, fmt.Errorf("layer %s: %w", desc.Digest, err)
	}
	rc, err := l.Compressed() // checks the digest as it reads
	if err != nil {
		return nil, fmt.Errorf("layer %s: %w", desc.Digest, err)
	}
	defer func() { _ = rc.Close() }()
	b, err := io.ReadAll(io.LimitReader(rc, desc.Size+1))
	if err != nil {
		return nil, fmt.Errorf("layer %s: %w", desc.Digest, err)
	}
	if int64(len(b)) != desc.Size {
		return nil, fmt.Errorf("layer %s: %d bytes where its descriptor says %d", desc.Digest, len(b), desc.Size)
	}
	return b, nil
}

// referrerBundle is a Sigstore bundle attached to the image as a referrer.
type referrerBundle struct {
	manifest v1.Hash
	bundle   []byte
}

// wantReferrer decides from the referrers index alone whether a referrer may be a bundle of
// predicateType (any predicate when empty): registries fill artifactType and annotations
// unevenly (go-containerregistry's registry reports the config's media type), so only what
// is there and says otherwise excludes it.
func wantReferrer(d v1.Descriptor, predicateType string) bool {
	switch d.ArtifactType {
	case "", BundleMediaType, emptyConfigMediaType:
	default:
		return false
	}
	if p, ok := d.Annotations[bundlePredicateAnnotation]; ok && predicateType != "" && p != predicateType {
		return false
	}
	return d.MediaType == "" || d.MediaType == types.OCIManifestSchema1
}

// readReferrerBundles reads the bundles attached to image (through the referrers API, or the
// referrers tag when the registry has none) whose index entry may carry predicateType.
func readReferrerBundles(image name.Digest, predicateType string, opts []remote.Option) ([]referrerBundle, error) {
	idx, err := remote.Referrers(image, opts...)
	if err != nil {
		return nil, fmt.Errorf("listing the referrers of %s: %w", image, err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		return nil, fmt.Errorf("listing the referrers of %s: %w", image, err)
	}
	if len(im.Manifests) > maxReferrers {
		return nil, fmt.Errorf("%s has %d referrers, more than %d", image, len(im.Manifests), maxReferrers)
	}
	var out []referrerBundle
	for _, d := range im.Manifests {
		if !wantReferrer(d, predicateType) {
			continue
		}
		if d.Size > maxManifestBytes {
			return nil, fmt.Errorf("referrer %s of %s: a manifest of %d bytes, more than %d", d.Digest, image, d.Size, maxManifestBytes)
		}
		desc, err := remote.Get(image.Repository.Digest(d.Digest.String()), opts...)
		if err != nil {
			return nil, fmt.Errorf("referrer %s of %s: %w", d.Digest, image, err)
		}
		if len(desc.Manifest) > maxManifestBytes {
			return nil, fmt.Errorf("referrer %s of %s: a manifest of %d bytes, more than %d", d.Digest, image, len(desc.Manifest), maxManifestBytes)
		}
		m, err := v1.ParseManifest(bytes.NewReader(desc.Manifest))
		if err != nil {
			return nil, fmt.Errorf("referrer %s of %s: %w", d.Digest, image, err)
		}
		if len(m.Layers) != 1 || m.Layers[0].MediaType != BundleMediaType {
			continue // not a Sigstore bundle
		}
		b, err := readBlob(image.Repository, m.Layers[0], opts)
		if err != nil {
			return nil, fmt.Errorf("referrer %s of %s: %w", d.Digest, image, err)
		}
		out = append(out, referrerBundle{manifest: d.Digest, bundle: b})
	}
	return out, nil
}

// artifact is an OCI 1.1 artifact manifest pushed as it is (go-containerregistry's mutate
// would write a full image config where an artifact has the empty one).
type artifact struct{ raw []byte }

func (a artifact) RawManifest() ([]byte, error)        { return a.raw, nil }
func (a artifact) MediaType() (types.MediaType, error) { return types.OCIManifestSchema1, nil }

// writeReferrer attaches bundle to subject as an artifact of type BundleMediaType, as cosign
// v3 does. remote.Put maintains the referrers tag when the registry has no referrers API.
func writeReferrer(image name.Digest, subject v1.Descriptor, bundle []byte, annotations map[string]string, opts []remote.Option) error {
	repo := image.Repository
	layer, err := blobLayer(repo, bundle, BundleMediaType, opts)
	if err != nil {
		return err
	}
	config, err := blobLayer(repo, emptyConfig, emptyConfigMediaType, opts)
	if err != nil {
		return err
	}
	m := v1.Manifest{
		SchemaVersion: 2,
		MediaType:     types.OCIManifestSchema1,
		ArtifactType:  BundleMediaType,
		Config:        config,
		Layers:        []v1.Descriptor{layer},
		Subject:       &v1.Descriptor{MediaType: subject.MediaType, Digest: subject.Digest, Size: subject.Size},
		Annotations:   annotations,
	}
	raw, err := json.Marshal(m)
	if err != nil {
		return err
	}
	h, _, err := v1.SHA256(bytes.NewReader(raw))
	if err != nil {
		return err
	}
	if err := remote.Put(repo.Digest(h.String()), artifact{raw: raw}, opts...); err != nil {
		return fmt.Errorf("attaching a bundle to %s: %w", image, err)
	}
	return nil
}

// blobLayer uploads b and returns its descriptor.
func blobLayer(repo name.Repository, b []byte, mt types.MediaType, opts []remote.Option) (v1.Descriptor, error) {
	h, n, err := v1.SHA256(bytes.NewReader(b))
	if err != nil {
		return v1.Descriptor{}, err
	}
	if err := remote.WriteLayer(repo, static.NewLayer(b, mt), opts...); err != nil {
		return v1.Descriptor{}, fmt.Errorf("uploading to %s: %w", repo, err)
	}
	return v1.Descriptor{MediaType: mt, Digest: h, Size: n}, nil
}

func isNotFound(err error) bool {
	var terr *transport.Error
	return errors.As(err, &terr) && terr.StatusCode == http.StatusNotFound
}
