package releaseimage

import (
	"archive/tar"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"path"
	"slices"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// maxFileSize bounds each file read from a payload image; a thousand components take well
// under a megabyte.
const maxFileSize = 16 << 20

// PayloadInfo is what a payload image says about its release. (The type cannot share the
// name of the function Info that returns it.)
type PayloadInfo struct {
	// Image is the payload's pull spec by digest.
	Image string `json:"image"`
	// Labels of the image configuration.
	Labels     map[string]string `json:"labels,omitempty"`
	References ImageReferences   `json:"imageReferences"`
	Metadata   ReleaseMetadata   `json:"releaseMetadata"`
	// Index is the payload's image index by digest, when it was built for platforms (Image
	// is then the image of one of them), and Platforms are the platforms it lists.
	Index     string   `json:"index,omitempty"`
	Platforms []string `json:"platforms,omitempty"`
}

// Info reads the payload image pullSpec (by tag or digest). Of a payload built for
// platforms, it reads the first platform's image.
func Info(ctx context.Context, pullSpec string, remoteOptions ...remote.Option) (*PayloadInfo, error) {
	return PlatformInfo(ctx, pullSpec, "", remoteOptions...)
}

// PlatformInfo reads the payload image pullSpec (by tag or digest) of platform: of a payload
// built for platforms, that platform's image (the first one's when platform is empty); a
// payload of one image has only its own platform.
func PlatformInfo(ctx context.Context, pullSpec, platform string, remoteOptions ...remote.Option) (*PayloadInfo, error) {
	ref, err := name.ParseReference(pullSpec)
	if err != nil {
		return nil, fmt.Errorf("parsing image reference %q: %w", pullSpec, err)
	}
	opts := append(slices.Clone(remoteOptions), remote.WithContext(ctx))
	desc, err := remote.Get(ref, opts...)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", pullSpec, explainRead(err, ref.Context().RegistryStr()))
	}
	if !desc.MediaType.IsIndex() {
		img, err := desc.Image()
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", pullSpec, err)
		}
		info, err := Inspect(img, pullSpec, ref.Context())
		if err != nil {
			return nil, err
		}
		if platform != "" && info.Metadata.Platform != "" && info.Metadata.Platform != platform {
			return nil, fmt.Errorf("%s is the payload image of %s, not %s", pullSpec, info.Metadata.Platform, platform)
		}
		return info, nil
	}
	images, err := ImagesByPlatform(desc)
	if err != nil {
		return nil, fmt.Errorf("reading the image index %s: %w", pullSpec, err)
	}
	if len(images) == 0 {
		return nil, fmt.Errorf("%s is an image index that lists no platform's image", pullSpec)
	}
	pick := images[0]
	if platform != "" {
		var ok bool
		if pick, ok = PickPlatform(images, platform); !ok {
			return nil, fmt.Errorf("%s has no image of %s (it has %s)", pullSpec, platform, strings.Join(PlatformNames(images), ", "))
		}
	}
	index, err := desc.ImageIndex()
	if err != nil {
		return nil, err
	}
	img, err := index.Image(pick.Digest)
	if err != nil {
		return nil, fmt.Errorf("reading the %s image of %s: %w", pick.Platform, pullSpec, err)
	}
	platformSpec := ref.Context().Digest(pick.Digest.String()).String()
	info, err := Inspect(img, platformSpec, ref.Context())
	if err != nil {
		return nil, err
	}
	if info.Metadata.Platform != pick.Platform {
		return nil, fmt.Errorf("%s is not a valid release payload image: its %s image's release metadata names platform %q", pullSpec, pick.Platform, info.Metadata.Platform)
	}
	info.Index = ref.Context().Digest(desc.Digest.String()).String()
	info.Platforms = PlatformNames(images)
	return info, nil
}

// Inspect reads what img, pulled as pullSpec from repo, says about its release: everything
// in it is outside input, checked before it is believed.
func Inspect(img v1.Image, pullSpec string, repo name.Repository) (*PayloadInfo, error) {
	digest, err := img.Digest()
	if err != nil {
		return nil, err
	}
	config, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("reading the configuration of %s: %w", pullSpec, err)
	}
	// The label tells a payload from any other image before its layers are downloaded.
	labels := config.Config.Labels
	if labels[LabelRelease] == "" {
		return nil, fmt.Errorf("%s is not a release payload image: its configuration has no %s label", pullSpec, LabelRelease)
	}
	info := &PayloadInfo{Image: repo.Digest(digest.String()).String(), Labels: labels}
	if err := readFiles(img, map[string]any{ImageReferencesPath: &info.References, ReleaseMetadataPath: &info.Metadata}); err != nil {
		return nil, fmt.Errorf("%s is not a release payload image: %w", pullSpec, err)
	}
	if k := info.References.Kind; k != KindImageReferences {
		return nil, fmt.Errorf("%s is not a release payload image: %s has kind %q, want %q", pullSpec, ImageReferencesPath, k, KindImageReferences)
	}
	if k := info.Metadata.Kind; k != KindReleaseMetadata {
		return nil, fmt.Errorf("%s is not a release payload image: %s has kind %q, want %q", pullSpec, ReleaseMetadataPath, k, KindReleaseMetadata)
	}
	if err := checkConsistent(info); err != nil {
		return nil, fmt.Errorf("%s is not a valid release payload image: %w", pullSpec, err)
	}
	return info, nil
}

// checkConsistent checks that the image says one thing of its release: the label, the
// references and the metadata name the same tag, and each component is named once and
// pinned by digest, as payload build writes them.
func checkConsistent(info *PayloadInfo) error {
	release := info.Labels[LabelRelease]
	if info.References.Tag != release {
		return fmt.Errorf("its label %s is %q, but %s is for %q", LabelRelease, release, ImageReferencesPath, info.References.Tag)
	}
	if info.Metadata.Version != release {
		return fmt.Errorf("its label %s is %q, but %s is for %q", LabelRelease, release, ReleaseMetadataPath, info.Metadata.Version)
	}
	seen := make(map[string]bool, len(info.References.Components))
	for i, c := range info.References.Components {
		switch {
		case c.Name == "":
			return fmt.Errorf("%s: component %d has no name", ImageReferencesPath, i+1)
		case seen[c.Name]:
			return fmt.Errorf("%s: component %q is listed twice", ImageReferencesPath, c.Name)
		}
		seen[c.Name] = true
		if _, err := name.NewDigest(c.Image); err != nil {
			return fmt.Errorf("%s: component %q: image %q is not a pull spec by digest: %w", ImageReferencesPath, c.Name, c.Image, err)
		}
	}
	return nil
}

// readFiles decodes the JSON files of the image's filesystem named in into; each must exist.
func readFiles(img v1.Image, into map[string]any) error {
	fs := mutate.Extract(img)
	defer fs.Close()
	found := map[string]bool{}
	tr := tar.NewReader(fs)
	for len(found) < len(into) {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("reading its layers: %w", err)
		}
		p := path.Clean(hdr.Name)
		v, ok := into[p]
		if !ok || found[p] || hdr.Typeflag != tar.TypeReg {
			continue
		}
		data, err := io.ReadAll(io.LimitReader(tr, maxFileSize+1))
		if err != nil {
			return fmt.Errorf("reading %s: %w", p, err)
		}
		if len(data) > maxFileSize {
			return fmt.Errorf("%s is larger than %d bytes", p, maxFileSize)
		}
		if err := json.Unmarshal(data, v); err != nil {
			return fmt.Errorf("decoding %s: %w", p, err)
		}
		found[p] = true
	}
	for _, p := range slices.Sorted(maps.Keys(into)) {
		if !found[p] {
			return fmt.Errorf("it has no %s", p)
		}
	}
	return nil
}
