package payload

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// StatusWrites counts the payload status updates the controller wrote; with the reconcile
// counts of controller-runtime it shows how well job results are batched.
var StatusWrites = prometheus.NewCounter(prometheus.CounterOpts{
	Name: "release_controller_payload_status_writes_total",
	Help: "Status updates written to ReleasePayloads by the payload controller.",
})

func init() {
	metrics.Registry.MustRegister(StatusWrites)
}
