package stream

// Step 1 of a pass, import: resolve the components followed by tag to digests.

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/types"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/conditions"
	"github.com/release-controller/release-controller/internal/releaseimage"
)

// importComponents resolves the components followed by tag, when their interval or backoff has
// passed, and returns every component pinned by digest; resolved is false while any is not.
// Components that begin to fail (or fail differently) are reported in one Warning Event.
func (s *streamSync) importComponents(ctx context.Context) (pinned []v1alpha1.PinnedComponent, resolved bool) {
	interval := s.r.ImportInterval
	previous := map[string]v1alpha1.ComponentStatus{}
	for _, c := range s.stream.Status.Components {
		previous[c.Name] = c
	}
	key := types.NamespacedName{Namespace: s.stream.Namespace, Name: s.stream.Name}
	// A changed spec resolves every component again. The generation last imported is kept in
	// memory (as the import times are), not taken from observedGeneration, which a failed pass
	// does not move; a process that has not imported the stream yet takes observedGeneration.
	specChanged := SpecChanged(s.stream, s.r.imports.generation(key))
	statuses := make([]v1alpha1.ComponentStatus, 0, len(s.stream.Spec.Components))
	var newErrors []string
	resolved = true
	for _, c := range s.stream.Spec.Components {
		st := previous[c.Name]
		st.Name = c.Name
		last := s.r.imports.get(key, c.Name)
		if last.IsZero() {
			// A restart or a new leader: the schedule is rebuilt from the status once and
			// remembered; rebuilt on every pass, it would place the last import just before
			// each pass and postpone the next one for ever.
			if last = LastAttempt(st, last, s.now, interval); !last.IsZero() {
				s.r.imports.set(key, c.Name, last)
			}
		}
		due, wait := ImportDue(st, last, specChanged, s.now, interval)
		if due {
			digestRef, err := s.r.Registry.Resolve(ctx, c.Image)
			if err == nil && len(s.stream.Spec.Platforms) > 0 {
				err = s.checkPlatforms(ctx, digestRef)
			}
			s.r.imports.set(key, c.Name, s.now)
			if err != nil {
				importErrors.WithLabelValues(s.stream.Namespace, s.stream.Name).Inc()
				err = errors.New(conditions.Truncate(err.Error(), conditions.MaxErrorLength))
			}
			before := st.Error
			st = ImportResult(st, digestRef, err, s.now)
			wait = interval
			if err != nil {
				wait = ImportBackoff(st.Failures)
				if st.Error != before {
					newErrors = append(newErrors, fmt.Sprintf("%s (%s)", c.Name, st.Error))
				}
			}
		}
		s.requeue(wait)
		if st.Error != "" || st.Image == "" {
			resolved = false
		} else {
			pinned = append(pinned, v1alpha1.PinnedComponent{Name: c.Name, Image: st.Image, Source: c.Image})
		}
		statuses = append(statuses, st)
	}
	s.r.imports.setGeneration(key, s.stream.Generation)
	s.pass.Components = statuses
	if len(newErrors) > 0 {
		s.r.report.Warningf(ctx, s.stream, nil, v1alpha1.EventImportFailed, "Import",
			"%d of %d components did not resolve; retrying with backoff: %s", len(newErrors), len(statuses), strings.Join(newErrors, "; "))
	}
	return pinned, resolved
}

// checkPlatforms refuses a component image that lacks one of the stream's platforms: a
// payload of it could not be built.
func (s *streamSync) checkPlatforms(ctx context.Context, digestRef string) error {
	images, err := s.r.Registry.Platforms(ctx, digestRef)
	if err != nil {
		return err
	}
	if missing := releaseimage.MissingPlatforms(images, s.stream.Spec.Platforms); len(missing) > 0 {
		has := "no platform"
		if len(images) > 0 {
			has = strings.Join(releaseimage.PlatformNames(images), ", ")
		}
		return fmt.Errorf("%s lacks platform %s of the stream (it has %s)", digestRef, strings.Join(missing, ", "), has)
	}
	return nil
}
