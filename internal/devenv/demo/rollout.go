package demo

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
)

// Rollout plays the Kubernetes deployment controller for the demo's apps (Deployments
// labelled AppLabel), which the embedded API server lacks: once a Deployment's generation
// changes it writes the status of a finished rollout, every replica updated, ready and
// available, so a promotion becomes ready as it would on a cluster. Nothing runs the pods.
type Rollout struct {
	Client client.Client
}

// SetupWithManager watches the demo's apps.
func (r *Rollout) SetupWithManager(mgr ctrl.Manager) error {
	labelled := predicate.NewPredicateFuncs(func(o client.Object) bool { return o.GetLabels()[AppLabel] == "true" })
	return ctrl.NewControllerManagedBy(mgr).
		Named("demo-rollout").
		For(&appsv1.Deployment{}, builder.WithPredicates(labelled)).
		Complete(r)
}

// Reconcile writes the rolled-out status of a demo app.
func (r *Rollout) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var d appsv1.Deployment
	if err := r.Client.Get(ctx, req.NamespacedName, &d); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	status := RolledOut(&d, metav1.Now())
	if equality.Semantic.DeepEqual(withoutTimes(d.Status), withoutTimes(status)) {
		return ctrl.Result{}, nil
	}
	d.Status = status
	if err := r.Client.Status().Update(ctx, &d); err != nil {
		if apierrors.IsConflict(err) {
			// A newer version exists: its event brings the Deployment back.
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, err
	}
	return ctrl.Result{}, nil
}

// RolledOut is the status the deployment controller writes once d's rollout is complete.
// Conditions keep their transition time while their status holds.
func RolledOut(d *appsv1.Deployment, now metav1.Time) appsv1.DeploymentStatus {
	replicas := int32(1)
	if d.Spec.Replicas != nil {
		replicas = *d.Spec.Replicas
	}
	s := appsv1.DeploymentStatus{
		ObservedGeneration: d.Generation,
		Replicas:           replicas,
		UpdatedReplicas:    replicas,
		ReadyReplicas:      replicas,
		AvailableReplicas:  replicas,
	}
	condition := func(t appsv1.DeploymentConditionType, reason, message string) appsv1.DeploymentCondition {
		c := appsv1.DeploymentCondition{Type: t, Status: corev1.ConditionTrue, Reason: reason, Message: message, LastUpdateTime: now, LastTransitionTime: now}
		for _, old := range d.Status.Conditions {
			if old.Type == t && old.Status == c.Status {
				c.LastTransitionTime = old.LastTransitionTime
				if old.Reason == reason && old.Message == message {
					c.LastUpdateTime = old.LastUpdateTime
				}
			}
		}
		return c
	}
	s.Conditions = []appsv1.DeploymentCondition{
		condition(appsv1.DeploymentAvailable, "MinimumReplicasAvailable", "Deployment has minimum availability."),
		condition(appsv1.DeploymentProgressing, "NewReplicaSetAvailable", fmt.Sprintf("Deployment %q has successfully progressed.", d.Name)),
	}
	return s
}

func withoutTimes(s appsv1.DeploymentStatus) appsv1.DeploymentStatus {
	s = *s.DeepCopy()
	for i := range s.Conditions {
		s.Conditions[i].LastUpdateTime, s.Conditions[i].LastTransitionTime = metav1.Time{}, metav1.Time{}
	}
	return s
}
