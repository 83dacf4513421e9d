package payload

// Verifications and creation Jobs that run on another cluster (spec.verification[].cluster,
// spec.payloadCreationConfig.cluster): their jobs are read from that cluster's job cache, and
// while it cannot be read their recorded runs stand and the creation result is Unknown naming
// it.

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/buildinput"
	"github.com/release-controller/release-controller/internal/conditions"
	"github.com/release-controller/release-controller/internal/verify"
)

// ClusterUser is the kind under which the payload controller uses remote clusters.
const ClusterUser = "payload"

// CreationJobCluster is the key of the creation Job's cluster among Observations.Clusters
// (whose other keys are verification names, which cannot hold a space).
const CreationJobCluster = "creation job"

// ClusterState is how one verification's cluster can be read now.
type ClusterState struct {
	// Cluster names it (the kubeconfig Secret, namespace/name).
	Cluster string
	// Problem says why its jobs cannot be read ("" when they can); Invalid says the Secret
	// gives no cluster, rather than a cluster that does not answer.
	Problem string
	Invalid bool
}

// observeClusters adds to obs the runs of the payload's verifications that run on other
// clusters, and the state of each of those clusters. ready is false while a cluster that
// answers has not listed its jobs yet: nothing is known of them, so the status must wait (the
// clusters manager enqueues the payload once they are listed).
func (r *Reconciler) observeClusters(ctx context.Context, p *v1alpha1.ReleasePayload, obs *Observations) (ready bool, err error) {
	key := types.NamespacedName{Namespace: p.Namespace, Name: p.Name}
	used := buildinput.AddCluster(verify.Clusters(nil, p), p)
	if r.Clusters == nil {
		if len(used) > 0 {
			return false, fmt.Errorf("the jobs of %s name clusters, and this controller runs no clusters manager", key)
		}
		return true, nil
	}
	views, err := r.Clusters.Use(ctx, ClusterUser, key, used)
	if err != nil {
		return false, err
	}
	ready = true
	for k, view := range views {
		if view.Problem == "" && !view.Synced() {
			ready = false
		}
		if !view.Synced() {
			continue
		}
		records, err := view.Jobs.ByPayload(ctx, p.Namespace, p.Name)
		if err != nil {
			return false, fmt.Errorf("listing jobs on cluster %s: %w", k, err)
		}
		for _, rec := range records {
			if rec.Kind == v1alpha1.RunKindJob && rec.JobType == v1alpha1.JobTypeCreation {
				obs.CreationJobs = append(obs.CreationJobs, rec.CreationJob())
			} else if run, ok := observedRun(rec); ok {
				obs.Runs = append(obs.Runs, run)
			}
		}
	}
	if k, _, ok := buildinput.ClusterOf(p); ok {
		if obs.Clusters == nil {
			obs.Clusters = map[string]ClusterState{}
		}
		obs.Clusters[CreationJobCluster] = ClusterState{Cluster: k.String(), Problem: views[k].Problem, Invalid: views[k].Invalid}
	}
	for i := range p.Spec.PayloadVerificationConfig.Verifications {
		v := &p.Spec.PayloadVerificationConfig.Verifications[i]
		if k, ok := verify.ClusterOf(p, v); ok {
			if obs.Clusters == nil {
				obs.Clusters = map[string]ClusterState{}
			}
			obs.Clusters[v.Name] = ClusterState{Cluster: k.String(), Problem: views[k].Problem, Invalid: views[k].Invalid}
		}
	}
	return ready, nil
}

// secretEvent brings the payloads (and streams) whose verification cluster's kubeconfig Secret
// changed, appeared or went, through the clusters manager, which knows who uses it.
func (r *Reconciler) secretEvent(_ context.Context, obj client.Object) []reconcile.Request {
	if r.Clusters != nil {
		r.Clusters.SecretChanged(obj.GetNamespace(), obj.GetName())
	}
	return nil
}

// forgetClusters releases the clusters of a deleted payload.
func (r *Reconciler) forgetClusters(ctx context.Context, key types.NamespacedName) error {
	if r.Clusters == nil {
		return nil
	}
	_, err := r.Clusters.Use(ctx, ClusterUser, key, nil)
	return err
}

// unreadable are the verifications whose cluster cannot be read now, with why.
func unreadable(states map[string]ClusterState) map[string]ClusterState {
	out := map[string]ClusterState{}
	for name, s := range states {
		if s.Problem != "" {
			out[name] = s
		}
	}
	return out
}

// markUnreadable sets the state of each verification whose cluster cannot be read and that
// has no result yet to Unknown, with the cluster's problem, which its unfinished runs say too:
// they keep their last seen state (a run that is Unknown was lost, and would be run again),
// nothing is launched for the verification, and it is read again once the cluster answers.
func markUnreadable(verifications []v1alpha1.VerificationStatus, states map[string]ClusterState) {
	for i := range verifications {
		v := &verifications[i]
		s, ok := states[v.Name]
		if !ok || s.Problem == "" || v.State != v1alpha1.JobPending {
			continue
		}
		problem := conditions.Truncate(s.Problem, conditions.MaxErrorLength)
		v.State = v1alpha1.JobUnknown
		v.Message = problem + "; its runs are kept as last seen and read again when the cluster answers"
		for j := range v.Runs {
			if !v.Runs[j].State.IsTerminal() {
				v.Runs[j].Message = problem
			}
		}
	}
}

// ClusterCondition is the payload's ClusterUnreachable condition for the clusters its
// verifications and creation job run on: True naming each cluster that cannot be read and its
// jobs, else False naming the clusters; nil when none names a cluster.
func ClusterCondition(states map[string]ClusterState) *metav1.Condition {
	if len(states) == 0 {
		return nil
	}
	byCluster := map[string][]string{}
	problems := map[string]ClusterState{}
	for name, s := range states {
		byCluster[s.Cluster] = append(byCluster[s.Cluster], name)
		if s.Problem != "" {
			problems[s.Cluster] = s
		}
	}
	names := slices.Sorted(maps.Keys(byCluster))
	if len(problems) == 0 {
		return &metav1.Condition{Type: v1alpha1.ConditionClusterUnreachable, Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonClustersReachable,
			Message: "the job clusters answer: " + strings.Join(names, ", ")}
	}
	reason := v1alpha1.ReasonClusterUnreachable
	var parts []string
	for _, c := range names {
		s, ok := problems[c]
		if !ok {
			continue
		}
		if s.Invalid {
			reason = v1alpha1.ReasonKubeconfigInvalid
		}
		parts = append(parts, fmt.Sprintf("%s (%s)", s.Problem, usersOf(byCluster[c])))
	}
	return &metav1.Condition{Type: v1alpha1.ConditionClusterUnreachable, Status: metav1.ConditionTrue, Reason: reason, Message: strings.Join(parts, "; ")}
}

// usersOf names the jobs of a cluster: the creation job (CreationJobCluster) and the
// verifications among names.
func usersOf(names []string) string {
	var parts, verifications []string
	for _, n := range names {
		if n == CreationJobCluster {
			parts = append(parts, "the creation job")
		} else {
			verifications = append(verifications, n)
		}
	}
	if len(verifications) > 0 {
		slices.Sort(verifications)
		parts = append(parts, "verifications "+strings.Join(verifications, ", "))
	}
	return strings.Join(parts, "; ")
}

// UnreadableCreation is the creation result while the creation job's cluster cannot be read:
// Unknown with the cluster's problem, naming the job last seen (so that it is not created
// again), read again when the cluster answers.
func UnreadableCreation(last v1alpha1.ReleaseCreationJobResult, problem string) v1alpha1.ReleaseCreationJobResult {
	return v1alpha1.ReleaseCreationJobResult{
		Namespace: last.Namespace, Name: last.Name, Status: v1alpha1.CreationJobUnknown,
		Message: conditions.Truncate(problem, conditions.MaxErrorLength) + "; the creation job is read again when the cluster answers",
	}
}
