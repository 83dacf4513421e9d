package catalog

import (
	"cmp"
	"slices"

	"k8s.io/apimachinery/pkg/types"

	"github.com/release-controller/release-controller/api/v1alpha1"
)

// The UpgradeRisks the update service serves are kept beside the streams: a risk changes
// the graph, so a change to one is a change of the catalog (Changed).

// +kubebuilder:rbac:groups=release-controller.dev,resources=upgraderisks,verbs=list;watch

// SetRisk adds or replaces an UpgradeRisk.
func (c *Catalog) SetRisk(r *v1alpha1.UpgradeRisk) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.risks[types.NamespacedName{Namespace: r.Namespace, Name: r.Name}] = r
	c.risksList = nil
	close(c.changed)
	c.changed = make(chan struct{})
}

// DeleteRisk removes an UpgradeRisk.
func (c *Catalog) DeleteRisk(r *v1alpha1.UpgradeRisk) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.risks, types.NamespacedName{Namespace: r.Namespace, Name: r.Name})
	c.risksList = nil
	close(c.changed)
	c.changed = make(chan struct{})
}

// Risks returns every UpgradeRisk, by namespace, then name. They are the informer's objects
// and the list is shared: read them, never change them.
func (c *Catalog) Risks() []*v1alpha1.UpgradeRisk {
	c.mu.RLock()
	list := c.risksList
	c.mu.RUnlock()
	if list != nil {
		return list
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.risksList != nil {
		return c.risksList
	}
	list = make([]*v1alpha1.UpgradeRisk, 0, len(c.risks))
	for _, r := range c.risks {
		list = append(list, r)
	}
	slices.SortFunc(list, func(a, b *v1alpha1.UpgradeRisk) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	c.risksList = list
	return list
}
