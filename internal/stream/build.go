package stream

// Step 4 of a pass: the creation Job of the newest pending payload, and its image's digest
// once built.

import (
	"context"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/buildinput"
	"github.com/release-controller/release-controller/internal/jobcontract"
	"github.com/release-controller/release-controller/internal/releaseimage"
)

// build creates the payload's creation job when it has none and its image is not built.
func (s *streamSync) build(ctx context.Context, p *v1alpha1.ReleasePayload) {
	result := p.Status.ReleaseCreationJobResult
	if result.Name != "" || result.Status == v1alpha1.CreationJobSuccess || result.Status == v1alpha1.CreationJobFailed {
		return
	}
	if _, _, remote := buildinput.ClusterOf(p); remote {
		s.buildRemote(ctx, p)
		return
	}
	jobs, err := s.jobsOf(ctx, p)
	if err != nil {
		s.fail(p, v1alpha1.ReasonReconcileFailed, "Build", "listing the jobs of "+p.Name, err)
		return
	}
	if jobs.creation > 0 {
		return
	}
	job := NewCreationJob(p, s.r.BuildImage, s.r.BuildServiceAccount)
	jobcontract.WithRegistryAuth(&job.Spec.Template.Spec, s.r.RegistryAuthSecret)
	switch err := s.r.Create(ctx, job); {
	case apierrors.IsAlreadyExists(err):
	case err != nil:
		s.fail(p, v1alpha1.ReasonReconcileFailed, "Build", "creating the build job of "+p.Name, err)
	default:
		s.r.report.Eventf(ctx, p, job, v1alpha1.EventBuildStarted, "Build", "created the creation job %s (image %s)", job.Name, s.r.BuildImage)
	}
}

// recordImage records the digest of a built payload's image in its status.
//
// This is the one write of a payload's status outside the payload controller: the payload
// controller reads only the cache and the jobs, while the digest comes from the registry, which
// the stream controller talks to already. It sets status.payloadImage once, after the creation
// job succeeded, with an optimistic lock; the payload controller's ComputeStatus carries the
// field over untouched, and its own writes are optimistically locked too, so neither loses
// the other's.
func (s *streamSync) recordImage(ctx context.Context, p *v1alpha1.ReleasePayload) {
	if p.Status.ReleaseCreationJobResult.Status != v1alpha1.CreationJobSuccess || p.Status.PayloadImage != "" {
		return
	}
	ref, err := s.r.Registry.Resolve(ctx, p.Spec.PayloadCreationConfig.Repository+":"+p.Name)
	if err != nil {
		s.fail(p, v1alpha1.ReasonReconcileFailed, "RecordImage", "resolving the image of "+p.Name, err)
		return
	}
	var platformImages []v1alpha1.PlatformImage
	if platforms := p.Spec.PayloadCreationConfig.Platforms; len(platforms) > 0 {
		images, err := s.r.Registry.Platforms(ctx, ref)
		if err != nil {
			s.fail(p, v1alpha1.ReasonReconcileFailed, "RecordImage", "reading the platforms of "+p.Name, err)
			return
		}
		if platformImages, err = PlatformImages(ref, images, platforms); err != nil {
			s.fail(p, v1alpha1.ReasonReconcileFailed, "RecordImage", "recording the image of "+p.Name, err)
			return
		}
	}
	before := p.DeepCopy()
	patch := client.MergeFromWithOptimisticLock{}
	p.Status.PayloadImage = ref
	p.Status.PlatformImages = platformImages
	if foreign := v1alpha1.ForeignChanges(v1alpha1.WriterStream, &before.Status, &p.Status); len(foreign) > 0 {
		s.fail(p, v1alpha1.ReasonReconcileFailed, "RecordImage", "recording the image of "+p.Name, fmt.Errorf("the change touches fields the stream controller does not own: %v", foreign))
		return
	}
	if err := s.r.Status().Patch(ctx, p, client.MergeFromWithOptions(before, patch)); err != nil {
		if apierrors.IsConflict(err) {
			s.requeue(time.Second) // the cache is behind the payload controller's write
			return
		}
		s.fail(p, v1alpha1.ReasonReconcileFailed, "RecordImage", "recording the image of "+p.Name, err)
	}
}

// PlatformImages pins each platform's image of the payload index ref, in the payload's order
// of platforms; a platform the index lacks is an error (the build writes every one).
func PlatformImages(ref string, images []releaseimage.PlatformImage, platforms []string) ([]v1alpha1.PlatformImage, error) {
	repo, _, _ := strings.Cut(ref, "@")
	out := make([]v1alpha1.PlatformImage, 0, len(platforms))
	for _, platform := range platforms {
		im, ok := releaseimage.PickPlatform(images, platform)
		if !ok {
			return nil, fmt.Errorf("%s has no image of %s (it has %s)", ref, platform, strings.Join(releaseimage.PlatformNames(images), ", "))
		}
		out = append(out, v1alpha1.PlatformImage{Platform: platform, Image: repo + "@" + im.Digest.String()})
	}
	return out, nil
}
