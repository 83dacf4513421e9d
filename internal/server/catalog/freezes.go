package catalog

import (
	"cmp"
	"slices"

	"k8s.io/apimachinery/pkg/types"

	"github.com/release-controller/release-controller/api/v1alpha1"
)

// The ReleaseFreezes and ClusterReleaseFreezes are kept beside the pipelines: a pipeline's
// page lists the freezes that cover it, so a change to one is a change of the pipelines
// (PipelinesChanged).

// +kubebuilder:rbac:groups=release-controller.dev,resources=releasefreezes;clusterreleasefreezes,verbs=list;watch

// Freeze is a ReleaseFreeze, or a ClusterReleaseFreeze (Namespace empty), as the informer
// holds it: read it, never change it.
type Freeze struct {
	Namespace, Name string
	Spec            *v1alpha1.ReleaseFreezeSpec
	Status          *v1alpha1.ReleaseFreezeStatus
}

// SetReleaseFreeze adds or replaces a ReleaseFreeze.
func (c *Catalog) SetReleaseFreeze(f *v1alpha1.ReleaseFreeze) {
	c.setFreeze(Freeze{Namespace: f.Namespace, Name: f.Name, Spec: &f.Spec, Status: &f.Status})
}

// DeleteReleaseFreeze removes a ReleaseFreeze.
func (c *Catalog) DeleteReleaseFreeze(f *v1alpha1.ReleaseFreeze) {
	c.deleteFreeze(types.NamespacedName{Namespace: f.Namespace, Name: f.Name})
}

// SetClusterReleaseFreeze adds or replaces a ClusterReleaseFreeze.
func (c *Catalog) SetClusterReleaseFreeze(f *v1alpha1.ClusterReleaseFreeze) {
	c.setFreeze(Freeze{Name: f.Name, Spec: &f.Spec, Status: &f.Status})
}

// DeleteClusterReleaseFreeze removes a ClusterReleaseFreeze.
func (c *Catalog) DeleteClusterReleaseFreeze(f *v1alpha1.ClusterReleaseFreeze) {
	c.deleteFreeze(types.NamespacedName{Name: f.Name})
}

// A ReleaseFreeze always has a namespace, a ClusterReleaseFreeze never: their keys differ.
func (c *Catalog) setFreeze(f Freeze) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.freezes[types.NamespacedName{Namespace: f.Namespace, Name: f.Name}] = f
	close(c.pipelinesChanged)
	c.pipelinesChanged = make(chan struct{})
}

func (c *Catalog) deleteFreeze(key types.NamespacedName) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.freezes, key)
	close(c.pipelinesChanged)
	c.pipelinesChanged = make(chan struct{})
}

// Freezes returns every freeze: the ClusterReleaseFreezes first, then the ReleaseFreezes by
// namespace, each by name. The list is the caller's; the freezes in it are shared.
func (c *Catalog) Freezes() []Freeze {
	c.mu.RLock()
	list := make([]Freeze, 0, len(c.freezes))
	for _, f := range c.freezes {
		list = append(list, f)
	}
	c.mu.RUnlock()
	slices.SortFunc(list, func(a, b Freeze) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	return list
}
