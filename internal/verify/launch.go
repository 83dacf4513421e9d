package verify

import (
	"slices"
	"time"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/jobcontract"
	"github.com/release-controller/release-controller/internal/verdict"
)

// Backoff spaces the retries of a failed verification: Base after the first failure,
// doubling with each further failure, never more than Cap.
type Backoff struct {
	Base, Cap time.Duration
}

// DefaultBackoff is used when the controller is not told otherwise.
var DefaultBackoff = Backoff{Base: 30 * time.Second, Cap: 10 * time.Minute}

// Delay is the wait before the retry that follows the given number of failed runs.
func (b Backoff) Delay(failures int32) time.Duration {
	d := b.Base
	for i := int32(1); i < failures && d < b.Cap; i++ {
		d *= 2
	}
	return min(d, b.Cap)
}

// Launch is one run to start.
type Launch struct {
	Verification v1alpha1.Verification
	Attempt      int32
	// UpgradeFrom and UpgradeFromImage name the release an upgrade run starts from.
	UpgradeFrom      string
	UpgradeFromImage string
}

// UpgradeSource is an accepted release an upgrade can start from.
type UpgradeSource struct {
	Tag, Image string
}

// Plan is what to do for a payload's verifications now.
type Plan struct {
	Launches []Launch
	// Skipped are upgrade verifications that have no accepted release to start from.
	Skipped []string
	// RequeueAfter is when the next retry is due, zero when none is waiting.
	RequeueAfter time.Duration
}

// Accepted are the accepted releases upgrades can start from, by stream name.
type Accepted map[string][]UpgradeSource

// SourceStream is the stream whose accepted payloads an upgrade verification of a payload of
// stream starts from: v.from's, else stream itself.
func SourceStream(stream string, v v1alpha1.Verification) string {
	if v.From != nil {
		return v.From.Stream
	}
	return stream
}

// PlanRuns decides which runs of a created payload are due. Verifications without runs get
// their first run (all runs, for aggregated ones); a verification whose runs all failed gets
// its next attempt once the backoff has passed, while attempts are left. Upgrade runs start
// from the accepted release SelectUpgradeSource picks among the accepted releases of their
// source stream (SourceStream; retries keep the first run's source while it is still there);
// without one the verification is skipped. Launching is idempotent: a planned run whose object
// exists already is found again by its deterministic name.
func PlanRuns(p *v1alpha1.ReleasePayload, now time.Time, backoff Backoff, accepted Accepted) Plan {
	var plan Plan
	if phase := verdict.Of(p); p.Status.PayloadImage == "" || phase == v1alpha1.PhaseFailed || phase == v1alpha1.PhasePending {
		return plan
	}
	skipped := p.SkippedUpgrades()
	for _, v := range p.Spec.PayloadVerificationConfig.Verifications {
		if skipped[v.Name] {
			continue
		}
		status := statusOf(p, v.Name)
		var source UpgradeSource
		if v.UpgradeFrom != "" {
			var ok bool
			if source, ok = upgradeSource(v.UpgradeFrom, p.Name, status.Runs, accepted[SourceStream(p.Spec.PayloadCoordinates.Stream, v)]); !ok {
				if len(status.Runs) == 0 {
					plan.Skipped = append(plan.Skipped, v.Name)
				}
				continue
			}
		}
		attempts, wait := DueRuns(v, status, now, backoff)
		for _, attempt := range attempts {
			plan.Launches = append(plan.Launches, Launch{Verification: v, Attempt: attempt, UpgradeFrom: source.Tag, UpgradeFromImage: source.Image})
		}
		if wait > 0 && (plan.RequeueAfter == 0 || wait < plan.RequeueAfter) {
			plan.RequeueAfter = wait
		}
	}
	return plan
}

// DueRuns decides which runs of verification v are due now, from its status (its runs and
// its state as judged from them): its first run (every run, for an aggregated one) when it has
// none, each aggregated run not launched yet, and, when every run ended without success (a
// success decides the state), its next attempt once the backoff after the last run that
// ended has passed, while attempts are left. Failed runs use up the attempts (maxRetries+1);
// lost ones (Unknown) are run again, up to jobcontract.MaxRuns. wait is how long until that
// retry is due (zero when none is waiting). It is pure; PlanRuns uses it for a payload's
// verifications, the pipeline controller for an environment's.
func DueRuns(v v1alpha1.Verification, status v1alpha1.VerificationStatus, now time.Time, backoff Backoff) (attempts []int32, wait time.Duration) {
	if v.Aggregation != nil {
		for attempt := int32(1); attempt <= v.Aggregation.Runs; attempt++ {
			if !slices.ContainsFunc(status.Runs, func(r v1alpha1.JobRun) bool { return r.Attempt == attempt }) {
				attempts = append(attempts, attempt)
			}
		}
		return attempts, 0
	}
	if len(status.Runs) == 0 {
		return []int32{1}, 0
	}
	if status.State != v1alpha1.JobPending {
		return nil, 0 // decided: passed, or out of attempts
	}
	if slices.ContainsFunc(status.Runs, func(r v1alpha1.JobRun) bool { return !r.State.IsTerminal() }) {
		return nil, 0 // a run is still going
	}
	ended := int32(len(status.Runs))
	var failures, last int32
	var lastEnded time.Time
	for _, r := range status.Runs {
		last = max(last, r.Attempt)
		if r.State == v1alpha1.JobFailure {
			failures++
		}
		if r.CompletionTime != nil && r.CompletionTime.After(lastEnded) {
			lastEnded = r.CompletionTime.Time
		}
	}
	if failures >= v.MaxRetries+1 || ended >= jobcontract.MaxRuns(v) {
		return nil, 0
	}
	// The backoff grows with every run that ended.
	if due := lastEnded.Add(backoff.Delay(ended)); now.Before(due) {
		return nil, due.Sub(now)
	}
	return []int32{last + 1}, 0
}

func statusOf(p *v1alpha1.ReleasePayload, name string) v1alpha1.VerificationStatus {
	for _, s := range p.Status.Verifications {
		if s.Name == name {
			return s
		}
	}
	return v1alpha1.VerificationStatus{Name: name, State: v1alpha1.JobPending}
}

// upgradeSource is where an upgrade verification of tag starts: the source of its earlier
// runs while that release is still accepted, else a fresh pick.
func upgradeSource(mode v1alpha1.UpgradeFrom, tag string, runs []v1alpha1.JobRun, accepted []UpgradeSource) (UpgradeSource, bool) {
	byTag := make(map[string]UpgradeSource, len(accepted))
	tags := make([]string, 0, len(accepted))
	for _, a := range accepted {
		byTag[a.Tag] = a
		tags = append(tags, a.Tag)
	}
	for _, r := range runs {
		if source, ok := byTag[r.UpgradeFrom]; ok {
			return source, true
		}
	}
	picked, ok := SelectUpgradeSource(mode, tag, tags)
	return byTag[picked], ok
}
