package stream

import (
	"time"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/verdict"
)

// DefaultKeepAccepted is how many accepted payloads are kept when the stream does not say.
const DefaultKeepAccepted = 10

// DefaultKeepRejected is how many rejected and failed payloads are kept when the stream does
// not say (as OpenShift's release controller does).
const DefaultKeepRejected = 5

// Collect returns the payloads garbage collection deletes; payloads are the stream's, newest
// first. It keeps the newest keepAccepted accepted payloads, and older accepted ones while
// they are younger than acceptedMaxAge (when set). It deletes rejected and failed payloads
// older than the oldest accepted payload those rules keep, except the newest keepRejected
// rejected and failed payloads (counted together, whatever their age) and those younger than
// rejectedMaxAge (when set), so a rejected payload stays to be read after newer ones are
// accepted. Payloads still waiting for a verdict and payloads annotated
// release-controller.dev/keep are never deleted.
func Collect(r v1alpha1.Retention, payloads []v1alpha1.ReleasePayload, now time.Time) []*v1alpha1.ReleasePayload {
	keep := r.KeepAccepted
	if keep <= 0 {
		keep = DefaultKeepAccepted
	}
	keepRejected := int32(DefaultKeepRejected)
	if r.KeepRejected != nil {
		keepRejected = max(0, *r.KeepRejected)
	}
	var collect []*v1alpha1.ReleasePayload
	var oldestKept *v1alpha1.ReleasePayload
	var accepted int32
	for i := range payloads {
		p := &payloads[i]
		if !verdict.Accepted(p) {
			continue
		}
		accepted++
		young := r.AcceptedMaxAge != nil && now.Sub(p.CreationTimestamp.Time) < r.AcceptedMaxAge.Duration
		switch {
		case accepted <= keep || young:
			oldestKept = p
		case !isKept(p):
			collect = append(collect, p)
		}
	}
	if oldestKept == nil {
		return collect
	}
	var rejected int32
	for i := range payloads {
		p := &payloads[i]
		if phase := verdict.Of(p); phase != v1alpha1.PhaseRejected && phase != v1alpha1.PhaseFailed {
			continue
		}
		rejected++
		young := r.RejectedMaxAge != nil && now.Sub(p.CreationTimestamp.Time) < r.RejectedMaxAge.Duration
		if rejected > keepRejected && !young && p.CreationTimestamp.Before(&oldestKept.CreationTimestamp) && !isKept(p) {
			collect = append(collect, p)
		}
	}
	return collect
}

func isKept(p *v1alpha1.ReleasePayload) bool {
	_, keep := p.Annotations[v1alpha1.AnnotationKeep]
	return keep
}

// JobInfo is what job collection needs to know of a Job or ProwJob.
type JobInfo struct {
	Kind, Namespace, Name string
	// PayloadKey is "<namespace>/<tag>" of the payload it belongs to.
	PayloadKey string
	// FinishedAt is when it finished; zero while it runs.
	FinishedAt time.Time
	// Recorded says the payload's status holds the job's final result.
	Recorded bool
	// Creation says it is a creation Job (whose input ConfigMap, on a creation cluster, goes
	// with it).
	Creation bool
}

// JobsToCollect returns the jobs to delete: those whose payload is gone (orphans, running or
// not) and finished ones older than ttl whose result the payload has recorded. A nil ttl keeps
// finished jobs of existing payloads.
func JobsToCollect(jobs []JobInfo, payloadExists func(key string) bool, ttl *time.Duration, now time.Time) (collect []JobInfo, nextExpiry time.Duration) {
	for _, j := range jobs {
		switch {
		case !payloadExists(j.PayloadKey):
			collect = append(collect, j)
		case ttl == nil || j.FinishedAt.IsZero() || !j.Recorded:
		case now.Sub(j.FinishedAt) >= *ttl:
			collect = append(collect, j)
		default:
			if wait := j.FinishedAt.Add(*ttl).Sub(now); nextExpiry == 0 || wait < nextExpiry {
				nextExpiry = wait
			}
		}
	}
	return collect, nextExpiry
}
