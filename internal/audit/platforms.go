package audit

import (
	"context"
	"fmt"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/releaseimage"
	"github.com/release-controller/release-controller/internal/signing"
)

// PlatformObservation is what the controller read of one platform's image of a payload built
// for platforms.
type PlatformObservation struct {
	Platform string
	// Info is the platform's payload image; nil when InfoError is set.
	Info      *releaseimage.PayloadInfo
	InfoError string
	// Components are each component's image of the platform, by name, as the component's
	// image index that the payload pinned lists it.
	Components map[string]string
}

// evaluatePlatforms runs the checks of each platform's image of a payload built for
// platforms, after the checks of its recorded index: readable, of this tag, and pinning each
// component's image of that platform. Then every pinned image must be in the registry.
func evaluatePlatforms(p *v1alpha1.ReleasePayload, obs Observation, add func(check, failure, success string) bool) {
	if !add(CheckReadable, obs.InfoError, "an image index of "+strings.Join(p.Spec.PayloadCreationConfig.Platforms, ", ")) {
		return
	}
	for _, po := range obs.Platforms {
		if !add(CheckReadable+" "+po.Platform, po.InfoError, "a valid release payload image of "+po.Platform) {
			return
		}
		if !add(CheckVersion+" "+po.Platform, versionFailure(p.Name, po.Info), "release metadata and image references are for "+p.Name) {
			return
		}
		want := make([]v1alpha1.PinnedComponent, 0, len(p.Spec.Components))
		var lacking []string
		for _, c := range p.Spec.Components {
			image, ok := po.Components[c.Name]
			if !ok {
				lacking = append(lacking, c.Name)
			}
			want = append(want, v1alpha1.PinnedComponent{Name: c.Name, Image: image})
		}
		failure := componentsFailure(want, po.Info.References.Components)
		if len(lacking) > 0 {
			failure = "the payload's component images have no image of " + po.Platform + " (or are not in the registry): " + list(lacking)
		}
		if !add(CheckComponents+" "+po.Platform, failure,
			fmt.Sprintf("%d components, each pinned by its %s image in the index the payload recorded", len(want), po.Platform)) {
			return
		}
	}
	add(CheckPresent, missingFailure(obs.Missing), "every component image of every platform is present in the registry")
}

// observePlatforms reads a payload built for platforms: its recorded image index, each
// platform's image in it, and each component's image of each platform (from the component
// index the payload pinned). A component or platform image that is not there is recorded as
// missing; failures to get an answer are returned.
func (r *Reconciler) observePlatforms(ctx context.Context, p *v1alpha1.ReleasePayload, recorded name.Digest, obs Observation) (Observation, error) {
	opts := r.Registry.Options(ctx)
	desc, err := remote.Get(recorded, opts...)
	if err != nil {
		if transient(err) {
			return obs, fmt.Errorf("reading %s: %w", recorded, err)
		}
		obs.InfoError = err.Error()
		return obs, nil
	}
	if !desc.MediaType.IsIndex() {
		obs.InfoError = fmt.Sprintf("the payload was built for platforms %s, but %s is one image, not an image index", strings.Join(p.Spec.PayloadCreationConfig.Platforms, ", "), recorded)
		return obs, nil
	}
	index, err := desc.ImageIndex()
	var images []releaseimage.PlatformImage
	if err == nil {
		images, err = releaseimage.ImagesByPlatform(desc)
	}
	if err != nil {
		// The manifest is read already: what fails is the index itself, which the audit reports.
		obs.InfoError = err.Error()
		return obs, nil //nolint:nilerr // an observation, not a failure to observe
	}
	componentImages, missing, err := r.componentPlatforms(ctx, p.Spec.Components)
	if err != nil {
		return obs, err
	}
	var pinned []releaseimage.ComponentReference
	for _, platform := range p.Spec.PayloadCreationConfig.Platforms {
		po := PlatformObservation{Platform: platform, Components: map[string]string{}}
		for name, ims := range componentImages {
			if im, ok := releaseimage.PickPlatform(ims.images, platform); ok {
				po.Components[name] = ims.repository + "@" + im.Digest.String()
			} else {
				missing[name] = "no image of " + platform
			}
		}
		if im, ok := releaseimage.PickPlatform(images, platform); !ok {
			po.InfoError = fmt.Sprintf("the image index has no image of %s (it has %s)", platform, strings.Join(releaseimage.PlatformNames(images), ", "))
		} else {
			imageRef := recorded.Context().Digest(im.Digest.String())
			img, err := index.Image(im.Digest)
			if err == nil {
				po.Info, err = releaseimage.Inspect(img, imageRef.String(), recorded.Context())
			}
			switch {
			case err != nil && transient(err):
				return obs, fmt.Errorf("reading %s: %w", imageRef, err)
			case err != nil:
				po.Info, po.InfoError = nil, err.Error()
			case po.Info.Metadata.Platform != platform:
				po.Info, po.InfoError = nil, fmt.Sprintf("%s is the index's image of %s, but its release metadata names platform %q", imageRef, platform, po.Info.Metadata.Platform)
			default:
				for _, c := range po.Info.References.Components {
					c.Name += " (" + platform + ")"
					pinned = append(pinned, c)
				}
			}
		}
		obs.Platforms = append(obs.Platforms, po)
	}
	absent, err := r.missing(ctx, pinned)
	for k, v := range absent {
		missing[k] = v
	}
	obs.Missing = missing
	return obs, err
}

// componentImage is a component's images by platform, in its repository.
type componentImage struct {
	repository string
	images     []releaseimage.PlatformImage
}

// componentPlatforms reads the platforms of every component image, a few at a time: by name,
// what each provides, and the components the registry does not have.
func (r *Reconciler) componentPlatforms(ctx context.Context, components []v1alpha1.PinnedComponent) (map[string]componentImage, map[string]string, error) {
	named := make([]namedImage, len(components))
	for i, c := range components {
		named[i] = namedImage{c.Name, c.Image}
	}
	return readEach(named, func(ref name.Digest) (componentImage, error) {
		images, err := r.Registry.Platforms(ctx, ref.String())
		return componentImage{repository: ref.Context().String(), images: images}, err
	})
}

// platformClaims are the claims of each platform's image of a payload built for platforms,
// in the order of its status: a consumer that pulls one platform checks that image's digest.
func platformClaims(p *v1alpha1.ReleasePayload, index signing.Claims) []signing.Claims {
	out := make([]signing.Claims, 0, len(p.Status.PlatformImages))
	for _, pi := range p.Status.PlatformImages {
		c := index
		if d, err := name.NewDigest(pi.Image); err == nil {
			c.ManifestDigest = d.DigestStr()
			out = append(out, c)
		}
	}
	return out
}
