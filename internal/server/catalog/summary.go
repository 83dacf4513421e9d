package catalog

import "github.com/release-controller/release-controller/api/v1alpha1"

// Summary is what a stream's payloads come to, as the index page, the stream page and the MCP
// tools show it.
type Summary struct {
	// Payloads counts them; Phases counts them by phase.
	Payloads int
	Phases   map[v1alpha1.PayloadPhase]int
	// Latest is the newest payload and LatestAccepted the newest accepted one; their
	// Payload is nil when there is none.
	Latest, LatestAccepted Entry
	// Unready are the payloads still waiting for a verdict (Pending or Ready), newest first.
	Unready []Entry
}

// Summary counts the stream's payloads by phase and finds its newest and newest accepted ones.
func (s *Stream) Summary() Summary {
	sum := Summary{Payloads: len(s.Entries), Phases: map[v1alpha1.PayloadPhase]int{}}
	if len(s.Entries) > 0 {
		sum.Latest = s.Entries[0]
	}
	for _, e := range s.Entries {
		ph := e.Phase()
		sum.Phases[ph]++
		switch {
		case ph == v1alpha1.PhaseAccepted && sum.LatestAccepted.Payload == nil:
			sum.LatestAccepted = e
		case ph == v1alpha1.PhasePending || ph == v1alpha1.PhaseReady:
			sum.Unready = append(sum.Unready, e)
		}
	}
	return sum
}
