package pipeline

// Verification after rollout (environments[].verification): once every target of an
// environment is ready at a revision not verified there yet, Jobs (or ProwJobs) run against
// the environment, with the verification launcher and contract of streams (package verify:
// first runs, retries after a backoff, aggregation; jobcontract.PipelineRun names them). Only
// a revision that passed lets the next environment take it. A blocking failure rolls the
// environment back to the last revision that passed there and marks the failed one
// unpromotable (onFailure: rollback), or holds the pipeline's promotions until the
// environment's revision changes (onFailure: hold, and rollback with nothing to go back to).
// The decisions are here, pure; verifyctl.go carries them out.

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/payload"
	"github.com/release-controller/release-controller/internal/verdict"
	"github.com/release-controller/release-controller/internal/verify"
)

// ObservedRun is one run of an environment's verification as its Job or ProwJob shows it now.
type ObservedRun struct {
	// Revision and Verification are the run's (its contract's).
	Revision, Verification string
	Run                    v1alpha1.JobRun
}

// VerificationStep is what one reconcile decides of an environment's verification.
type VerificationStep struct {
	// Verification is the environment's verification after the step; nil when it has none.
	Verification *v1alpha1.EnvironmentVerificationStatus
	// LastVerified is the last revision that passed there.
	LastVerified string
	// Launches are the runs of Verification.Revision to start now.
	Launches []verify.Launch
	// RequeueAfter is when a retry is due (zero: none waits).
	RequeueAfter time.Duration
	// Completed: the verification's state became Success or Failure in this step; Message
	// says what decided it.
	Completed bool
	Message   string
	// Unpromotable is the revision to mark, when it failed and the environment rolls back.
	Unpromotable *v1alpha1.UnpromotableRevision
}

// StepVerification decides environment env's verification from its previous status (prev,
// nil when it had none), what its targets were observed at now (observed: the environment's
// revision and readiness as Plan computes them), the runs found of it (runs; those of
// verifications in unknown are not known this time, as on a cluster whose jobs are not
// listed yet: their recorded runs stay as they were and none is launched there), now and the
// retries' backoff. It is pure.
//
// A verification starts once every target is ready at a revision that is neither the one it
// verified last nor the last that passed there (after a rollback to it, it is not verified
// again). Its runs are the runs found of it merged into those recorded: a recorded run that
// ended stays, a run that was running and whose object is gone is lost (Unknown). Each
// verification is judged from its runs (verdict.VerificationState) and the whole as a
// payload's verdict is (verdict.Aggregate: a blocking failure fails it, every blocking success
// passes it). Runs are launched (verify.DueRuns: first runs, aggregated runs, retries after
// the backoff) only while it is Pending and every target is still ready at its revision. Once
// decided it does not change any more: only a new revision starts another.
func StepVerification(env v1alpha1.Environment, prev *v1alpha1.EnvironmentStatus, observed v1alpha1.EnvironmentStatus, runs []ObservedRun, unknown map[string]bool, now time.Time, backoff verify.Backoff) VerificationStep {
	var step VerificationStep
	if prev != nil {
		step.LastVerified = prev.LastVerified
	}
	if env.Verification == nil {
		return step // a verification removed from the spec holds nothing back any more
	}
	var v *v1alpha1.EnvironmentVerificationStatus
	if prev != nil {
		v = prev.Verification.DeepCopy()
	}
	rev := observed.Revision
	if observed.Ready && rev != "" && (v == nil || v.Revision != rev) && rev != step.LastVerified {
		v = &v1alpha1.EnvironmentVerificationStatus{Revision: rev, State: v1alpha1.JobPending, StartTime: metav1.NewTime(now)}
	}
	step.Verification = v
	if v == nil || v.State.IsTerminal() {
		return step
	}

	found := map[string][]v1alpha1.JobRun{}
	for _, r := range runs {
		if r.Revision == v.Revision {
			found[r.Verification] = append(found[r.Verification], r.Run)
		}
	}
	statuses := make([]v1alpha1.VerificationStatus, 0, len(env.Verification.Verifications))
	for _, spec := range env.Verification.Verifications {
		s := v1alpha1.VerificationStatus{Name: spec.Name, Type: v1alpha1.Blocking}
		if !spec.IsBlocking() {
			s.Type = v1alpha1.Informing
		}
		if i := slices.IndexFunc(v.Verifications, func(r v1alpha1.VerificationStatus) bool { return r.Name == spec.Name }); i >= 0 {
			s.Runs = v.Verifications[i].Runs
		}
		if !unknown[spec.Name] {
			s.Runs = mergeRuns(s.Runs, found[spec.Name])
		}
		s.State, s.Message = verdict.VerificationState(spec, s.Runs)
		statuses = append(statuses, s)
	}
	v.Verifications = statuses
	state, message := verdict.Aggregate(statuses)
	v.State = state
	if state.IsTerminal() {
		t := metav1.NewTime(now)
		v.CompletionTime = &t
		step.Completed, step.Message = true, message
		if state == v1alpha1.JobSuccess {
			step.LastVerified = v.Revision
		} else if env.Verification.OnFailure == v1alpha1.OnFailureRollback {
			step.Unpromotable = &v1alpha1.UnpromotableRevision{Revision: v.Revision, Environment: env.Name, Reason: truncate(message, 1024), Time: t}
		}
		return step
	}
	if !observed.Ready || observed.Revision != v.Revision {
		return step // the environment moved on (or is rolling out): nothing more is run against it
	}
	for i, spec := range env.Verification.Verifications {
		if unknown[spec.Name] {
			continue
		}
		attempts, wait := verify.DueRuns(spec, statuses[i], now, backoff)
		for _, a := range attempts {
			step.Launches = append(step.Launches, verify.Launch{Verification: spec, Attempt: a})
		}
		if wait > 0 && (step.RequeueAfter == 0 || wait < step.RequeueAfter) {
			step.RequeueAfter = wait
		}
	}
	return step
}

// mergeRuns merges the runs found of one verification (their objects, now) into those
// recorded, as a payload's are (payload.MergeRuns): a recorded run that ended is kept as
// recorded; one still running is replaced by what its object says, or is lost (Unknown) when
// its object is gone; runs found that were not recorded are added; ordered by attempt.
func mergeRuns(recorded, found []v1alpha1.JobRun) []v1alpha1.JobRun {
	observed := make([]payload.ObservedRun, len(found))
	for i, r := range found {
		observed[i] = payload.ObservedRun{Verification: "v", Run: r}
	}
	return payload.MergeRuns([]v1alpha1.VerificationStatus{{Name: "v", Runs: recorded}}, observed)[0].Runs
}

// MarkUnpromotable adds u to list, unless its revision is there already; past
// v1alpha1.MaxUnpromotable the oldest entries go. It is pure.
func MarkUnpromotable(list []v1alpha1.UnpromotableRevision, u v1alpha1.UnpromotableRevision) []v1alpha1.UnpromotableRevision {
	if IsUnpromotable(list, u.Revision) {
		return list
	}
	list = append(slices.Clone(list), u)
	if over := len(list) - v1alpha1.MaxUnpromotable; over > 0 {
		list = list[over:]
	}
	return list
}

// IsUnpromotable reports whether list marks rev.
func IsUnpromotable(list []v1alpha1.UnpromotableRevision, rev string) bool {
	return slices.ContainsFunc(list, func(u v1alpha1.UnpromotableRevision) bool { return u.Revision == rev })
}

// Promotable is the revision environment i of p may take of due ("" when none): a revision
// marked unpromotable is never taken, and a revision the previous environment verifies is
// taken only once it passed there (its lastVerified). envs are the environments' statuses of
// this reconcile, up to i. It is pure; Plan asks it of every revision due.
func Promotable(p *v1alpha1.Pipeline, envs []v1alpha1.EnvironmentStatus, i int, due string) string {
	if due == "" || IsUnpromotable(p.Status.Unpromotable, due) {
		return ""
	}
	if i > 0 && p.Spec.Environments[i-1].Verification != nil && envs[i-1].LastVerified != due {
		return ""
	}
	return due
}

// CarryVerification keeps an environment's verification, last verified revision and last
// rollback from its previous status (prev; nil: none) into s. It is pure.
func CarryVerification(s *v1alpha1.EnvironmentStatus, prev *v1alpha1.EnvironmentStatus) {
	if prev == nil {
		return
	}
	s.Verification = prev.Verification.DeepCopy()
	s.LastVerified = prev.LastVerified
	s.LastRollback = prev.LastRollback.DeepCopy()
}

// Hold is a failed verification that holds the pipeline's promotions.
type Hold struct {
	Env      string
	Revision string
	// Failed names the blocking verifications that failed.
	Failed []string
	// NoTarget: the environment asked for a rollback but no revision passed there before.
	NoTarget bool
}

// Message says what holds the pipeline and what releases it.
func (h Hold) Message() string {
	why := "onFailure is hold"
	if h.NoTarget {
		why = fmt.Sprintf("onFailure is rollback, but no revision passed in %s before, so there is none to roll back to", h.Env)
	}
	return fmt.Sprintf("revision %s failed verification %s in environment %s (%s): nothing is promoted until %s is at another revision (roll it forward or back)",
		h.Revision, strings.Join(h.Failed, ", "), h.Env, why, h.Env)
}

// FailedVerifications are the names of v's blocking verifications that failed.
func FailedVerifications(v *v1alpha1.EnvironmentVerificationStatus) []string {
	var names []string
	for _, s := range v.Verifications {
		if s.Type != v1alpha1.Informing && s.State == v1alpha1.JobFailure {
			names = append(names, s.Name)
		}
	}
	return names
}

// RollbackTarget is where environment env (its spec and status) goes back to after its
// verification failed: the last revision that passed there. ok is false when it does not
// roll back: its verification did not fail, onFailure is hold, or no other revision passed
// there (then it holds instead). It is pure.
func RollbackTarget(env v1alpha1.Environment, s *v1alpha1.EnvironmentStatus) (to string, ok bool) {
	v := s.Verification
	if env.Verification == nil || env.Verification.OnFailure != v1alpha1.OnFailureRollback || v == nil || v.State != v1alpha1.JobFailure ||
		s.LastVerified == "" || s.LastVerified == v.Revision {
		return "", false
	}
	return s.LastVerified, true
}

// Held is the first failed verification that holds p's promotions, given the environments'
// statuses of this reconcile (nil: none holds): an environment whose blocking verification
// failed holds when it does not roll back (onFailure: hold, or no revision to roll back to)
// until a target is observed at another revision (a target that cannot be observed, as on an
// unreachable cluster, releases nothing). A person releases it by rolling the environment
// forward or back; approving the revision again does not (the approval route approves
// revisions waiting to be promoted, not one promoted already). It is pure.
func Held(p *v1alpha1.Pipeline, envs []v1alpha1.EnvironmentStatus) *Hold {
	for i, env := range p.Spec.Environments {
		if i >= len(envs) || env.Verification == nil {
			continue
		}
		s := &envs[i]
		v := s.Verification
		if v == nil || v.State != v1alpha1.JobFailure || slices.ContainsFunc(s.Targets, func(t v1alpha1.TargetStatus) bool {
			return t.Revision != "" && t.Revision != v.Revision
		}) {
			continue
		}
		if _, rollsBack := RollbackTarget(env, s); rollsBack {
			continue
		}
		return &Hold{Env: env.Name, Revision: v.Revision, Failed: FailedVerifications(v), NoTarget: env.Verification.OnFailure == v1alpha1.OnFailureRollback}
	}
	return nil
}

// VerificationActions is what verification makes of the promotions Plan decided (actions): none
// while a failed verification holds the pipeline (Held), and the rollbacks due
// (Rollbacks). It is pure.
func VerificationActions(p *v1alpha1.Pipeline, envs []v1alpha1.EnvironmentStatus, actions []Action) []Action {
	if Held(p, envs) != nil {
		actions = nil
	}
	return append(actions, Rollbacks(p, envs, actions)...)
}

// Rollbacks are the rollbacks due: an environment whose verification failed goes back to its
// RollbackTarget, once, while every target is observed and at either revision and at least
// one still at the failed one (an environment a person moved elsewhere is left alone), unless
// a promotion into it is due anyway (actions) or the pipeline is suspended. It is pure.
func Rollbacks(p *v1alpha1.Pipeline, envs []v1alpha1.EnvironmentStatus, actions []Action) []Action {
	if p.Spec.Suspend {
		return nil
	}
	var out []Action
	for i, env := range p.Spec.Environments {
		if i >= len(envs) || slices.ContainsFunc(actions, func(a Action) bool { return a.Env == i }) {
			continue
		}
		s := &envs[i]
		to, ok := RollbackTarget(env, s)
		if !ok {
			continue
		}
		from := s.Verification.Revision
		if lr := s.LastRollback; lr != nil && lr.From == from && lr.To == to && !lr.Time.Before(s.Verification.CompletionTime) {
			continue // done
		}
		stillFailed, elsewhere := false, false
		for _, t := range s.Targets {
			switch t.Revision {
			case from:
				stillFailed = true
			case to:
			default:
				elsewhere = true // not observed, or moved to another revision
			}
		}
		if !stillFailed || elsewhere {
			continue
		}
		out = append(out, Action{Env: i, Revision: to, RollbackFrom: from, Failed: strings.Join(FailedVerifications(s.Verification), ", ")})
	}
	return out
}

// RollbackID identifies the rollback of environment env of the pipeline uid from revision
// from to revision to: the promotion's id (release log entry, notification), another than the
// promotion of to there before had, so that neither the release log nor a notification's
// receiver takes it for a retry of that one.
func RollbackID(uid, env, from, to string) string {
	return PromotionID(uid, env, to) + "/rollback-from/" + from
}

// ActionID is the id of action a into environment env of the pipeline uid: RollbackID for a
// rollback, else PromotionID.
func ActionID(uid, env string, a Action) string {
	if a.RollbackFrom != "" {
		return RollbackID(uid, env, a.RollbackFrom, a.Revision)
	}
	return PromotionID(uid, env, a.Revision)
}

// Verifying says which environments' verifications are running ("" when none): work the
// controller started and awaits (Reconciling). It is pure.
func Verifying(envs []v1alpha1.EnvironmentStatus) string {
	var msgs []string
	for _, e := range envs {
		if v := e.Verification; v != nil && v.State == v1alpha1.JobPending {
			msgs = append(msgs, fmt.Sprintf("verifying %s in %s", v.Revision, e.Name))
		}
	}
	return strings.Join(msgs, "; ")
}

// SetHoldCondition sets PromotionHeld from what holds the pipeline (nil: nothing). It is pure
// but for the condition's transition time (now).
func SetHoldCondition(conds *[]metav1.Condition, generation int64, hold *Hold, now time.Time) {
	if hold == nil {
		if meta.FindStatusCondition(*conds, v1alpha1.ConditionPromotionHeld) != nil {
			setCondition(conds, generation, v1alpha1.ConditionPromotionHeld, metav1.ConditionFalse, v1alpha1.ReasonNotHeld, "no failed verification holds the pipeline", now)
		}
		return
	}
	setCondition(conds, generation, v1alpha1.ConditionPromotionHeld, metav1.ConditionTrue, v1alpha1.ReasonVerificationFailed,
		hold.Message(), now)
}

// joinNonEmpty joins the messages that say something.
func joinNonEmpty(msgs ...string) string {
	return strings.Join(slices.DeleteFunc(msgs, func(m string) bool { return m == "" }), "; ")
}

// FailureConsequence says what a failed verification of revision rev in environment env
// leads to, given the last revision that passed there (lastVerified): a rollback, or a hold,
// and whether rev is ever promoted further. It is pure.
func FailureConsequence(env v1alpha1.Environment, lastVerified, rev string) string {
	hold := fmt.Sprintf("the pipeline's promotions are held until %s is at another revision", env.Name)
	if env.Verification == nil || env.Verification.OnFailure != v1alpha1.OnFailureRollback {
		return hold
	}
	if lastVerified == "" || lastVerified == rev {
		return fmt.Sprintf("no other revision passed in %s before, so there is none to roll back to: %s; %s is never promoted further", env.Name, hold, rev)
	}
	return fmt.Sprintf("rolling back to %s; %s is never promoted further", lastVerified, rev)
}

// VerificationOutcome is a verification that ended, as the Events after the status write
// report it.
type VerificationOutcome struct {
	Env, Revision string
	State         v1alpha1.JobState
	// Message says what decided it; Consequence what a failure leads to.
	Message, Consequence string
}

// EndedVerifications are the verifications that ended between the statuses before and after
// a write (one per environment of spec). It is pure.
func EndedVerifications(spec []v1alpha1.Environment, before, after *v1alpha1.PipelineStatus) []VerificationOutcome {
	var out []VerificationOutcome
	for _, env := range spec {
		a := environmentStatus(after, env.Name)
		if a == nil || a.Verification == nil || a.Verification.CompletionTime == nil {
			continue
		}
		v := a.Verification
		if b := environmentStatus(before, env.Name); b != nil && b.Verification != nil && b.Verification.Revision == v.Revision && b.Verification.CompletionTime != nil {
			continue // reported already
		}
		o := VerificationOutcome{Env: env.Name, Revision: v.Revision, State: v.State}
		_, o.Message = verdict.Aggregate(v.Verifications)
		if v.State == v1alpha1.JobFailure {
			lastVerified := ""
			if b := environmentStatus(before, env.Name); b != nil {
				lastVerified = b.LastVerified
			}
			o.Consequence = FailureConsequence(env, lastVerified, v.Revision)
		}
		out = append(out, o)
	}
	return out
}

// environmentStatus is the status of environment name in status; nil when it has none.
func environmentStatus(status *v1alpha1.PipelineStatus, name string) *v1alpha1.EnvironmentStatus {
	if i := slices.IndexFunc(status.Environments, func(e v1alpha1.EnvironmentStatus) bool { return e.Name == name }); i >= 0 {
		return &status.Environments[i]
	}
	return nil
}
