// Package buildinput is the whole input of a payload build: what `release-controller payload
// build` reads of a ReleasePayload and of its stream's earlier accepted payloads. A creation
// Job beside the payload reads it from the API server (--payload); one on another cluster
// (the stream's creationCluster) gets it as JSON in a ConfigMap beside it (--input), computed
// by the stream controller with the same rules, so both build the same image.
package buildinput

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/Masterminds/semver/v3"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/clusters"
	"github.com/release-controller/release-controller/internal/releaseimage"
	"github.com/release-controller/release-controller/internal/verdict"
)

// MaxPrevious is how many earlier accepted releases a payload lists as upgrade sources.
const MaxPrevious = 5

// ConfigMapKey is the key of the input's JSON in the ConfigMap of a remote creation Job; the
// Job mounts it at MountPath.
const (
	ConfigMapKey = "build.json"
	MountPath    = "/input"
)

// Input is one payload build's input (the JSON a remote creation Job reads).
type Input struct {
	// Namespace and Payload name the ReleasePayload, for messages.
	Namespace string `json:"namespace"`
	Payload   string `json:"payload"`
	// Tag, Stream: the payload's coordinates.
	Tag    string `json:"tag"`
	Stream string `json:"stream"`
	// Repository receives the image as <repository>:<tag>.
	Repository string `json:"repository"`
	// Components pinned by digest, in the payload's order.
	Components []Component `json:"components"`
	// Platforms of an image index; empty: one image.
	Platforms []string `json:"platforms,omitempty"`
	// BaseComponent, when set, is the component the image is built on.
	BaseComponent string `json:"baseComponent,omitempty"`
	// Previous are the earlier accepted releases of the stream, newest first (PreviousReleases).
	Previous []string `json:"previous"`
	// Created is the payload's creation time: a retried build makes the same image.
	Created time.Time `json:"created"`
}

// Component is one component of the payload.
type Component struct {
	Name  string `json:"name"`
	Image string `json:"image"`
}

// Of is the build input of p; payloads are those it may list as earlier releases (any
// payloads: only the accepted ones of p's stream with a lower tag count).
func Of(p *v1alpha1.ReleasePayload, payloads []v1alpha1.ReleasePayload) (Input, error) {
	coords := p.Spec.PayloadCoordinates
	previous, err := PreviousReleases(coords, payloads)
	if err != nil {
		return Input{}, err
	}
	components := make([]Component, len(p.Spec.Components))
	for i, c := range p.Spec.Components {
		components[i] = Component{Name: c.Name, Image: c.Image}
	}
	return Input{
		Namespace: p.Namespace, Payload: p.Name,
		Tag: coords.Tag, Stream: coords.Stream,
		Repository:    p.Spec.PayloadCreationConfig.Repository,
		Components:    components,
		Platforms:     slices.Clone(p.Spec.PayloadCreationConfig.Platforms),
		BaseComponent: p.Spec.PayloadCreationConfig.BaseComponent,
		Previous:      previous,
		Created:       p.CreationTimestamp.UTC(),
	}, nil
}

// Parse reads an input's JSON, refusing unknown fields and an input that names no tag,
// stream, repository or component.
func Parse(data []byte) (Input, error) {
	var in Input
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil {
		return Input{}, fmt.Errorf("reading the build input: %w", err)
	}
	var missing []string
	for name, v := range map[string]string{"tag": in.Tag, "stream": in.Stream, "repository": in.Repository} {
		if v == "" {
			missing = append(missing, name)
		}
	}
	if len(in.Components) == 0 {
		missing = append(missing, "components")
	}
	if len(missing) > 0 {
		slices.Sort(missing)
		return Input{}, fmt.Errorf("the build input has no %s", strings.Join(missing, ", "))
	}
	return in, nil
}

// BuildOptions are the releaseimage options of the input (without Remote and Progress).
func (in Input) BuildOptions() releaseimage.BuildOptions {
	components := make([]releaseimage.Component, len(in.Components))
	for i, c := range in.Components {
		components[i] = releaseimage.Component{Name: c.Name, Image: c.Image}
	}
	return releaseimage.BuildOptions{
		Tag: in.Tag, Stream: in.Stream, Repository: in.Repository,
		Components: components, Previous: slices.Clone(in.Previous),
		Platforms: slices.Clone(in.Platforms), BaseComponent: in.BaseComponent,
		Created: in.Created,
	}
}

// PreviousReleases returns the tags of the accepted payloads of the same stream whose tag is
// lower by semver than coords.Tag, newest first, at most MaxPrevious.
func PreviousReleases(coords v1alpha1.PayloadCoordinates, payloads []v1alpha1.ReleasePayload) ([]string, error) {
	current, err := semver.StrictNewVersion(coords.Tag)
	if err != nil {
		return nil, fmt.Errorf("release tag %q is not a semantic version: %w", coords.Tag, err)
	}
	type release struct {
		tag     string
		version *semver.Version
	}
	var earlier []release
	for i := range payloads {
		p := &payloads[i]
		pc := p.Spec.PayloadCoordinates
		if pc.Stream != coords.Stream || !verdict.Accepted(p) {
			continue
		}
		v, err := semver.StrictNewVersion(pc.Tag)
		if err != nil || !v.LessThan(current) {
			// Admission only lets semantic versions in; an older object may still hold another tag.
			continue
		}
		earlier = append(earlier, release{pc.Tag, v})
	}
	slices.SortFunc(earlier, func(a, b release) int { return cmp.Or(b.version.Compare(a.version), strings.Compare(b.tag, a.tag)) })
	tags := make([]string, 0, MaxPrevious)
	for _, r := range earlier[:min(len(earlier), MaxPrevious)] {
		tags = append(tags, r.tag)
	}
	return tags, nil
}

// ClusterOf is the cluster p's creation Job runs on and its namespace there; ok is false for
// the controller's own cluster.
func ClusterOf(p *v1alpha1.ReleasePayload) (key clusters.Key, namespace string, ok bool) {
	c := p.Spec.PayloadCreationConfig.Cluster
	if c == nil || c.SecretRef == "" {
		return clusters.Key{}, "", false
	}
	namespace = c.Namespace
	if namespace == "" {
		namespace = p.Namespace
	}
	return clusters.Key{Namespace: p.Namespace, Secret: c.SecretRef}, namespace, true
}

// AddCluster adds p's creation cluster, with its namespace there, to used and returns it (a
// new map when used is nil), as verify.Clusters does for the verifications' clusters.
func AddCluster(used map[clusters.Key][]string, p *v1alpha1.ReleasePayload) map[clusters.Key][]string {
	key, ns, ok := ClusterOf(p)
	if !ok {
		return used
	}
	if used == nil {
		used = map[clusters.Key][]string{}
	}
	if !slices.Contains(used[key], ns) {
		used[key] = append(used[key], ns)
	}
	return used
}
