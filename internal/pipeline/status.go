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
// at (a rollout starting, a target no longer ready) waits before it is written: the changes
// that follow within it (the rollout finishing, the other targets) share one write, which
// leaves the API server to the writes that promote. Promotions, approvals and conditions are
// written at once.
const ObservationDelay = time.Second

// ObservationsOnly reports whether a pipeline's status moved from before to after only in what
// its targets were observed at: their revisions, readiness and messages, and the
// environments' revision and readiness that follow from them. It is pure.
func ObservationsOnly(before, after *v1alpha1.PipelineStatus) bool {
	strip := func(s *v1alpha1.PipelineStatus) *v1alpha1.PipelineStatus {
		s = s.DeepCopy()
		for i := range s.Environments {
			e := &s.Environments[i]
			e.Revision, e.Ready = "", false
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
