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
	"k8s.io/utils/clock"
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
	// Created is the release's creation time; zero means Clock's now. It is kept to the second.
	Created time.Time
	// Clock tells the time when Created is zero; nil is the real clock.
	Clock clock.PassiveClock
	// Platforms, when set, makes the payload an OCI image index with one payload image per
	// platform (os/arch[/variant]), each pinning that platform's image of every component.
	// Every component must provide every platform.
	Platforms []string
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
	// Platforms are the payload image of each platform, by digest, when it was built for
	// platforms (Image is then their index).
	Platforms []PlatformImage
}

// Build reads the OCI labels of every component image, writes the payload image and pushes
// it as <Repository>:<Tag>: one image, or with Platforms an image index of one per platform.
func Build(ctx context.Context, opts BuildOptions) (BuildResult, error) {
	tagRef, err := validate(opts)
	if err != nil {
		return BuildResult{}, err
	}
	remoteOpts := append(slices.Clone(opts.Remote), remote.WithContext(ctx))

	components, err := readComponents(ctx, opts, remoteOpts)
	if err != nil {
		return BuildResult{}, err
	}
	created := opts.Created
	if created.IsZero() {
		clk := opts.Clock
		if clk == nil {
			clk = clock.RealClock{}
		}
		created = clk.Now()
	}
	created = created.UTC().Truncate(time.Second)
	previous := opts.Previous
	if previous == nil {
		previous = []string{}
	}
	meta := ReleaseMetadata{Kind: KindReleaseMetadata, APIVersion: APIVersion, Version: opts.Tag, Stream: opts.Stream,
		Previous: previous, Metadata: opts.Metadata, Created: created}
	if len(opts.Platforms) > 0 {
		return buildIndex(ctx, opts, tagRef, components, meta, remoteOpts)
	}
	refs := make([]ComponentReference, len(components))
	for i, c := range components {
		refs[i] = c.ref
	}
	var base v1.Image
	if opts.BaseComponent != "" {
		if base, err = baseImage(ctx, opts, "", remoteOpts); err != nil {
			return BuildResult{}, err
		}
	}
	img, err := payloadImage(ImageReferences{Kind: KindImageReferences, APIVersion: APIVersion, Tag: opts.Tag, Components: refs}, meta, base)
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
	for i, p := range opts.Platforms {
		if _, err := ParsePlatform(p); err != nil {
			return name.Tag{}, err
		}
		if slices.Contains(opts.Platforms[:i], p) {
			return name.Tag{}, fmt.Errorf("platform %s is listed twice", p)
		}
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

// buildIndex builds and pushes the image index of a payload for platforms: one payload image
// per platform, each pinning the platform's image of every component.
func buildIndex(ctx context.Context, opts BuildOptions, tagRef name.Tag, components []component, meta ReleaseMetadata, remoteOpts []remote.Option) (BuildResult, error) {
	entries := make([]IndexEntry, 0, len(opts.Platforms))
	platforms := make([]PlatformImage, 0, len(opts.Platforms))
	for _, platform := range opts.Platforms {
		pl, err := ParsePlatform(platform)
		if err != nil {
			return BuildResult{}, err
		}
		refs := make([]ComponentReference, len(components))
		for i, c := range components {
			im, _ := PickPlatform(c.images, platform) // readComponents checked it is there
			refs[i] = c.ref
			refs[i].Image = c.repository + "@" + im.Digest.String()
		}
		var base v1.Image
		if opts.BaseComponent != "" {
			if base, err = baseImage(ctx, opts, platform, remoteOpts); err != nil {
				return BuildResult{}, err
			}
		}
		platformMeta := meta
		platformMeta.Platform = platform
		img, err := platformPayloadImage(ImageReferences{Kind: KindImageReferences, APIVersion: APIVersion, Tag: opts.Tag, Components: refs}, platformMeta, base, pl)
		if err != nil {
			return BuildResult{}, err
		}
		digest, err := img.Digest()
		if err != nil {
			return BuildResult{}, err
		}
		entries = append(entries, IndexEntry{Platform: pl, Image: img})
		platforms = append(platforms, PlatformImage{Platform: platform, Digest: digest})
	}
	index := NewPlatformIndex(entries...)
	digest, err := index.Digest()
	if err != nil {
		return BuildResult{}, err
	}
	if err := remote.WriteIndex(tagRef, index, remoteOpts...); err != nil {
		return BuildResult{}, fmt.Errorf("pushing the payload image index %s: %w", tagRef, unreachable(err, tagRef.RegistryStr()))
	}
	progressf(opts.Progress, "pushed %s (%d components, platforms %s)\n", tagRef, len(components), strings.Join(opts.Platforms, ", "))
	return BuildResult{Image: tagRef.Context().Digest(digest.String()).String(), Digest: digest.String(), Platforms: platforms}, nil
}

// component is what a build read of one component image.
type component struct {
	ref ComponentReference
	// repository is the image's repository, to pin its platforms' images by digest.
	repository string
	// images are its platforms' images; platform is a single image's own ("" for an index).
	images   []PlatformImage
	platform string
}

// readComponents reads every component image's labels and platforms, fetchConcurrency at a
// time, and returns them sorted by name. The first component that cannot be read stops the
// others. Without opts.Platforms, single-platform components must share one platform; with
// it, every component must provide every platform.
func readComponents(ctx context.Context, opts BuildOptions, remoteOpts []remote.Option) ([]component, error) {
	// One puller shares registry pings and tokens between the components.
	puller, err := remote.NewPuller(remoteOpts...)
	if err != nil {
		return nil, err
	}
	components := make([]component, len(opts.Components))
	var mu sync.Mutex
	done := 0
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(fetchConcurrency)
	for i, c := range opts.Components {
		g.Go(func() error {
			read, err := readComponent(gctx, puller, c.Image)
			if err != nil {
				return fmt.Errorf("component %q (%s): %w", c.Name, c.Image, err)
			}
			read.ref.Name = c.Name
			components[i] = read
			mu.Lock()
			done++
			if done%progressEvery == 0 || done == len(components) {
				progressf(opts.Progress, "read %d/%d component images\n", done, len(components))
			}
			mu.Unlock()
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	if len(opts.Platforms) == 0 {
		platforms := make([]string, len(components))
		for i, c := range components {
			platforms[i] = c.platform
		}
		if err := samePlatform(opts.Components, platforms); err != nil {
			return nil, err
		}
	} else if err := everyPlatform(components, opts.Platforms); err != nil {
		return nil, err
	}
	slices.SortFunc(components, func(a, b component) int { return strings.Compare(a.ref.Name, b.ref.Name) })
	return components, nil
}

// everyPlatform refuses a payload for platforms when a component lacks one of them, naming
// each such component with what it lacks and what it has.
func everyPlatform(components []component, platforms []string) error {
	var lacking []string
	for _, c := range components {
		if missing := MissingPlatforms(c.images, platforms); len(missing) > 0 {
			lacking = append(lacking, fmt.Sprintf("%s lacks %s (it has %s)", c.ref.Name, strings.Join(missing, ", "), orNone(PlatformNames(c.images))))
		}
	}
	if len(lacking) == 0 {
		return nil
	}
	slices.Sort(lacking)
	const listed = 5
	more := ""
	if len(lacking) > listed {
		more = fmt.Sprintf(" and %d more", len(lacking)-listed)
		lacking = lacking[:listed]
	}
	return fmt.Errorf("components miss platforms of the payload: %s%s", strings.Join(lacking, "; "), more)
}

func orNone(names []string) string {
	if len(names) == 0 {
		return "no platform"
	}
	return strings.Join(names, ", ")
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

// readComponent reads the configuration labels and the platforms of the image pullSpec. Of
// an index, the labels are those of the first image it lists (its platforms are builds of
// the same source).
func readComponent(ctx context.Context, puller *remote.Puller, pullSpec string) (component, error) {
	ref, err := name.NewDigest(pullSpec)
	if err != nil {
		return component{}, err
	}
	desc, err := puller.Get(ctx, ref)
	if err != nil {
		return component{}, explainRead(err, ref.RegistryStr())
	}
	c := component{ref: ComponentReference{Image: pullSpec}, repository: ref.Context().String()}
	var img v1.Image
	if desc.MediaType.IsIndex() {
		if c.images, err = ImagesByPlatform(desc); err != nil {
			return component{}, err
		}
		index, err := desc.ImageIndex()
		if err != nil {
			return component{}, err
		}
		manifest, err := index.IndexManifest()
		if err != nil {
			return component{}, err
		}
		i := slices.IndexFunc(manifest.Manifests, func(d v1.Descriptor) bool { return d.MediaType.IsImage() })
		if i < 0 {
			return component{}, errors.New("the index lists no image")
		}
		if img, err = index.Image(manifest.Manifests[i].Digest); err != nil {
			return component{}, err
		}
	} else if img, err = desc.Image(); err != nil {
		return component{}, err
	}
	config, err := img.ConfigFile()
	if err != nil {
		return component{}, fmt.Errorf("reading the image configuration: %w", err)
	}
	c.ref.Source, c.ref.Revision = config.Config.Labels[LabelSource], config.Config.Labels[LabelRevision]
	if !desc.MediaType.IsIndex() {
		c.platform = configPlatform(config)
		c.images = []PlatformImage{{Platform: c.platform, Digest: desc.Digest}}
	}
	return c, nil
}

// payloadImage is the single-layer image holding the two files. Data only, it still needs a
// platform (the OCI image spec asks for one): linux/amd64.
func payloadImage(refs ImageReferences, meta ReleaseMetadata, base v1.Image) (v1.Image, error) {
	return platformPayloadImage(refs, meta, base, v1.Platform{OS: "linux", Architecture: "amd64"})
}

// platformPayloadImage is the payload image of one platform: on the base component's image
// of that platform, or the two files alone with that platform in the configuration.
func platformPayloadImage(refs ImageReferences, meta ReleaseMetadata, base v1.Image, platform v1.Platform) (v1.Image, error) {
	layerData, err := layerTar(refs, meta)
	if err != nil {
		return nil, err
	}
	labels := map[string]string{LabelRelease: refs.Tag, LabelStream: meta.Stream}
	if base != nil {
		return onBase(base, layerData, meta.Created, labels)
	}
	return SingleLayerImage(layerData, SingleLayerConfig{
		Created: meta.Created, CreatedBy: "release-controller payload build", OS: platform.OS, Architecture: platform.Architecture,
		Variant: platform.Variant, Labels: labels,
	})
}

// baseImage reads the image of the base component; of an index, the image of platform, or
// without one the linux/amd64 image, else the first it lists.
func baseImage(ctx context.Context, opts BuildOptions, platform string, remoteOpts []remote.Option) (v1.Image, error) {
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
	if platform != "" {
		images, err := ImagesByPlatform(desc)
		if err != nil {
			return nil, err
		}
		im, ok := PickPlatform(images, platform)
		if !ok {
			return nil, fmt.Errorf("base component %q (%s) has no image of %s", opts.BaseComponent, pullSpec, platform)
		}
		return index.Image(im.Digest)
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
	Created                   time.Time
	CreatedBy                 string
	OS, Architecture, Variant string
	Labels                    map[string]string
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
	config.OS, config.Architecture, config.Variant = c.OS, c.Architecture, c.Variant
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
