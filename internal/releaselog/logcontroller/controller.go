// Package logcontroller runs the release log's reconcilers: the projection of the ReleaseLog
// objects into a releaselog.Store (on every replica, and in the API server), the expiry and
// status of the days, and the entries of accepted and rejected payloads. The log itself — its
// days, entries, store and writer — is the library releaselog, which other controllers (the
// pipelines' promotions) and the API write through.
package logcontroller

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/eventlog"
	"github.com/release-controller/release-controller/internal/releaselog"
	"github.com/release-controller/release-controller/internal/statuswrite"
)

// Reconciler deletes the days older than the time to live and keeps every day's status: the
// entry count, and the Valid condition that reports a name which is not a day.
type Reconciler struct {
	client.Client
	TTL time.Duration
	// FutureSkew is how far ahead of the clock a day may begin and count as begun.
	FutureSkew time.Duration
	// Clock tells the log's dates (expiry); the spacing of status writes is about the API
	// server's load and counts in real time (written's clock).
	Clock clock.PassiveClock

	// report records the days' Events.
	report eventlog.Recorder
	// written holds each day's last status write.
	written statuswrite.Tracker[struct{}]
}

// statusInterval is the least time between two status writes of a day. Every write of a day
// costs the API server the whole object (a megabyte on a busy day), as much as the append it
// counts: while entries keep coming, the count follows them every statusInterval instead of
// doubling the cost of every append.
const statusInterval = 2 * time.Second

// statusSpacing is the least time between two status writes of l: statusInterval, longer for a
// big day, whose count is written at most once every statusAppends appends.
func statusSpacing(l *v1alpha1.ReleaseLog) time.Duration {
	return max(statusInterval, statusAppends*releaselog.WriteSpacing(releaselog.JSONSize(l)))
}

// statusAppends: a busy day's count is written at most once for this many appends.
const statusAppends = 4

// statusWait is how long a day whose status was last written at last (zero: never) waits at
// now before its status is written again.
func statusWait(last, now time.Time, interval time.Duration) time.Duration {
	if last.IsZero() {
		return 0
	}
	return max(interval-now.Sub(last), 0)
}

// The days are read from the cache; expired ones are deleted, statuses patched.
// +kubebuilder:rbac:groups=release-controller.dev,resources=releaselogs,verbs=list;watch;delete
// +kubebuilder:rbac:groups=release-controller.dev,resources=releaselogs/status,verbs=patch

// The release log key (releaselog.EnsureKey, --release-log-key-secret) is a Secret of the
// controller's own namespace, read at start and made there when missing.
// +kubebuilder:rbac:groups="",namespace=release-controller-system,resources=secrets,verbs=get;create

// conflictRetryDelay is how soon a day whose status write met a newer version is reconciled again.
const conflictRetryDelay = 100 * time.Millisecond

// Reconcile reads the day from the cache, deletes it when it expired, else writes its status
// when it changed (at most once every statusInterval) and comes back at its expiry (or after
// ResyncInterval when that is sooner).
// A day whose name is not a day is reported in its status and otherwise left alone: no edit can
// fix a name, so it is not retried. A failed step is reported in the deferred function: one
// Warning Event on the day, and the returned error, retried with backoff.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (result ctrl.Result, err error) {
	var l v1alpha1.ReleaseLog
	if err := r.Get(ctx, req.NamespacedName, &l); err != nil {
		if apierrors.IsNotFound(err) {
			r.written.Forget(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !l.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	defer func() {
		if err = r.report.Finish(ctx, &l, err); err != nil {
			result = ctrl.Result{}
		}
	}()
	return r.reconcile(ctx, &l)
}

func (r *Reconciler) reconcile(ctx context.Context, l *v1alpha1.ReleaseLog) (ctrl.Result, error) {
	key := client.ObjectKeyFromObject(l)
	now := r.Clock.Now()
	_, start, nameErr := releaselog.ParseObjectName(l.Name)
	if nameErr == nil && releaselog.Expired(start, now, r.TTL) {
		// The UID precondition spares an object recreated under the same name meanwhile.
		err := r.Delete(ctx, l, client.Preconditions{UID: &l.UID})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return ctrl.Result{}, eventlog.Step(v1alpha1.ReasonReconcileFailed, "Expire", "deleting the expired day", err)
		}
		return ctrl.Result{}, nil
	}
	dayErr := nameErr
	if nameErr == nil {
		// A day that has not begun was written directly (admission refuses it since the
		// release log's policy): it is reported, and shown once it begins.
		dayErr = releaselog.CheckBegun(start, now, r.FutureSkew)
	}
	status := DesiredStatus(l, dayErr, now)
	if !equality.Semantic.DeepEqual(status, l.Status) {
		if wait := statusWait(r.written.Last(key), r.written.Now(), statusSpacing(l)); wait > 0 {
			return ctrl.Result{RequeueAfter: wait}, nil
		}
		// The patch is computed from the status alone, not from two copies of every entry.
		// Its optimistic lock keeps a status counted from a stale cache from overwriting a
		// newer one; the newer object's own event brings the controller back.
		before := &v1alpha1.ReleaseLog{ObjectMeta: metav1.ObjectMeta{Namespace: l.Namespace, Name: l.Name, ResourceVersion: l.ResourceVersion}, Status: l.Status}
		after := before.DeepCopy()
		after.Status = status
		if err := r.Status().Patch(ctx, after, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
			if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
				// The cache is a moment behind: read the day again shortly.
				return ctrl.Result{RequeueAfter: conflictRetryDelay}, nil
			}
			return ctrl.Result{}, eventlog.Step(v1alpha1.ReasonReconcileFailed, "WriteStatus", "writing the day's status", err)
		}
		r.written.Wrote(key, l.ResourceVersion, after.ResourceVersion, struct{}{})
	}
	if nameErr != nil {
		return ctrl.Result{}, nil //nolint:nilerr // the status says the name is no day; nothing expires
	}
	if dayErr != nil {
		// The status says the day has not begun; it is looked at again when it does.
		return ctrl.Result{RequeueAfter: releaselog.UntilBegun(start, now, r.FutureSkew)}, nil //nolint:nilerr // reported in the status
	}
	return ctrl.Result{RequeueAfter: releaselog.RequeueAfter(start, now, r.TTL)}, nil
}

// projector keeps a releaselog.Store in step with the ReleaseLog objects. Every process that serves reads
// keeps its own store, so it runs without leader election.
type projector struct {
	client.Reader
	store *releaselog.Store
	ttl   time.Duration
	skew  time.Duration
	clock clock.PassiveClock
	// key checks the entries' seals.
	key []byte
}

// Reconcile puts the day's entries into the store, or removes the day once its object is gone
// or has expired. A name that is not a day is never in the store.
func (p *projector) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	day, start, err := releaselog.ParseObjectName(req.Name)
	if err != nil {
		return ctrl.Result{}, nil //nolint:nilerr // not a day: never in the store
	}
	var l v1alpha1.ReleaseLog
	if err := p.Get(ctx, req.NamespacedName, &l); err != nil {
		if apierrors.IsNotFound(err) {
			p.store.Delete(day)
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, err
	}
	now := p.clock.Now()
	if !l.DeletionTimestamp.IsZero() || releaselog.Expired(start, now, p.ttl) {
		p.store.Delete(day)
		return ctrl.Result{}, nil
	}
	if releaselog.CheckBegun(start, now, p.skew) != nil {
		// A day that has not begun (written directly) is not shown before it begins: it
		// would be the newest day, the one readers open first.
		p.store.Delete(day)
		return ctrl.Result{RequeueAfter: releaselog.UntilBegun(start, now, p.skew)}, nil //nolint:nilerr // not an error: shown once it begins
	}
	p.store.Set(day, releaselog.EntriesOf(&l, day, p.key))
	// Readers stop seeing the day at its expiry even where no leader deletes it.
	return ctrl.Result{RequeueAfter: releaselog.RequeueAfter(start, now, p.ttl)}, nil
}

// inNamespace keeps the events of objects in namespace.
func inNamespace(namespace string) predicate.Predicate {
	return predicate.NewPredicateFuncs(func(o client.Object) bool { return o.GetNamespace() == namespace })
}

// SetupWithManager registers the release log's controllers with mgr: the projection into
// opts.Store (on every replica), and, on the leader, the expiry and status of the days and the
// automatic entries of accepted and rejected payloads.
func SetupWithManager(mgr ctrl.Manager, opts releaselog.Options) error {
	opts = opts.WithDefaults("")
	if opts.Store == nil {
		opts.Store = releaselog.NewStore()
	}
	if err := SetupStoreWithManager(mgr, opts); err != nil {
		return err
	}
	days := &Reconciler{Client: mgr.GetClient(), TTL: opts.TTL, FutureSkew: opts.FutureSkew, Clock: opts.Clock,
		report: eventlog.Recorder{Events: mgr.GetEventRecorder(eventlog.Reporter)}}
	// A busy day's count may wait statusAppends spacings of a megabyte's write; long after
	// that, the spacing no longer matters.
	days.written.Keep = time.Minute
	if err := ctrl.NewControllerManagedBy(mgr).
		Named("releaselog").
		For(&v1alpha1.ReleaseLog{}, builder.WithPredicates(inNamespace(opts.Namespace))).
		Complete(days); err != nil {
		return fmt.Errorf("setting up the release log controller: %w", err)
	}
	payloads := &payloadLogger{
		Reader: mgr.GetClient(), writer: releaselog.NewWriter(mgr.GetClient(), mgr.GetAPIReader(), opts), store: opts.Store,
		report: eventlog.Recorder{Events: mgr.GetEventRecorder(eventlog.Reporter)},
	}
	if err := ctrl.NewControllerManagedBy(mgr).
		Named("releaselog-payloads").
		WithOptions(controller.Options{MaxConcurrentReconciles: payloadLogWorkers}).
		For(&v1alpha1.ReleasePayload{}, builder.WithPredicates(predicate.NewPredicateFuncs(hasVerdict))).
		Complete(payloads); err != nil {
		return fmt.Errorf("setting up the release log's payload entries: %w", err)
	}
	return nil
}

// SetupStoreWithManager registers only the projection of the log into opts.Store (which must
// be set), for processes that serve reads without running the controllers.
func SetupStoreWithManager(mgr ctrl.Manager, opts releaselog.Options) error {
	opts = opts.WithDefaults("")
	if opts.Store == nil {
		return fmt.Errorf("the release log projection needs a store")
	}
	p := &projector{Reader: mgr.GetClient(), store: opts.Store, ttl: opts.TTL, skew: opts.FutureSkew, clock: opts.Clock, key: opts.SealKey}
	// Status updates do not change the generation and hold nothing for readers.
	err := ctrl.NewControllerManagedBy(mgr).
		Named("releaselog-store").
		WithOptions(controller.Options{NeedLeaderElection: new(false)}).
		For(&v1alpha1.ReleaseLog{}, builder.WithPredicates(inNamespace(opts.Namespace), predicate.GenerationChangedPredicate{})).
		Complete(p)
	if err != nil {
		return fmt.Errorf("setting up the release log store: %w", err)
	}
	return nil
}
