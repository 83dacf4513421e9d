// Package audit re-checks every accepted payload against its image in the registry, and
// signs the payloads that pass: the audit controller reads the payload image back, decides
// with Evaluate, stores the audit record and an OpenPGP simple signing signature (package
// signing, signing/store), and records both as the payload's PayloadAudited and PayloadSigned
// conditions.
package audit

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/releaseimage"
)

// Check names, in the order they run.
const (
	CheckImageRecorded = "image-recorded"
	CheckTagDigest     = "tag-digest"
	CheckReadable      = "payload-image"
	CheckVersion       = "version"
	CheckComponents    = "components"
	CheckPresent       = "components-present"
)

// Observation is what the controller read from the registry for a payload. Errors that may
// go away (an unreachable registry) never get here: the controller retries those.
type Observation struct {
	// TagDigest is the digest the payload's tag (<repository>:<tag>) points to now.
	TagDigest string
	// Info is the payload image read by the recorded digest; nil when InfoError is set.
	Info *releaseimage.PayloadInfo
	// InfoError says why the image at the recorded digest is not a valid payload image.
	InfoError string
	// Missing are components of the image's image-references that the registry does not
	// have, by name, with the registry's answer.
	Missing map[string]string
	// Platforms are what was read of each platform's image of a payload built for
	// platforms (Info is then nil, InfoError about the index).
	Platforms []PlatformObservation
}

// Record is the audit record of one payload: stored as JSON beside its signatures.
type Record struct {
	Namespace string    `json:"namespace"`
	Payload   string    `json:"payload"`
	Stream    string    `json:"stream"`
	Image     string    `json:"image"`
	AuditedAt time.Time `json:"auditedAt"`
	Auditor   string    `json:"auditor"`
	Passed    bool      `json:"passed"`
	Checks    []Result  `json:"checks"`
}

// Result is the outcome of one check.
type Result struct {
	Name    string `json:"name"`
	Passed  bool   `json:"passed"`
	Message string `json:"message"`
}

// Failed returns the first failed check, or nil.
func (r *Record) Failed() *Result {
	for i := range r.Checks {
		if !r.Checks[i].Passed {
			return &r.Checks[i]
		}
	}
	return nil
}

// maxListed bounds how many components one check message names.
const maxListed = 5

// Evaluate decides whether the payload's image is what the payload says: its recorded digest
// is what the tag points to, the image is a valid payload image of this tag, and its
// components are exactly the payload's, pinned by the same digests, all present in the
// registry. It is pure: at and auditor are stamped on the record as given.
func Evaluate(p *v1alpha1.ReleasePayload, obs Observation, at time.Time, auditor string) Record {
	rec := Record{
		Namespace: p.Namespace, Payload: p.Name, Stream: p.Spec.PayloadCoordinates.Stream,
		Image: p.Status.PayloadImage, AuditedAt: at.UTC(), Auditor: auditor,
	}
	add := func(check string, failure string, success string) bool {
		rec.Checks = append(rec.Checks, Result{Name: check, Passed: failure == "", Message: firstNonEmpty(failure, success)})
		return failure == ""
	}
	recorded, err := name.NewDigest(p.Status.PayloadImage)
	if !add(CheckImageRecorded, errorText(err, "the payload records no image by digest: "), "recorded as "+p.Status.PayloadImage) {
		return finish(rec)
	}
	tag := p.Spec.PayloadCreationConfig.Repository + ":" + p.Name
	if !add(CheckTagDigest, tagFailure(tag, obs.TagDigest, recorded.DigestStr()), tag+" points to the recorded digest") {
		return finish(rec)
	}
	if len(p.Spec.PayloadCreationConfig.Platforms) > 0 {
		evaluatePlatforms(p, obs, add)
		return finish(rec)
	}
	if !add(CheckReadable, obs.InfoError, "a valid release payload image") {
		return finish(rec)
	}
	info := obs.Info
	if !add(CheckVersion, versionFailure(p.Name, info), "release metadata and image references are for "+p.Name) {
		return finish(rec)
	}
	if !add(CheckComponents, componentsFailure(p.Spec.Components, info.References.Components),
		fmt.Sprintf("%d components, each pinned by the digest the payload recorded", len(p.Spec.Components))) {
		return finish(rec)
	}
	add(CheckPresent, missingFailure(obs.Missing), "every component is present in the registry")
	return finish(rec)
}

func finish(rec Record) Record {
	rec.Passed = rec.Failed() == nil
	return rec
}

func tagFailure(tag, tagDigest, recorded string) string {
	switch tagDigest {
	case recorded:
		return ""
	case "":
		return tag + " no longer exists in the registry"
	}
	return fmt.Sprintf("%s points to %s, not to the recorded %s: the payload was re-tagged", tag, tagDigest, recorded)
}

func versionFailure(tag string, info *releaseimage.PayloadInfo) string {
	switch {
	case info.Metadata.Version != tag:
		return fmt.Sprintf("the image's release metadata is for %q, not %q", info.Metadata.Version, tag)
	case info.References.Tag != tag:
		return fmt.Sprintf("the image's image-references are for %q, not %q", info.References.Tag, tag)
	}
	return ""
}

// componentsFailure compares the components by name and digest: a mirror repository may
// have moved them to another repository, never to another digest.
func componentsFailure(want []v1alpha1.PinnedComponent, got []releaseimage.ComponentReference) string {
	gotDigests := make(map[string]string, len(got))
	for _, c := range got {
		gotDigests[c.Name] = digestOf(c.Image)
	}
	var missing, changed []string
	for _, c := range want {
		d, ok := gotDigests[c.Name]
		switch {
		case !ok:
			missing = append(missing, c.Name)
		case d != digestOf(c.Image):
			changed = append(changed, fmt.Sprintf("%s is %s, the payload recorded %s", c.Name, d, digestOf(c.Image)))
		}
		delete(gotDigests, c.Name)
	}
	var problems []string
	if len(missing) > 0 {
		problems = append(problems, "image-references lacks "+list(missing))
	}
	if len(changed) > 0 {
		problems = append(problems, "changed digests: "+list(changed))
	}
	if len(gotDigests) > 0 {
		problems = append(problems, "image-references has components the payload does not: "+list(slices.Sorted(maps.Keys(gotDigests))))
	}
	return strings.Join(problems, "; ")
}

func missingFailure(missing map[string]string) string {
	if len(missing) == 0 {
		return ""
	}
	names := slices.Sorted(maps.Keys(missing))
	described := make([]string, 0, len(names))
	for _, n := range names {
		described = append(described, n+" ("+missing[n]+")")
	}
	return "not in the registry: " + list(described)
}

// list joins at most maxListed items and says how many more there are.
func list(items []string) string {
	if len(items) <= maxListed {
		return strings.Join(items, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(items[:maxListed], ", "), len(items)-maxListed)
}

func digestOf(pullSpec string) string {
	if _, d, ok := strings.Cut(pullSpec, "@"); ok {
		return d
	}
	return ""
}

func errorText(err error, prefix string) string {
	if err == nil {
		return ""
	}
	return prefix + err.Error()
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
