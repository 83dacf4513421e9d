package logcontroller

import (
	"context"
	"errors"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/eventlog"
	"github.com/release-controller/release-controller/internal/releaselog"
	"github.com/release-controller/release-controller/internal/verdict"
)

// payloadLogWorkers is how many verdicts are logged at once. Each worker waits for its entry's
// write, and the writer puts every entry waiting into one write of the day, so the workers
// bound the entries of a write: with writes of a busy day taking up to a second on a loaded API
// server, 128 keep up with a hundred verdicts a second. A waiting worker costs a goroutine.
const payloadLogWorkers = 128

// hasVerdict keeps the events of payloads that are accepted or rejected.
func hasVerdict(o client.Object) bool {
	p, ok := o.(*v1alpha1.ReleasePayload)
	if !ok {
		return false
	}
	phase := verdict.Of(p)
	return phase == v1alpha1.PhaseAccepted || phase == v1alpha1.PhaseRejected
}

// payloadLogger adds the entry of every accepted or rejected payload to the log, once.
type payloadLogger struct {
	client.Reader
	writer *releaselog.Writer
	store  *releaselog.Store
	report eventlog.Recorder
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
func (r *payloadLogger) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, err error) {
	var p v1alpha1.ReleasePayload
	if err := r.Get(ctx, req.NamespacedName, &p); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	defer func() { err = r.report.Finish(ctx, &p, err) }()
	return ctrl.Result{}, r.logVerdict(ctx, &p)
}

// logVerdict adds the payload's entry unless the log holds it already; a failure is returned.
func (r *payloadLogger) logVerdict(ctx context.Context, p *v1alpha1.ReleasePayload) error {
	e, ok := releaselog.PayloadEntry(p)
	if !ok {
		return nil
	}
	if r.store.HasEntry(releaselog.DayOf(e.Date), e.ID) {
		PayloadEntries.WithLabelValues(resultPresent).Inc()
		return nil
	}
	added, err := r.writer.AddControllerEntry(ctx, e)
	switch {
	case errors.Is(err, releaselog.ErrDateExpired):
		// A verdict older than the log keeps (the controller was down for long): nothing to log.
		PayloadEntries.WithLabelValues(resultExpired).Inc()
		return nil
	case errors.Is(err, releaselog.ErrDayFull):
		// No retry makes room in the day: say so on the payload and in the metrics, and go on.
		PayloadEntries.WithLabelValues(resultFull).Inc()
		r.report.Warningf(ctx, p, nil, v1alpha1.EventReleaseLogFull, "LogVerdict",
			"the %s verdict is not in the release log: %v", p.Status.Phase, err)
		return nil
	case err != nil:
		return eventlog.Step(v1alpha1.EventReleaseLogFailed, "LogVerdict", "logging the "+string(p.Status.Phase)+" verdict", err)
	case added:
		PayloadEntries.WithLabelValues(resultAdded).Inc()
	default:
		PayloadEntries.WithLabelValues(resultPresent).Inc()
	}
	return nil
}
