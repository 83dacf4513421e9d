package releaselog

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/release-controller/release-controller/api/v1alpha1"
)

// PayloadPagePath is the path of a payload's page on the web server, filled with the
// payload's namespace, stream and tag. The entries of accepted and rejected payloads link to it.
// (Entries written before it moved link to /releases/NAMESPACE/STREAM/TAG, which the web
// server redirects here.)
const PayloadPagePath = "/namespaces/%s/releasestream/%s/release/%s"

// ControllerOrigin is the origin and author of the entries the controller writes.
const ControllerOrigin = "release-controller"

// ReasonReleaseLogFull is the reason of the Warning event on a payload whose verdict the log
// had no room for.
const ReasonReleaseLogFull = "ReleaseLogFull"

// payloadLogWorkers is how many verdicts are logged at once. Each worker waits for its entry's
// write, and the writer puts every entry waiting into one write of the day, so the workers
// bound the entries of a write: with writes of a busy day taking up to a second on a loaded API
// server, 128 keep up with a hundred verdicts a second. A waiting worker costs a goroutine.
const payloadLogWorkers = 128

// PayloadLink returns the path of a payload's page.
func PayloadLink(p *v1alpha1.ReleasePayload) string {
	return fmt.Sprintf(PayloadPagePath, p.Namespace, p.Spec.PayloadCoordinates.Stream, p.Spec.PayloadCoordinates.Tag)
}

// PayloadEntry returns the entry that logs a payload's verdict, when it has one: Accepted
// (type release) or Rejected (type rejected), dated when the verdict's condition turned True,
// with the condition's message. Its id names the payload and that transition, so adding it
// again (after a restart, say) changes nothing, while a later change of verdict is logged.
func PayloadEntry(p *v1alpha1.ReleasePayload) (Entry, bool) {
	var typ, condition string
	switch p.Status.Phase {
	case v1alpha1.PhaseAccepted:
		typ, condition = TypeRelease, v1alpha1.ConditionPayloadAccepted
	case v1alpha1.PhaseRejected:
		typ, condition = TypeRejected, v1alpha1.ConditionPayloadRejected
	default:
		return Entry{}, false
	}
	c := meta.FindStatusCondition(p.Status.Conditions, condition)
	if c == nil || c.Status != metav1.ConditionTrue || c.LastTransitionTime.IsZero() {
		return Entry{}, false
	}
	return Entry{
		ID:      fmt.Sprintf("%s/%s/%d", p.UID, p.Status.Phase, c.LastTransitionTime.Unix()),
		Type:    typ,
		Version: p.Spec.PayloadCoordinates.Tag,
		Origin:  ControllerOrigin,
		Author:  ControllerOrigin,
		Date:    c.LastTransitionTime.UTC(),
		Message: truncate(c.Message, v1alpha1.MaxReleaseLogMessageLength),
		Link:    PayloadLink(p),
	}, true
}

// truncate shortens s to at most n characters, marking the cut with an ellipsis.
func truncate(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// hasVerdict keeps the events of payloads that are accepted or rejected.
func hasVerdict(o client.Object) bool {
	p, ok := o.(*v1alpha1.ReleasePayload)
	return ok && (p.Status.Phase == v1alpha1.PhaseAccepted || p.Status.Phase == v1alpha1.PhaseRejected)
}

// payloadLogger adds the entry of every accepted or rejected payload to the log, once.
type payloadLogger struct {
	client.Reader
	writer   *Writer
	store    *Store
	recorder events.EventRecorder
}

// Payloads are read from the cache. Their entries go through the Writer, which creates the
// day or appends to it with a patch, and reads it from the API server after losing a race to
// another writer (get); a verdict that finds its day full is an event on the payload
// (events.k8s.io, patched when it repeats).
// +kubebuilder:rbac:groups=release-controller.dev,resources=releasepayloads,verbs=list;watch
// +kubebuilder:rbac:groups=release-controller.dev,resources=releaselogs,verbs=get;create;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile logs the payload's verdict unless the log holds it already: the store answers for
// the common case (a restart replays every payload), the writer's id check for the rest.
func (r *payloadLogger) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var p v1alpha1.ReleasePayload
	if err := r.Get(ctx, req.NamespacedName, &p); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	e, ok := PayloadEntry(&p)
	if !ok {
		return ctrl.Result{}, nil
	}
	if r.store.HasEntry(DayOf(e.Date), e.ID) {
		PayloadEntries.WithLabelValues(resultPresent).Inc()
		return ctrl.Result{}, nil
	}
	_, added, err := r.writer.add(ctx, e)
	switch {
	case errors.Is(err, ErrDateExpired):
		// A verdict older than the log keeps (the controller was down for long): nothing to log.
		PayloadEntries.WithLabelValues(resultExpired).Inc()
		return ctrl.Result{}, nil
	case errors.Is(err, ErrDayFull):
		// No retry makes room in the day: say so on the payload and in the metrics, and go on.
		PayloadEntries.WithLabelValues(resultFull).Inc()
		r.recorder.Eventf(&p, nil, corev1.EventTypeWarning, ReasonReleaseLogFull, "LogVerdict",
			"the %s verdict is not in the release log: %v", p.Status.Phase, err)
		return ctrl.Result{}, nil
	case err != nil:
		return ctrl.Result{}, fmt.Errorf("logging the verdict of payload %s: %w", req, err)
	case added:
		PayloadEntries.WithLabelValues(resultAdded).Inc()
	default:
		PayloadEntries.WithLabelValues(resultPresent).Inc()
	}
	return ctrl.Result{}, nil
}
