package releaseimage

import (
	"fmt"
	"slices"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// IndexEntry is one image of an image index, with the platform the index says it is for.
type IndexEntry struct {
	Platform v1.Platform
	Image    v1.Image
}

// NewPlatformIndex is an OCI image index of entries, in their order.
func NewPlatformIndex(entries ...IndexEntry) v1.ImageIndex {
	adds := make([]mutate.IndexAddendum, len(entries))
	for i, e := range entries {
		platform := e.Platform
		adds[i] = mutate.IndexAddendum{Add: e.Image, Descriptor: v1.Descriptor{Platform: &platform}}
	}
	return mutate.AppendManifests(mutate.IndexMediaType(empty.Index, types.OCIImageIndex), adds...)
}

// PlatformImage is one platform's image of a component or a payload.
type PlatformImage struct {
	// Platform is os/arch or os/arch/variant.
	Platform string
	Digest   v1.Hash
}

// PlatformString writes p as os/arch or os/arch/variant (the OS version, a Windows matter,
// is left out).
func PlatformString(p v1.Platform) string {
	s := p.OS + "/" + p.Architecture
	if p.Variant != "" {
		s += "/" + p.Variant
	}
	return s
}

// ParsePlatform reads os/arch or os/arch/variant.
func ParsePlatform(s string) (v1.Platform, error) {
	parts := strings.Split(s, "/")
	if len(parts) < 2 || len(parts) > 3 || slices.Contains(parts, "") {
		return v1.Platform{}, fmt.Errorf("platform %q is not os/arch or os/arch/variant", s)
	}
	p := v1.Platform{OS: parts[0], Architecture: parts[1]}
	if len(parts) == 3 {
		p.Variant = parts[2]
	}
	return p, nil
}

// ImagesByPlatform lists the platforms an image provides, in its order: each image manifest
// of an index that names a platform, or a single image's own platform (from its
// configuration).
func ImagesByPlatform(desc *remote.Descriptor) ([]PlatformImage, error) {
	if !desc.MediaType.IsIndex() {
		img, err := desc.Image()
		if err != nil {
			return nil, err
		}
		config, err := img.ConfigFile()
		if err != nil {
			return nil, fmt.Errorf("reading the image configuration: %w", err)
		}
		return []PlatformImage{{Platform: configPlatform(config), Digest: desc.Digest}}, nil
	}
	index, err := desc.ImageIndex()
	if err != nil {
		return nil, err
	}
	manifest, err := index.IndexManifest()
	if err != nil {
		return nil, err
	}
	var out []PlatformImage
	for _, d := range manifest.Manifests {
		if d.MediaType.IsImage() && d.Platform != nil && d.Platform.OS != "unknown" {
			out = append(out, PlatformImage{Platform: PlatformString(*d.Platform), Digest: d.Digest})
		}
	}
	return out, nil
}

// PickPlatform returns the image of platform among images: the same os/arch/variant, or, for a
// platform given without a variant, the only image of its os/arch (linux/arm64 matches an
// index's linux/arm64/v8).
func PickPlatform(images []PlatformImage, platform string) (PlatformImage, bool) {
	for _, im := range images {
		if im.Platform == platform {
			return im, true
		}
	}
	if strings.Count(platform, "/") != 1 {
		return PlatformImage{}, false
	}
	var found []PlatformImage
	for _, im := range images {
		if strings.HasPrefix(im.Platform, platform+"/") {
			found = append(found, im)
		}
	}
	if len(found) != 1 {
		return PlatformImage{}, false
	}
	return found[0], true
}

// MissingPlatforms lists the platforms of want that images do not provide, in want's order.
func MissingPlatforms(images []PlatformImage, want []string) []string {
	var missing []string
	for _, p := range want {
		if _, ok := PickPlatform(images, p); !ok {
			missing = append(missing, p)
		}
	}
	return missing
}

// PlatformNames lists the platforms of images, for messages.
func PlatformNames(images []PlatformImage) []string {
	names := make([]string, len(images))
	for i, im := range images {
		names[i] = im.Platform
	}
	return names
}

// configPlatform is the platform an image configuration names ("" for none).
func configPlatform(config *v1.ConfigFile) string {
	p := config.Platform()
	if p == nil {
		return ""
	}
	return PlatformString(*p)
}
