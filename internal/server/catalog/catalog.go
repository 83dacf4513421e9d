// Package catalog is the read side of streams, payloads and pipelines for the HTTP server:
// kept current by the manager's informers, indexed by stream and tag, in the orders the pages
// and the REST API answer in. Readers get immutable snapshots, so a request never lists the cache, never
// copies an object and never holds a lock while it renders.
package catalog

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/blang/semver/v4"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/upgradegraph"
	"github.com/release-controller/release-controller/internal/verdict"
)

// Entry is one payload with its parsed tag. The payload is the informer's object: read it,
// never change it.
type Entry struct {
	Payload *v1alpha1.ReleasePayload
	// Version is the tag as a semantic version; nil when the tag is not one.
	Version *semver.Version
	// phase is verdict.Of the payload, judged once when the entry is made.
	phase v1alpha1.PayloadPhase
	// facts are what the health report reads of the payload, also found once (health.go).
	facts *healthFacts
}

// Tag is the payload's release tag.
func (e Entry) Tag() string { return e.Payload.Name }

// Phase is the payload's phase as verdict.Of reads it (a verdict its evidence does not back
// is none); a payload without one yet is Pending.
func (e Entry) Phase() v1alpha1.PayloadPhase {
	if e.phase != "" {
		return e.phase
	}
	return phaseOf(e.Payload)
}

func phaseOf(p *v1alpha1.ReleasePayload) v1alpha1.PayloadPhase {
	if phase := verdict.Of(p); phase != "" {
		return phase
	}
	return v1alpha1.PhasePending
}

// Stream is one stream as readers see it: never changed once published.
type Stream struct {
	Namespace, Name string
	// Object is the informer's ReleaseStream.
	Object *v1alpha1.ReleaseStream
	// Entries are the stream's payloads, newest first (semver order).
	Entries []Entry
	// Graph holds the stream's upgrade results, from its upgrade-graph ConfigMap.
	Graph upgradegraph.Graph

	byTag    map[string]int
	upgrades upgrades
}

// Entry returns the payload of tag.
func (s *Stream) Entry(tag string) (Entry, bool) {
	i, ok := s.byTag[tag]
	if !ok {
		return Entry{}, false
	}
	return s.Entries[i], true
}

// Index is where tag sits in Entries, -1 when it is not there.
func (s *Stream) Index(tag string) int {
	if i, ok := s.byTag[tag]; ok {
		return i
	}
	return -1
}

// PullSpec is where a tag of the stream is pulled from: <payloadRepository>:<tag>.
func (s *Stream) PullSpec(e Entry) string {
	repo := e.Payload.Spec.PayloadCreationConfig.Repository
	if repo == "" {
		repo = s.Object.Spec.PayloadRepository
	}
	return repo + ":" + e.Tag()
}

// Key names a stream.
func (s *Stream) Key() types.NamespacedName {
	return types.NamespacedName{Namespace: s.Namespace, Name: s.Name}
}

// ErrNotFound is returned for an unknown stream or tag.
var ErrNotFound = errors.New("not found")

// AmbiguousError is returned for a stream name found in more than one namespace.
type AmbiguousError struct {
	Name       string
	Namespaces []string
}

func (e *AmbiguousError) Error() string {
	return fmt.Sprintf("release stream %q exists in namespaces %s: use /namespaces/{namespace}/… to pick one",
		e.Name, strings.Join(e.Namespaces, ", "))
}

// Catalog holds every stream's snapshot.
type Catalog struct {
	mu      sync.RWMutex
	streams map[types.NamespacedName]*Stream
	// payloads keep their entries even while their stream is not (yet) in the cache.
	pending map[types.NamespacedName]*builder
	changed chan struct{}
	// pipelines are kept as the informer holds them (pipelines.go).
	pipelines        map[types.NamespacedName]*v1alpha1.Pipeline
	pipelinesChanged chan struct{}
	// risks are the UpgradeRisks (risks.go); risksList is their sorted list, built on demand.
	risks     map[types.NamespacedName]*v1alpha1.UpgradeRisk
	risksList []*v1alpha1.UpgradeRisk
	// freezes are the ReleaseFreezes and ClusterReleaseFreezes (freezes.go).
	freezes map[types.NamespacedName]Freeze
}

// builder is the mutable state behind one stream's snapshot.
type builder struct {
	object  *v1alpha1.ReleaseStream
	entries []Entry
	graph   upgradegraph.Graph
}

// New returns an empty catalog; Watch fills it from informers, and tests may call the
// On* methods directly.
func New() *Catalog {
	return &Catalog{
		streams: map[types.NamespacedName]*Stream{},
		pending: map[types.NamespacedName]*builder{},
		changed: make(chan struct{}),

		pipelines:        map[types.NamespacedName]*v1alpha1.Pipeline{},
		pipelinesChanged: make(chan struct{}),

		risks: map[types.NamespacedName]*v1alpha1.UpgradeRisk{},

		freezes: map[types.NamespacedName]Freeze{},
	}
}

// +kubebuilder:rbac:groups=release-controller.dev,resources=releasestreams;releasepayloads,verbs=list;watch
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=list;watch

// Watch feeds the catalog from the cache's informers of streams, payloads, the streams'
// upgrade-graph ConfigMaps (the manager caches only ConfigMaps labelled with a stream),
// pipelines, UpgradeRisks, ReleaseFreezes and ClusterReleaseFreezes. Until ctx ends, the
// catalog's gauges are on /metrics (metrics.go).
func (c *Catalog) Watch(ctx context.Context, informers cache.Informers) error {
	watches := []struct {
		obj     client.Object
		handler toolscache.ResourceEventHandler
	}{
		{&v1alpha1.ReleaseStream{}, handler(c.SetStream, c.DeleteStream)},
		{&v1alpha1.ReleasePayload{}, handler(c.SetPayload, c.DeletePayload)},
		{&corev1.ConfigMap{}, handler(c.SetGraph, c.DeleteGraph)},
		{&v1alpha1.Pipeline{}, handler(c.SetPipeline, c.DeletePipeline)},
		{&v1alpha1.UpgradeRisk{}, handler(c.SetRisk, c.DeleteRisk)},
		{&v1alpha1.ReleaseFreeze{}, handler(c.SetReleaseFreeze, c.DeleteReleaseFreeze)},
		{&v1alpha1.ClusterReleaseFreeze{}, handler(c.SetClusterReleaseFreeze, c.DeleteClusterReleaseFreeze)},
	}
	for _, w := range watches {
		inf, err := informers.GetInformer(ctx, w.obj)
		if err != nil {
			return fmt.Errorf("watching %T: %w", w.obj, err)
		}
		if _, err := inf.AddEventHandler(w.handler); err != nil {
			return fmt.Errorf("watching %T: %w", w.obj, err)
		}
	}
	c.collect(ctx)
	return nil
}

// handler turns informer events into set and delete calls; deletes that arrive as
// tombstones are unwrapped.
func handler[T client.Object](set, del func(T)) toolscache.ResourceEventHandler {
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if o, ok := obj.(T); ok {
				set(o)
			}
		},
		UpdateFunc: func(_, obj any) {
			if o, ok := obj.(T); ok {
				set(o)
			}
		},
		DeleteFunc: func(obj any) {
			if t, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
				obj = t.Obj
			}
			if o, ok := obj.(T); ok {
				del(o)
			}
		},
	}
}

// Changed is closed at the next change of any stream; call it again for the one after.
func (c *Catalog) Changed() <-chan struct{} {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.changed
}

// Streams returns every stream, ordered by namespace, then by name as a semantic version
// (newest first), then by name.
func (c *Catalog) Streams() []*Stream {
	c.mu.RLock()
	out := make([]*Stream, 0, len(c.streams))
	for _, s := range c.streams {
		out = append(out, s)
	}
	c.mu.RUnlock()
	slices.SortFunc(out, func(a, b *Stream) int {
		if n := cmp.Compare(a.Namespace, b.Namespace); n != 0 {
			return n
		}
		return compareNames(a.Name, b.Name)
	})
	return out
}

// Stream finds a stream by name in every namespace watched; a name in two namespaces is an
// *AmbiguousError.
func (c *Catalog) Stream(name string) (*Stream, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	var found []*Stream
	for key, s := range c.streams {
		if key.Name == name {
			found = append(found, s)
		}
	}
	switch len(found) {
	case 0:
		return nil, ErrNotFound
	case 1:
		return found[0], nil
	}
	namespaces := make([]string, len(found))
	for i, s := range found {
		namespaces[i] = s.Namespace
	}
	slices.Sort(namespaces)
	return nil, &AmbiguousError{Name: name, Namespaces: namespaces}
}

// StreamIn finds a stream by namespace and name.
func (c *Catalog) StreamIn(namespace, name string) (*Stream, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	s, ok := c.streams[types.NamespacedName{Namespace: namespace, Name: name}]
	if !ok {
		return nil, ErrNotFound
	}
	return s, nil
}

// Located is a payload with its stream.
type Located struct {
	Stream *Stream
	Entry  Entry
}

// FindTag returns the payloads tagged tag, in every stream (usually one).
func (c *Catalog) FindTag(tag string) []Located {
	c.mu.RLock()
	defer c.mu.RUnlock()
	var out []Located
	for _, s := range c.streams {
		if e, ok := s.Entry(tag); ok {
			out = append(out, Located{Stream: s, Entry: e})
		}
	}
	slices.SortFunc(out, func(a, b Located) int { return cmp.Compare(a.Stream.Namespace, b.Stream.Namespace) })
	return out
}

// Tag finds one payload by tag in every stream; a tag in two namespaces is an *AmbiguousError.
func (c *Catalog) Tag(tag string) (Located, error) {
	found := c.FindTag(tag)
	switch len(found) {
	case 0:
		return Located{}, ErrNotFound
	case 1:
		return found[0], nil
	}
	namespaces := make([]string, len(found))
	for i, l := range found {
		namespaces[i] = l.Stream.Namespace
	}
	return Located{}, &AmbiguousError{Name: tag, Namespaces: namespaces}
}

// SetStream adds or replaces a stream.
func (c *Catalog) SetStream(s *v1alpha1.ReleaseStream) {
	c.update(types.NamespacedName{Namespace: s.Namespace, Name: s.Name}, func(b *builder) { b.object = s })
}

// DeleteStream removes a stream; its payloads stay known until they are deleted too.
func (c *Catalog) DeleteStream(s *v1alpha1.ReleaseStream) {
	c.update(types.NamespacedName{Namespace: s.Namespace, Name: s.Name}, func(b *builder) { b.object = nil })
}

// SetPayload adds or replaces a payload in its stream.
func (c *Catalog) SetPayload(p *v1alpha1.ReleasePayload) {
	c.update(payloadStream(p), func(b *builder) {
		e := Entry{Payload: p, phase: phaseOf(p)}
		e.facts = factsOf(p, e.phase)
		if v, err := semver.Parse(p.Name); err == nil {
			e.Version = &v
		}
		i, found := slices.BinarySearchFunc(b.entries, e, compareEntries)
		if found && b.entries[i].Payload.Name == p.Name {
			b.entries[i] = e
			return
		}
		b.entries = slices.Insert(b.entries, i, e)
	})
}

// DeletePayload removes a payload.
func (c *Catalog) DeletePayload(p *v1alpha1.ReleasePayload) {
	c.update(payloadStream(p), func(b *builder) {
		b.entries = slices.DeleteFunc(b.entries, func(e Entry) bool { return e.Payload.Name == p.Name })
	})
}

// SetGraph reads a stream's upgrade graph from its ConfigMap; other ConfigMaps are ignored.
// A graph that does not parse reads as empty.
func (c *Catalog) SetGraph(cm *corev1.ConfigMap) {
	key, ok := graphStream(cm)
	if !ok {
		return
	}
	var g upgradegraph.Graph
	if err := json.Unmarshal([]byte(cm.Data[upgradegraph.Key]), &g); err != nil {
		g = upgradegraph.Graph{}
	}
	c.update(key, func(b *builder) { b.graph = g })
}

// DeleteGraph forgets a stream's upgrade graph.
func (c *Catalog) DeleteGraph(cm *corev1.ConfigMap) {
	if key, ok := graphStream(cm); ok {
		c.update(key, func(b *builder) { b.graph = upgradegraph.Graph{} })
	}
}

func graphStream(cm *corev1.ConfigMap) (types.NamespacedName, bool) {
	name := cm.Labels[v1alpha1.LabelStream]
	if name == "" || cm.Name != upgradegraph.ConfigMapName(name) {
		return types.NamespacedName{}, false
	}
	return types.NamespacedName{Namespace: cm.Namespace, Name: name}, true
}

func payloadStream(p *v1alpha1.ReleasePayload) types.NamespacedName {
	return types.NamespacedName{Namespace: p.Namespace, Name: p.Spec.PayloadCoordinates.Stream}
}

// update changes one stream's state and publishes its new snapshot. Entries are copied on
// write: a reader's snapshot never changes under it.
func (c *Catalog) update(key types.NamespacedName, change func(*builder)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	b := c.pending[key]
	if b == nil {
		b = &builder{}
		c.pending[key] = b
	}
	b.entries = slices.Clone(b.entries) // the published snapshot keeps the old array
	change(b)
	if b.object == nil {
		delete(c.streams, key)
		if len(b.entries) == 0 && len(b.graph.Edges) == 0 {
			delete(c.pending, key)
		}
	} else {
		c.streams[key] = b.snapshot()
	}
	close(c.changed)
	c.changed = make(chan struct{})
}

func (b *builder) snapshot() *Stream {
	s := &Stream{
		Namespace: b.object.Namespace, Name: b.object.Name, Object: b.object,
		Entries: b.entries, Graph: b.graph, byTag: make(map[string]int, len(b.entries)),
	}
	for i, e := range b.entries {
		s.byTag[e.Tag()] = i
	}
	return s
}

// compareEntries is semver order, newest first: tags that are semantic versions first, in
// descending order, then the others by name, descending.
func compareEntries(a, b Entry) int {
	return compareVersions(a.Version, b.Version, a.Payload.Name, b.Payload.Name)
}

// compareVersions orders two tags, newest first: semantic versions (va, vb; nil when the
// tag is not one) before the others, which go by name, descending.
func compareVersions(va, vb *semver.Version, a, b string) int {
	switch {
	case va != nil && vb != nil:
		if n := vb.Compare(*va); n != 0 {
			return n
		}
	case va != nil:
		return -1
	case vb != nil:
		return 1
	}
	return cmp.Compare(b, a)
}

// compareNames orders stream names like tags: semantic versions first, newest first.
func compareNames(a, b string) int {
	va, errA := semver.ParseTolerant(a)
	vb, errB := semver.ParseTolerant(b)
	switch {
	case errA == nil && errB == nil:
		if n := vb.Compare(va); n != 0 {
			return n
		}
	case errA == nil:
		return -1
	case errB == nil:
		return 1
	}
	return cmp.Compare(a, b)
}

// CompareTags orders two tags as Entries are ordered: semver order, newest first.
func CompareTags(a, b string) int {
	var va, vb *semver.Version
	if v, err := semver.Parse(a); err == nil {
		va = &v
	}
	if v, err := semver.Parse(b); err == nil {
		vb = &v
	}
	return compareVersions(va, vb, a, b)
}
