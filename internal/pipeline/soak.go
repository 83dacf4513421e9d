package pipeline

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/release-controller/release-controller/api/v1alpha1"
)

// MinSoak is how long environment i of p must have been ready at a revision before the next
// environment takes it: the minSoak of the environment's promotion, else of spec.promotion.
// Zero for the last environment (no environment waits on it) and when neither says.
func MinSoak(p *v1alpha1.Pipeline, i int) time.Duration {
	if i+1 >= len(p.Spec.Environments) {
		return 0
	}
	if promo := p.Spec.Environments[i].Promotion; promo != nil && promo.MinSoak != nil {
		return promo.MinSoak.Duration
	}
	if promo := p.Spec.Promotion; promo != nil && promo.MinSoak != nil {
		return promo.MinSoak.Duration
	}
	return 0
}

// SetSoak sets the soak of environment s (observed now; prev its previous status, nil when
// none) for a soak of minSoak: readySince, when every target became ready at s.Revision, and
// soakUntil, when the soak is over (absent once it is, and without a soak).
//
// readySince is kept while the environment stays ready at the same revision, and reset when
// its revision changes or a target is not ready. An environment not observed (a cluster
// unreachable, a cache not synced after a restart) is not known to have changed: its soak is
// kept as it was, so that a controller's restart does not start every soak again; when it is
// observed again ready, the soak kept goes on (a revision changed by hand meanwhile is not
// seen). It is pure.
func SetSoak(s *v1alpha1.EnvironmentStatus, prev *v1alpha1.EnvironmentStatus, observed bool, minSoak time.Duration, now time.Time) {
	s.ReadySince, s.SoakUntil = nil, nil
	if minSoak <= 0 {
		return
	}
	switch {
	case !observed:
		if prev != nil {
			s.ReadySince = prev.ReadySince.DeepCopy()
		}
	case !s.Ready:
		return
	case prev != nil && prev.ReadySince != nil && (prev.Revision == s.Revision || !prev.Ready):
		// Ready at the soak's revision, or back from not being observed (a soak is reset, not
		// kept, when a target is seen not ready).
		s.ReadySince = prev.ReadySince.DeepCopy()
	default:
		since := metav1.NewTime(now)
		s.ReadySince = &since
	}
	if s.ReadySince == nil {
		return
	}
	if until := s.ReadySince.Add(minSoak); now.Before(until) {
		u := metav1.NewTime(until)
		s.SoakUntil = &u
	}
}

// Soaked reports whether the next environment may take what e is at: every target is ready at
// it and its soak, if any, is over.
func Soaked(e v1alpha1.EnvironmentStatus) bool {
	return e.Ready && e.SoakUntil == nil
}

// SoakWake is when the first soak of envs ends (zero: none runs): the moment the next
// environment may take its revision, when the pipeline is reconciled again.
func SoakWake(envs []v1alpha1.EnvironmentStatus) time.Time {
	var wake time.Time
	for _, e := range envs {
		if e.SoakUntil != nil && (wake.IsZero() || e.SoakUntil.Before(&metav1.Time{Time: wake})) {
			wake = e.SoakUntil.Time
		}
	}
	return wake
}

// RetryAfter is how soon to reconcile again at now: retry (zero: no need), or sooner when one
// of wakes (zero ones ignored) comes first. A wake that has passed asks for at once (a
// millisecond: zero would mean never).
func RetryAfter(retry time.Duration, now time.Time, wakes ...time.Time) time.Duration {
	for _, w := range wakes {
		if w.IsZero() {
			continue
		}
		if d := max(w.Sub(now), time.Millisecond); retry == 0 || d < retry {
			retry = d
		}
	}
	return retry
}

// ExactSoakTimes puts the exact soak times of held, the status this controller last computed
// for the pipeline, back into status, read from the API server, which stores times to the
// second: an environment's readySince and soakUntil are held's when held has the same
// environment at the same revision and its time is the stored one, or within its second.
// Without that, a soak would end up to a second early (the stored readySince is earlier than
// the real one) or, rounded up, be requeued up to a second late. A stored time that is not
// held's (after a restart, on another leader) stands for any moment of its second: the last
// is taken, so that a soak is never shorter than minSoak. A time with a fraction of a second
// was not read from the API server, and is kept. It is pure.
func ExactSoakTimes(status, held *v1alpha1.PipelineStatus) {
	heldEnvs := map[string]*v1alpha1.EnvironmentStatus{}
	if held != nil {
		for i := range held.Environments {
			heldEnvs[held.Environments[i].Name] = &held.Environments[i]
		}
	}
	for i := range status.Environments {
		e := &status.Environments[i]
		h := heldEnvs[e.Name]
		if h != nil && h.Revision != e.Revision {
			h = nil
		}
		var hSince, hUntil *metav1.Time
		if h != nil {
			hSince, hUntil = h.ReadySince, h.SoakUntil
		}
		e.ReadySince = exactTime(e.ReadySince, hSince)
		e.SoakUntil = exactTime(e.SoakUntil, hUntil)
	}
}

// exactTime is ExactSoakTimes's rule for one stored time and the held one (nil: none).
func exactTime(stored, held *metav1.Time) *metav1.Time {
	switch {
	case stored == nil:
		return nil
	case held != nil && (held.Equal(stored) || held.Truncate(time.Second).Equal(stored.Time)):
		return held.DeepCopy()
	case stored.Nanosecond() != 0:
		return stored
	}
	last := metav1.NewTime(stored.Add(time.Second - time.Nanosecond))
	return &last
}

// RequeueFrom is how long after end, when a reconcile that started at start returns, to come
// back for a wait of d it computed at start (a soak's end, a freeze's, an observation's
// write): d less the reconcile's own time, a millisecond at least; zero (never) for zero.
// Counted from the return instead, the requeue came as late as the reconcile was long: its
// status write, under load, up to 0.7 s after the soak's end in
// BenchmarkShippedPipelinesWithPolicies. It is pure.
func RequeueFrom(d time.Duration, start, end time.Time) time.Duration {
	if d <= 0 {
		return 0
	}
	return max(d-end.Sub(start), time.Millisecond)
}
