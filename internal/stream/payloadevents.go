package stream

import (
	"context"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/verdict"
)

// PayloadChange says whose pass a payload's update concerns: own, its stream's; dependents,
// that of the streams whose upgrade verifications start from its stream. Most updates of a
// payload are the payload controller's status writes, and most of those change only what no
// pass reads (a condition's message, a run's URL, message or start time): those enqueue no
// stream. What a pass reads, and so what enqueues its stream:
//   - the phase (verdict.Of): the counts, Reconciling, the creation decision's unready
//     payloads, what is published and what retention collects;
//   - the creation job's result: a job done makes the pass record the image (or stop waiting);
//   - the payload image: verifications launch once it is recorded, upgrades start from it;
//   - the verification runs (which exist, their state and completion time): a failed run is
//     retried after its backoff, a recorded run is no longer launched, finished jobs are
//     collected once recorded;
//   - the annotations (aborted, skipped upgrades, refused runs, keep) and the spec (an
//     override): the pass acts on them;
//   - a deletion that begins.
//
// The streams upgrading from this one read only its accepted payloads' images: they are
// enqueued when the payload becomes accepted or no longer is, or an accepted payload's image
// changes. A payload's creation and deletion concern both (handled by payloadEvents).
func PayloadChange(old, cur *v1alpha1.ReleasePayload) (own, dependents bool) {
	wasAccepted, accepted := verdict.Accepted(old), verdict.Accepted(cur)
	dependents = wasAccepted != accepted || (accepted && old.Status.PayloadImage != cur.Status.PayloadImage)
	own = dependents ||
		verdict.Of(old) != verdict.Of(cur) ||
		old.Status.ReleaseCreationJobResult.Name != cur.Status.ReleaseCreationJobResult.Name ||
		old.Status.ReleaseCreationJobResult.Status != cur.Status.ReleaseCreationJobResult.Status ||
		old.Status.PayloadImage != cur.Status.PayloadImage ||
		!equality.Semantic.DeepEqual(old.Status.PlatformImages, cur.Status.PlatformImages) ||
		!equality.Semantic.DeepEqual(runsOf(old), runsOf(cur)) ||
		!equality.Semantic.DeepEqual(old.Annotations, cur.Annotations) ||
		old.Generation != cur.Generation ||
		(old.DeletionTimestamp == nil) != (cur.DeletionTimestamp == nil)
	return own, dependents
}

// runKey is what a pass reads of a verification run.
type runKey struct {
	Verification, Kind, Namespace, Name, UpgradeFrom string
	Attempt                                          int32
	State                                            v1alpha1.JobState
	Completed                                        string
}

func runsOf(p *v1alpha1.ReleasePayload) []runKey {
	var keys []runKey
	for _, v := range p.Status.Verifications {
		keys = append(keys, runKey{Verification: v.Name, State: v.State})
		for _, r := range v.Runs {
			k := runKey{Verification: v.Name, Kind: string(r.Kind), Namespace: r.Namespace, Name: r.Name, UpgradeFrom: r.UpgradeFrom, Attempt: r.Attempt, State: r.State}
			if r.CompletionTime != nil {
				k.Completed = r.CompletionTime.UTC().String()
			}
			keys = append(keys, k)
		}
	}
	return keys
}

// payloadEvents enqueues the streams a payload's event concerns (see PayloadChange): its own
// stream, and the streams whose upgrades start from it.
func (r *Reconciler) payloadEvents() handler.EventHandler {
	type queue = workqueue.TypedRateLimitingInterface[reconcile.Request]
	enqueue := func(ctx context.Context, p *v1alpha1.ReleasePayload, own, dependents bool, q queue) {
		stream := p.Spec.PayloadCoordinates.Stream
		if own {
			q.Add(reconcile.Request{NamespacedName: types.NamespacedName{Namespace: p.Namespace, Name: stream}})
		}
		if dependents {
			for _, req := range r.upgradingFrom(ctx, p.Namespace, stream) {
				q.Add(req)
			}
		}
	}
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q queue) {
			if p, ok := e.Object.(*v1alpha1.ReleasePayload); ok {
				enqueue(ctx, p, true, true, q)
			}
		},
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q queue) {
			old, okOld := e.ObjectOld.(*v1alpha1.ReleasePayload)
			p, ok := e.ObjectNew.(*v1alpha1.ReleasePayload)
			if !ok || !okOld {
				return
			}
			own, dependents := PayloadChange(old, p)
			enqueue(ctx, p, own, dependents, q)
		},
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q queue) {
			if p, ok := e.Object.(*v1alpha1.ReleasePayload); ok {
				enqueue(ctx, p, true, true, q)
			}
		},
		GenericFunc: func(ctx context.Context, e event.GenericEvent, q queue) {
			if p, ok := e.Object.(*v1alpha1.ReleasePayload); ok {
				enqueue(ctx, p, true, true, q)
			}
		},
	}
}
