// Package freeze reconciles ReleaseFreezes and ClusterReleaseFreezes: it reads each freeze's
// window (Window, pure: a start and end, or a cron schedule in a time zone), writes where it
// stands into the status (Active, activeSince, activeUntil, nextStart), records each window's
// start and end as Events and release-log entries, and comes back at the next boundary. The
// pipeline controller decides from the same Window which environments a freeze holds.
package freeze

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/conditions"
	"github.com/release-controller/release-controller/internal/eventlog"
	"github.com/release-controller/release-controller/internal/releaselog"
)

// Reconciler reconciles ReleaseFreezes and ClusterReleaseFreezes (a controller each).
type Reconciler struct {
	// Client reads freezes from the manager's cache and patches their status.
	Client client.Client
	// Log receives an entry at each start and end of a window; nil logs nothing.
	Log *releaselog.Writer
	// Clock is now; nil: the real clock.
	Clock clock.PassiveClock
	// Events records the Events; nil: the manager's recorder.
	Events events.EventRecorder

	report eventlog.Recorder
}

// conflictRetry is how soon a freeze whose status write met a newer version is reconciled
// again (the cache was behind).
const conflictRetry = 100 * time.Millisecond

// The freeze controller reads freezes from the cache, patches their status, records Events,
// and writes the release log (releaselog's markers grant it).
// +kubebuilder:rbac:groups=release-controller.dev,resources=releasefreezes;clusterreleasefreezes,verbs=list;watch
// +kubebuilder:rbac:groups=release-controller.dev,resources=releasefreezes/status;clusterreleasefreezes/status,verbs=patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// SetupWithManager registers a controller of ReleaseFreezes and one of ClusterReleaseFreezes.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	r.setup(mgr)
	// Its own status writes bring nothing new: a spec edit (generation) or an annotation does.
	changed := builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}))
	if err := ctrl.NewControllerManagedBy(mgr).For(&v1alpha1.ReleaseFreeze{}, changed).Named("releasefreeze").
		Complete(reconcile.Func(func(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
			return r.Reconcile(ctx, req, &v1alpha1.ReleaseFreeze{})
		})); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).For(&v1alpha1.ClusterReleaseFreeze{}, changed).Named("clusterreleasefreeze").
		Complete(reconcile.Func(func(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
			return r.Reconcile(ctx, req, &v1alpha1.ClusterReleaseFreeze{})
		}))
}

func (r *Reconciler) setup(mgr ctrl.Manager) {
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	if r.Client == nil {
		r.Client = mgr.GetClient()
	}
	if r.Events == nil {
		r.Events = mgr.GetEventRecorder(eventlog.Reporter)
	}
	r.report = eventlog.Recorder{Events: r.Events}
}

// Parts are the spec and status of a ReleaseFreeze or ClusterReleaseFreeze (it panics on
// another kind).
func Parts(obj client.Object) (*v1alpha1.ReleaseFreezeSpec, *v1alpha1.ReleaseFreezeStatus) {
	switch f := obj.(type) {
	case *v1alpha1.ReleaseFreeze:
		return &f.Spec, &f.Status
	case *v1alpha1.ClusterReleaseFreeze:
		return &f.Spec, &f.Status
	}
	panic(fmt.Sprintf("not a freeze: %T", obj))
}

// Name is how the pipelines' status and the release log name a freeze: namespace/name for a
// ReleaseFreeze, the name for a ClusterReleaseFreeze.
func Name(namespace, name string) string {
	if namespace == "" {
		return name
	}
	return namespace + "/" + name
}

// Reconcile reads the freeze req names into obj (an empty ReleaseFreeze or
// ClusterReleaseFreeze), decides where its window stands, logs the windows that began or
// ended, and writes the status once, in its deferred part, with the failures (eventlog).
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request, obj client.Object) (result ctrl.Result, err error) {
	if err := r.Client.Get(ctx, req.NamespacedName, obj); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !obj.GetDeletionTimestamp().IsZero() {
		return ctrl.Result{}, nil
	}
	spec, current := Parts(obj)
	before := current.DeepCopy()
	now := r.Clock.Now()
	// status is what the pass decided; the deferred part adds what its failures make of
	// Ready, Reconciling and Stalled.
	status := before.DeepCopy()
	defer func() {
		setProgress(status, obj.GetGeneration(), err, now)
		conflict, writeErr := r.writeStatus(ctx, obj, before, status)
		if conflict && err == nil {
			result = ctrl.Result{RequeueAfter: conflictRetry}
			return
		}
		err = r.report.Finish(ctx, obj, errors.Join(err, writeErr))
		if err != nil {
			result = ctrl.Result{} // retried with the controller's backoff, or not at all when stalled
		}
	}()

	st, readErr := Window(*spec, obj.GetCreationTimestamp().Time, now)
	if _, selErr := Selector(*spec); selErr != nil {
		readErr = errors.Join(readErr, selErr)
	}
	decided, transitions := Decide(before, obj.GetGeneration(), st, readErr != nil, now)
	for _, t := range transitions {
		if err := r.record(ctx, obj, *spec, t); err != nil {
			// Not recorded: the status keeps what it said of the window, so that the next pass
			// finds the transitions again (an entry's id keeps it logged once).
			return ctrl.Result{}, err
		}
	}
	*status = *decided
	if readErr != nil {
		return ctrl.Result{}, eventlog.Stall(v1alpha1.ReasonInvalidFreeze, "Read", "reading the freeze", readErr)
	}
	if wake := Wake(st); !wake.IsZero() {
		return ctrl.Result{RequeueAfter: max(wake.Sub(now), time.Millisecond)}, nil
	}
	return ctrl.Result{}, nil
}

// record reports a window that began or ended: a release-log entry (once: its id is the
// freeze's and the moment's) and, when the entry is new, a Normal Event.
func (r *Reconciler) record(ctx context.Context, obj client.Object, spec v1alpha1.ReleaseFreezeSpec, t Transition) error {
	name := Name(obj.GetNamespace(), obj.GetName())
	what, reason, event := "ended", "end", v1alpha1.EventFreezeEnded
	if t.Started {
		what, reason, event = "started", "start", v1alpha1.EventFreezeStarted
	}
	msg := fmt.Sprintf("freeze %s %s: %s", name, what, spec.Reason)
	if t.Started {
		msg += "; " + Covers(spec)
		if t.Until.IsZero() {
			msg += ", until it is ended"
		} else {
			msg += ", until " + stamp(t.Until)
		}
	}
	added := true
	if r.Log != nil {
		var err error
		added, err = r.Log.AddControllerEntry(ctx, releaselog.Entry{
			ID: fmt.Sprintf("freeze/%s/%s/%d", obj.GetUID(), reason, t.At.Unix()), Type: releaselog.TypeFreeze, Version: name,
			Origin: releaselog.ControllerOrigin, Author: releaselog.ControllerOrigin, Date: t.At, Message: conditions.Truncate(msg, v1alpha1.MaxReleaseLogMessageLength),
		})
		if err != nil && !errors.Is(err, releaselog.ErrDayFull) && !errors.Is(err, releaselog.ErrDateExpired) {
			return eventlog.Step(v1alpha1.EventReleaseLogFailed, "Log", "logging the freeze's "+reason, err)
		}
	}
	if added {
		r.report.Eventf(ctx, obj, nil, event, "Freeze", "%s at %s", msg, stamp(t.At))
	}
	return nil
}

// Covers says what a freeze holds, for people: "every pipeline, environments prod".
func Covers(spec v1alpha1.ReleaseFreezeSpec) string {
	s := "every pipeline"
	if spec.Pipelines != nil {
		if sel, err := metav1.LabelSelectorAsSelector(spec.Pipelines); err == nil {
			s = "the pipelines " + sel.String()
		}
	}
	if len(spec.Environments) > 0 {
		return s + ", environments " + strings.Join(spec.Environments, ", ")
	}
	return s + ", every environment"
}

// setProgress sets Ready, Reconciling and Stalled from the pass's failures (err): Ready False
// with their reason and message, Stalled for a spec that cannot be read, else Reconciling
// (retried); without one, Ready True. A freeze is never at work: no Reconciling then.
func setProgress(status *v1alpha1.ReleaseFreezeStatus, generation int64, err error, now time.Time) {
	ready := metav1.Condition{Type: v1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonFreezeRead,
		Message: "the freeze's window is read", ObservedGeneration: generation, LastTransitionTime: metav1.NewTime(now)}
	progress := conditions.Done
	if s, failed := eventlog.Summarize(err); failed {
		ready.Status, ready.Reason, ready.Message = metav1.ConditionFalse, s.Reason, s.Message
		progress = conditions.Progress{Reconciling: true, Reason: v1alpha1.ReasonProgressingWithRetry, Message: s.Message}
		if s.Stalled {
			progress = conditions.Progress{Stalled: true, Reason: s.Reason, Message: s.Message}
		}
	}
	conditions.Set(&status.Conditions, ready)
	conditions.SetProgress(&status.Conditions, generation, progress, now)
	status.ObservedGeneration = generation
}

// writeStatus patches obj's status to status unless it is before; conflict: the cache was
// behind a newer version, and the pass runs again.
func (r *Reconciler) writeStatus(ctx context.Context, obj client.Object, before, status *v1alpha1.ReleaseFreezeStatus) (conflict bool, err error) {
	if equality.Semantic.DeepEqual(before, status) {
		return false, nil
	}
	base := obj.DeepCopyObject().(client.Object)
	_, current := Parts(obj)
	*current = *status
	// The optimistic lock keeps a pass computed from a stale cache from writing over a newer
	// status (and reporting a window's start twice).
	if err := r.Client.Status().Patch(ctx, obj, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
		switch {
		case apierrors.IsNotFound(err):
			return false, nil
		case apierrors.IsConflict(err):
			return true, nil
		}
		return false, eventlog.Step(v1alpha1.ReasonReconcileFailed, "WriteStatus", "writing the status", err)
	}
	return false, nil
}
