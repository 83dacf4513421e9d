package releaselog

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Results counted by PayloadEntries.
const (
	resultAdded   = "added"
	resultPresent = "present"
	resultExpired = "expired"
)

// PayloadEntries counts the verdicts of payloads the controller looked at, by result: added to
// the log, present already (a restart or a repeated event), or expired (older than the log
// keeps).
var PayloadEntries = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "release_controller_releaselog_payload_entries_total",
	Help: "Verdicts of ReleasePayloads handled by the release log, by result (added, present, expired).",
}, []string{"result"})

func init() {
	metrics.Registry.MustRegister(PayloadEntries)
}
