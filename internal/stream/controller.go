package stream

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/clusters"
	"github.com/release-controller/release-controller/internal/eventlog"
	"github.com/release-controller/release-controller/internal/jobcache"
	"github.com/release-controller/release-controller/internal/registryclient"
	"github.com/release-controller/release-controller/internal/verify"
	"github.com/release-controller/release-controller/internal/version"
)

// IndexStream indexes payloads by their stream's name.
const IndexStream = "spec.payloadCoordinates.stream"

// IndexUpgradeSource indexes streams by the other streams their upgrade verifications start
// from (spec.verification[].from.stream).
const IndexUpgradeSource = "spec.verification.from.stream"

// DefaultImportInterval is how often components followed by tag are resolved again.
const DefaultImportInterval = time.Minute

// DefaultBuildImage runs the creation jobs: the controller's own image, by its version.
var DefaultBuildImage = "release-controller:" + version.Version

// Failure backoff: a pass with a failed step returns the failures as its error, and
// controller-runtime's rate limiter retries the stream after FailureBackoffBase, doubling with
// every failure in a row up to FailureBackoffMax (a success resets it). The cap stays close to
// the import interval, so a stream with a lasting problem (a hand-made upgrade-graph
// ConfigMap, a registry that refuses a push) still imports and creates payloads every few
// minutes.
const (
	FailureBackoffBase = 100 * time.Millisecond
	FailureBackoffMax  = 5 * time.Minute
)

// Reconciler runs the release flow of every ReleaseStream.
type Reconciler struct {
	client.Client
	// APIReader reads payloads with their job templates, which the cache leaves out; nil
	// reads them through Client.
	APIReader client.Reader
	// Jobs holds the payloads' Jobs and ProwJobs, indexed by payload and by stream.
	Jobs *jobcache.Cache
	// Clusters runs the Jobs of verifications that name another cluster; nil: none may.
	Clusters *clusters.Jobs
	Registry *registryclient.Client
	Clock    clock.PassiveClock
	// ImportInterval is how often components followed by tag are resolved again.
	ImportInterval time.Duration
	// RetryBackoff spaces the retries of failed verification runs.
	RetryBackoff verify.Backoff
	// BuildImage runs the creation job's `release-controller payload build`.
	BuildImage string
	// BuildServiceAccount is the creation job's service account (it reads payloads).
	BuildServiceAccount string
	// RegistryAuthSecret names the kubernetes.io/dockerconfigjson Secret, in each payload's
	// namespace, that the creation and verification Jobs pull and push with (see
	// jobcontract.WithRegistryAuth); empty: none.
	RegistryAuthSecret string
	// WatchProwJobs is set when the cluster serves ProwJobs.
	WatchProwJobs bool
	// ProwJobNamespaces are the namespaces, besides a payload's own, where its verifications
	// may create ProwJobs (--prowjob-namespace); a ProwJob bound elsewhere is a failed run.
	ProwJobNamespaces []string
	// Events records the Events of streams and payloads; nil: the manager's recorder.
	Events events.EventRecorder

	imports importTimes
	report  eventlog.Recorder
}

// Streams, payloads and the ConfigMaps of upgrade graphs and verification templates are read
// from the manager's cache (list, watch); a payload with inline job templates (stored before
// templatesFrom) is read once from the API server (get) for them, which the cache leaves out.
// Templates ConfigMaps are created and collected. Payloads are created, annotated (patch) and collected; statuses are
// patched, but a new ProwJob's, which is updated as Prow expects. Jobs and ProwJobs are created
// and collected (their reads are the job cache's, see internal/jobcache).
// +kubebuilder:rbac:groups=release-controller.dev,resources=releasestreams,verbs=list;watch
// +kubebuilder:rbac:groups=release-controller.dev,resources=releasestreams/status,verbs=patch
// +kubebuilder:rbac:groups=release-controller.dev,resources=releasepayloads,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=release-controller.dev,resources=releasepayloads/status,verbs=patch
// +kubebuilder:rbac:groups=batch,resources=jobs,verbs=create;delete
// +kubebuilder:rbac:groups=prow.k8s.io,resources=prowjobs,verbs=create;delete
// +kubebuilder:rbac:groups=prow.k8s.io,resources=prowjobs/status,verbs=update
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=list;watch;create;update;delete

// Reconcile runs the stream's steps in order — import, abort, create, build, record images,
// verify, record upgrades, publish, collect — and, in one deferred place, writes the stream's
// status once (status.go computes it from what the pass found and which steps failed) and
// reports the failures (eventlog.Recorder.Finish: one Warning Event each, and the error that
// controller-runtime logs once and retries with backoff, or does not retry when every failure
// is a stall). A step that fails is recorded in the pass and the other steps still run.
// While spec.suspend is set only the payloads are listed (see suspendedPass).
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (result ctrl.Result, err error) {
	var stream v1alpha1.ReleaseStream
	if err := r.Get(ctx, req.NamespacedName, &stream); err != nil {
		if apierrors.IsNotFound(err) {
			r.imports.forget(req.NamespacedName)
			forgetStream(req.NamespacedName)
			if err := r.forgetClusters(ctx, req.NamespacedName); err != nil {
				return ctrl.Result{}, err
			}
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	s := &streamSync{r: r, stream: &stream, now: r.Clock.Now()}
	defer func() {
		writeErr := s.writeStatus(ctx)
		err = r.report.Finish(ctx, s.stream, errors.Join(s.pass.failed(), writeErr))
		if err != nil {
			result = ctrl.Result{} // the rate limiter decides when to retry
			return
		}
		result = ctrl.Result{RequeueAfter: s.requeueAfter}
	}()
	if stream.Spec.Suspend {
		s.suspendedPass(ctx)
		return ctrl.Result{}, nil
	}
	s.run(ctx)
	return ctrl.Result{}, nil
}

// streamSync is one reconcile of one stream.
type streamSync struct {
	r        *Reconciler
	stream   *v1alpha1.ReleaseStream
	now      time.Time
	payloads []v1alpha1.ReleasePayload // newest first
	listed   bool
	// clusters are the remote clusters the payloads' verifications run on.
	clusters     map[clusters.Key]clusters.View
	requeueAfter time.Duration
	pass         pass
}

func (s *streamSync) requeue(d time.Duration) {
	if d > 0 && (s.requeueAfter == 0 || d < s.requeueAfter) {
		s.requeueAfter = d
	}
}

// fail records a failed step of the pass, reported on obj (the stream, or the payload the step
// was about) when the reconcile finishes: the other steps still run, and the stream is not
// Ready.
func (s *streamSync) fail(obj client.Object, reason, action, step string, err error) {
	s.record(obj, &eventlog.Failure{Reason: reason, Action: action, Step: step, Err: err})
}

// stall records a failed step that cannot work until the spec (or what the error names)
// changes: when every failure of the pass is one, the stream is Stalled and not retried.
func (s *streamSync) stall(obj client.Object, reason, action, step string, err error) {
	s.record(obj, &eventlog.Failure{Reason: reason, Action: action, Step: step, Err: err, Stalled: true})
}

func (s *streamSync) record(obj client.Object, f *eventlog.Failure) {
	if obj != client.Object(s.stream) {
		f.Object = obj
	}
	s.pass.Failures = append(s.pass.Failures, f)
	stepFailures.WithLabelValues(s.stream.Namespace, s.stream.Name, f.Reason).Inc()
}

// suspendedPass is the pass of a suspended stream: nothing is imported, created, built,
// verified, published or collected; the payloads are listed so that the status still counts
// them (the payload controller keeps recording their running jobs meanwhile).
func (s *streamSync) suspendedPass(ctx context.Context) {
	s.pass.Suspended = true
	s.pass.Components = s.stream.Status.Components
	if err := s.listPayloads(ctx); err != nil {
		s.fail(s.stream, v1alpha1.ReasonReconcileFailed, "List", "listing payloads", err)
	}
}

func (s *streamSync) run(ctx context.Context) {
	pinned, resolved := s.importComponents(ctx)
	if err := s.listPayloads(ctx); err != nil {
		s.fail(s.stream, v1alpha1.ReasonReconcileFailed, "List", "listing payloads", err)
		return
	}
	s.useClusters(ctx)
	s.abortSuperseded(ctx)
	if resolved {
		s.createPayload(ctx, pinned)
	}
	accepted, missing := s.acceptedByStream(ctx)
	for i := range s.payloads {
		p := &s.payloads[i]
		if p.Annotations[v1alpha1.AnnotationAborted] != "" {
			continue
		}
		s.build(ctx, p)
		s.recordImage(ctx, p)
		if stream, ok := namesMissingStream(p, missing); ok {
			// Never guessed from this stream, never skipped: the stream's Ready says why.
			// A stall: nothing this controller does makes the stream appear. The watch on
			// streams brings this one back when it is created (upgradingFrom) or when this
			// stream's spec changes.
			s.stall(p, v1alpha1.ReasonUpgradeSourceMissing, "Verify", "planning the upgrades of "+p.Name,
				fmt.Errorf("an upgrade verification starts from stream %s, which does not exist in namespace %s", stream, p.Namespace))
			continue
		}
		s.verify(ctx, p, accepted)
	}
	s.recordUpgrades(ctx)
	s.publish(ctx)
	s.collect(ctx)
}

func (s *streamSync) listPayloads(ctx context.Context) error {
	var list v1alpha1.ReleasePayloadList
	if err := s.r.List(ctx, &list, client.InNamespace(s.stream.Namespace), client.MatchingFields{IndexStream: s.stream.Name}); err != nil {
		return err
	}
	s.payloads = list.Items
	s.listed = true
	NewestFirst(s.payloads)
	return nil
}

// writeStatus writes the status ComputeStatus makes of the pass, if it changed, and updates
// the stream's metrics.
func (s *streamSync) writeStatus(ctx context.Context) error {
	if s.pass.Listed = s.listed; s.listed {
		s.pass.Payloads = s.payloads
		observePayloads(s.stream, s.payloads)
	}
	status := ComputeStatus(s.stream, s.pass, s.now)
	if equality.Semantic.DeepEqual(status, s.stream.Status) {
		return nil
	}
	patch := client.MergeFrom(s.stream.DeepCopy())
	s.stream.Status = status
	err := s.r.Status().Patch(ctx, s.stream, patch)
	return eventlog.Step(v1alpha1.ReasonReconcileFailed, "WriteStatus", "writing the status", client.IgnoreNotFound(err))
}

// NewRateLimiter is the stream controller's rate limiter: per stream, FailureBackoffBase after
// a failed pass, doubling up to FailureBackoffMax. (controller-runtime's default goes up to
// 1,000 s, which would hold a stream's imports back for a quarter of an hour.)
func NewRateLimiter() workqueue.TypedRateLimiter[reconcile.Request] {
	return workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](FailureBackoffBase, FailureBackoffMax)
}

// SetupWithManager registers the controller and the payload-by-stream index; r.Jobs must
// have been added to mgr.
func (r *Reconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager) error {
	if err := r.setup(ctx, mgr); err != nil {
		return err
	}
	b := ctrl.NewControllerManagedBy(mgr)
	if r.Clusters != nil {
		// As for local jobs, a job's change reaches the stream through its payload's status;
		// the source enqueues the streams whose cluster came back or was first listed.
		b = b.WatchesRawSource(r.Clusters.Source(ClusterUser, func(*jobcache.Record, workqueue.TypedRateLimitingInterface[reconcile.Request]) {}))
	}
	return b.
		Named("releasestream").
		For(&v1alpha1.ReleaseStream{}).
		// A stream that appears, changes or goes away changes what the upgrades starting
		// from it can do: its dependents plan again (UpgradeSourceMissing ends, or starts).
		Watches(&v1alpha1.ReleaseStream{}, handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, obj client.Object) []reconcile.Request {
			return r.upgradingFrom(ctx, obj.GetNamespace(), obj.GetName())
		})).
		// A payload's change enqueues only the streams whose pass it concerns
		// (PayloadChange): not every status write of the payload controller.
		Watches(&v1alpha1.ReleasePayload{}, r.payloadEvents()).
		WithOptions(controller.Options{MaxConcurrentReconciles: 4, RateLimiter: NewRateLimiter()}).
		Complete(r)
}

// setup fills in r's defaults and registers the indexes with mgr.
func (r *Reconciler) setup(ctx context.Context, mgr ctrl.Manager) error {
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	if r.ImportInterval == 0 {
		r.ImportInterval = DefaultImportInterval
	}
	if r.BuildImage == "" {
		r.BuildImage = DefaultBuildImage
	}
	if r.Registry == nil {
		r.Registry = registryclient.New()
	}
	if r.Events == nil {
		r.Events = mgr.GetEventRecorder(eventlog.Reporter)
	}
	r.report = eventlog.Recorder{Events: r.Events}
	if err := mgr.GetFieldIndexer().IndexField(ctx, &v1alpha1.ReleasePayload{}, IndexStream, func(obj client.Object) []string {
		return []string{obj.(*v1alpha1.ReleasePayload).Spec.PayloadCoordinates.Stream}
	}); err != nil {
		return fmt.Errorf("indexing payloads by stream: %w", err)
	}
	if err := mgr.GetFieldIndexer().IndexField(ctx, &v1alpha1.ReleaseStream{}, IndexUpgradeSource, upgradeSources); err != nil {
		return fmt.Errorf("indexing streams by upgrade source: %w", err)
	}
	return nil
}

// upgradeSources is IndexUpgradeSource's value of a stream: each other stream its upgrade
// verifications start from, once.
func upgradeSources(obj client.Object) []string {
	var names []string
	for _, v := range obj.(*v1alpha1.ReleaseStream).Spec.Verification {
		if v.From != nil && !slices.Contains(names, v.From.Stream) {
			names = append(names, v.From.Stream)
		}
	}
	return names
}

// upgradingFrom is the streams of namespace whose upgrade verifications start from stream.
// A failed read of the cache enqueues none: the dependents still plan on their own passes.
func (r *Reconciler) upgradingFrom(ctx context.Context, namespace, stream string) []reconcile.Request {
	var list v1alpha1.ReleaseStreamList
	if err := r.List(ctx, &list, client.InNamespace(namespace), client.MatchingFields{IndexUpgradeSource: stream}); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "listing the streams that upgrade from a stream", "namespace", namespace, "stream", stream)
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(list.Items))
	for _, s := range list.Items {
		if s.Name != stream {
			reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: s.Namespace, Name: s.Name}})
		}
	}
	return reqs
}
