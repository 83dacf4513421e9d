package payload

import (
	"context"
	"fmt"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	prowv1 "github.com/release-controller/release-controller/api/prow/v1"
	"github.com/release-controller/release-controller/api/v1alpha1"
)

// IndexPayloadKey indexes Jobs and ProwJobs by the PayloadKey of the payload they belong to.
const IndexPayloadKey = "release-controller.dev/payload-key"

// DefaultJobEventDelay is how long job events wait before the payload is reconciled, so that
// the results of jobs finishing together are written in one status update.
const DefaultJobEventDelay = 200 * time.Millisecond

// Reconciler keeps a ReleasePayload's status in step with its creation and verification jobs.
type Reconciler struct {
	client.Client
	Clock clock.PassiveClock
	// WatchProwJobs is set when the cluster serves prow.k8s.io/v1 ProwJobs.
	WatchProwJobs bool
	// JobEventDelay batches job events; zero uses DefaultJobEventDelay.
	JobEventDelay time.Duration
	// Workers is how many payloads are reconciled at once; zero uses DefaultWorkers.
	Workers int

	bursts bursts
}

// DefaultWorkers is how many payloads are reconciled at once. Reconciles mostly wait for the
// API server's answer to their status write, so several keep up with many finishing jobs.
const DefaultWorkers = 8

// +kubebuilder:rbac:groups=release-controller.dev,resources=releasepayloads,verbs=get;list;watch
// +kubebuilder:rbac:groups=release-controller.dev,resources=releasepayloads/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=batch,resources=jobs,verbs=get;list;watch
// +kubebuilder:rbac:groups=prow.k8s.io,resources=prowjobs,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch

// Reconcile reads the payload and its jobs from the cache, computes the status and writes it
// once, only when it changed.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	now := r.Clock.Now()
	wait := r.bursts.wait(req.NamespacedName, now, r.JobEventDelay, MaxJobEventDelayFactor*r.JobEventDelay)
	var payload v1alpha1.ReleasePayload
	if err := r.Get(ctx, req.NamespacedName, &payload); err != nil {
		r.bursts.end(req.NamespacedName)
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	obs, err := r.observe(ctx, &payload)
	if err != nil {
		return ctrl.Result{}, err
	}
	status := ComputeStatus(&payload, obs, metav1.NewTime(now))
	// While the payload's jobs are still changing, only a verdict is written at once; the rest
	// waits for the burst to settle, so that it is written once.
	if wait > 0 && !WriteBeforeSettled(payload.Status.Phase, status.Phase) {
		return ctrl.Result{RequeueAfter: wait}, nil
	}
	r.bursts.end(req.NamespacedName)
	if equality.Semantic.DeepEqual(status, payload.Status) {
		return ctrl.Result{}, nil
	}
	// The optimistic lock makes a write based on a stale cache fail and retry, so a run
	// recorded by an earlier write is never dropped.
	patch := client.MergeFromWithOptions(payload.DeepCopy(), client.MergeFromWithOptimisticLock{})
	payload.Status = status
	if err := r.Status().Patch(ctx, &payload, patch); err != nil {
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			return ctrl.Result{Requeue: true}, nil
		}
		return ctrl.Result{}, fmt.Errorf("writing status of payload %s: %w", req, err)
	}
	StatusWrites.Inc()
	return ctrl.Result{}, nil
}

// observe lists the payload's jobs from the cache through the payload-key index.
func (r *Reconciler) observe(ctx context.Context, payload *v1alpha1.ReleasePayload) (Observations, error) {
	key := client.MatchingFields{IndexPayloadKey: PayloadKey(payload.Namespace, payload.Name)}
	var obs Observations
	var jobs batchv1.JobList
	if err := r.List(ctx, &jobs, key); err != nil {
		return obs, fmt.Errorf("listing jobs of payload %s/%s: %w", payload.Namespace, payload.Name, err)
	}
	for i := range jobs.Items {
		job := &jobs.Items[i]
		switch job.Labels[v1alpha1.LabelJobType] {
		case v1alpha1.JobTypeCreation:
			obs.CreationJobs = append(obs.CreationJobs, *job)
		case v1alpha1.JobTypeVerification:
			if run, ok := ObserveJob(job); ok {
				obs.Runs = append(obs.Runs, run)
			}
		}
	}
	if len(obs.CreationJobs) > 0 {
		var pods corev1.PodList
		if err := r.List(ctx, &pods, key); err != nil {
			return obs, fmt.Errorf("listing pods of payload %s/%s: %w", payload.Namespace, payload.Name, err)
		}
		obs.CreationPods = pods.Items
	}
	if !r.WatchProwJobs {
		return obs, nil
	}
	var prowJobs prowv1.ProwJobList
	if err := r.List(ctx, &prowJobs, key); err != nil {
		return obs, fmt.Errorf("listing prowjobs of payload %s/%s: %w", payload.Namespace, payload.Name, err)
	}
	for i := range prowJobs.Items {
		if run, ok := ObserveProwJob(&prowJobs.Items[i]); ok {
			obs.Runs = append(obs.Runs, run)
		}
	}
	return obs, nil
}

// IndexJobs indexes Jobs (and ProwJobs, when served) by IndexPayloadKey. The payload and the
// stream controllers both read through the index; it is registered once per manager.
func IndexJobs(ctx context.Context, indexer client.FieldIndexer, prowJobs bool) error {
	indexPayloadKey := func(obj client.Object) []string {
		if key := PayloadKeyOfJob(obj); key != "" {
			return []string{key}
		}
		return nil
	}
	if err := indexer.IndexField(ctx, &batchv1.Job{}, IndexPayloadKey, indexPayloadKey); err != nil {
		return fmt.Errorf("indexing jobs: %w", err)
	}
	// Creation jobs' pods carry the same labels; they say why a build failed.
	if err := indexer.IndexField(ctx, &corev1.Pod{}, IndexPayloadKey, indexPayloadKey); err != nil {
		return fmt.Errorf("indexing pods: %w", err)
	}
	if prowJobs {
		if err := indexer.IndexField(ctx, &prowv1.ProwJob{}, IndexPayloadKey, indexPayloadKey); err != nil {
			return fmt.Errorf("indexing prowjobs: %w", err)
		}
	}
	return nil
}

// SetupWithManager registers the controller; IndexJobs must have been called on mgr.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	if r.JobEventDelay == 0 {
		r.JobEventDelay = DefaultJobEventDelay
	}
	if r.Workers == 0 {
		r.Workers = DefaultWorkers
	}
	b := ctrl.NewControllerManagedBy(mgr).
		Named("releasepayload").
		WithOptions(controller.Options{MaxConcurrentReconciles: r.Workers}).
		For(&v1alpha1.ReleasePayload{}, builder.WithPredicates(ignoreStatusOnlyUpdates{})).
		Watches(&batchv1.Job{}, r.jobEvents()).
		Watches(&corev1.Pod{}, r.jobEvents())
	if r.WatchProwJobs {
		b = b.Watches(&prowv1.ProwJob{}, r.jobEvents())
	}
	return b.Complete(r)
}

// jobEvents enqueues a job's payload after JobEventDelay and notes the event, so that the
// reconcile waits until the payload's jobs are quiet (see SettleWait).
func (r *Reconciler) jobEvents() handler.EventHandler {
	enqueue := func(obj client.Object, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		key := PayloadKeyOfJob(obj)
		if key == "" {
			return
		}
		namespace, name, _ := strings.Cut(key, "/")
		payload := types.NamespacedName{Namespace: namespace, Name: name}
		r.bursts.event(payload, r.Clock.Now())
		q.AddAfter(reconcile.Request{NamespacedName: payload}, r.JobEventDelay)
	}
	return handler.Funcs{
		CreateFunc: func(_ context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(e.Object, q)
		},
		UpdateFunc: func(_ context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(e.ObjectNew, q)
		},
		DeleteFunc: func(_ context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(e.Object, q)
		},
		GenericFunc: func(_ context.Context, e event.GenericEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(e.Object, q)
		},
	}
}

// ignoreStatusOnlyUpdates drops payload updates that changed only the status (our own writes):
// the status is recomputed from the jobs, so such an update has nothing new to react to.
type ignoreStatusOnlyUpdates struct{}

func (ignoreStatusOnlyUpdates) Create(event.CreateEvent) bool   { return true }
func (ignoreStatusOnlyUpdates) Delete(event.DeleteEvent) bool   { return false }
func (ignoreStatusOnlyUpdates) Generic(event.GenericEvent) bool { return true }
func (ignoreStatusOnlyUpdates) Update(e event.UpdateEvent) bool {
	return e.ObjectOld.GetGeneration() != e.ObjectNew.GetGeneration() ||
		!equality.Semantic.DeepEqual(e.ObjectOld.GetLabels(), e.ObjectNew.GetLabels()) ||
		!equality.Semantic.DeepEqual(e.ObjectOld.GetAnnotations(), e.ObjectNew.GetAnnotations())
}
