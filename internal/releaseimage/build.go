package releaseimage

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"golang.org/x/sync/errgroup"
)

// fetchConcurrency bounds how many component images are read at once.
const fetchConcurrency = 16

// progressEvery is how many components are read between two progress lines.
const progressEvery = 50

// layerTime is the modification time of every layer entry: the content, not the clock,
// decides the layer digest.
var layerTime = time.Unix(0, 0).UTC()

// Component is one component of a payload to build.
type Component struct {
	Name string
	// Image is the component's pull spec by digest.
	Image string
}

// BuildOptions describe a payload image.
type BuildOptions struct {
	// Tag is the release tag; the image is pushed as <Repository>:<Tag>.
	Tag    string
	Stream string
	// Repository receives the image; no tag or digest.
	Repository string
	Components []Component
	// Previous are earlier accepted releases, newest first.
	Previous []string
	Metadata map[string]string
	// Created is the release's creation time; zero means now. It is kept to the second.
	Created time.Time
	// BaseComponent, when set, names the component whose image the payload is built on: its
	// layers and configuration come first, the release manifests on top.
	BaseComponent string
	// Remote options (transport, credentials) for every registry call.
	Remote []remote.Option
	// Progress, when set, receives a line every progressEvery components read and when done.
	Progress io.Writer
}

// BuildResult is the pushed payload image.
type BuildResult struct {
	// Image is the payload's pull spec by digest: <Repository>@sha256:...
	Image string
	// Digest is the image's manifest digest.
	Digest string
}

// Build reads the OCI labels of every component image, writes the payload image and pushes
// it as <Repository>:<Tag>.
func Build(ctx context.Context, opts BuildOptions) (BuildResult, error) {
	tagRef, err := validate(opts)
	if err != nil {
		return BuildResult{}, err
	}
	remoteOpts := append(slices.Clone(opts.Remote), remote.WithContext(ctx))

	refs, err := readComponents(ctx, opts, remoteOpts)
	if err != nil {
		return BuildResult{}, err
	}
	created := opts.Created
	if created.IsZero() {
		created = time.Now()
	}
	created = created.UTC().Truncate(time.Second)
	previous := opts.Previous
	if previous == nil {
		previous = []string{}
	}
	var base v1.Image
	if opts.BaseComponent != "" {
		if base, err = baseImage(ctx, opts, remoteOpts); err != nil {
			return BuildResult{}, err
		}
	}
	img, err := payloadImage(
		ImageReferences{Kind: KindImageReferences, APIVersion: APIVersion, Tag: opts.Tag, Components: refs},
		ReleaseMetadata{Kind: KindReleaseMetadata, APIVersion: APIVersion, Version: opts.Tag, Stream: opts.Stream,
			Previous: previous, Metadata: opts.Metadata, Created: created},
		base,
	)
	if err != nil {
		return BuildResult{}, err
	}
	digest, err := img.Digest()
	if err != nil {
		return BuildResult{}, err
	}
	if err := remote.Write(tagRef, img, remoteOpts...); err != nil {
		return BuildResult{}, fmt.Errorf("pushing the payload image %s: %w", tagRef, unreachable(err, tagRef.RegistryStr()))
	}
	progressf(opts.Progress, "pushed %s (%d components)\n", tagRef, len(refs))
	return BuildResult{Image: tagRef.Context().Digest(digest.String()).String(), Digest: digest.String()}, nil
}

// validate checks the options and returns the reference the payload is pushed to.
func validate(opts BuildOptions) (name.Tag, error) {
	if opts.Tag == "" {
		return name.Tag{}, errors.New("a payload needs a tag")
	}
	if opts.Repository == "" {
		return name.Tag{}, errors.New("a payload needs a repository")
	}
	repo, err := name.NewRepository(opts.Repository)
	if err != nil {
		return name.Tag{}, fmt.Errorf("payload repository %q (give it without a tag or digest): %w", opts.Repository, err)
	}
	tagRef, err := name.NewTag(repo.String() + ":" + opts.Tag)
	if err != nil {
		return name.Tag{}, fmt.Errorf("payload tag %q: %w", opts.Tag, err)
	}
	if len(opts.Components) == 0 {
		return name.Tag{}, errors.New("a payload needs at least one component")
	}
	if opts.BaseComponent != "" && !slices.ContainsFunc(opts.Components, func(c Component) bool { return c.Name == opts.BaseComponent }) {
		return name.Tag{}, fmt.Errorf("the base component %q is not a component of the payload", opts.BaseComponent)
	}
	seen := make(map[string]bool, len(opts.Components))
	for _, c := range opts.Components {
		if c.Name == "" {
			return name.Tag{}, fmt.Errorf("component with image %q has no name", c.Image)
		}
		if seen[c.Name] {
			return name.Tag{}, fmt.Errorf("component %q is listed twice", c.Name)
		}
		seen[c.Name] = true
		if _, err := name.NewDigest(c.Image); err != nil {
			return name.Tag{}, fmt.Errorf("component %q: image %q is not a pull spec by digest: %w", c.Name, c.Image, err)
		}
	}
	return tagRef, nil
}

// readComponents reads every component image's labels, fetchConcurrency at a time, and
// returns the references sorted by name. The first component that cannot be read stops the
// others.
func readComponents(ctx context.Context, opts BuildOptions, remoteOpts []remote.Option) ([]ComponentReference, error) {
	// One puller shares registry pings and tokens between the components.
	puller, err := remote.NewPuller(remoteOpts...)
	if err != nil {
		return nil, err
	}
	refs := make([]ComponentReference, len(opts.Components))
	platforms := make([]string, len(opts.Components))
	var mu sync.Mutex
	done := 0
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(fetchConcurrency)
	for i, c := range opts.Components {
		g.Go(func() error {
			labels, platform, err := componentLabels(gctx, puller, c.Image)
			if err != nil {
				return fmt.Errorf("component %q (%s): %w", c.Name, c.Image, err)
			}
			platforms[i] = platform
			refs[i] = ComponentReference{Name: c.Name, Image: c.Image, Source: labels[LabelSource], Revision: labels[LabelRevision]}
			mu.Lock()
			done++
			if done%progressEvery == 0 || done == len(refs) {
				progressf(opts.Progress, "read %d/%d component images\n", done, len(refs))
			}
			mu.Unlock()
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	if err := samePlatform(opts.Components, platforms); err != nil {
		return nil, err
	}
	slices.SortFunc(refs, func(a, b ComponentReference) int { return strings.Compare(a.Name, b.Name) })
	return refs, nil
}

// samePlatform refuses a payload whose single-platform components were built for different
// platforms: such a release cannot run anywhere. platforms[i] is "" for multi-platform indexes.
func samePlatform(components []Component, platforms []string) error {
	byPlatform := map[string][]string{}
	for i, p := range platforms {
		if p != "" {
			byPlatform[p] = append(byPlatform[p], components[i].Name)
		}
	}
	if len(byPlatform) <= 1 {
		return nil
	}
	var parts []string
	for p, names := range byPlatform {
		slices.Sort(names)
		parts = append(parts, fmt.Sprintf("%s: %s", p, strings.Join(names, ", ")))
	}
	slices.Sort(parts)
	return fmt.Errorf("the components mix platforms (%s); every component must be built for the same platform", strings.Join(parts, "; "))
}

// componentLabels returns the configuration labels and the platform ("os/arch") of the image
// pullSpec. For an index, the first image it lists is read (its platforms are builds of the
// same source) and the platform is "".
func componentLabels(ctx context.Context, puller *remote.Puller, pullSpec string) (map[string]string, string, error) {
	ref, err := name.NewDigest(pullSpec)
	if err != nil {
		return nil, "", err
	}
	desc, err := puller.Get(ctx, ref)
	if err != nil {
		return nil, "", explainRead(err, ref.RegistryStr())
	}
	var img v1.Image
	if desc.MediaType.IsIndex() {
		index, err := desc.ImageIndex()
		if err != nil {
			return nil, "", err
		}
		manifest, err := index.IndexManifest()
		if err != nil {
			return nil, "", err
		}
		i := slices.IndexFunc(manifest.Manifests, func(d v1.Descriptor) bool { return d.MediaType.IsImage() })
		if i < 0 {
			return nil, "", errors.New("the index lists no image")
		}
		if img, err = index.Image(manifest.Manifests[i].Digest); err != nil {
			return nil, "", err
		}
		config, err := img.ConfigFile()
		if err != nil {
			return nil, "", fmt.Errorf("reading the image configuration: %w", err)
		}
		return config.Config.Labels, "", nil
	}
	if img, err = desc.Image(); err != nil {
		return nil, "", err
	}
	config, err := img.ConfigFile()
	if err != nil {
		return nil, "", fmt.Errorf("reading the image configuration: %w", err)
	}
	return config.Config.Labels, config.OS + "/" + config.Architecture, nil
}

// payloadImage is the single-layer image holding the two files.
func payloadImage(refs ImageReferences, meta ReleaseMetadata, base v1.Image) (v1.Image, error) {
	layerData, err := layerTar(refs, meta)
	if err != nil {
		return nil, err
	}
	labels := map[string]string{LabelRelease: refs.Tag, LabelStream: meta.Stream}
	if base != nil {
		return onBase(base, layerData, meta.Created, labels)
	}
	// The image holds data only; the OCI image spec still asks for a platform.
	return SingleLayerImage(layerData, SingleLayerConfig{
		Created: meta.Created, CreatedBy: "release-controller payload build", OS: "linux", Architecture: "amd64",
		Labels: labels,
	})
}

// baseImage reads the image of the base component; of an index, the linux/amd64 image, else
// the first it lists.
func baseImage(ctx context.Context, opts BuildOptions, remoteOpts []remote.Option) (v1.Image, error) {
	i := slices.IndexFunc(opts.Components, func(c Component) bool { return c.Name == opts.BaseComponent })
	pullSpec := opts.Components[i].Image
	ref, err := name.NewDigest(pullSpec)
	if err != nil {
		return nil, err
	}
	desc, err := remote.Get(ref, append(slices.Clone(remoteOpts), remote.WithContext(ctx))...)
	if err != nil {
		return nil, fmt.Errorf("base component %q (%s): %w", opts.BaseComponent, pullSpec, explainRead(err, ref.RegistryStr()))
	}
	if !desc.MediaType.IsIndex() {
		return desc.Image()
	}
	index, err := desc.ImageIndex()
	if err != nil {
		return nil, err
	}
	manifest, err := index.IndexManifest()
	if err != nil {
		return nil, err
	}
	pick := slices.IndexFunc(manifest.Manifests, func(d v1.Descriptor) bool {
		return d.MediaType.IsImage() && d.Platform != nil && d.Platform.OS == "linux" && d.Platform.Architecture == "amd64"
	})
	if pick < 0 {
		pick = slices.IndexFunc(manifest.Manifests, func(d v1.Descriptor) bool { return d.MediaType.IsImage() })
	}
	if pick < 0 {
		return nil, fmt.Errorf("base component %q (%s): the index lists no image", opts.BaseComponent, pullSpec)
	}
	return index.Image(manifest.Manifests[pick].Digest)
}

// onBase puts the release manifests layer on top of base and keeps base's configuration
// (entrypoint, user, environment, platform), with the payload's labels added to its own.
func onBase(base v1.Image, layerData []byte, created time.Time, labels map[string]string) (v1.Image, error) {
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerData)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, err
	}
	img, err := mutate.Append(mutate.ConfigMediaType(mutate.MediaType(base, types.OCIManifestSchema1), types.OCIConfigJSON), mutate.Addendum{
		Layer:     layer,
		MediaType: types.OCILayer,
		History:   v1.History{Created: v1.Time{Time: created}, CreatedBy: "release-controller payload build"},
	})
	if err != nil {
		return nil, err
	}
	config, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	config = config.DeepCopy()
	config.Created = v1.Time{Time: created}
	merged := maps.Clone(config.Config.Labels)
	if merged == nil {
		merged = map[string]string{}
	}
	maps.Copy(merged, labels)
	config.Config.Labels = merged
	return mutate.ConfigFile(img, config)
}

// SingleLayerConfig describes the configuration of a SingleLayerImage.
type SingleLayerConfig struct {
	Created          time.Time
	CreatedBy        string
	OS, Architecture string
	Labels           map[string]string
}

// SingleLayerImage is an OCI image of one uncompressed tar layer (gzipped when pushed) with
// the given configuration. The same inputs give the same digest.
func SingleLayerImage(layerTar []byte, c SingleLayerConfig) (v1.Image, error) {
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, err
	}
	base := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	img, err := mutate.Append(base, mutate.Addendum{
		Layer:     layer,
		MediaType: types.OCILayer,
		History:   v1.History{Created: v1.Time{Time: c.Created}, CreatedBy: c.CreatedBy},
	})
	if err != nil {
		return nil, err
	}
	config, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	config = config.DeepCopy()
	config.Created = v1.Time{Time: c.Created}
	config.OS, config.Architecture = c.OS, c.Architecture
	config.Config.Labels = c.Labels
	return mutate.ConfigFile(img, config)
}

// layerTar writes the release-manifests folder and its two files in a fixed order, with
// fixed owners, modes and times.
func layerTar(refs ImageReferences, meta ReleaseMetadata) ([]byte, error) {
	files := []struct {
		path string
		v    any
	}{{ImageReferencesPath, refs}, {ReleaseMetadataPath, meta}}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	dir := &tar.Header{Typeflag: tar.TypeDir, Name: "release-manifests/", Mode: 0o755, ModTime: layerTime, Format: tar.FormatUSTAR}
	if err := tw.WriteHeader(dir); err != nil {
		return nil, err
	}
	for _, f := range files {
		data, err := json.MarshalIndent(f.v, "", "  ")
		if err != nil {
			return nil, fmt.Errorf("encoding %s: %w", f.path, err)
		}
		data = append(data, '\n')
		hdr := &tar.Header{Typeflag: tar.TypeReg, Name: f.path, Mode: 0o644, Size: int64(len(data)), ModTime: layerTime, Format: tar.FormatUSTAR}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, err
		}
		if _, err := tw.Write(data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// unreachable names the registry in network errors, whose usual cause is a wrong address or
// a registry that is down.
func unreachable(err error, registry string) error {
	var opErr *net.OpError
	if errors.As(err, &opErr) {
		return fmt.Errorf("registry %s is unreachable: %w", registry, err)
	}
	return err
}

// explainRead says in words what the two common failures of reading an image mean: the
// registry cannot be reached, or the image is not there.
func explainRead(err error, registry string) error {
	var terr *transport.Error
	if errors.As(err, &terr) && terr.StatusCode == http.StatusNotFound {
		return fmt.Errorf("the image does not exist: %w", err)
	}
	return unreachable(err, registry)
}

func progressf(w io.Writer, format string, args ...any) {
	if w != nil {
		fmt.Fprintf(w, format, args...)
	}
}
