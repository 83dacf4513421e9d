package stream

// The remote clusters a stream's verifications and creation Jobs run on
// (spec.verification[].cluster, spec.creationCluster): the stream controller creates their
// Jobs there and collects them there.

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/types"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/buildinput"
	"github.com/release-controller/release-controller/internal/clusters"
	"github.com/release-controller/release-controller/internal/jobcache"
	"github.com/release-controller/release-controller/internal/verify"
)

// ClusterUser is the kind under which the stream controller uses remote clusters.
const ClusterUser = "stream"

// The kubeconfig Secrets of remote clusters are read in the streams' namespaces: their
// metadata from the manager's cache (a change rebuilds the cluster), their data from the API
// server.
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch

// useClusters declares the clusters the stream's payloads run verifications and creation Jobs
// on, and keeps a
// view of each for the pass. Without a clusters manager, none is used.
func (s *streamSync) useClusters(ctx context.Context) {
	if s.r.Clusters == nil {
		return
	}
	var used map[clusters.Key][]string
	for i := range s.payloads {
		used = verify.Clusters(used, &s.payloads[i])
		used = buildinput.AddCluster(used, &s.payloads[i])
	}
	views, err := s.r.Clusters.Use(ctx, ClusterUser, types.NamespacedName{Namespace: s.stream.Namespace, Name: s.stream.Name}, used)
	if err != nil {
		s.fail(s.stream, v1alpha1.ReasonReconcileFailed, "Verify", "watching the verification clusters", err)
		return
	}
	s.clusters = views
}

// forgetClusters releases the clusters of a deleted stream.
func (r *Reconciler) forgetClusters(ctx context.Context, key types.NamespacedName) error {
	if r.Clusters == nil {
		return nil
	}
	_, err := r.Clusters.Use(ctx, ClusterUser, key, nil)
	return err
}

// clusterView is the view of the cluster verification v of p runs on; ok is false for the
// controller's own cluster. A cluster that cannot be used now gives an error naming it.
func (s *streamSync) clusterView(p *v1alpha1.ReleasePayload, v *v1alpha1.Verification) (view clusters.View, ok bool, err error) {
	key, remote := verify.ClusterOf(p, v)
	if !remote {
		return clusters.View{}, false, nil
	}
	view, known := s.clusters[key]
	switch {
	case !known:
		return view, true, fmt.Errorf("cluster %s of verification %s is not watched", key, v.Name)
	case view.Problem != "":
		return view, true, fmt.Errorf("verification %s: %s", v.Name, view.Problem)
	}
	return view, true, nil
}

// remoteRecords are the records of p's jobs on the clusters its verifications name; synced is
// false while one of those clusters' jobs are not listed yet (or it cannot be read), when
// nothing may be launched there.
func (s *streamSync) remoteRecords(ctx context.Context, p *v1alpha1.ReleasePayload) (records []*jobcache.Record, synced map[clusters.Key]bool, err error) {
	synced = map[clusters.Key]bool{}
	for key := range verify.Clusters(nil, p) {
		view := s.clusters[key]
		if !view.Synced() {
			continue
		}
		rs, err := view.Jobs.ByPayload(ctx, p.Namespace, p.Name)
		if err != nil {
			return nil, nil, err
		}
		records = append(records, rs...)
		synced[key] = true
	}
	return records, synced, nil
}
