package logcontroller

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Results counted by PayloadEntries.
const (
	resultAdded   = "added"
	resultPresent = "present"
	resultExpired = "expired"
	resultFull    = "full"
)

// PayloadEntries counts the verdicts of payloads the controller looked at, by result: added to
// the log, present already (a restart or a repeated event), expired (older than the log
// keeps), or full (the day had no room left; the payload has a ReleaseLogFull event).
var PayloadEntries = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "release_controller_releaselog_payload_entries_total",
	Help: "Verdicts of ReleasePayloads handled by the release log, by result (added, present, expired, full).",
}, []string{"result"})

func init() {
	metrics.Registry.MustRegister(PayloadEntries)
}
