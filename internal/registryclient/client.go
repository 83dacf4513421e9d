// Package registryclient is the small set of registry operations the controllers need —
// resolve a tag to a digest, copy an image, move a tag, delete a tag — over
// go-containerregistry, with the default keychain for credentials. Registries on loopback
// and private addresses are spoken to over plain HTTP, as go-containerregistry decides.
package registryclient

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"

	"github.com/release-controller/release-controller/internal/releaseimage"
)

// Client talks to registries.
type Client struct {
	options []remote.Option
}

// ResponseTimeout bounds the wait for a registry's answer, so a stalled registry cannot hold
// a reconcile forever.
const ResponseTimeout = time.Minute

// New returns a client; extra options (transport, credentials) are added to every call.
func New(options ...remote.Option) *Client {
	transport := remote.DefaultTransport.(*http.Transport).Clone()
	transport.ResponseHeaderTimeout = ResponseTimeout
	defaults := []remote.Option{remote.WithAuthFromKeychain(authn.DefaultKeychain), remote.WithTransport(transport)}
	return &Client{options: append(defaults, options...)}
}

func (c *Client) with(ctx context.Context) []remote.Option {
	return append([]remote.Option{remote.WithContext(ctx)}, c.options...)
}

// Options returns the remote options of the client for ctx, for callers that use
// go-containerregistry directly.
func (c *Client) Options(ctx context.Context) []remote.Option {
	return c.with(ctx)
}

// Resolve returns ref pinned by digest: "repository@sha256:...". A ref already pinned by
// digest is checked to exist.
func (c *Client) Resolve(ctx context.Context, ref string) (string, error) {
	r, err := name.ParseReference(ref)
	if err != nil {
		return "", fmt.Errorf("parsing image reference %q: %w", ref, err)
	}
	desc, err := remote.Head(r, c.with(ctx)...)
	if err != nil {
		return "", fmt.Errorf("resolving %s: %w", ref, err)
	}
	return r.Context().Digest(desc.Digest.String()).String(), nil
}

// ResolvePlatform returns the image of platform (os/arch[/variant]) of the image index ref,
// pinned by digest. An index that lacks the platform, or a single image, is an error naming
// what ref has.
func (c *Client) ResolvePlatform(ctx context.Context, ref, platform string) (string, error) {
	r, err := name.ParseReference(ref)
	if err != nil {
		return "", fmt.Errorf("parsing image reference %q: %w", ref, err)
	}
	desc, err := remote.Get(r, c.with(ctx)...)
	if err != nil {
		return "", fmt.Errorf("resolving %s: %w", ref, err)
	}
	images, err := releaseimage.ImagesByPlatform(desc)
	if err != nil {
		return "", fmt.Errorf("reading the platforms of %s: %w", ref, err)
	}
	if !desc.MediaType.IsIndex() {
		return "", fmt.Errorf("%s is one image (of %s), not an image index of platforms", ref, strings.Join(releaseimage.PlatformNames(images), ", "))
	}
	im, ok := releaseimage.PickPlatform(images, platform)
	if !ok {
		return "", fmt.Errorf("%s has no image of %s (it has %s)", ref, platform, strings.Join(releaseimage.PlatformNames(images), ", "))
	}
	return r.Context().Digest(im.Digest.String()).String(), nil
}

// Platforms lists the platforms the image ref provides, with their images' digests: an
// index's, or a single image's own.
func (c *Client) Platforms(ctx context.Context, ref string) ([]releaseimage.PlatformImage, error) {
	r, err := name.ParseReference(ref)
	if err != nil {
		return nil, fmt.Errorf("parsing image reference %q: %w", ref, err)
	}
	desc, err := remote.Get(r, c.with(ctx)...)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", ref, err)
	}
	images, err := releaseimage.ImagesByPlatform(desc)
	if err != nil {
		return nil, fmt.Errorf("reading the platforms of %s: %w", ref, err)
	}
	return images, nil
}

// Copy copies the image (or index) src to dst and returns dst pinned by digest.
func (c *Client) Copy(ctx context.Context, src, dst string) (string, error) {
	from, err := name.ParseReference(src)
	if err != nil {
		return "", fmt.Errorf("parsing image reference %q: %w", src, err)
	}
	to, err := name.ParseReference(dst)
	if err != nil {
		return "", fmt.Errorf("parsing image reference %q: %w", dst, err)
	}
	desc, err := remote.Get(from, c.with(ctx)...)
	if err != nil {
		return "", fmt.Errorf("reading %s: %w", src, err)
	}
	if desc.MediaType.IsIndex() {
		index, err := desc.ImageIndex()
		if err != nil {
			return "", err
		}
		if err := remote.WriteIndex(to, index, c.with(ctx)...); err != nil {
			return "", fmt.Errorf("copying %s to %s: %w", src, dst, err)
		}
	} else {
		image, err := desc.Image()
		if err != nil {
			return "", err
		}
		if err := remote.Write(to, image, c.with(ctx)...); err != nil {
			return "", fmt.Errorf("copying %s to %s: %w", src, dst, err)
		}
	}
	return to.Context().Digest(desc.Digest.String()).String(), nil
}

// Tag points repository:tag at the image src (pinned by digest, in the same repository).
func (c *Client) Tag(ctx context.Context, src, tag string) error {
	from, err := name.ParseReference(src)
	if err != nil {
		return fmt.Errorf("parsing image reference %q: %w", src, err)
	}
	desc, err := remote.Get(from, c.with(ctx)...)
	if err != nil {
		return fmt.Errorf("reading %s: %w", src, err)
	}
	if err := remote.Tag(from.Context().Tag(tag), desc, c.with(ctx)...); err != nil {
		return fmt.Errorf("tagging %s as %s: %w", src, tag, err)
	}
	return nil
}

// Delete deletes the manifest ref points at (a tag is resolved to its digest first, since
// registries delete manifests by digest).
func (c *Client) Delete(ctx context.Context, ref string) error {
	digestRef, err := c.Resolve(ctx, ref)
	if err != nil {
		return err
	}
	r, err := name.ParseReference(digestRef)
	if err != nil {
		return err
	}
	if err := remote.Delete(r, c.with(ctx)...); err != nil {
		return fmt.Errorf("deleting %s: %w", ref, err)
	}
	return nil
}

// IsNotFound reports whether err says the image or repository does not exist.
func IsNotFound(err error) bool {
	var terr *transport.Error
	if errors.As(err, &terr) {
		return terr.StatusCode == http.StatusNotFound
	}
	return false
}
