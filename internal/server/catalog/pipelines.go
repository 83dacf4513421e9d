package catalog

import (
	"cmp"
	"slices"

	"k8s.io/apimachinery/pkg/types"

	"github.com/release-controller/release-controller/api/v1alpha1"
)

// The pipelines the pages and the MCP tools show are kept beside the streams: the informer's
// objects, by namespace and name, with a change signal of their own (a pipeline's status
// changes often; the stream pages need not wake for it).

// +kubebuilder:rbac:groups=release-controller.dev,resources=pipelines,verbs=list;watch

// SetPipeline adds or replaces a pipeline.
func (c *Catalog) SetPipeline(p *v1alpha1.Pipeline) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.pipelines[types.NamespacedName{Namespace: p.Namespace, Name: p.Name}] = p
	close(c.pipelinesChanged)
	c.pipelinesChanged = make(chan struct{})
}

// DeletePipeline removes a pipeline.
func (c *Catalog) DeletePipeline(p *v1alpha1.Pipeline) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.pipelines, types.NamespacedName{Namespace: p.Namespace, Name: p.Name})
	close(c.pipelinesChanged)
	c.pipelinesChanged = make(chan struct{})
}

// PipelinesChanged is closed at the next change of any pipeline; call it again for the one
// after.
func (c *Catalog) PipelinesChanged() <-chan struct{} {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.pipelinesChanged
}

// Pipelines returns every pipeline, by namespace, then name. They are the informer's
// objects: read them, never change them.
func (c *Catalog) Pipelines() []*v1alpha1.Pipeline {
	c.mu.RLock()
	out := make([]*v1alpha1.Pipeline, 0, len(c.pipelines))
	for _, p := range c.pipelines {
		out = append(out, p)
	}
	c.mu.RUnlock()
	slices.SortFunc(out, func(a, b *v1alpha1.Pipeline) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	return out
}

// Pipeline returns the pipeline namespace/name; the informer's object, never to be changed.
func (c *Catalog) Pipeline(namespace, name string) (*v1alpha1.Pipeline, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	p, ok := c.pipelines[types.NamespacedName{Namespace: namespace, Name: name}]
	return p, ok
}

// Strategy is how revisions are promoted into environment env of p: its promotion's
// strategy, else the pipeline's, else patch (the schema's default).
func Strategy(p *v1alpha1.Pipeline, env v1alpha1.Environment) string {
	if env.Promotion != nil && env.Promotion.Strategy != "" {
		return env.Promotion.Strategy
	}
	if p.Spec.Promotion != nil && p.Spec.Promotion.Strategy != "" {
		return p.Spec.Promotion.Strategy
	}
	return v1alpha1.StrategyPatch
}

// TargetStatus is what st (nil before the controller wrote one) records of target t; nil
// until the controller observed it.
func TargetStatus(st *v1alpha1.EnvironmentStatus, t v1alpha1.Target) *v1alpha1.TargetStatus {
	if st == nil {
		return nil
	}
	for i := range st.Targets {
		if st.Targets[i].Namespace == t.Namespace && st.Targets[i].ClusterRef == t.ClusterRef {
			return &st.Targets[i]
		}
	}
	return nil
}
