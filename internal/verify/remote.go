package verify

import (
	"slices"

	batchv1 "k8s.io/api/batch/v1"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/clusters"
)

// ClusterNamespace is where the Jobs of v, which names a cluster, are created on that cluster:
// cluster.namespace, else a namespace of the same name as the payload's.
func ClusterNamespace(p *v1alpha1.ReleasePayload, v *v1alpha1.Verification) string {
	return RunNamespace(p.Namespace, v)
}

// RunNamespace is where the Jobs of v, a verification of an object of namespace home, are
// created on the cluster v names: cluster.namespace, else a namespace named home.
func RunNamespace(home string, v *v1alpha1.Verification) string {
	if v.Cluster != nil && v.Cluster.Namespace != "" {
		return v.Cluster.Namespace
	}
	return home
}

// NewClusterJob builds the batch/v1 Job of a run of a verification that names a cluster: the
// Job NewJob builds, in ClusterNamespace, carrying the payload's namespace in a label when it
// differs, and without an owner reference: the payload is not on that cluster, and a garbage
// collector there would delete a Job whose owner it cannot find. Retention deletes it instead.
func NewClusterJob(p *v1alpha1.ReleasePayload, l Launch) (*batchv1.Job, error) {
	o := payloadRun(p, l, ClusterNamespace(p, &l.Verification))
	o.Owner = nil
	return BuildJob(&l.Verification, o, p.Spec.PayloadVerificationConfig.ServiceAccount, Env(p, l))
}

// ClusterOf is the cluster the Jobs of p's verification v run on; ok is false for the
// controller's own cluster.
func ClusterOf(p *v1alpha1.ReleasePayload, v *v1alpha1.Verification) (key clusters.Key, ok bool) {
	return ClusterKeyOf(p.Namespace, v)
}

// ClusterKeyOf is the cluster the Jobs of v, a verification of an object of namespace home
// (whose kubeconfig Secrets it names), run on; ok is false for the controller's own cluster.
func ClusterKeyOf(home string, v *v1alpha1.Verification) (key clusters.Key, ok bool) {
	if v.Cluster == nil || v.Cluster.SecretRef == "" {
		return clusters.Key{}, false
	}
	return clusters.Key{Namespace: home, Secret: v.Cluster.SecretRef}, true
}

// Clusters adds to used the clusters the verifications of p run on, each with the namespaces
// its Jobs are created in, and returns it (a new map when used is nil).
func Clusters(used map[clusters.Key][]string, p *v1alpha1.ReleasePayload) map[clusters.Key][]string {
	for i := range p.Spec.PayloadVerificationConfig.Verifications {
		v := &p.Spec.PayloadVerificationConfig.Verifications[i]
		key, ok := ClusterOf(p, v)
		if !ok {
			continue
		}
		if used == nil {
			used = map[clusters.Key][]string{}
		}
		if ns := ClusterNamespace(p, v); !slices.Contains(used[key], ns) {
			used[key] = append(used[key], ns)
		}
	}
	return used
}
