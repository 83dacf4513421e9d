package stream

import (
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/release-controller/release-controller/api/v1alpha1"
)

// The stream controller's metrics, on controller-runtime's registry (served with its own on
// --metrics-bind-address). Series of a deleted stream are dropped.
var (
	// payloads is set at the end of every pass from the payloads the pass listed.
	payloads = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "release_controller_payloads",
		Help: "ReleasePayloads of each ReleaseStream by phase (Pending, Ready, Accepted, Rejected, Failed), as of the stream's last reconcile.",
	}, []string{"namespace", "stream", "phase"})
	// importErrors counts the component resolutions that failed.
	importErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "release_controller_import_errors_total",
		Help: "Failed resolutions of a ReleaseStream's components (tag to digest); each is retried with backoff.",
	}, []string{"namespace", "stream"})
	// stepFailures counts the failed steps of stream reconciles by the reason their Event and
	// Ready condition carry.
	stepFailures = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "release_controller_stream_step_failures_total",
		Help: "Failed steps of ReleaseStream reconciles, by reason (ReconcileFailed, MirrorFailed, PublishFailed, UpgradeGraphNotOwned, …); each is retried with backoff, but stalls (UpgradeSourceMissing, VerificationNameClash).",
	}, []string{"namespace", "stream", "reason"})
)

func init() {
	metrics.Registry.MustRegister(payloads, importErrors, stepFailures)
}

// phases are the values of the phase label.
var phases = []v1alpha1.PayloadPhase{v1alpha1.PhasePending, v1alpha1.PhaseReady, v1alpha1.PhaseAccepted, v1alpha1.PhaseRejected, v1alpha1.PhaseFailed}

// observePayloads sets the stream's payload gauges.
func observePayloads(stream *v1alpha1.ReleaseStream, list []v1alpha1.ReleasePayload) {
	c := Counts(list)
	for _, phase := range phases {
		n := map[v1alpha1.PayloadPhase]int32{
			v1alpha1.PhasePending: c.Pending, v1alpha1.PhaseReady: c.Ready, v1alpha1.PhaseAccepted: c.Accepted,
			v1alpha1.PhaseRejected: c.Rejected, v1alpha1.PhaseFailed: c.Failed,
		}[phase]
		payloads.WithLabelValues(stream.Namespace, stream.Name, string(phase)).Set(float64(n))
	}
}

// forgetStream drops the series of a deleted stream.
func forgetStream(stream types.NamespacedName) {
	labels := prometheus.Labels{"namespace": stream.Namespace, "stream": stream.Name}
	payloads.DeletePartialMatch(labels)
	importErrors.DeletePartialMatch(labels)
	stepFailures.DeletePartialMatch(labels)
}
