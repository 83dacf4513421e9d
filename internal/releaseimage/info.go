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
}

// Info reads the payload image pullSpec (by tag or digest).
func Info(ctx context.Context, pullSpec string, remoteOptions ...remote.Option) (*PayloadInfo, error) {
	ref, err := name.ParseReference(pullSpec)
	if err != nil {
		return nil, fmt.Errorf("parsing image reference %q: %w", pullSpec, err)
	}
	opts := append(slices.Clone(remoteOptions), remote.WithContext(ctx))
	img, err := remote.Image(ref, opts...)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", pullSpec, explainRead(err, ref.Context().RegistryStr()))
	}
	return Inspect(img, pullSpec, ref.Context())
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
