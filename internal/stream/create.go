package stream

// Steps 2 and 3 of a pass: abort superseded pending payloads, and create a payload for a
// changed component set.

import (
	"context"
	"errors"
	"fmt"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/jobcontract"
)

// abortSuperseded marks pending payloads older than the newest as aborted and stops their
// builds. The payload controller then fails them (and reports it).
func (s *streamSync) abortSuperseded(ctx context.Context) {
	for _, p := range ToAbort(s.payloads) {
		reason := fmt.Sprintf("superseded by %s before its image was built", s.payloads[0].Name)
		patch := client.MergeFrom(p.DeepCopy())
		metav1.SetMetaDataAnnotation(&p.ObjectMeta, v1alpha1.AnnotationAborted, reason)
		if err := s.r.Patch(ctx, p, patch); err != nil {
			s.fail(p, v1alpha1.ReasonReconcileFailed, "Abort", "aborting "+p.Name, err)
			continue
		}
		if remote, err := s.deleteRemoteBuild(ctx, p); remote {
			if err != nil {
				s.fail(p, v1alpha1.ReasonReconcileFailed, "Abort", "stopping the build of "+p.Name+" on its creation cluster", err)
			}
			continue
		}
		background := metav1.DeletePropagationBackground
		job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: jobcontract.CreationJobName(p.Name)}}
		if err := s.r.Delete(ctx, job, &client.DeleteOptions{PropagationPolicy: &background}); client.IgnoreNotFound(err) != nil {
			s.fail(p, v1alpha1.ReasonReconcileFailed, "Abort", "stopping the build of "+p.Name, err)
		}
	}
}

func (s *streamSync) createPayload(ctx context.Context, pinned []v1alpha1.PinnedComponent) {
	hash := ComponentsHash(pinned)
	s.pass.ComponentsHash = hash
	decision := DecideCreate(&s.stream.Spec, hash, s.payloads, s.now)
	s.pass.Decision = &decision
	s.requeue(decision.RequeueAfter)
	if decision.Blocked {
		// The spec stops every creation until it is changed: a stall, not retried.
		s.stall(s.stream, decision.Reason, "Create", "deciding the next payload", errors.New(decision.Message))
		return
	}
	if !decision.Create {
		return
	}
	tag := ReleaseTag(s.stream.Spec.TagPrefix, s.now)
	if s.stream.Spec.MirrorRepository != "" {
		mirrored, err := s.mirror(ctx, tag, pinned)
		if err != nil {
			s.fail(s.stream, v1alpha1.ReasonMirrorFailed, "Mirror", "mirroring the components of "+tag, err)
			return
		}
		pinned = mirrored
	}
	var templates *v1alpha1.VerificationTemplates
	if verifications := PerPlatform(s.stream.Spec.Verification); len(verifications) > 0 {
		cm, ref, err := VerificationTemplates(s.stream, verifications)
		if err == nil {
			err = s.ensureTemplates(ctx, cm, ref)
		}
		if err != nil {
			s.fail(s.stream, v1alpha1.ReasonReconcileFailed, "Create", "keeping the verification templates of "+tag, err)
			return
		}
		templates = ref
	}
	p := NewPayload(s.stream, tag, hash, pinned, templates)
	if err := s.r.Create(ctx, p); err != nil {
		if apierrors.IsAlreadyExists(err) {
			s.requeue(time.Second) // created in this very second already: the next tag comes with the next second
			return
		}
		s.fail(s.stream, v1alpha1.ReasonReconcileFailed, "Create", "creating payload "+tag, err)
		return
	}
	s.pass.Created = tag
	s.r.report.Eventf(ctx, s.stream, p, v1alpha1.EventPayloadCreated, "Create", "created payload %s of %d components", tag, len(pinned))
	s.payloads = append([]v1alpha1.ReleasePayload{*p}, s.payloads...)
}

// mirror copies every component to the mirror repository and returns them pinned there.
func (s *streamSync) mirror(ctx context.Context, tag string, pinned []v1alpha1.PinnedComponent) ([]v1alpha1.PinnedComponent, error) {
	mirrored := make([]v1alpha1.PinnedComponent, 0, len(pinned))
	for _, c := range pinned {
		dst := fmt.Sprintf("%s:%s-%s", s.stream.Spec.MirrorRepository, tag, c.Name)
		ref, err := s.r.Registry.Copy(ctx, c.Image, dst)
		if err != nil {
			return nil, fmt.Errorf("mirroring component %s: %w", c.Name, err)
		}
		mirrored = append(mirrored, v1alpha1.PinnedComponent{Name: c.Name, Image: ref, Source: c.Source})
	}
	return mirrored, nil
}
