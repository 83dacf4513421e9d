package pipeline

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/conditions"
	"github.com/release-controller/release-controller/internal/eventlog"
)

// TargetObservation is what one reconcile learned of one target.
type TargetObservation struct {
	Observation
	// Unreachable is set when the target's cluster could not be read (unreachable, bad
	// kubeconfig): nothing is known of the app.
	Unreachable string
	// Unknown is set when the cluster answers but the app could not be read yet (its
	// informer has not synced, a read failed): nothing is known of the app either.
	Unknown bool
	// Hidden says why the pipeline's service account may not see the app (TargetHidden):
	// nothing of it is shown, and nothing is promoted from or into its environment.
	Hidden string
}

// Action is a promotion to carry out: revision into environment Env.
type Action struct {
	Env      int
	Revision string
	// Approver approved it, when the environment asked for approval.
	Approver string
	// RollbackFrom is set on a rollback (Rollbacks): the revision whose verification failed,
	// which Revision replaces; Failed names the verifications that failed.
	RollbackFrom, Failed string
}

// PromotionID identifies the promotion of revision into env of the pipeline uid: the release
// log's entry id and the notification's id, so that a retry is recognised.
func PromotionID(uid, env, revision string) string {
	return fmt.Sprintf("%s/%s/%s", uid, env, revision)
}

// Plan computes the environments' status from what was observed (observed[i][j]: target j of
// environment i, in the spec's order) and the promotions due, from the pipeline's previous
// status and the source's newest revision (empty: none). It is pure.
//
// Environment i+1 is due revision R when every target of environment i is ready at R and
// environment i+1 neither has R on every target nor was promoted to R already (a promotion in
// progress, or one a person rolled back: not redone). The first environment is due the
// source's revision on the same terms. A revision marked unpromotable is never due, and one
// the previous environment verifies (environments[].verification) is due only once it passed
// there (Promotable). An environment that asks for approval gets
// WaitingApproval instead, until an approval of that revision is recorded. An environment with
// a target not observed (an unreachable cluster, a cache not synced yet, an app the pipeline's
// account may not get) is neither promoted nor promotes the next. A suspended pipeline
// (spec.suspend) gets its status but no actions.
//
// Soak, rejections and approval policies: environment i+1 takes what environment i is ready
// at only once its soak is over (SetSoak, Soaked); a revision the environment's rejections name
// is never promoted there; an approval lets a revision in once it met the environment's policy
// (ApprovalMet). Freezes are held after Plan (HoldFrozen).
func Plan(p *v1alpha1.Pipeline, observed [][]TargetObservation, sourceRevision string, now time.Time) ([]v1alpha1.EnvironmentStatus, []Action) {
	previous := map[string]*v1alpha1.EnvironmentStatus{}
	for i := range p.Status.Environments {
		previous[p.Status.Environments[i].Name] = &p.Status.Environments[i]
	}
	envs := make([]v1alpha1.EnvironmentStatus, len(p.Spec.Environments))
	var actions []Action
	for i, env := range p.Spec.Environments {
		s := v1alpha1.EnvironmentStatus{Name: env.Name}
		if prev := previous[env.Name]; prev != nil {
			s.LastPromotion = prev.LastPromotion.DeepCopy()
			s.Approval = prev.Approval.DeepCopy()
			s.WaitingApproval = prev.WaitingApproval.DeepCopy()
			s.Rejections = slices.Clone(prev.Rejections)
		}
		CarryVerification(&s, previous[env.Name])
		var obs []TargetObservation
		if i < len(observed) {
			obs = observed[i]
		}
		reachable := observeTargets(&s, env.Targets, obs)
		SetSoak(&s, previous[env.Name], reachable, MinSoak(p, i), now)
		envs[i] = s

		// What is due here: the source's newest revision, or what the previous environment
		// is ready at.
		due := ""
		switch {
		case i == 0:
			due = sourceRevision
		case Soaked(envs[i-1]):
			due = envs[i-1].Revision
		}
		due = Promotable(p, envs, i, due)
		cur := &envs[i]
		if due == "" || !reachable || hasRevision(cur.Targets, due) ||
			(cur.LastPromotion != nil && cur.LastPromotion.Revision == due) {
			cur.WaitingApproval = nil
			continue
		}
		if Rejected(cur.Rejections, due) {
			cur.WaitingApproval = nil
			continue
		}
		if env.Approval != nil {
			if !ApprovalMet(cur.Approval, due) {
				if cur.WaitingApproval == nil || cur.WaitingApproval.Revision != due {
					cur.WaitingApproval = &v1alpha1.WaitingApproval{Revision: due, Since: metav1.NewTime(now)}
				}
				continue
			}
			actions = append(actions, Action{Env: i, Revision: due, Approver: cur.Approval.Approver})
			continue
		}
		cur.WaitingApproval = nil
		actions = append(actions, Action{Env: i, Revision: due})
	}
	if p.Spec.Suspend {
		// Observed and shown as usual (an approval asked for may be given meanwhile), but
		// nothing is carried out until spec.suspend is cleared.
		return envs, nil
	}
	return envs, actions
}

// observeTargets sets s's targets, revision and readiness from what was observed of targets
// (obs[j]: targets[j]; missing ones are unknown), and reports whether every target was
// observed.
func observeTargets(s *v1alpha1.EnvironmentStatus, targets []v1alpha1.Target, obs []TargetObservation) (reachable bool) {
	reachable = true
	s.Targets = nil
	for j, t := range targets {
		var o TargetObservation
		if j < len(obs) {
			o = obs[j]
		}
		ts := v1alpha1.TargetStatus{Namespace: t.Namespace, ClusterRef: t.ClusterRef, Revision: o.Revision, Ready: o.Ready, Message: o.Message}
		if o.Unreachable != "" {
			reachable = false
			ts.Ready, ts.Message = false, o.Unreachable
		}
		if o.Unknown {
			reachable = false
			ts.Ready = false
		}
		if o.Hidden != "" {
			// Whatever was read of the app stays out of the status.
			reachable = false
			ts.Revision, ts.Ready, ts.Message = "", false, o.Hidden
		}
		s.Targets = append(s.Targets, ts)
	}
	s.Revision, s.Ready = environmentRevision(s.Targets)
	if !reachable {
		s.Ready = false
	}
	return reachable
}

// Reobserve sets the targets of envs[i] from new observations: the objects a promotion just
// patched, as the API server answered. The status written with the promotion then shows the
// targets at the new revision already, and the informer events of the patch find nothing new
// to write. A soak kept from before the promotion is no longer the targets': it is dropped, so
// the next reconcile starts the new revision's soak once every target is ready at it. It is
// pure.
func Reobserve(envs []v1alpha1.EnvironmentStatus, targets []v1alpha1.Target, i int, observed []TargetObservation) {
	before := envs[i].Revision
	observeTargets(&envs[i], targets, observed)
	if !envs[i].Ready || envs[i].Revision != before {
		envs[i].ReadySince, envs[i].SoakUntil = nil, nil
	}
}

// environmentRevision is the revision every target is at (empty unless one), and whether
// every target is ready at it.
func environmentRevision(targets []v1alpha1.TargetStatus) (string, bool) {
	if len(targets) == 0 {
		return "", false
	}
	rev, ready := targets[0].Revision, true
	for _, t := range targets {
		if t.Revision != rev {
			return "", false
		}
		ready = ready && t.Ready
	}
	return rev, ready && rev != ""
}

func hasRevision(targets []v1alpha1.TargetStatus, rev string) bool {
	for _, t := range targets {
		if t.Revision != rev {
			return false
		}
	}
	return len(targets) > 0
}

// RecordPromotion records a promotion carried out into envs[a.Env]: LastPromotion, no more
// waiting for approval, and LastRollback for a rollback.
func RecordPromotion(envs []v1alpha1.EnvironmentStatus, a Action, id, strategy string, now time.Time) {
	e := &envs[a.Env]
	e.LastPromotion = &v1alpha1.PromotionRecord{ID: id, Revision: a.Revision, Strategy: strategy, Time: metav1.NewTime(now), Approver: a.Approver}
	e.WaitingApproval = nil
	if a.RollbackFrom != "" {
		e.LastRollback = &v1alpha1.RollbackRecord{From: a.RollbackFrom, To: a.Revision, Time: metav1.NewTime(now)}
	}
}

// ClusterProblem is a cluster a reconcile could not read.
type ClusterProblem struct {
	// Cluster is the clusterRef (empty: the local cluster).
	Cluster string
	// Invalid: the kubeconfig Secret is missing or unusable (else: unreachable).
	Invalid bool
	// Forbidden: the pipeline's service account may not read the Secret; nothing is
	// watched that would tell of a grant, so it is retried (TenantRetry).
	Forbidden bool
	Message   string
}

// PromotionOutcome is what the reconcile's promotions came to: none due, all succeeded, the
// failures, or none carried out because the pipeline is suspended.
type PromotionOutcome struct {
	Attempted bool
	Err       error
	Suspended bool
}

// ReasonSuspended (PromotionFailed=False) says that spec.suspend is set: nothing is promoted,
// the targets are still observed (Ready says how they are), and Reconciling is absent, as
// v1alpha1.ReasonSuspended has it. PromotionFailed is the condition about promotions, so it is
// the one that says why none happen.
const ReasonSuspended = v1alpha1.ReasonSuspended

// setCondition sets one condition; its transition time is now when its status changes.
func setCondition(conds *[]metav1.Condition, generation int64, typ string, status metav1.ConditionStatus, reason, msg string, now time.Time) {
	c := metav1.Condition{Type: typ, Status: status, Reason: reason, Message: msg, ObservedGeneration: generation}
	if old := meta.FindStatusCondition(*conds, typ); old == nil || old.Status != status {
		c.LastTransitionTime = metav1.NewTime(now)
	}
	conditions.Set(conds, c)
}

// SetConditions sets the pipeline's conditions from one reconcile: the clusters it could not
// read, the targets hidden from its service account (TargetHidden's messages), its
// promotions, and whether every target was observed. It is pure but for conditions'
// transition times (now).
func SetConditions(conds *[]metav1.Condition, generation int64, envs []v1alpha1.EnvironmentStatus, problems []ClusterProblem, hidden []string, promo PromotionOutcome, now time.Time) {
	set := func(typ string, status metav1.ConditionStatus, reason, msg string) {
		setCondition(conds, generation, typ, status, reason, msg, now)
	}

	unreachableReason := ""
	var msgs []string
	for _, p := range problems {
		name := p.Cluster
		if name == "" {
			name = "the local cluster"
		} else {
			name = "cluster " + name
		}
		msgs = append(msgs, name+": "+p.Message)
		if p.Invalid {
			unreachableReason = v1alpha1.ReasonKubeconfigInvalid
		} else if unreachableReason == "" {
			unreachableReason = v1alpha1.ReasonClusterUnreachable
		}
	}
	if len(problems) > 0 {
		set(v1alpha1.ConditionClusterUnreachable, metav1.ConditionTrue, unreachableReason, strings.Join(msgs, "; "))
	} else {
		set(v1alpha1.ConditionClusterUnreachable, metav1.ConditionFalse, v1alpha1.ReasonClustersReachable, "every target cluster answers")
	}

	switch {
	case promo.Suspended:
		set(v1alpha1.ConditionPromotionFailed, metav1.ConditionFalse, ReasonSuspended, "spec.suspend is set: nothing is promoted; the targets are still observed")
	case promo.Attempted && promo.Err != nil:
		set(v1alpha1.ConditionPromotionFailed, metav1.ConditionTrue, v1alpha1.ReasonPromotionFailed, truncate(promo.Err.Error(), 1024))
	case promo.Attempted:
		set(v1alpha1.ConditionPromotionFailed, metav1.ConditionFalse, v1alpha1.ReasonPromotionSucceeded, "the last promotion succeeded")
	case meta.FindStatusCondition(*conds, v1alpha1.ConditionPromotionFailed) == nil,
		meta.IsStatusConditionTrue(*conds, v1alpha1.ConditionPromotionFailed):
		// Nothing is due (any more): a failure of a promotion no longer wanted is moot.
		set(v1alpha1.ConditionPromotionFailed, metav1.ConditionFalse, v1alpha1.ReasonNoPromotion, "no promotion due")
	}

	var missing []string
	for _, e := range envs {
		for _, t := range e.Targets {
			if t.Revision == "" {
				missing = append(missing, fmt.Sprintf("%s/%s", e.Name, targetName(t)))
			}
		}
	}
	switch {
	case len(problems) > 0:
		set(v1alpha1.ConditionPipelineReady, metav1.ConditionFalse, unreachableReason, strings.Join(msgs, "; "))
	case len(hidden) > 0:
		set(v1alpha1.ConditionPipelineReady, metav1.ConditionFalse, v1alpha1.ReasonTargetForbidden, truncate(strings.Join(hidden, "; "), 1024))
	case meta.IsStatusConditionTrue(*conds, v1alpha1.ConditionPromotionFailed):
		set(v1alpha1.ConditionPipelineReady, metav1.ConditionFalse, v1alpha1.ReasonPromotionFailed,
			meta.FindStatusCondition(*conds, v1alpha1.ConditionPromotionFailed).Message)
	case len(missing) > 0:
		set(v1alpha1.ConditionPipelineReady, metav1.ConditionFalse, v1alpha1.ReasonTargetsNotObserved,
			"no revision observed yet in "+strings.Join(missing, ", "))
	default:
		set(v1alpha1.ConditionPipelineReady, metav1.ConditionTrue, v1alpha1.ReasonTargetsObserved, "every target's app is observed")
	}
}

// SetProgress sets what a reconcile's failures (err, eventlog Failures joined) and its
// promotions' rollouts make of Ready, Reconciling and Stalled, after SetConditions (or, when
// the targets could not be observed, on the conditions as they were): a failure makes Ready
// False with its reason and message, and Stalled when the spec can never work, else
// Reconciling (ProgressingWithRetry: it is retried); without one, Reconciling (Progressing)
// says that an environment's last promotion is rolling out — its revision is on some target
// but not ready on all — or that its verification is running, unless the pipeline is
// suspended. It is pure but for conditions' transition times (now).
func SetProgress(conds *[]metav1.Condition, generation int64, envs []v1alpha1.EnvironmentStatus, suspended bool, err error, now time.Time) {
	if s, failed := eventlog.Summarize(err); failed {
		msg := truncate(s.Message, 1024)
		setCondition(conds, generation, v1alpha1.ConditionReady, metav1.ConditionFalse, s.Reason, msg, now)
		progress := conditions.Progress{Reconciling: true, Reason: v1alpha1.ReasonProgressingWithRetry, Message: msg}
		if s.Stalled {
			progress = conditions.Progress{Stalled: true, Reason: s.Reason, Message: msg}
		}
		conditions.SetProgress(conds, generation, progress, now)
		return
	}
	if !suspended {
		if rollout := joinNonEmpty(RollingOut(envs), Verifying(envs)); rollout != "" {
			conditions.SetProgress(conds, generation, conditions.Progress{Reconciling: true, Reason: v1alpha1.ReasonProgressing, Message: rollout}, now)
			return
		}
	}
	conditions.SetProgress(conds, generation, conditions.Done, now)
}

// RollingOut says which environments' last promotions are rolling out ("" when none): the
// promoted revision is on some of the environment's targets but not ready on all of them. A
// promotion whose revision is on no target (a pull request not merged yet, a notification's
// receiver, a person's rollback) is out of the controller's hands: not Reconciling. It is
// pure.
func RollingOut(envs []v1alpha1.EnvironmentStatus) string {
	var msgs []string
	for _, e := range envs {
		lp := e.LastPromotion
		if lp == nil || (e.Ready && e.Revision == lp.Revision) {
			continue
		}
		if slices.ContainsFunc(e.Targets, func(t v1alpha1.TargetStatus) bool { return t.Revision == lp.Revision }) {
			msgs = append(msgs, fmt.Sprintf("rolling out %s to %s", lp.Revision, e.Name))
		}
	}
	return strings.Join(msgs, "; ")
}

func targetName(t v1alpha1.TargetStatus) string {
	if t.ClusterRef == "" {
		return t.Namespace
	}
	return t.ClusterRef + ":" + t.Namespace
}

func truncate(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
