package pipeline

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/verify"
)

var backoff = verify.Backoff{Base: time.Minute, Cap: 10 * time.Minute}

func check(name string, retries int32) v1alpha1.Verification {
	return v1alpha1.Verification{Name: name, Type: v1alpha1.Blocking, MaxRetries: retries, Job: &v1alpha1.JobBackend{Template: batchv1.JobTemplateSpec{}}}
}

func verifiedEnv(onFailure string, checks ...v1alpha1.Verification) v1alpha1.Environment {
	return v1alpha1.Environment{Name: "dev", Targets: []v1alpha1.Target{{Namespace: "dev"}},
		Verification: &v1alpha1.EnvironmentVerification{Verifications: checks, OnFailure: onFailure}}
}

func readyAt(rev string, ready bool) v1alpha1.EnvironmentStatus {
	s := v1alpha1.EnvironmentStatus{Name: "dev"}
	observeTargets(&s, []v1alpha1.Target{{Namespace: "dev"}}, []TargetObservation{at(rev, ready)})
	return s
}

func run(name string, attempt int32, state v1alpha1.JobState, ended time.Time) v1alpha1.JobRun {
	r := v1alpha1.JobRun{Kind: v1alpha1.RunKindJob, Namespace: "ns", Name: fmt.Sprintf("%s-%d", name, attempt), Attempt: attempt, State: state}
	if state.IsTerminal() {
		t := metav1.NewTime(ended)
		r.CompletionTime = &t
	}
	return r
}

func pending(rev string, statuses ...v1alpha1.VerificationStatus) *v1alpha1.EnvironmentVerificationStatus {
	return &v1alpha1.EnvironmentVerificationStatus{Revision: rev, State: v1alpha1.JobPending, StartTime: metav1.NewTime(t0), Verifications: statuses}
}

func TestStepVerification(t *testing.T) {
	later := t0.Add(5 * time.Minute)
	smoke, e2e := check("smoke", 0), check("e2e", 1)
	perf := check("perf", 0)
	perf.Type = v1alpha1.Informing
	tests := []struct {
		name      string
		env       v1alpha1.Environment
		prev      *v1alpha1.EnvironmentStatus
		observed  v1alpha1.EnvironmentStatus
		runs      []ObservedRun
		unknown   map[string]bool
		wantState v1alpha1.JobState // "": no verification
		wantRev   string
		launches  []string // verification/attempt
		completed bool
		verified  string
		marked    bool
		requeue   time.Duration
	}{
		{name: "ready at a new revision: starts, first runs launched",
			env: verifiedEnv("rollback", smoke, e2e), observed: readyAt("2", true),
			wantState: v1alpha1.JobPending, wantRev: "2", launches: []string{"smoke/1", "e2e/1"}},
		{name: "not ready yet: nothing starts",
			env: verifiedEnv("rollback", smoke), observed: readyAt("2", false)},
		{name: "at the revision that passed last (after a rollback): not verified again",
			env:      verifiedEnv("rollback", smoke),
			prev:     &v1alpha1.EnvironmentStatus{Name: "dev", LastVerified: "1", Verification: &v1alpha1.EnvironmentVerificationStatus{Revision: "2", State: v1alpha1.JobFailure}},
			observed: readyAt("1", true), wantState: v1alpha1.JobFailure, wantRev: "2", verified: "1"},
		{name: "runs going: nothing launched",
			env:      verifiedEnv("rollback", smoke),
			prev:     &v1alpha1.EnvironmentStatus{Name: "dev", Verification: pending("2")},
			observed: readyAt("2", true), runs: []ObservedRun{{Revision: "2", Verification: "smoke", Run: run("smoke", 1, v1alpha1.JobPending, t0)}},
			wantState: v1alpha1.JobPending, wantRev: "2"},
		{name: "every blocking run passed: verified, whatever the informing one does",
			env:  verifiedEnv("rollback", smoke, perf),
			prev: &v1alpha1.EnvironmentStatus{Name: "dev", LastVerified: "1", Verification: pending("2")},
			runs: []ObservedRun{{Revision: "2", Verification: "smoke", Run: run("smoke", 1, v1alpha1.JobSuccess, t0)},
				{Revision: "2", Verification: "perf", Run: run("perf", 1, v1alpha1.JobPending, t0)}},
			observed: readyAt("2", true), wantState: v1alpha1.JobSuccess, wantRev: "2", completed: true, verified: "2"},
		{name: "runs of another revision do not count",
			env:      verifiedEnv("rollback", smoke),
			prev:     &v1alpha1.EnvironmentStatus{Name: "dev", Verification: pending("2", v1alpha1.VerificationStatus{Name: "smoke", Runs: []v1alpha1.JobRun{run("smoke", 1, v1alpha1.JobPending, t0)}})},
			runs:     []ObservedRun{{Revision: "1", Verification: "smoke", Run: run("smoke", 1, v1alpha1.JobSuccess, t0)}},
			observed: readyAt("2", true), wantState: v1alpha1.JobPending, wantRev: "2", launches: []string{"smoke/2"}},
		{name: "a blocking failure with rollback: failed, marked unpromotable",
			env:      verifiedEnv("rollback", smoke),
			prev:     &v1alpha1.EnvironmentStatus{Name: "dev", LastVerified: "1", Verification: pending("2")},
			runs:     []ObservedRun{{Revision: "2", Verification: "smoke", Run: run("smoke", 1, v1alpha1.JobFailure, t0)}},
			observed: readyAt("2", true), wantState: v1alpha1.JobFailure, wantRev: "2", completed: true, verified: "1", marked: true},
		{name: "a blocking failure with hold: failed, not marked",
			env:      verifiedEnv("hold", smoke),
			prev:     &v1alpha1.EnvironmentStatus{Name: "dev", LastVerified: "1", Verification: pending("2")},
			runs:     []ObservedRun{{Revision: "2", Verification: "smoke", Run: run("smoke", 1, v1alpha1.JobFailure, t0)}},
			observed: readyAt("2", true), wantState: v1alpha1.JobFailure, wantRev: "2", completed: true, verified: "1"},
		{name: "a failure with a retry left: retried after the backoff",
			env:      verifiedEnv("rollback", e2e),
			prev:     &v1alpha1.EnvironmentStatus{Name: "dev", Verification: pending("2")},
			runs:     []ObservedRun{{Revision: "2", Verification: "e2e", Run: run("e2e", 1, v1alpha1.JobFailure, later.Add(-30*time.Second))}},
			observed: readyAt("2", true), wantState: v1alpha1.JobPending, wantRev: "2", requeue: 30 * time.Second},
		{name: "the backoff passed: the retry is launched",
			env:      verifiedEnv("rollback", e2e),
			prev:     &v1alpha1.EnvironmentStatus{Name: "dev", Verification: pending("2")},
			runs:     []ObservedRun{{Revision: "2", Verification: "e2e", Run: run("e2e", 1, v1alpha1.JobFailure, t0)}},
			observed: readyAt("2", true), wantState: v1alpha1.JobPending, wantRev: "2", launches: []string{"e2e/2"}},
		{name: "the environment moved on while it ran: the run ends it, nothing more is launched",
			env:      verifiedEnv("rollback", e2e),
			prev:     &v1alpha1.EnvironmentStatus{Name: "dev", Verification: pending("2")},
			runs:     []ObservedRun{{Revision: "2", Verification: "e2e", Run: run("e2e", 1, v1alpha1.JobFailure, t0)}},
			observed: readyAt("3", false), wantState: v1alpha1.JobPending, wantRev: "2"},
		{name: "a new revision while one is verified: the new one starts",
			env:      verifiedEnv("rollback", smoke),
			prev:     &v1alpha1.EnvironmentStatus{Name: "dev", Verification: pending("2")},
			runs:     []ObservedRun{{Revision: "2", Verification: "smoke", Run: run("smoke", 1, v1alpha1.JobPending, t0)}},
			observed: readyAt("3", true), wantState: v1alpha1.JobPending, wantRev: "3", launches: []string{"smoke/1"}},
		{name: "runs on a cluster not listed yet: kept as recorded, none launched",
			env: verifiedEnv("rollback", smoke),
			prev: &v1alpha1.EnvironmentStatus{Name: "dev", Verification: pending("2",
				v1alpha1.VerificationStatus{Name: "smoke", Runs: []v1alpha1.JobRun{run("smoke", 1, v1alpha1.JobPending, t0)}})},
			unknown: map[string]bool{"smoke": true}, observed: readyAt("2", true), wantState: v1alpha1.JobPending, wantRev: "2"},
		{name: "a decided verification does not change",
			env: verifiedEnv("rollback", smoke, check("new", 0)),
			prev: &v1alpha1.EnvironmentStatus{Name: "dev", LastVerified: "2", Verification: &v1alpha1.EnvironmentVerificationStatus{Revision: "2", State: v1alpha1.JobSuccess,
				Verifications: []v1alpha1.VerificationStatus{{Name: "smoke", State: v1alpha1.JobSuccess}}}},
			observed: readyAt("2", true), wantState: v1alpha1.JobSuccess, wantRev: "2", verified: "2"},
		{name: "no verification in the spec: none, the last verified stays",
			env:      v1alpha1.Environment{Name: "dev", Targets: []v1alpha1.Target{{Namespace: "dev"}}},
			prev:     &v1alpha1.EnvironmentStatus{Name: "dev", LastVerified: "1", Verification: pending("2")},
			observed: readyAt("2", true), verified: "1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := tt.prev.DeepCopy()
			step := StepVerification(tt.env, tt.prev, tt.observed, tt.runs, tt.unknown, later, backoff)
			if diff := cmp.Diff(before, tt.prev); diff != "" {
				t.Errorf("the previous status was changed (-before +after):\n%s", diff)
			}
			var state v1alpha1.JobState
			rev := ""
			if step.Verification != nil {
				state, rev = step.Verification.State, step.Verification.Revision
			}
			if state != tt.wantState || rev != tt.wantRev {
				t.Errorf("verification %s of %q, want %s of %q", state, rev, tt.wantState, tt.wantRev)
			}
			var launches []string
			for _, l := range step.Launches {
				launches = append(launches, fmt.Sprintf("%s/%d", l.Verification.Name, l.Attempt))
			}
			if diff := cmp.Diff(tt.launches, launches); diff != "" {
				t.Errorf("launches (-want +got):\n%s", diff)
			}
			if step.Completed != tt.completed || step.LastVerified != tt.verified || (step.Unpromotable != nil) != tt.marked || step.RequeueAfter != tt.requeue {
				t.Errorf("completed %v, last verified %q, unpromotable %+v, requeue %s; want %v %q %v %s",
					step.Completed, step.LastVerified, step.Unpromotable, step.RequeueAfter, tt.completed, tt.verified, tt.marked, tt.requeue)
			}
			if step.Completed && (step.Verification.CompletionTime == nil || !step.Verification.CompletionTime.Time.Equal(later)) {
				t.Errorf("completion time %v", step.Verification.CompletionTime)
			}
		})
	}
}

// TestMergeRuns: how StepVerification merges the runs found into those recorded.
func TestMergeRuns(t *testing.T) {
	ended := run("smoke", 1, v1alpha1.JobFailure, t0)
	going := run("smoke", 2, v1alpha1.JobPending, t0)
	done := run("smoke", 2, v1alpha1.JobSuccess, t0)
	lost := going
	lost.State, lost.Message = v1alpha1.JobUnknown, "the Job was deleted before it finished"
	tests := []struct {
		name            string
		recorded, found []v1alpha1.JobRun
		want            []v1alpha1.JobRun
	}{
		{"nothing", nil, nil, nil},
		{"a new run is added", nil, []v1alpha1.JobRun{going}, []v1alpha1.JobRun{going}},
		{"a running run is updated", []v1alpha1.JobRun{going}, []v1alpha1.JobRun{done}, []v1alpha1.JobRun{done}},
		{"an ended run stays as recorded when its Job is gone", []v1alpha1.JobRun{ended}, nil, []v1alpha1.JobRun{ended}},
		{"a running run whose Job is gone is lost", []v1alpha1.JobRun{ended, going}, []v1alpha1.JobRun{ended}, []v1alpha1.JobRun{ended, lost}},
		{"ordered by attempt", nil, []v1alpha1.JobRun{done, ended}, []v1alpha1.JobRun{ended, done}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, mergeRuns(tt.recorded, tt.found)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestMarkUnpromotable(t *testing.T) {
	var list []v1alpha1.UnpromotableRevision
	for i := range v1alpha1.MaxUnpromotable + 3 {
		list = MarkUnpromotable(list, v1alpha1.UnpromotableRevision{Revision: fmt.Sprint(i), Environment: "dev"})
	}
	if len(list) != v1alpha1.MaxUnpromotable || list[0].Revision != "3" || list[len(list)-1].Revision != fmt.Sprint(v1alpha1.MaxUnpromotable+2) {
		t.Errorf("bounded list from %s to %s, %d entries", list[0].Revision, list[len(list)-1].Revision, len(list))
	}
	again := MarkUnpromotable(list, v1alpha1.UnpromotableRevision{Revision: "10", Environment: "prod"})
	if len(again) != len(list) || again[7].Environment != "dev" {
		t.Error("a revision marked already is marked again")
	}
	if !IsUnpromotable(list, "10") || IsUnpromotable(list, "2") {
		t.Error("IsUnpromotable")
	}
}

// verifiedPipeline is threeEnvs with dev and staging verified (rollback).
func verifiedPipeline() *v1alpha1.Pipeline {
	p := threeEnvs(false)
	for i := range 2 {
		p.Spec.Environments[i].Verification = &v1alpha1.EnvironmentVerification{Verifications: []v1alpha1.Verification{check("smoke", 0)}, OnFailure: v1alpha1.OnFailureRollback}
	}
	return p
}

// TestPlanWithVerification: only a revision that passed where it is goes on, and one marked
// unpromotable goes nowhere, not even back where it failed.
func TestPlanWithVerification(t *testing.T) {
	failed := &v1alpha1.EnvironmentVerificationStatus{Revision: "2", State: v1alpha1.JobFailure}
	tests := []struct {
		name         string
		status       []v1alpha1.EnvironmentStatus
		unpromotable []string
		observed     [][]TargetObservation
		source       string
		want         []Action
	}{
		{name: "dev ready at 2, verifying: staging waits",
			status:   []v1alpha1.EnvironmentStatus{{Name: "dev", LastVerified: "1", Verification: pending("2")}},
			observed: [][]TargetObservation{{at("2", true)}, {at("1", true), at("1", true)}, {at("1", true)}}},
		{name: "dev verified 2: staging takes it",
			status:   []v1alpha1.EnvironmentStatus{{Name: "dev", LastVerified: "2"}},
			observed: [][]TargetObservation{{at("2", true)}, {at("1", true), at("1", true)}, {at("1", true)}},
			want:     []Action{{Env: 1, Revision: "2"}}},
		{name: "staging ready at 2 but not verified there: prod (not verified itself) waits",
			status:   []v1alpha1.EnvironmentStatus{{Name: "dev", LastVerified: "2"}, {Name: "staging", LastVerified: "1", Verification: failed}},
			observed: [][]TargetObservation{{at("2", true)}, {at("2", true), at("2", true)}, {at("1", true)}}},
		{name: "an unpromotable revision is not taken again where it failed",
			status: []v1alpha1.EnvironmentStatus{{Name: "dev", LastVerified: "1", Verification: failed,
				LastPromotion: &v1alpha1.PromotionRecord{Revision: "1"}}},
			unpromotable: []string{"2"}, source: "2",
			observed: [][]TargetObservation{{at("1", true)}, {at("1", true), at("1", true)}, {at("1", true)}}},
		{name: "a newer revision from the source goes in",
			status:       []v1alpha1.EnvironmentStatus{{Name: "dev", LastVerified: "1", Verification: failed}},
			unpromotable: []string{"2"}, source: "3",
			observed: [][]TargetObservation{{at("1", true)}, {at("1", true), at("1", true)}, {at("1", true)}},
			want:     []Action{{Env: 0, Revision: "3"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := verifiedPipeline()
			p.Status.Environments = tt.status
			for _, u := range tt.unpromotable {
				p.Status.Unpromotable = append(p.Status.Unpromotable, v1alpha1.UnpromotableRevision{Revision: u})
			}
			envs, got := Plan(p, tt.observed, tt.source, t0)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("actions (-want +got):\n%s", diff)
			}
			for _, s := range tt.status {
				if e := environmentStatus(&v1alpha1.PipelineStatus{Environments: envs}, s.Name); e.LastVerified != s.LastVerified || (e.Verification == nil) != (s.Verification == nil) {
					t.Errorf("%s: the verification was not kept: %+v", s.Name, e)
				}
			}
		})
	}
}

func TestRollbacksAndHolds(t *testing.T) {
	failedAt := metav1.NewTime(t0)
	failed := func(onFailure, lastVerified string) (*v1alpha1.Pipeline, []v1alpha1.EnvironmentStatus) {
		p := &v1alpha1.Pipeline{Spec: v1alpha1.PipelineSpec{Environments: []v1alpha1.Environment{verifiedEnv(onFailure, check("smoke", 0))}}}
		s := readyAt("2", true)
		s.LastVerified = lastVerified
		s.Verification = &v1alpha1.EnvironmentVerificationStatus{Revision: "2", State: v1alpha1.JobFailure, CompletionTime: &failedAt,
			Verifications: []v1alpha1.VerificationStatus{{Name: "smoke", Type: v1alpha1.Blocking, State: v1alpha1.JobFailure}}}
		return p, []v1alpha1.EnvironmentStatus{s}
	}
	rollback := Action{Env: 0, Revision: "1", RollbackFrom: "2", Failed: "smoke"}
	tests := []struct {
		name     string
		setup    func(p *v1alpha1.Pipeline, envs []v1alpha1.EnvironmentStatus)
		onFail   string
		verified string
		planned  []Action
		want     []Action
		held     string // the environment held, with NoTarget when "dev!"
	}{
		{name: "rollback to the last verified revision", onFail: "rollback", verified: "1", want: []Action{rollback}},
		{name: "rolled back already", onFail: "rollback", verified: "1", setup: func(_ *v1alpha1.Pipeline, envs []v1alpha1.EnvironmentStatus) {
			envs[0].LastRollback = &v1alpha1.RollbackRecord{From: "2", To: "1", Time: failedAt}
		}},
		{name: "an earlier rollback of the same revisions does not count", onFail: "rollback", verified: "1", setup: func(_ *v1alpha1.Pipeline, envs []v1alpha1.EnvironmentStatus) {
			envs[0].LastRollback = &v1alpha1.RollbackRecord{From: "2", To: "1", Time: metav1.NewTime(t0.Add(-time.Hour))}
		}, want: []Action{rollback}},
		{name: "a person moved the environment elsewhere: left alone", onFail: "rollback", verified: "1", setup: func(_ *v1alpha1.Pipeline, envs []v1alpha1.EnvironmentStatus) {
			envs[0].Targets[0].Revision = "3"
		}},
		{name: "a promotion into it is due anyway: no rollback", onFail: "rollback", verified: "1",
			planned: []Action{{Env: 0, Revision: "3"}}, want: []Action{{Env: 0, Revision: "3"}}},
		{name: "suspended: no rollback", onFail: "rollback", verified: "1", setup: func(p *v1alpha1.Pipeline, _ []v1alpha1.EnvironmentStatus) {
			p.Spec.Suspend = true
		}},
		{name: "rollback with nothing to go back to: holds", onFail: "rollback", planned: []Action{{Env: 0, Revision: "3"}}, held: "dev!"},
		{name: "hold: promotions dropped", onFail: "hold", verified: "1", planned: []Action{{Env: 0, Revision: "3"}}, held: "dev"},
		{name: "hold released once the environment is at another revision", onFail: "hold", verified: "1",
			setup: func(_ *v1alpha1.Pipeline, envs []v1alpha1.EnvironmentStatus) {
				envs[0].Targets[0].Revision = "1"
			}, planned: []Action{{Env: 0, Revision: "3"}}, want: []Action{{Env: 0, Revision: "3"}}},
		{name: "a target that cannot be observed releases nothing", onFail: "hold", verified: "1",
			setup: func(_ *v1alpha1.Pipeline, envs []v1alpha1.EnvironmentStatus) {
				envs[0].Targets[0] = v1alpha1.TargetStatus{Namespace: "dev", Message: "connection refused"}
				envs[0].Revision, envs[0].Ready = "", false
			}, planned: []Action{{Env: 0, Revision: "3"}}, held: "dev"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, envs := failed(tt.onFail, tt.verified)
			if tt.setup != nil {
				tt.setup(p, envs)
			}
			if diff := cmp.Diff(tt.want, VerificationActions(p, envs, tt.planned)); diff != "" {
				t.Errorf("actions (-want +got):\n%s", diff)
			}
			hold := Held(p, envs)
			switch {
			case tt.held == "" && hold != nil:
				t.Errorf("held: %s", hold.Message())
			case tt.held != "" && (hold == nil || hold.Env != strings.TrimSuffix(tt.held, "!") || hold.NoTarget != strings.HasSuffix(tt.held, "!")):
				t.Errorf("hold %+v, want %s", hold, tt.held)
			}
		})
	}
}

// A rollback goes through a freeze, and a promotion due into the frozen environment neither
// happens nor stops the rollback.
func TestGateActionsRollBackThroughAFreeze(t *testing.T) {
	failedAt := metav1.NewTime(t0)
	p := &v1alpha1.Pipeline{Spec: v1alpha1.PipelineSpec{Environments: []v1alpha1.Environment{verifiedEnv("rollback", check("smoke", 0))}}}
	s := readyAt("2", true)
	s.LastVerified = "1"
	s.Verification = &v1alpha1.EnvironmentVerificationStatus{Revision: "2", State: v1alpha1.JobFailure, CompletionTime: &failedAt,
		Verifications: []v1alpha1.VerificationStatus{{Name: "smoke", Type: v1alpha1.Blocking, State: v1alpha1.JobFailure}}}
	frozen := []*v1alpha1.FreezeRecord{{Freeze: "holidays", Reason: "holidays"}}
	tests := []struct {
		name    string
		planned []Action
		suspend bool
		want    []Action
	}{
		{name: "rollback into a frozen environment", want: []Action{{Env: 0, Revision: "1", RollbackFrom: "2", Failed: "smoke"}}},
		{name: "the promotion due is dropped, the rollback made", planned: []Action{{Env: 0, Revision: "3"}},
			want: []Action{{Env: 0, Revision: "1", RollbackFrom: "2", Failed: "smoke"}}},
		{name: "suspended: nothing", suspend: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := p.DeepCopy()
			p.Spec.Suspend = tt.suspend
			envs := []v1alpha1.EnvironmentStatus{*s.DeepCopy()}
			got := GateActions(p, envs, tt.planned, frozen)
			if diff := cmp.Diff(tt.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("actions (-want +got):\n%s", diff)
			}
			if envs[0].Frozen == nil {
				t.Error("the environment's frozen record was not set")
			}
		})
	}
}

func TestHoldCondition(t *testing.T) {
	var conds []metav1.Condition
	SetHoldCondition(&conds, 1, nil, t0)
	if len(conds) != 0 {
		t.Errorf("a pipeline never held has %+v", conds)
	}
	hold := &Hold{Env: "staging", Revision: "2", Failed: []string{"smoke", "e2e"}}
	SetHoldCondition(&conds, 1, hold, t0)
	c := meta.FindStatusCondition(conds, v1alpha1.ConditionPromotionHeld)
	want := "revision 2 failed verification smoke, e2e in environment staging (onFailure is hold): nothing is promoted until staging is at another revision (roll it forward or back)"
	if c == nil || c.Status != metav1.ConditionTrue || c.Reason != v1alpha1.ReasonVerificationFailed || c.Message != want {
		t.Errorf("held: %+v", c)
	}
	SetHoldCondition(&conds, 1, nil, t0.Add(time.Minute))
	if c := meta.FindStatusCondition(conds, v1alpha1.ConditionPromotionHeld); c == nil || c.Status != metav1.ConditionFalse || c.Reason != v1alpha1.ReasonNotHeld {
		t.Errorf("released: %+v", c)
	}
}

func TestFailureConsequence(t *testing.T) {
	for _, tt := range []struct {
		onFailure, lastVerified, want string
	}{
		{"rollback", "1", "rolling back to 1; 2 is never promoted further"},
		{"rollback", "", "no other revision passed in dev before, so there is none to roll back to: the pipeline's promotions are held until dev is at another revision; 2 is never promoted further"},
		{"hold", "1", "the pipeline's promotions are held until dev is at another revision"},
	} {
		if got := FailureConsequence(verifiedEnv(tt.onFailure, check("smoke", 0)), tt.lastVerified, "2"); got != tt.want {
			t.Errorf("%s after %q: %q, want %q", tt.onFailure, tt.lastVerified, got, tt.want)
		}
	}
}

// TestEndedVerifications: a verification that ended is reported once, by the write that
// records its end.
func TestEndedVerifications(t *testing.T) {
	ended := metav1.NewTime(t0)
	spec := []v1alpha1.Environment{verifiedEnv("rollback", check("smoke", 0))}
	running := &v1alpha1.PipelineStatus{Environments: []v1alpha1.EnvironmentStatus{{Name: "dev", LastVerified: "1", Verification: pending("2")}}}
	failed := running.DeepCopy()
	failed.Environments[0].Verification = &v1alpha1.EnvironmentVerificationStatus{Revision: "2", State: v1alpha1.JobFailure, CompletionTime: &ended,
		Verifications: []v1alpha1.VerificationStatus{{Name: "smoke", Type: v1alpha1.Blocking, State: v1alpha1.JobFailure}}}
	got := EndedVerifications(spec, running, failed)
	want := []VerificationOutcome{{Env: "dev", Revision: "2", State: v1alpha1.JobFailure,
		Message: "blocking verifications failed: smoke", Consequence: "rolling back to 1; 2 is never promoted further"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if again := EndedVerifications(spec, failed, failed); len(again) != 0 {
		t.Errorf("reported again: %+v", again)
	}
}
