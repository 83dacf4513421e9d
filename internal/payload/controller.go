package payload

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/clusters"
	"github.com/release-controller/release-controller/internal/eventlog"
	"github.com/release-controller/release-controller/internal/jobcache"
	"github.com/release-controller/release-controller/internal/jobcontract"
	"github.com/release-controller/release-controller/internal/statuswrite"
	"github.com/release-controller/release-controller/internal/verdict"
)

// DefaultJobEventDelay is how long job events wait before the payload is reconciled, so that
// the results of jobs finishing together are written in one status update (see settle.go).
const DefaultJobEventDelay = 200 * time.Millisecond

// Reconciler keeps a ReleasePayload's status in step with its creation and verification jobs.
type Reconciler struct {
	client.Client
	// Jobs holds the payloads' Jobs and ProwJobs.
	Jobs *jobcache.Cache
	// Clusters holds the jobs of verifications that run on other clusters; nil: none may.
	Clusters *clusters.Jobs
	Clock    clock.PassiveClock
	// JobEventDelay batches job events; zero uses DefaultJobEventDelay.
	JobEventDelay time.Duration
	// Workers is how many payloads are reconciled at once; zero uses DefaultWorkers.
	Workers int
	// Events records the payloads' Events; nil: the manager's recorder.
	Events events.EventRecorder

	// bursts holds the payloads whose job events are being gathered into one status write;
	// written, the status writes the cache may not show yet.
	bursts  statuswrite.Window
	written statuswrite.Tracker[struct{}]
	report  eventlog.Recorder
}

// ConflictRetryDelay is how soon a payload whose status write met a newer version is
// reconciled again: the cache is a moment behind a write (its own, or the stream
// controller's payloadImage), whose event a status-only update does not bring.
const ConflictRetryDelay = 50 * time.Millisecond

// DefaultWorkers is how many payloads are reconciled at once. Reconciles mostly wait for the
// API server's answer to their status write, so several keep up with many finishing jobs.
const DefaultWorkers = 8

// Payloads and the creation jobs' pods are read from the manager's cache, Jobs and ProwJobs
// from the job cache's informers: list and watch only. The status is written with an update
// of the status subresource.
// +kubebuilder:rbac:groups=release-controller.dev,resources=releasepayloads,verbs=list;watch
// +kubebuilder:rbac:groups=release-controller.dev,resources=releasepayloads/status,verbs=update
// +kubebuilder:rbac:groups=batch,resources=jobs,verbs=list;watch
// +kubebuilder:rbac:groups=prow.k8s.io,resources=prowjobs,verbs=list;watch
// +kubebuilder:rbac:groups="",resources=pods,verbs=list;watch

// Reconcile reads the payload and its jobs from the cache, computes the status and writes it
// once, only when it changed. A step that fails (reading the jobs, a status that would change
// another writer's fields, the write) takes one path: the status to write is then FailedStatus
// (Ready=False saying why, Reconciling ProgressingWithRetry), and report.Finish records one
// Warning Event per failure and returns the error controller-runtime logs once and retries.
// A write that meets a newer version only requeues, silently: the cache is a moment behind.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	now := r.Clock.Now()
	wait := r.settleWait(req.NamespacedName, now)
	var payload v1alpha1.ReleasePayload
	if err := r.Get(ctx, req.NamespacedName, &payload); err != nil {
		r.bursts.Close(req.NamespacedName)
		r.written.Forget(req.NamespacedName)
		if apierrors.IsNotFound(err) {
			return ctrl.Result{}, r.forgetClusters(ctx, req.NamespacedName)
		}
		return ctrl.Result{}, err
	}
	if _, behind := r.written.Behind(req.NamespacedName, payload.ResourceVersion); behind {
		return ctrl.Result{RequeueAfter: ConflictRetryDelay}, nil
	}
	status, err := r.compute(ctx, &payload, now)
	switch {
	case err != nil:
		failed := FailedStatus(&payload, err, metav1.NewTime(now))
		status = &failed
	case status == nil:
		return ctrl.Result{}, nil // enqueued again once the clusters' jobs are listed
	case wait > 0 && !WriteBeforeSettled(payload.Status.Phase, status.Phase):
		// While the payload's jobs are still changing, only a verdict is written at once; the
		// rest waits for the burst to settle, so that it is written once.
		return ctrl.Result{RequeueAfter: wait}, nil
	}
	r.bursts.Close(req.NamespacedName)
	result, writeErr := r.writeStatus(ctx, &payload, *status, now)
	return result, r.report.Finish(ctx, &payload, errors.Join(err, writeErr))
}

// compute reads the payload's jobs and computes its status; nil while a cluster's jobs are not
// listed yet. The errors are eventlog Failures.
func (r *Reconciler) compute(ctx context.Context, payload *v1alpha1.ReleasePayload, now time.Time) (*v1alpha1.ReleasePayloadStatus, error) {
	obs, err := r.observe(ctx, payload)
	if err != nil {
		return nil, eventlog.Step(v1alpha1.ReasonReconcileFailed, "Observe", "reading the payload's jobs", err)
	}
	ready, err := r.observeClusters(ctx, payload, &obs)
	if err != nil {
		return nil, eventlog.Step(v1alpha1.ReasonReconcileFailed, "Observe", "reading the payload's jobs on its verification clusters", err)
	}
	if !ready {
		return nil, nil
	}
	status := ComputeStatus(payload, obs, metav1.NewTime(now))
	if foreign := v1alpha1.ForeignChanges(v1alpha1.WriterPayload, &payload.Status, &status); len(foreign) > 0 {
		return nil, eventlog.Step(v1alpha1.ReasonReconcileFailed, "WriteStatus", "writing the status",
			fmt.Errorf("the computed status changes fields the payload controller does not own: %v", foreign))
	}
	return &status, nil
}

// writeStatus writes status when it differs from the payload's, then reports what changed.
// A conflict requeues (the cache is behind a write); the payload gone is no error.
func (r *Reconciler) writeStatus(ctx context.Context, payload *v1alpha1.ReleasePayload, status v1alpha1.ReleasePayloadStatus, now time.Time) (ctrl.Result, error) {
	if equality.Semantic.DeepEqual(status, payload.Status) {
		return ctrl.Result{}, nil
	}
	key := client.ObjectKeyFromObject(payload)
	// A verdict its evidence does not give was written by someone else; no other controller
	// acted on it (verdict.Of), and this write replaces it.
	untrusted := verdict.IsVerdict(payload.Status.Phase) && verdict.Of(payload) != payload.Status.Phase
	// An update of the status subresource, not a patch: the API server takes the status from
	// it and keeps the rest (spec, metadata, managed fields) of the stored object, and skips
	// what a patch costs it (encoding the stored object, merging, decoding the result again).
	// So the request carries the status alone: a payload's spec can hold a thousand
	// components, which the API server would decode for nothing. Its resourceVersion makes a
	// write based on a stale cache fail and retry, so a run recorded by an earlier write is
	// never dropped.
	old := payload.DeepCopy()
	payload.Status = status
	write := &v1alpha1.ReleasePayload{
		ObjectMeta: metav1.ObjectMeta{Namespace: payload.Namespace, Name: payload.Name, ResourceVersion: payload.ResourceVersion},
		Status:     status,
	}
	if err := r.Status().Update(ctx, write); err != nil {
		switch {
		case apierrors.IsNotFound(err):
			return ctrl.Result{}, nil // deleted meanwhile
		case apierrors.IsConflict(err):
			return ctrl.Result{RequeueAfter: ConflictRetryDelay}, nil
		}
		return ctrl.Result{}, eventlog.Step(v1alpha1.ReasonReconcileFailed, "WriteStatus", "writing the status", err)
	}
	payload.ResourceVersion = write.ResourceVersion
	StatusWrites.Inc()
	r.written.Wrote(key, old.ResourceVersion, payload.ResourceVersion, struct{}{})
	if untrusted {
		r.report.Warningf(ctx, payload, nil, v1alpha1.EventVerdictCorrected, "Decide",
			"the status said %s, which the payload's recorded runs do not give; corrected to %s (nothing was published, signed or promoted on it)", old.Status.Phase, payload.Status.Phase)
	}
	r.reportTransitions(ctx, payload, &old.Status, now)
	return ctrl.Result{}, nil
}

// settleWait is how much longer the payload's burst of job events holds its status write
// back at now (see SettleWait); zero without a burst.
func (r *Reconciler) settleWait(key types.NamespacedName, now time.Time) time.Duration {
	span, ok := r.bursts.Get(key)
	if !ok {
		return 0
	}
	return SettleWait(span.First, span.Last, now, SettleQuietFactor*r.JobEventDelay, MaxJobEventDelayFactor*r.JobEventDelay)
}

// reportTransitions reports what the status write changed, once it is written: an Event per
// Transition, and the verdict and run metrics.
func (r *Reconciler) reportTransitions(ctx context.Context, p *v1alpha1.ReleasePayload, old *v1alpha1.ReleasePayloadStatus, now time.Time) {
	for _, t := range Transitions(old, &p.Status) {
		if t.Type == corev1.EventTypeWarning {
			r.report.Warningf(ctx, p, nil, t.Reason, t.Action, "%s", t.Message)
		} else {
			r.report.Eventf(ctx, p, nil, t.Reason, t.Action, "%s", t.Message)
		}
	}
	observeTransitions(p, old, now)
}

// observe reads the payload's jobs from the job cache, and its creation jobs' pods from the
// manager's cache through the payload-key index.
func (r *Reconciler) observe(ctx context.Context, payload *v1alpha1.ReleasePayload) (Observations, error) {
	var obs Observations
	records, err := r.Jobs.ByPayload(ctx, payload.Namespace, payload.Name)
	if err != nil {
		return obs, fmt.Errorf("listing jobs of payload %s/%s: %w", payload.Namespace, payload.Name, err)
	}
	for _, rec := range records {
		switch {
		case rec.Kind == v1alpha1.RunKindJob && rec.JobType == v1alpha1.JobTypeCreation:
			obs.CreationJobs = append(obs.CreationJobs, rec.CreationJob())
		case rec.JobType == v1alpha1.JobTypeVerification:
			if run, ok := observedRun(rec); ok {
				obs.Runs = append(obs.Runs, run)
			}
		}
	}
	obs.Runs = append(obs.Runs, RefusedRuns(payload, records)...)
	if len(obs.CreationJobs) > 0 {
		var pods corev1.PodList
		key := client.MatchingFields{jobcache.IndexPayloadKey: jobcontract.PayloadKey(payload.Namespace, payload.Name)}
		if err := r.List(ctx, &pods, key); err != nil {
			return obs, fmt.Errorf("listing pods of payload %s/%s: %w", payload.Namespace, payload.Name, err)
		}
		obs.CreationPods = pods.Items
	}
	return obs, nil
}

// IndexPods indexes the manager's cached Pods by jobcache.IndexPayloadKey: creation jobs' pods carry
// their job's labels and say why a build failed. It is registered once per manager.
func IndexPods(ctx context.Context, indexer client.FieldIndexer) error {
	if err := indexer.IndexField(ctx, &corev1.Pod{}, jobcache.IndexPayloadKey, func(obj client.Object) []string {
		if key := jobcontract.PayloadKeyOf(obj); key != "" {
			return []string{key}
		}
		return nil
	}); err != nil {
		return fmt.Errorf("indexing pods: %w", err)
	}
	return nil
}

// SetupWithManager registers the controller; IndexPods must have been called on mgr, and
// r.Jobs added to it.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	r.setup(mgr)
	return ctrl.NewControllerManagedBy(mgr).
		Named("releasepayload").
		WithOptions(controller.Options{MaxConcurrentReconciles: r.Workers}).
		Watches(&v1alpha1.ReleasePayload{}, r.payloadEvents(), builder.WithPredicates(ignoreStatusOnlyUpdates{})).
		WatchesRawSource(r.Jobs.Source(r.recordEvent)).
		WatchesRawSource(r.clusterSource()).
		WatchesMetadata(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(r.secretEvent)).
		Watches(&corev1.Pod{}, r.jobEvents()).
		Complete(r)
}

// setup fills in r's defaults.
func (r *Reconciler) setup(mgr ctrl.Manager) {
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	r.bursts.Clock, r.written.Clock = r.Clock, r.Clock
	if r.JobEventDelay == 0 {
		r.JobEventDelay = DefaultJobEventDelay
	}
	if r.Workers == 0 {
		r.Workers = DefaultWorkers
	}
	if r.Events == nil {
		r.Events = mgr.GetEventRecorder(eventlog.Reporter)
	}
	r.report = eventlog.Recorder{Events: r.Events}
}

// clusterSource brings the payloads whose jobs on other clusters change, and those whose
// cluster came back, went away or was first listed.
func (r *Reconciler) clusterSource() source.Source {
	if r.Clusters == nil {
		return source.Func(func(context.Context, workqueue.TypedRateLimitingInterface[reconcile.Request]) error { return nil })
	}
	return r.Clusters.Source(ClusterUser, r.recordEvent)
}

// jobEvent enqueues the payload with key after JobEventDelay and notes the event, so that the
// reconcile waits until the payload's jobs are quiet (see SettleWait).
func (r *Reconciler) jobEvent(key string, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	r.jobEventAfter(key, q, r.JobEventDelay)
}

// jobEventAfter notes a job event of the payload with key and reconciles it after delay.
func (r *Reconciler) jobEventAfter(key string, q workqueue.TypedRateLimitingInterface[reconcile.Request], delay time.Duration) {
	if key == "" {
		return
	}
	namespace, name := jobcontract.SplitPayloadKey(key)
	payload := types.NamespacedName{Namespace: namespace, Name: name}
	r.bursts.Mark(payload)
	if delay == 0 {
		q.Add(reconcile.Request{NamespacedName: payload})
		return
	}
	q.AddAfter(reconcile.Request{NamespacedName: payload}, delay)
}

// recordEvent handles a change of one of the payload's job records as jobEvent does, except
// when it is a run that finished and no run of the payload is left running: then the verdict
// may be due, and the payload is reconciled at once (see RunsFinished).
func (r *Reconciler) recordEvent(rec *jobcache.Record, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	delay := r.JobEventDelay
	if r.lastRunFinished(rec) {
		delay = 0
	}
	r.jobEventAfter(rec.PayloadKey, q, delay)
}

// lastRunFinished reports whether rec is of a finished run and every run of its payload is
// over. Before the job cache has synced (a start) it is false: the lookup would wait for the
// sync in the informer's handler.
func (r *Reconciler) lastRunFinished(rec *jobcache.Record) bool {
	if rec.PayloadKey == "" || !rec.IsRun() || !rec.State.IsTerminal() || !r.Jobs.HasSynced() {
		return false
	}
	namespace, name := jobcontract.SplitPayloadKey(rec.PayloadKey)
	records, err := r.Jobs.ByPayload(context.Background(), namespace, name)
	return err == nil && RunsFinished(records)
}

// payloadEvents enqueues a payload on its events; a new payload's creation is handled as a
// job event (see OpensBurst).
func (r *Reconciler) payloadEvents() handler.EventHandler {
	enqueue := func(obj client.Object, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		q.Add(reconcile.Request{NamespacedName: client.ObjectKeyFromObject(obj)})
	}
	return handler.Funcs{
		CreateFunc: func(_ context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			if p, ok := e.Object.(*v1alpha1.ReleasePayload); ok && OpensBurst(&p.Status) {
				r.jobEvent(jobcontract.PayloadKey(p.Namespace, p.Name), q)
				return
			}
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

// jobEvents handles events of objects labelled as a payload's jobs (a creation job's pods)
// as jobEvent does.
func (r *Reconciler) jobEvents() handler.EventHandler {
	enqueue := func(obj client.Object, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		r.jobEvent(jobcontract.PayloadKeyOf(obj), q)
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
// the status is recomputed from the jobs, so such an update has nothing new to react to;
// unless it holds a verdict its evidence does not give (verdict.Of), which someone else wrote
// and this controller corrects at once.
type ignoreStatusOnlyUpdates struct{}

func (ignoreStatusOnlyUpdates) Create(event.CreateEvent) bool   { return true }
func (ignoreStatusOnlyUpdates) Delete(event.DeleteEvent) bool   { return false }
func (ignoreStatusOnlyUpdates) Generic(event.GenericEvent) bool { return true }
func (ignoreStatusOnlyUpdates) Update(e event.UpdateEvent) bool {
	return e.ObjectOld.GetGeneration() != e.ObjectNew.GetGeneration() ||
		!equality.Semantic.DeepEqual(e.ObjectOld.GetLabels(), e.ObjectNew.GetLabels()) ||
		!equality.Semantic.DeepEqual(e.ObjectOld.GetAnnotations(), e.ObjectNew.GetAnnotations()) ||
		forgedVerdict(e.ObjectNew)
}

func forgedVerdict(o client.Object) bool {
	p, ok := o.(*v1alpha1.ReleasePayload)
	return ok && verdict.Of(p) != p.Status.Phase
}
