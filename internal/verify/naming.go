// Package verify launches a payload's verifications: it decides which runs are due (first
// runs, retries after a backoff, aggregated runs, upgrade runs and where they start from) and
// builds the Job or ProwJob for each. Every decision is a pure function; the stream controller
// creates the objects. Names, labels and annotations of the runs are the job contract's
// (package jobcontract).
package verify

import "github.com/release-controller/release-controller/internal/jobcontract"

// RunName is the deterministic name of a verification run's Job or ProwJob
// (jobcontract.RunName), for callers that think in runs.
func RunName(tag, verification string, attempt int32) string {
	return jobcontract.RunName(tag, verification, attempt)
}
