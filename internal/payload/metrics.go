package payload

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/release-controller/release-controller/api/v1alpha1"
)

// The payload controller's metrics, on controller-runtime's registry (served with its own on
// --metrics-bind-address). The verdict and run metrics are observed once per transition, when
// the status write that records it succeeded (see Transitions, EndedRuns, Verdict).
var (
	// StatusWrites counts the payload status updates the controller wrote; with the reconcile
	// counts of controller-runtime it shows how well job results are batched.
	StatusWrites = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "release_controller_payload_status_writes_total",
		Help: "Status updates written to ReleasePayloads by the payload controller.",
	})
	// VerdictSeconds is the time from a payload's creation to its verdict.
	VerdictSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "release_controller_payload_verdict_seconds",
		Help:    "Time from a ReleasePayload's creation to its verdict, by stream and phase (Accepted, Rejected, Failed).",
		Buckets: []float64{30, 60, 120, 300, 600, 900, 1800, 3600, 2 * 3600, 4 * 3600, 8 * 3600, 16 * 3600, 24 * 3600},
	}, []string{"namespace", "stream", "phase"})
	// VerificationSeconds is how long verification runs ran, from their start to their end.
	VerificationSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "release_controller_verification_duration_seconds",
		Help:    "Duration of ended verification runs (Jobs and ProwJobs) from start to completion, by stream, verification and result (Success, Failure, Unknown).",
		Buckets: []float64{10, 30, 60, 120, 300, 600, 900, 1800, 3600, 2 * 3600, 4 * 3600, 8 * 3600},
	}, []string{"namespace", "stream", "verification", "result"})
	// VerificationRuns counts ended verification runs, those without known times included.
	VerificationRuns = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "release_controller_verification_runs_total",
		Help: "Ended verification runs, by stream, verification and result (Success, Failure, Unknown: lost before it finished).",
	}, []string{"namespace", "stream", "verification", "result"})
)

func init() {
	metrics.Registry.MustRegister(StatusWrites, VerdictSeconds, VerificationSeconds, VerificationRuns)
}

// observeTransitions observes the verdict and the runs that ended when p's status went from old
// to what it is now.
func observeTransitions(p *v1alpha1.ReleasePayload, old *v1alpha1.ReleasePayloadStatus, now time.Time) {
	stream := p.Spec.PayloadCoordinates.Stream
	if phase, ok := Verdict(old, &p.Status); ok {
		VerdictSeconds.WithLabelValues(p.Namespace, stream, string(phase)).Observe(max(0, now.Sub(p.CreationTimestamp.Time)).Seconds())
	}
	for _, run := range EndedRuns(old, &p.Status) {
		labels := []string{p.Namespace, stream, run.Verification, string(run.Run.State)}
		VerificationRuns.WithLabelValues(labels...).Inc()
		if d, ok := run.Duration(); ok {
			VerificationSeconds.WithLabelValues(labels...).Observe(d.Seconds())
		}
	}
}
