package pipeline

import (
	"context"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/eventlog"
	"github.com/release-controller/release-controller/internal/freeze"
)

// The pipelines read freezes from the cache: the ReleaseFreezes of their namespace and every
// ClusterReleaseFreeze.
// +kubebuilder:rbac:groups=release-controller.dev,resources=releasefreezes;clusterreleasefreezes,verbs=list;watch

// freezesOf lists, from the cache, the freezes that may cover p: the ReleaseFreezes of its
// namespace and the ClusterReleaseFreezes.
func (r *Reconciler) freezesOf(ctx context.Context, p *v1alpha1.Pipeline) ([]Freeze, error) {
	var local v1alpha1.ReleaseFreezeList
	if err := r.Client.List(ctx, &local, client.InNamespace(p.Namespace)); err != nil {
		return nil, eventlog.Step(v1alpha1.ReasonReconcileFailed, "Observe", "listing the freezes", err)
	}
	var cluster v1alpha1.ClusterReleaseFreezeList
	if err := r.Client.List(ctx, &cluster); err != nil {
		return nil, eventlog.Step(v1alpha1.ReasonReconcileFailed, "Observe", "listing the cluster's freezes", err)
	}
	freezes := make([]Freeze, 0, len(local.Items)+len(cluster.Items))
	for _, f := range local.Items {
		freezes = append(freezes, FreezeOf(f.Namespace, f.Name, f.CreationTimestamp, f.Spec))
	}
	for _, f := range cluster.Items {
		freezes = append(freezes, FreezeOf("", f.Name, f.CreationTimestamp, f.Spec))
	}
	return freezes, nil
}

// byFreeze maps a ReleaseFreeze or ClusterReleaseFreeze that changed (its window, its status
// at a start or an end, its deletion) to the pipelines it may cover. An update is mapped
// from the old object and the new one: the pipelines a selector no longer matches are freed.
func (r *Reconciler) byFreeze(ctx context.Context, o client.Object) []reconcile.Request {
	spec, _ := freeze.Parts(o)
	f := FreezeOf(o.GetNamespace(), o.GetName(), o.GetCreationTimestamp(), *spec)
	var list v1alpha1.PipelineList
	var opts []client.ListOption
	if f.Namespace != "" {
		opts = append(opts, client.InNamespace(f.Namespace))
	}
	if err := r.Client.List(ctx, &list, opts...); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "listing the pipelines of a freeze", "freeze", f.Name)
		return nil
	}
	var reqs []reconcile.Request
	for _, p := range list.Items {
		if f.Selects(p.Namespace, p.Labels) {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&p)})
		}
	}
	return reqs
}
