// Package pipeline promotes apps through the environments of Pipelines: a clusters manager
// keeps a client and cache per cluster in use (clusters.go), one shared informer per cluster
// and app kind feeds an index of apps to pipelines, whose update events trigger the
// reconciler when an app's revision or readiness moves (no polling), and the reconciler plans
// (plan.go, pure) and carries out promotions with a strategy (strategy.go), recording each in
// the pipeline's status and in the release log. An environment with verification after
// rollout runs Jobs against each revision rolled out there before the next environment may
// take it, and is rolled back or holds the pipeline when they fail (verification.go decides,
// verifyctl.go carries out).
package pipeline

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/eventlog"
	"github.com/release-controller/release-controller/internal/releaselog"
	"github.com/release-controller/release-controller/internal/statuswrite"
	"github.com/release-controller/release-controller/internal/verdict"
)

// Field indexes of Pipelines in the manager's cache.
const (
	// IndexClusterRef: the kubeconfig Secrets a pipeline's targets name.
	IndexClusterRef = "pipeline.clusterRef"
	// IndexSourceStream: the ReleaseStream a pipeline's source names.
	IndexSourceStream = "pipeline.sourceStream"
)

// DefaultWorkers is how many pipelines are reconciled at once. Pipelines are independent and
// a reconcile mostly waits for API servers (the targets' patches, the release log's group
// commit, the status write), so many at once keep a slow cluster or receiver from holding up
// the others: in BenchmarkShippedPipelines (100 pipelines, 3 API servers on 2 cores) p99 went
// from 2.7 s with 4 workers to 1.7 s with 12 and 0.8-1.3 s with 48, before the status writes
// were cut to one per promotion.
const DefaultWorkers = 48

// Reconciler reconciles Pipelines.
type Reconciler struct {
	// Client reads Pipelines, ReleaseStreams and Secrets' metadata from the manager's cache,
	// and writes Pipelines' status.
	Client client.Client
	// APIReader reads the Secrets of notification keys (Secrets are not cached).
	APIReader client.Reader
	Clusters  *Clusters
	// Log receives a promotion entry per promotion; nil logs nothing.
	Log      *releaselog.Writer
	Notifier *Notifier
	// Git carries out the pullRequest strategy.
	Git   *GitPusher
	Clock clock.PassiveClock
	// Workers is how many pipelines are reconciled at once; zero uses DefaultWorkers.
	Workers int
	// DefaultServiceAccount is the ServiceAccount of a pipeline's namespace the controller
	// acts as on the local cluster when the pipeline names none (TenantOf); "" acts with the
	// controller's own rights.
	DefaultServiceAccount string
	// InsecureKubeconfigExec lets kubeconfigs from Secrets run plugins and name files
	// (clusters.CheckKubeconfig).
	InsecureKubeconfigExec bool
	// Events records the controller's Events; nil: the manager's recorder.
	Events events.EventRecorder
	// AccessTTL is how long the answer to "may the pipeline's account get this local
	// target's app?" is reused, and how soon a pipeline with a target hidden from its account
	// is reconciled again; zero uses DefaultAccessTTL.
	AccessTTL time.Duration
	// Verify is what verification after rollout runs with (verifyctl.go).
	Verify VerifyOptions

	// queue is the controller's workqueue once its source started: the clusters manager's
	// events go straight into it (deduplicated, bounded by the number of pipelines).
	queue   atomic.Pointer[workqueue.TypedRateLimitingInterface[reconcile.Request]]
	report  eventlog.Recorder
	access  *appAccess
	pending pendingRecords
	// written holds the status writes the cache may not show yet; deferred, the pipelines
	// whose observation-only status change waits to be written with the ones that follow.
	written  statuswrite.Tracker[*v1alpha1.PipelineStatus]
	deferred statuswrite.Window
	// held is each pipeline's last status computed, with its times exact (StartFrom).
	held heldStatuses
}

// The pipeline controller's access on the cluster it runs against: Pipelines and their status;
// ReleaseStreams (a source) and the payload each names as its newest accepted; kubeconfig Secrets (metadata watched, data read when it changed);
// notification keys; the app objects of local targets (Deployments, the kind the generated
// role covers: another kind on the local cluster needs a role binding of its own), watched
// with its own rights, shown only when a SubjectAccessReview says the pipeline's service
// account may get them, and written as that account (impersonate; the
// controller's own patch is for a controller run with --default-service-account="" only); and the
// release log (promotion entries; releaselog's markers grant it).
// +kubebuilder:rbac:groups=release-controller.dev,resources=pipelines,verbs=list;watch
// +kubebuilder:rbac:groups=release-controller.dev,resources=pipelines/status,verbs=patch
// +kubebuilder:rbac:groups=release-controller.dev,resources=releasestreams,verbs=list;watch
// +kubebuilder:rbac:groups=release-controller.dev,resources=releasepayloads,verbs=list;watch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch
// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=list;watch;patch
// +kubebuilder:rbac:groups="",resources=serviceaccounts,verbs=impersonate
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create

// SetupWithManager registers the controller, the clusters manager and the indexes with mgr.
func (r *Reconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager) error {
	if err := r.setup(ctx, mgr); err != nil {
		return err
	}
	localRuns, remoteRuns := r.verificationSources()
	return ctrl.NewControllerManagedBy(mgr).
		For(&v1alpha1.Pipeline{}, builder.WithPredicates(ignoreOwnStatusWrites{})).
		Named("pipeline").
		Watches(&v1alpha1.ReleaseStream{}, handler.EnqueueRequestsFromMapFunc(r.byIndex(IndexSourceStream))).
		Watches(&v1alpha1.ReleaseFreeze{}, handler.EnqueueRequestsFromMapFunc(r.byFreeze)).
		Watches(&v1alpha1.ClusterReleaseFreeze{}, handler.EnqueueRequestsFromMapFunc(r.byFreeze)).
		WatchesMetadata(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(r.byIndex(IndexClusterRef))).
		WatchesRawSource(localRuns).
		WatchesRawSource(remoteRuns).
		WatchesRawSource(source.Func(func(_ context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
			r.queue.Store(&q)
			return nil
		})).
		WithOptions(controller.Options{MaxConcurrentReconciles: r.Workers}).
		Complete(r)
}

// setup fills in r's defaults and registers the clusters manager and the indexes with mgr.
func (r *Reconciler) setup(ctx context.Context, mgr ctrl.Manager) error {
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	r.written.Clock, r.deferred.Clock = r.Clock, r.Clock
	if r.Workers == 0 {
		r.Workers = DefaultWorkers
	}
	if r.AccessTTL == 0 {
		r.AccessTTL = DefaultAccessTTL
	}
	if r.Notifier == nil {
		r.Notifier = NewNotifier()
	}
	if r.Git == nil {
		r.Git = NewGitPusher()
	}
	if r.Client == nil {
		r.Client = mgr.GetClient()
	}
	if r.APIReader == nil {
		r.APIReader = mgr.GetAPIReader()
	}
	if r.Events == nil {
		r.Events = mgr.GetEventRecorder(eventlog.Reporter)
	}
	r.report = eventlog.Recorder{Events: r.Events}
	r.access = newAppAccess(r.Client, mgr.GetRESTMapper(), r.AccessTTL)
	if r.Clusters == nil {
		r.Clusters = NewClusters(mgr.GetConfig(), r.Client, r.APIReader, r.enqueue)
	}
	r.Clusters.InsecureKubeconfigExec = r.InsecureKubeconfigExec
	if err := mgr.Add(r.Clusters); err != nil {
		return err
	}
	if err := r.setupVerification(mgr); err != nil {
		return err
	}
	indexer := mgr.GetFieldIndexer()
	if err := indexer.IndexField(ctx, &v1alpha1.Pipeline{}, IndexClusterRef, func(o client.Object) []string {
		var refs []string
		for _, e := range o.(*v1alpha1.Pipeline).Spec.Environments {
			for _, t := range e.Targets {
				if t.ClusterRef != "" {
					refs = append(refs, t.ClusterRef)
				}
			}
		}
		return append(refs, verificationClusterRefs(o.(*v1alpha1.Pipeline))...)
	}); err != nil {
		return err
	}
	if err := indexer.IndexField(ctx, &v1alpha1.Pipeline{}, IndexSourceStream, func(o client.Object) []string {
		if s := o.(*v1alpha1.Pipeline).Spec.Source; s != nil {
			return []string{s.ReleaseStream}
		}
		return nil
	}); err != nil {
		return err
	}
	return nil
}

// byIndex maps an object to the pipelines of its namespace that name it in index.
func (r *Reconciler) byIndex(index string) handler.MapFunc {
	return func(ctx context.Context, o client.Object) []reconcile.Request {
		var list v1alpha1.PipelineList
		if err := r.Client.List(ctx, &list, client.InNamespace(o.GetNamespace()), client.MatchingFields{index: o.GetName()}); err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "listing the pipelines of an object", "index", index, "object", client.ObjectKeyFromObject(o))
			return nil
		}
		reqs := make([]reconcile.Request, 0, len(list.Items))
		for _, p := range list.Items {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&p)})
		}
		return reqs
	}
}

// enqueue queues a pipeline from the clusters manager (an app changed, a cluster's
// reachability changed). It never blocks the informer that calls it: the workqueue holds a
// key once however often it is added. Before the controller started there is no queue, and
// nothing is lost: the controller's start lists every pipeline.
func (r *Reconciler) enqueue(key types.NamespacedName) {
	if q := r.queue.Load(); q != nil {
		(*q).Add(reconcile.Request{NamespacedName: key})
	}
}

// conflictRetry is how soon a pipeline whose status write met a newer version is reconciled
// again.
const conflictRetry = 100 * time.Millisecond

// pass is what one reconcile of a pipeline did, for the status its deferred part writes.
type pass struct {
	// observed: the targets were read (obs holds them); else the status keeps what it said
	// of them, and only Ready, Reconciling and Stalled tell what failed.
	observed bool
	obs      observation
	envs     []v1alpha1.EnvironmentStatus
	// promoted: promotions were due (and carried out unless suspended); promoteErr holds
	// their failures.
	promoted   bool
	promoteErr error
	// retry is how soon to reconcile again when nothing failed.
	retry time.Duration
}

// Reconcile observes the pipeline's apps, promotes what is due, and writes the status once,
// in its deferred part: every step returns its failure (eventlog), which the status, one
// Warning Event each and the returned error report there, and nowhere else.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (result ctrl.Result, err error) {
	var p v1alpha1.Pipeline
	if err := r.Client.Get(ctx, req.NamespacedName, &p); err != nil {
		if apierrors.IsNotFound(err) {
			// Deleted: its informers and clusters stop unless another pipeline needs them.
			r.pending.forget(req.NamespacedName)
			r.written.Forget(req.NamespacedName)
			r.deferred.Close(req.NamespacedName)
			r.held.forget(req.NamespacedName)
			_, err := r.Clusters.Sync(ctx, req.NamespacedName, nil, App{}, "")
			return ctrl.Result{}, errors.Join(err, r.forgetVerification(ctx, req.NamespacedName))
		}
		return ctrl.Result{}, err
	}
	if w, behind := r.written.Behind(req.NamespacedName, p.ResourceVersion); behind {
		// Start from what was written, not from the version it replaced.
		p.Status = *w.Value.DeepCopy()
		p.ResourceVersion = w.After
	}
	if !p.DeletionTimestamp.IsZero() {
		_, err := r.Clusters.Sync(ctx, req.NamespacedName, nil, App{}, "")
		return ctrl.Result{}, err
	}
	now := r.Clock.Now()
	// The status as the API server has it (with the exact times it stored to the second),
	// what a write is compared with; p's is what this controller holds back of it, and gets
	// the promotions carried out that it does not show yet.
	start, before := StartFrom(&p.Status, p.ResourceVersion, r.held.get(req.NamespacedName))
	p.Status = *start
	r.pending.restore(req.NamespacedName, &p.Status)
	var ps pass
	defer func() {
		status := r.statusOf(&p, &ps, err, now)
		var writeErr error
		result, writeErr = r.writeStatus(ctx, &p, before, status, &ps, err != nil, now)
		err = r.report.Finish(ctx, &p, errors.Join(err, writeErr))
		if err != nil {
			result = ctrl.Result{} // retried with the controller's backoff
		}
	}()
	return ctrl.Result{}, r.reconcile(ctx, &p, &ps, now)
}

// reconcile observes the pipeline's targets and carries out the promotions due, into ps; it
// returns the steps' failures.
func (r *Reconciler) reconcile(ctx context.Context, p *v1alpha1.Pipeline, ps *pass, now time.Time) error {
	key := client.ObjectKeyFromObject(p)
	app, err := AppOf(p.Spec.AppRef)
	if err != nil {
		// Admission refuses such an app; one written before the rule existed stays as it is:
		// only an edit can fix it, which brings the pipeline back.
		return eventlog.Stall(v1alpha1.EventInvalidApp, "Observe", "reading the pipeline's app", err)
	}
	tenant := TenantOf(p, r.DefaultServiceAccount)
	views, err := r.Clusters.Sync(ctx, key, p, app, tenant)
	if err != nil {
		return eventlog.Step(v1alpha1.ReasonReconcileFailed, "Observe", "watching the targets' clusters", err)
	}
	obs, err := r.observe(ctx, p, app, views, tenant)
	if err != nil {
		return err
	}
	freezes, err := r.freezesOf(ctx, p)
	if err != nil {
		return err
	}
	frozen, freezeWake := Frozen(p, freezes, now)
	ps.observed, ps.obs = true, obs

	// Verifications first: what passed or failed decides what Plan may promote.
	verifyRetry, verifyErr := r.verifyEnvironments(ctx, p, obs, tenant, now)

	envs, actions := Plan(p, obs.targets, obs.source, now)
	actions = GateActions(p, envs, actions, frozen)
	ps.envs, ps.promoted = envs, len(actions) > 0
	for _, a := range actions {
		strategy, patched, err := r.promote(ctx, p, app, a, views, obs.objects[a.Env], now)
		if err != nil {
			ps.promoteErr = errors.Join(ps.promoteErr, eventlog.Step(v1alpha1.EventPromotionFailed, "Promote",
				fmt.Sprintf("promoting %s to %s", a.Revision, p.Spec.Environments[a.Env].Name), err))
			continue
		}
		RecordPromotion(envs, a, ActionID(string(p.UID), p.Spec.Environments[a.Env].Name, a), strategy, now)
		if patched != nil {
			obs := make([]TargetObservation, len(patched))
			for j, u := range patched {
				obs[j] = TargetObservation{Observation: app.Observe(u)}
			}
			Reobserve(envs, p.Spec.Environments[a.Env].Targets, a.Env, obs)
		}
		r.pending.add(key, envs[a.Env].Name, *envs[a.Env].LastPromotion)
	}

	// Nothing watched tells of a grant (a RoleBinding): a refused read is tried again, a
	// hidden target once its answer's cache entry has expired.
	if slices.ContainsFunc(obs.problems, func(c ClusterProblem) bool { return c.Forbidden }) {
		ps.retry = TenantRetry
	}
	if len(obs.hidden) > 0 && (ps.retry == 0 || r.AccessTTL < ps.retry) {
		ps.retry = r.AccessTTL
	}
	// Come back when a soak or a freeze ends, or a freeze starts: nothing else says so.
	ps.retry = RetryAfter(ps.retry, now, SoakWake(envs), freezeWake)
	if verifyRetry > 0 && (ps.retry == 0 || verifyRetry < ps.retry) {
		ps.retry = verifyRetry
	}
	return errors.Join(verifyErr, ps.promoteErr)
}

// statusOf is the status one reconcile leaves: what it observed and promoted, when it got
// that far, and what its failures (err) make of the conditions.
func (r *Reconciler) statusOf(p *v1alpha1.Pipeline, ps *pass, err error, now time.Time) *v1alpha1.PipelineStatus {
	status := p.Status.DeepCopy()
	status.ObservedGeneration = p.Generation
	if v, ok := p.Annotations[v1alpha1.AnnotationReconcileRequestedAt]; ok {
		status.LastHandledReconcileAt = v
	}
	if ps.observed {
		status.Environments = ps.envs
		outcome := PromotionOutcome{Attempted: ps.promoted, Err: ps.promoteErr, Suspended: p.Spec.Suspend}
		SetConditions(&status.Conditions, p.Generation, ps.envs, ps.obs.problems, ps.obs.hiddenMessages(), outcome, now)
		SetFrozenCondition(&status.Conditions, p.Generation, ps.envs, now)
		SetHoldCondition(&status.Conditions, p.Generation, Held(p, ps.envs), now)
	}
	SetProgress(&status.Conditions, p.Generation, status.Environments, p.Spec.Suspend, err, now)
	return status
}

// writeStatus writes status unless it is before (p's as read), or only moves observations that may wait to
// share a later write (then the result says when to come back); it reports what the write
// makes newly true (unreachable clusters, hidden targets) as Events. failed: the reconcile
// failed and is retried anyway.
func (r *Reconciler) writeStatus(ctx context.Context, p *v1alpha1.Pipeline, before, status *v1alpha1.PipelineStatus, ps *pass, failed bool, now time.Time) (ctrl.Result, error) {
	key := client.ObjectKeyFromObject(p)
	if equality.Semantic.DeepEqual(before, status) {
		r.deferred.Close(key)
		r.held.hold(key, heldStatus{Version: p.ResourceVersion, Status: status})
		return ctrl.Result{RequeueAfter: RequeueFrom(ps.retry, now, r.Clock.Now())}, nil
	}
	if !ps.promoted && ObservationsOnly(before, status) {
		if wait := ObservationWait(r.deferred.Open(key).First, now); wait > 0 {
			r.held.hold(key, heldStatus{Version: p.ResourceVersion, Status: status, Deferred: true})
			return ctrl.Result{RequeueAfter: RequeueFrom(wait, now, r.Clock.Now())}, nil
		}
	}
	u, err := statusApplyObject(p, status)
	if err != nil {
		return ctrl.Result{}, eventlog.Step(v1alpha1.ReasonReconcileFailed, "Observe", "writing the status", err)
	}
	if err := r.Client.Status().Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(StatusFieldManager), client.ForceOwnership); err != nil {
		if apierrors.IsConflict(err) && !failed {
			// The cache was behind a newer write (an approval, say): read it again soon.
			return ctrl.Result{RequeueAfter: conflictRetry}, nil
		}
		return ctrl.Result{}, eventlog.Step(v1alpha1.ReasonReconcileFailed, "Observe", "writing the status", err)
	}
	// The answer, the whole pipeline, replaced u.
	r.written.Wrote(key, p.ResourceVersion, u.GetResourceVersion(), status)
	r.held.hold(key, heldStatus{Version: u.GetResourceVersion(), Status: status})
	r.deferred.Close(key)
	if unreachableChanged(before.Conditions, status.Conditions) {
		r.reportClusters(ctx, p, ps.obs.problems)
	}
	for _, msg := range NewlyHidden(before, ps.obs.hidden) {
		r.report.Warningf(ctx, p, nil, v1alpha1.EventTargetForbidden, "Observe", "%s", msg)
	}
	r.reportVerifications(ctx, p, before, status)
	return ctrl.Result{RequeueAfter: RequeueFrom(ps.retry, now, r.Clock.Now())}, nil
}

// observation is what a reconcile read of a pipeline's world: each target's app (objects, nil
// where missing, unread or hidden) and what it says (targets), the clusters that could not be
// read, the targets hidden from the pipeline's account, and the source stream's newest
// accepted tag.
type observation struct {
	targets  [][]TargetObservation
	objects  [][]*unstructured.Unstructured
	problems []ClusterProblem
	hidden   []HiddenTarget
	source   string
}

// HiddenTarget is a target whose app the pipeline's service account may not get.
type HiddenTarget struct {
	// Env and Target index the spec's environments and the environment's targets.
	Env, Target int
	// Message is TargetHidden's.
	Message string
}

// hiddenMessages are the hidden targets' messages, each once.
func (o observation) hiddenMessages() []string {
	var msgs []string
	for _, h := range o.hidden {
		if !slices.Contains(msgs, h.Message) {
			msgs = append(msgs, h.Message)
		}
	}
	return msgs
}

// NewlyHidden are the messages of the hidden targets whose status in before did not say so
// yet (each message once): what a Warning Event reports when the status first hides them. It
// is pure.
func NewlyHidden(before *v1alpha1.PipelineStatus, hidden []HiddenTarget) []string {
	var msgs []string
	for _, h := range hidden {
		shown := h.Env < len(before.Environments) && h.Target < len(before.Environments[h.Env].Targets) &&
			before.Environments[h.Env].Targets[h.Target].Message == h.Message
		if !shown && !slices.Contains(msgs, h.Message) {
			msgs = append(msgs, h.Message)
		}
	}
	return msgs
}

// observe reads every target from its cluster's informer, and the source stream. A local
// target is read only when the pipeline's account (tenant) may get its app.
func (r *Reconciler) observe(ctx context.Context, p *v1alpha1.Pipeline, app App, views map[ClusterKey]ClusterView, tenant string) (observation, error) {
	obs := observation{
		targets: make([][]TargetObservation, len(p.Spec.Environments)),
		objects: make([][]*unstructured.Unstructured, len(p.Spec.Environments)),
	}
	seenProblem := map[ClusterKey]bool{}
	for i, env := range p.Spec.Environments {
		obs.targets[i] = make([]TargetObservation, len(env.Targets))
		obs.objects[i] = make([]*unstructured.Unstructured, len(env.Targets))
		for j, t := range env.Targets {
			ck := ClusterKeyOf(p.Namespace, t)
			view := views[ck]
			if view.Problem != nil {
				obs.targets[i][j] = TargetObservation{Unreachable: view.Problem.Message}
				if !seenProblem[ck] {
					seenProblem[ck] = true
					obs.problems = append(obs.problems, *view.Problem)
				}
				continue
			}
			if needsAccessCheck(tenant, t) {
				// The informer reads with the controller's rights: the pipeline sees only
				// what its account may get.
				hidden, err := r.hiddenTarget(ctx, tenant, app, t)
				if err != nil {
					return obs, eventlog.Step(v1alpha1.ReasonReconcileFailed, "Observe",
						fmt.Sprintf("checking whether the pipeline's account may get the app in %s", t.Namespace), err)
				}
				if hidden != "" {
					obs.targets[i][j] = TargetObservation{Hidden: hidden}
					obs.hidden = append(obs.hidden, HiddenTarget{Env: i, Target: j, Message: hidden})
					continue
				}
			}
			if !view.Synced(app.GVK) {
				obs.targets[i][j] = TargetObservation{Unknown: true, Observation: Observation{Message: "waiting for the cluster's cache of " + app.GVK.Kind + " to sync"}}
				continue
			}
			u := &unstructured.Unstructured{}
			u.SetGroupVersionKind(app.GVK)
			err := view.Reader.Get(ctx, types.NamespacedName{Namespace: t.Namespace, Name: app.Name}, u)
			switch {
			case apierrors.IsNotFound(err):
				u = nil
			case err != nil:
				obs.targets[i][j] = TargetObservation{Unknown: true, Observation: Observation{Message: err.Error()}}
				continue
			}
			obs.objects[i][j] = u
			obs.targets[i][j] = TargetObservation{Observation: app.Observe(u)}
		}
	}
	if s := p.Spec.Source; s != nil {
		source, err := r.acceptedSource(ctx, p.Namespace, s.ReleaseStream)
		if err != nil {
			return obs, eventlog.Step(v1alpha1.ReasonReconcileFailed, "Observe", "reading the source stream "+s.ReleaseStream, err)
		}
		obs.source = source
	}
	return obs, nil
}

// hiddenTarget says why the pipeline acting as tenant may not see local target t's app
// (TargetHidden), asking a SubjectAccessReview (cached); "" when it may.
func (r *Reconciler) hiddenTarget(ctx context.Context, tenant string, app App, t v1alpha1.Target) (string, error) {
	res, err := r.access.resource(app.GVK)
	if err != nil {
		return "", err
	}
	answer, err := r.access.mayGet(ctx, tenant, res, t.Namespace, app.Name)
	if err != nil {
		return "", err
	}
	return TargetHidden(tenant, t, res, app.Name, &answer), nil
}

// acceptedSource returns the tag of the source stream's newest accepted payload, or "" when
// there is none to promote. The stream's status names it, but a status anyone with write
// access can edit is not taken on trust: the payload it names must exist, belong to the
// stream and be Accepted as verdict.Of judges it (from its recorded runs), so a hand-written
// latestAccepted or a hand-edited Accepted condition is never promoted.
func (r *Reconciler) acceptedSource(ctx context.Context, namespace, streamName string) (string, error) {
	var stream v1alpha1.ReleaseStream
	err := r.Client.Get(ctx, types.NamespacedName{Namespace: namespace, Name: streamName}, &stream)
	if apierrors.IsNotFound(err) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	tag := stream.Status.LatestAccepted
	if tag == "" {
		return "", nil
	}
	var payload v1alpha1.ReleasePayload
	err = r.Client.Get(ctx, types.NamespacedName{Namespace: namespace, Name: tag}, &payload)
	if err != nil && !apierrors.IsNotFound(err) {
		return "", err
	}
	if why := untrustedSource(&payload, err == nil, streamName); why != "" {
		ctrl.LoggerFrom(ctx).Info("not promoting the stream's latestAccepted", "stream", streamName, "payload", tag, "why", why)
		return "", nil
	}
	return tag, nil
}

// untrustedSource says why a stream's latestAccepted payload is not promoted ("" when it may
// be): it does not exist, belongs to another stream, or its verdict is not Accepted.
func untrustedSource(p *v1alpha1.ReleasePayload, exists bool, stream string) string {
	switch {
	case !exists:
		return "no such payload"
	case p.Spec.PayloadCoordinates.Stream != stream:
		return fmt.Sprintf("the payload belongs to stream %q", p.Spec.PayloadCoordinates.Stream)
	case !verdict.Accepted(p):
		return fmt.Sprintf("the payload's verdict is %s, not Accepted", verdict.Of(p))
	}
	return ""
}

// unreachableChanged reports whether a status write turns ClusterUnreachable True or changes
// which clusters it names.
func unreachableChanged(before, after []metav1.Condition) bool {
	now := meta.FindStatusCondition(after, v1alpha1.ConditionClusterUnreachable)
	if now == nil || now.Status != metav1.ConditionTrue {
		return false
	}
	was := meta.FindStatusCondition(before, v1alpha1.ConditionClusterUnreachable)
	return was == nil || was.Status != metav1.ConditionTrue || was.Message != now.Message
}

// reportClusters reports the clusters that cannot be read, once the status says so: a Warning
// Event each (the condition ClusterUnreachable names them all).
func (r *Reconciler) reportClusters(ctx context.Context, p *v1alpha1.Pipeline, problems []ClusterProblem) {
	for _, c := range problems {
		name := c.Cluster
		if name == "" {
			name = "the local cluster"
		}
		r.report.Warningf(ctx, p, nil, v1alpha1.EventClusterUnreachable, "Observe", "%s: %s", name, c.Message)
	}
}

// promote carries out one promotion with the environment's strategy, then logs it (once: the
// entry's id is the promotion's); it returns the strategy's name, and for the patch strategy
// the targets' objects as patched.
func (r *Reconciler) promote(ctx context.Context, p *v1alpha1.Pipeline, app App, a Action, views map[ClusterKey]ClusterView, current []*unstructured.Unstructured, now time.Time) (string, []*unstructured.Unstructured, error) {
	env := p.Spec.Environments[a.Env]
	promo := p.Spec.Promotion
	if env.Promotion != nil {
		promo = env.Promotion
	}
	strategy := v1alpha1.StrategyPatch
	if promo != nil && promo.Strategy != "" {
		strategy = promo.Strategy
	}
	id := ActionID(string(p.UID), env.Name, a)
	detail := ""
	var patched []*unstructured.Unstructured
	switch strategy {
	case v1alpha1.StrategyPatch:
		targets := make([]patchTarget, len(env.Targets))
		for j, t := range env.Targets {
			targets[j] = patchTarget{writer: views[ClusterKeyOf(p.Namespace, t)].Writer, current: current[j], name: targetName(v1alpha1.TargetStatus{Namespace: t.Namespace, ClusterRef: t.ClusterRef})}
		}
		var err error
		if patched, err = applyRevision(ctx, app, targets, a.Revision); err != nil {
			return strategy, nil, err
		}
	case v1alpha1.StrategyNotification:
		if promo.Notification == nil {
			return strategy, nil, errors.New("the notification strategy needs notification.url")
		}
		var key []byte
		if ref := promo.Notification.SecretRef; ref != nil {
			var err error
			if key, err = r.sharedKey(ctx, p.Namespace, ref.Name); err != nil {
				return strategy, nil, err
			}
		}
		ev := PromotionEvent{
			ID: id, Pipeline: PipelineRef{Namespace: p.Namespace, Name: p.Name}, Environment: env.Name, Revision: a.Revision,
			App: p.Spec.AppRef, Targets: env.Targets, Approver: a.Approver, Time: now.UTC(),
		}
		if err := r.Notifier.Notify(ctx, promo.Notification.URL, key, ev); err != nil {
			return strategy, nil, err
		}
	case v1alpha1.StrategyPullRequest:
		if promo.PullRequest == nil {
			return strategy, nil, errors.New("the pullRequest strategy needs pullRequest (url, path, yamlPath)")
		}
		res, err := r.pushPromotion(ctx, p, env.Name, promo.PullRequest, a, id)
		if err != nil {
			return strategy, nil, err
		}
		if res.Pushed {
			detail = fmt.Sprintf("; commit %.12s pushed to branch %s of %s", res.Commit, res.Branch, redactURL(promo.PullRequest.URL))
		} else {
			detail = fmt.Sprintf("; branch %s of %s has it already (commit %.12s)", res.On, redactURL(promo.PullRequest.URL), res.Commit)
		}
	default:
		return strategy, nil, fmt.Errorf("unknown strategy %q", strategy)
	}
	if a.RollbackFrom != "" {
		return strategy, patched, r.reportRollback(ctx, p, env.Name, a, strategy, detail, id, now)
	}
	if a.Approver != "" {
		r.report.Eventf(ctx, p, nil, v1alpha1.EventPromoted, "Promote", "promoted %s to %s (%s), approved by %s", a.Revision, env.Name, strategy, a.Approver)
	} else {
		r.report.Eventf(ctx, p, nil, v1alpha1.EventPromoted, "Promote", "promoted %s to %s (%s)", a.Revision, env.Name, strategy)
	}
	if r.Log != nil {
		msg := fmt.Sprintf("pipeline %s/%s promoted %s %s to %s (%s)", p.Namespace, p.Name, p.Spec.AppRef.Kind, p.Spec.AppRef.Name, env.Name, strategy)
		if a.Approver != "" {
			msg += ", approved by " + a.Approver
		}
		msg += detail
		_, err := r.Log.AddControllerEntry(ctx, releaselog.Entry{
			ID: id, Type: releaselog.TypePromotion, Version: a.Revision, Origin: releaselog.ControllerOrigin,
			Author: releaselog.ControllerOrigin, ReportedAuthor: a.Approver, Date: now, Message: msg,
		})
		if err != nil && !errors.Is(err, releaselog.ErrDayFull) && !errors.Is(err, releaselog.ErrDateExpired) {
			// The promotion happened; the next attempt finds it done (same revision applied
			// again, same id logged once).
			return strategy, nil, fmt.Errorf("logging the promotion: %w", err)
		}
	}
	return strategy, patched, nil
}

// pushPromotion carries out the pullRequest strategy: the revision committed into the file
// and the branch pushed, with the credentials of pr.SecretRef.
func (r *Reconciler) pushPromotion(ctx context.Context, p *v1alpha1.Pipeline, env string, pr *v1alpha1.PullRequestPromotion, a Action, id string) (GitResult, error) {
	tmpl := pr.Branch
	if tmpl == "" {
		tmpl = v1alpha1.DefaultPromotionBranch
	}
	branch, err := PromotionBranch(tmpl, p.Name, env, a.Revision)
	if err != nil {
		return GitResult{}, err
	}
	c := GitChange{
		URL: pr.URL, BaseBranch: pr.BaseBranch, Branch: branch, Path: pr.Path, YAMLPath: pr.YAMLPath, Revision: a.Revision,
		AuthorName: v1alpha1.DefaultGitAuthorName, AuthorEmail: v1alpha1.DefaultGitAuthorEmail,
	}
	if c.BaseBranch == "" {
		c.BaseBranch = v1alpha1.DefaultBaseBranch
	}
	if au := pr.Author; au != nil {
		if au.Name != "" {
			c.AuthorName = au.Name
		}
		if au.Email != "" {
			c.AuthorEmail = au.Email
		}
	}
	if ref := pr.SecretRef; ref != nil {
		if c.Auth, err = r.gitAuth(ctx, p.Namespace, ref.Name, pr.URL, PullRequestURLField(p, env)); err != nil {
			return GitResult{}, err
		}
	}
	c.Message = fmt.Sprintf("Promote %s %s to %s in %s\n\nPipeline %s/%s promotes revision %s into environment %s", p.Spec.AppRef.Kind, p.Spec.AppRef.Name, a.Revision, env,
		p.Namespace, p.Name, a.Revision, env)
	if a.Approver != "" {
		c.Message += ", approved by " + a.Approver
	}
	c.Message += ".\n\nRelease-Controller-Promotion-Id: " + id + "\n"
	return r.Git.Push(ctx, c)
}

// gitAuth reads git credentials from a Secret in namespace: username and password (basic
// auth; username defaults to git), or bearerToken; refused unless the Secret allows url, the
// pipeline's field (CheckGitSecret).
func (r *Reconciler) gitAuth(ctx context.Context, namespace, name, url, field string) (transport.AuthMethod, error) {
	var s corev1.Secret
	if err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, &s); err != nil {
		return nil, fmt.Errorf("reading the git credentials Secret %s: %w", name, err)
	}
	if err := CheckGitSecret(&s, url, field); err != nil {
		return nil, err
	}
	if tok := s.Data[v1alpha1.SecretKeyGitBearerToken]; len(tok) > 0 {
		return &githttp.TokenAuth{Token: string(tok)}, nil
	}
	if pw := s.Data[v1alpha1.SecretKeyGitPassword]; len(pw) > 0 {
		user := string(s.Data[v1alpha1.SecretKeyGitUsername])
		if user == "" {
			user = "git" // providers ignore the name that goes with an access token, but want one
		}
		return &githttp.BasicAuth{Username: user, Password: string(pw)}, nil
	}
	return nil, fmt.Errorf("the git credentials Secret %s has neither %q nor %q", name, v1alpha1.SecretKeyGitPassword, v1alpha1.SecretKeyGitBearerToken)
}

// sharedKey reads the hmac-key of a Secret in namespace.
func (r *Reconciler) sharedKey(ctx context.Context, namespace, name string) ([]byte, error) {
	var s corev1.Secret
	if err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, &s); err != nil {
		return nil, fmt.Errorf("reading the key Secret %s: %w", name, err)
	}
	key := s.Data[v1alpha1.SecretKeyHMAC]
	if len(key) == 0 {
		return nil, fmt.Errorf("the Secret %s has no key %q", name, v1alpha1.SecretKeyHMAC)
	}
	return key, nil
}

var _ reconcile.Reconciler = &Reconciler{}
