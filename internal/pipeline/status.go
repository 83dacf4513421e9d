package pipeline

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/release-controller/release-controller/api/v1alpha1"
)

// StatusFieldManager is the field manager of the controller's status writes. The status is
// written by server-side apply, so that the approvals the API server records (field manager
// approval.FieldManager, in status.environments[].approval) and the controller's writes
// never overwrite each other, and no write fails on a cache a little behind.
const StatusFieldManager = "release-controller"

// statusApplyObject is the apply configuration of the controller's part of p's status: all of
// it but the approvals and rejections (the approval route's). It carries p's resourceVersion, a precondition: a status computed from
// a cache that is behind is refused (a conflict, retried once the cache caught up) rather than
// written over a newer one.
func statusApplyObject(p *v1alpha1.Pipeline, status *v1alpha1.PipelineStatus) (*unstructured.Unstructured, error) {
	s := status.DeepCopy()
	for i := range s.Environments {
		s.Environments[i].Approval = nil
		s.Environments[i].Rejections = nil
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(s)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{Object: map[string]any{"status": m}}
	u.SetGroupVersionKind(v1alpha1.GroupVersion.WithKind("Pipeline"))
	u.SetNamespace(p.Namespace)
	u.SetName(p.Name)
	u.SetResourceVersion(p.ResourceVersion)
	return u, nil
}

// pendingRecords remembers the promotions carried out whose record is not known to be in the
// status yet (its write failed, or the cache has not seen it): the next reconcile puts them
// back, so that a promotion is recorded even when the write that should have recorded it lost
// a race. It is not about the cache (statuswrite.Tracker is): it keeps a side effect that
// happened until a status write records it. It is a leader's memory of its own last few
// writes only: what a new leader must know (the promotions carried out, the rollouts awaited)
// is the status's environments[].lastPromotion, which it reads like any reconcile
// (TestFailover). A promotion whose record's write failed just before the leader went away
// is found by the next leader as done (its targets have the revision) or carried out again
// under the same id (the release log and the notification receiver see the id once).
type pendingRecords struct {
	mu      sync.Mutex
	records map[types.NamespacedName]map[string]v1alpha1.PromotionRecord
}

func (r *pendingRecords) add(key types.NamespacedName, env string, rec v1alpha1.PromotionRecord) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.records == nil {
		r.records = map[types.NamespacedName]map[string]v1alpha1.PromotionRecord{}
	}
	if r.records[key] == nil {
		r.records[key] = map[string]v1alpha1.PromotionRecord{}
	}
	r.records[key][env] = rec
}

// restore puts the pending records of key into status where it lacks them, and forgets those
// it holds already.
func (r *pendingRecords) restore(key types.NamespacedName, status *v1alpha1.PipelineStatus) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for env, rec := range r.records[key] {
		for i := range status.Environments {
			e := &status.Environments[i]
			if e.Name != env {
				continue
			}
			if e.LastPromotion != nil && e.LastPromotion.ID == rec.ID {
				delete(r.records[key], env) // recorded
				continue
			}
			if e.LastPromotion == nil || e.LastPromotion.Time.Before(&rec.Time) {
				e.LastPromotion = rec.DeepCopy()
				if e.WaitingApproval != nil && e.WaitingApproval.Revision == rec.Revision {
					e.WaitingApproval = nil
				}
			}
		}
	}
	if len(r.records[key]) == 0 {
		delete(r.records, key)
	}
}

func (r *pendingRecords) forget(key types.NamespacedName) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.records, key)
}

// ObservationDelay is how long a status change that only says what the targets were observed
// at (a rollout starting, a target no longer ready, a soak starting or ending) waits before it
// is written: the changes that follow within it (the rollout finishing, the other targets, the
// soak that starts when it finished) share one write, which leaves the API server to the
// writes that promote. Promotions, approvals and conditions are written at once. A soak held
// back is not lost meanwhile: the next reconcile starts from the status held (heldStatuses).
const ObservationDelay = time.Second

// ObservationsOnly reports whether a pipeline's status moved from before to after only in what
// its targets were observed at: their revisions, readiness and messages, and the
// environments' revision, readiness and soak (readySince, soakUntil) that follow from them and
// the clock. What a soak's end lets happen (a promotion, waiting for an approval) is not an
// observation. It is pure.
func ObservationsOnly(before, after *v1alpha1.PipelineStatus) bool {
	strip := func(s *v1alpha1.PipelineStatus) *v1alpha1.PipelineStatus {
		s = s.DeepCopy()
		for i := range s.Environments {
			e := &s.Environments[i]
			e.Revision, e.Ready = "", false
			e.ReadySince, e.SoakUntil = nil, nil
			for j := range e.Targets {
				t := &e.Targets[j]
				t.Revision, t.Ready, t.Message = "", false, ""
			}
		}
		return s
	}
	return equality.Semantic.DeepEqual(strip(before), strip(after))
}

// ObservationWait is how much longer an observation-only status change whose first change came
// at first waits at now before it is written (zero: now).
func ObservationWait(first, now time.Time) time.Duration {
	return max(0, first.Add(ObservationDelay).Sub(now))
}

// heldStatus is the last status a reconcile of a pipeline computed, with its times exact (the
// API server stores them to the second): written, or held back (an observation-only change
// waiting for ObservationDelay).
type heldStatus struct {
	// Version is the resourceVersion status is of: the one its write made, or, held back, the
	// one it was computed from.
	Version string
	Status  *v1alpha1.PipelineStatus
	// Deferred: not written yet.
	Deferred bool
}

// StartFrom is where a reconcile of a pipeline read at resourceVersion version with status
// cached starts (start) and what its status write is compared with (before), given what this
// controller last computed for it (held; zero when nothing). Both are the cached status with
// held's exact soak times (ExactSoakTimes); start is the status held back instead when it was
// computed from this very version: its observations and the soak it started are not lost
// while they wait to be written, and the soak does not start again at every reconcile. A
// held status of another version is older than what was read (another writer, another
// leader): only its exact times, where they are the same soak's, are kept. It is pure.
func StartFrom(cached *v1alpha1.PipelineStatus, version string, held heldStatus) (start, before *v1alpha1.PipelineStatus) {
	before = cached.DeepCopy()
	ExactSoakTimes(before, held.Status)
	if held.Deferred && held.Status != nil && held.Version == version {
		return held.Status.DeepCopy(), before
	}
	return before.DeepCopy(), before
}

// heldStatuses are the held statuses of the pipelines, by key.
type heldStatuses struct {
	mu sync.Mutex
	m  map[types.NamespacedName]heldStatus
}

func (h *heldStatuses) get(key types.NamespacedName) heldStatus {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.m[key]
}

func (h *heldStatuses) hold(key types.NamespacedName, s heldStatus) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.m == nil {
		h.m = map[types.NamespacedName]heldStatus{}
	}
	h.m[key] = s
}

func (h *heldStatuses) forget(key types.NamespacedName) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.m, key)
}
