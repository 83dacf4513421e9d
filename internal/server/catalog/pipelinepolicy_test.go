package catalog

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/release-controller/release-controller/api/v1alpha1"
)

var policyNow = time.Date(2026, 11, 22, 13, 27, 0, 0, time.UTC)

func mt(d time.Duration) *metav1.Time {
	t := metav1.NewTime(policyNow.Add(d))
	return &t
}

func tp(d time.Duration) *time.Time {
	t := policyNow.Add(d)
	return &t
}

// threeEnvs is a pipeline dev → staging → prod, staging soaking 1.0.3 for 38 more minutes
// (ready since 82 minutes, a 2h soak), prod at 1.0.2; change edits it before the test.
func threeEnvs(change func(p *v1alpha1.Pipeline)) *v1alpha1.Pipeline {
	twoHours := metav1.Duration{Duration: 2 * time.Hour}
	p := &v1alpha1.Pipeline{
		ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "web", Labels: map[string]string{"tier": "front"}},
		Spec: v1alpha1.PipelineSpec{Environments: []v1alpha1.Environment{
			{Name: "dev"},
			{Name: "staging", Promotion: &v1alpha1.Promotion{MinSoak: &twoHours}},
			{Name: "prod"},
		}},
		Status: v1alpha1.PipelineStatus{Environments: []v1alpha1.EnvironmentStatus{
			{Name: "dev", Revision: "1.0.3", Ready: true},
			{Name: "staging", Revision: "1.0.3", Ready: true, ReadySince: mt(-82 * time.Minute), SoakUntil: mt(38 * time.Minute)},
			{Name: "prod", Revision: "1.0.2", Ready: true},
		}},
	}
	if change != nil {
		change(p)
	}
	return p
}

func TestDescribeSoak(t *testing.T) {
	for _, tc := range []struct {
		name      string
		change    func(p *v1alpha1.Pipeline)
		want      *Soak
		wantState string
	}{
		{name: "the next environment takes the revision when the soak is over",
			want: &Soak{Revision: "1.0.3", ReadySince: tp(-82 * time.Minute), Until: policyNow.Add(38 * time.Minute), RemainingSeconds: 38 * 60,
				Next: "prod", Text: "prod takes 1.0.3 at 14:05 UTC (soaking in staging, 38 min left)"},
			wantState: EnvSoaking},
		{name: "a part of a minute left counts as a minute",
			change: func(p *v1alpha1.Pipeline) { p.Status.Environments[1].SoakUntil = mt(37*time.Minute + 30*time.Second) },
			want: &Soak{Revision: "1.0.3", ReadySince: tp(-82 * time.Minute), Until: policyNow.Add(37*time.Minute + 30*time.Second), RemainingSeconds: 37*60 + 30,
				Next: "prod", Text: "prod takes 1.0.3 at 14:04 UTC (soaking in staging, 38 min left)"},
			wantState: EnvSoaking},
		{name: "a soak of days says the date",
			change: func(p *v1alpha1.Pipeline) { p.Status.Environments[1].SoakUntil = mt(26*time.Hour + 10*time.Minute) },
			want: &Soak{Revision: "1.0.3", ReadySince: tp(-82 * time.Minute), Until: policyNow.Add(26*time.Hour + 10*time.Minute), RemainingSeconds: (26*60 + 10) * 60,
				Next: "prod", Text: "prod takes 1.0.3 at Nov 23 15:37 UTC (soaking in staging, 1 d 2 h left)"},
			wantState: EnvSoaking},
		{name: "an approval and a verification still to come are said",
			change: func(p *v1alpha1.Pipeline) {
				p.Spec.Environments[1].Verification = &v1alpha1.EnvironmentVerification{Verifications: []v1alpha1.Verification{{Name: "smoke"}}}
				p.Spec.Environments[2].Approval = &v1alpha1.Approval{MinApprovers: 1}
			},
			want: &Soak{Revision: "1.0.3", ReadySince: tp(-82 * time.Minute), Until: policyNow.Add(38 * time.Minute), RemainingSeconds: 38 * 60,
				Next: "prod", Text: "prod takes 1.0.3 at 14:05 UTC at the earliest, once verified in staging and once approved (soaking in staging, 38 min left)"},
			wantState: EnvSoaking},
		{name: "a revision verified already needs no verification",
			change: func(p *v1alpha1.Pipeline) {
				p.Spec.Environments[1].Verification = &v1alpha1.EnvironmentVerification{Verifications: []v1alpha1.Verification{{Name: "smoke"}}}
				p.Status.Environments[1].Verification = &v1alpha1.EnvironmentVerificationStatus{Revision: "1.0.3", State: v1alpha1.JobSuccess}
			},
			want: &Soak{Revision: "1.0.3", ReadySince: tp(-82 * time.Minute), Until: policyNow.Add(38 * time.Minute), RemainingSeconds: 38 * 60,
				Next: "prod", Text: "prod takes 1.0.3 at 14:05 UTC (soaking in staging, 38 min left)"},
			wantState: EnvSoaking},
		{name: "a revision that passed before, rolled back to, needs no verification",
			change: func(p *v1alpha1.Pipeline) {
				p.Spec.Environments[1].Verification = &v1alpha1.EnvironmentVerification{Verifications: []v1alpha1.Verification{{Name: "smoke"}}}
				p.Status.Environments[1].Verification = &v1alpha1.EnvironmentVerificationStatus{Revision: "1.0.4", State: v1alpha1.JobFailure}
				p.Status.Environments[1].LastVerified = "1.0.3"
			},
			want: &Soak{Revision: "1.0.3", ReadySince: tp(-82 * time.Minute), Until: policyNow.Add(38 * time.Minute), RemainingSeconds: 38 * 60,
				Next: "prod", Text: "prod takes 1.0.3 at 14:05 UTC (soaking in staging, 38 min left)"},
			wantState: EnvSoaking},
		{name: "a next environment at the revision already takes nothing",
			change: func(p *v1alpha1.Pipeline) { p.Status.Environments[2].Revision = "1.0.3" },
			want: &Soak{Revision: "1.0.3", ReadySince: tp(-82 * time.Minute), Until: policyNow.Add(38 * time.Minute), RemainingSeconds: 38 * 60,
				Text: "1.0.3 is soaking in staging, 38 min left"},
			wantState: EnvSoaking},
		{name: "a revision the next environment rejected is never taken",
			change: func(p *v1alpha1.Pipeline) {
				p.Status.Environments[2].Rejections = []v1alpha1.RejectionRecord{{Revision: "1.0.3", By: "carol", Reason: "no"}}
			},
			want: &Soak{Revision: "1.0.3", ReadySince: tp(-82 * time.Minute), Until: policyNow.Add(38 * time.Minute), RemainingSeconds: 38 * 60,
				Text: "1.0.3 is soaking in staging, 38 min left"},
			wantState: EnvSoaking},
		{name: "an unpromotable revision is never taken",
			change: func(p *v1alpha1.Pipeline) {
				p.Status.Unpromotable = []v1alpha1.UnpromotableRevision{{Revision: "1.0.3", Environment: "dev", Reason: "blocking verifications failed: smoke"}}
			},
			want: &Soak{Revision: "1.0.3", ReadySince: tp(-82 * time.Minute), Until: policyNow.Add(38 * time.Minute), RemainingSeconds: 38 * 60,
				Text: "1.0.3 is soaking in staging, 38 min left"},
			wantState: EnvSoaking},
		{name: "a soak whose end passed is over", change: func(p *v1alpha1.Pipeline) { p.Status.Environments[1].SoakUntil = mt(-time.Second) }},
		{name: "no soak", change: func(p *v1alpha1.Pipeline) { p.Status.Environments[1].SoakUntil = nil }},
		{name: "a frozen environment is frozen before it soaks",
			change: func(p *v1alpha1.Pipeline) {
				p.Status.Environments[1].Frozen = &v1alpha1.FreezeRecord{Freeze: "stop", Reason: "incident"}
			},
			want: &Soak{Revision: "1.0.3", ReadySince: tp(-82 * time.Minute), Until: policyNow.Add(38 * time.Minute), RemainingSeconds: 38 * 60,
				Next: "prod", Text: "prod takes 1.0.3 at 14:05 UTC (soaking in staging, 38 min left)"},
			wantState: EnvFrozen},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := DescribePipeline(threeEnvs(tc.change), nil, policyNow).Environments[1]
			if diff := cmp.Diff(tc.want, got.Soak); diff != "" {
				t.Errorf("soak (-want +got):\n%s", diff)
			}
			if got.State != tc.wantState {
				t.Errorf("state %q, want %q", got.State, tc.wantState)
			}
			if got.MinSoak != "2 h" {
				t.Errorf("minSoak %q, want 2 h", got.MinSoak)
			}
		})
	}
}

func TestMinSoak(t *testing.T) {
	hour := &metav1.Duration{Duration: time.Hour}
	p := threeEnvs(func(p *v1alpha1.Pipeline) {
		p.Spec.Promotion = &v1alpha1.Promotion{MinSoak: hour}
		p.Spec.Environments[2].Promotion = &v1alpha1.Promotion{MinSoak: hour}
	})
	var got []string
	for _, e := range DescribePipeline(p, nil, policyNow).Environments {
		got = append(got, e.MinSoak)
	}
	// The pipeline's soak is every environment's unless it says otherwise; the last one's is
	// never waited on.
	if want := []string{"1 h", "2 h", ""}; !cmp.Equal(got, want) {
		t.Errorf("minSoak %q, want %q", got, want)
	}
}

func TestDescribeFrozen(t *testing.T) {
	for _, tc := range []struct {
		name   string
		record *v1alpha1.FreezeRecord
		want   *Frozen
	}{
		{name: "until a time today", record: &v1alpha1.FreezeRecord{Freeze: "apps/release", Reason: "release day", Until: mt(90 * time.Minute)},
			want: &Frozen{Freeze: "apps/release", Reason: "release day", Until: tp(90 * time.Minute), Text: "frozen by apps/release until 14:57 UTC: release day"}},
		{name: "until a later day", record: &v1alpha1.FreezeRecord{Freeze: "holidays", Reason: "holidays", Until: mt(5 * 24 * time.Hour)},
			want: &Frozen{Freeze: "holidays", Reason: "holidays", Until: tp(5 * 24 * time.Hour), Text: "frozen by holidays until Nov 27 13:27 UTC: holidays"}},
		{name: "next year", record: &v1alpha1.FreezeRecord{Freeze: "holidays", Reason: "holidays", Until: mt(50 * 24 * time.Hour)},
			want: &Frozen{Freeze: "holidays", Reason: "holidays", Until: tp(50 * 24 * time.Hour), Text: "frozen by holidays until 2027-01-11 13:27 UTC: holidays"}},
		{name: "a stop-the-line", record: &v1alpha1.FreezeRecord{Freeze: "apps/stop", Reason: "incident 42"},
			want: &Frozen{Freeze: "apps/stop", Reason: "incident 42", Text: "frozen by apps/stop until it is ended: incident 42"}},
		{name: "a long reason is cut", record: &v1alpha1.FreezeRecord{Freeze: "apps/stop", Reason: strings.Repeat("é", 1024)},
			want: &Frozen{Freeze: "apps/stop", Reason: strings.Repeat("é", MaxPolicyText-1) + "…",
				Text: "frozen by apps/stop until it is ended: " + strings.Repeat("é", MaxPolicyText-1) + "…"}},
		{name: "not frozen"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := threeEnvs(func(p *v1alpha1.Pipeline) { p.Status.Environments[2].Frozen = tc.record })
			got := DescribePipeline(p, nil, policyNow).Environments[2]
			if diff := cmp.Diff(tc.want, got.Frozen); diff != "" {
				t.Errorf("frozen (-want +got):\n%s", diff)
			}
			if wantState := map[bool]string{true: EnvFrozen}[tc.want != nil]; got.State != wantState {
				t.Errorf("state %q, want %q", got.State, wantState)
			}
		})
	}
}

func TestDescribeVerification(t *testing.T) {
	started, done := metav1.NewTime(policyNow.Add(-20*time.Minute)), metav1.NewTime(policyNow.Add(-5*time.Minute))
	var manyRuns []v1alpha1.JobRun
	for i := range MaxPolicyRuns + 2 {
		manyRuns = append(manyRuns, v1alpha1.JobRun{Attempt: int32(i + 1), Name: "load-" + string(rune('a'+i)), State: v1alpha1.JobFailure})
	}
	spec := &v1alpha1.EnvironmentVerification{Verifications: []v1alpha1.Verification{{Name: "smoke"}, {Name: "load"}}, OnFailure: v1alpha1.OnFailureRollback}
	failed := &v1alpha1.EnvironmentVerificationStatus{Revision: "1.0.4", State: v1alpha1.JobFailure, StartTime: started, CompletionTime: &done,
		Verifications: []v1alpha1.VerificationStatus{
			{Name: "smoke", Type: v1alpha1.Blocking, State: v1alpha1.JobFailure, Message: "2 of 2 runs failed", Runs: []v1alpha1.JobRun{
				{Attempt: 1, Name: "smoke-1", URL: "https://ci.example/smoke-1", State: v1alpha1.JobFailure, StartTime: &started, CompletionTime: &done, Message: strings.Repeat("x", 2000)},
			}},
			{Name: "load", Type: v1alpha1.Informing, Runs: manyRuns},
		}}
	for _, tc := range []struct {
		name      string
		change    func(p *v1alpha1.Pipeline)
		check     func(t *testing.T, e EnvironmentPolicy)
		wantState string
	}{
		{name: "a failed verification still rolled out, with its runs",
			change: func(p *v1alpha1.Pipeline) {
				p.Spec.Environments[0].Verification = spec
				p.Status.Environments[0].Revision = "1.0.4"
				p.Status.Environments[0].Verification = failed
			},
			wantState: EnvVerificationFailed,
			check: func(t *testing.T, e EnvironmentPolicy) {
				if diff := cmp.Diff(&VerificationPolicy{Verifications: []string{"smoke", "load"}, OnFailure: "rollback"}, e.VerificationPolicy); diff != "" {
					t.Errorf("policy (-want +got):\n%s", diff)
				}
				v := e.Verification
				if v == nil || v.Revision != "1.0.4" || v.State != "Failure" || !v.Started.Equal(started.Time) || !v.Completed.Equal(done.Time) || len(v.Verifications) != 2 {
					t.Fatalf("verification %+v", v)
				}
				smoke := v.Verifications[0]
				if !smoke.Blocking || smoke.State != "Failure" || smoke.Message != "2 of 2 runs failed" || len(smoke.Runs) != 1 {
					t.Errorf("smoke %+v", smoke)
				}
				if r := smoke.Runs[0]; r.URL != "https://ci.example/smoke-1" || r.Name != "smoke-1" || r.Attempt != 1 || len([]rune(r.Message)) != MaxPolicyText {
					t.Errorf("smoke's run %+v", r)
				}
				load := v.Verifications[1]
				if load.Blocking || load.State != "Pending" || len(load.Runs) != MaxPolicyRuns || load.RunsOmitted != 2 || load.Runs[0].Attempt != 3 {
					t.Errorf("load: the newest %d runs are kept: %+v", MaxPolicyRuns, load)
				}
			}},
		{name: "rolled back: the failed revision is never promoted further",
			change: func(p *v1alpha1.Pipeline) {
				p.Spec.Environments[0].Verification = spec
				p.Status.Environments[0].Revision = "1.0.3"
				p.Status.Environments[0].Verification = failed
				p.Status.Environments[0].LastVerified = "1.0.3"
				p.Status.Environments[0].LastRollback = &v1alpha1.RollbackRecord{From: "1.0.4", To: "1.0.3", Time: done}
				p.Status.Unpromotable = []v1alpha1.UnpromotableRevision{
					{Revision: "0.9.0", Environment: "dev", Reason: "blocking verifications failed: load", Time: started},
					{Revision: "1.0.1", Environment: "staging", Reason: "blocking verifications failed: e2e", Time: started},
					{Revision: "1.0.4", Environment: "dev", Reason: "blocking verifications failed: smoke", Time: done},
				}
			},
			check: func(t *testing.T, e EnvironmentPolicy) {
				if e.LastVerified != "1.0.3" {
					t.Errorf("lastVerified %q", e.LastVerified)
				}
				if diff := cmp.Diff(&Rollback{From: "1.0.4", To: "1.0.3", Time: done.Time}, e.LastRollback); diff != "" {
					t.Errorf("rollback (-want +got):\n%s", diff)
				}
				want := []Unpromotable{
					{Revision: "1.0.4", Reason: "blocking verifications failed: smoke", Time: done.Time,
						Text: "never promoted further: failed its verification in dev (blocking verifications failed: smoke)"},
					{Revision: "0.9.0", Reason: "blocking verifications failed: load", Time: started.Time,
						Text: "never promoted further: failed its verification in dev (blocking verifications failed: load)"},
				}
				if diff := cmp.Diff(want, e.Unpromotable); diff != "" {
					t.Errorf("unpromotable, newest first, of dev only (-want +got):\n%s", diff)
				}
			}},
		{name: "a verification running",
			change: func(p *v1alpha1.Pipeline) {
				p.Spec.Environments[0].Verification = &v1alpha1.EnvironmentVerification{Verifications: []v1alpha1.Verification{{Name: "smoke"}}}
				p.Status.Environments[0].Verification = &v1alpha1.EnvironmentVerificationStatus{Revision: "1.0.3", StartTime: started,
					Verifications: []v1alpha1.VerificationStatus{{Name: "smoke", State: v1alpha1.JobPending}}}
			},
			wantState: EnvVerifying,
			check: func(t *testing.T, e EnvironmentPolicy) {
				if e.VerificationPolicy.OnFailure != v1alpha1.OnFailureHold || e.Verification.State != "Pending" || e.Verification.Completed != nil {
					t.Errorf("policy %+v, verification %+v", e.VerificationPolicy, e.Verification)
				}
			}},
		{name: "no verification",
			check: func(t *testing.T, e EnvironmentPolicy) {
				if e.VerificationPolicy != nil || e.Verification != nil || e.LastRollback != nil || e.Unpromotable != nil {
					t.Errorf("%+v", e)
				}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := DescribePipeline(threeEnvs(tc.change), nil, policyNow).Environments[0]
			if got.State != tc.wantState {
				t.Errorf("state %q, want %q", got.State, tc.wantState)
			}
			tc.check(t, got)
		})
	}
}

func TestDescribeApproval(t *testing.T) {
	at := func(m int) metav1.Time { return metav1.NewTime(policyNow.Add(time.Duration(m) * time.Minute)) }
	var many []string
	for i := range MaxPolicyNames + 3 {
		many = append(many, "user-"+string(rune('a'+i)))
	}
	for _, tc := range []struct {
		name     string
		approval v1alpha1.Approval
		record   *v1alpha1.ApprovalRecord
		waiting  string
		want     ApprovalState
	}{
		{name: "a revision waiting, approved by none yet: the record is of the one before",
			approval: v1alpha1.Approval{MinApprovers: 1},
			record: &v1alpha1.ApprovalRecord{Revision: "1.0.2", Approver: "bob", Time: at(-90), PolicyMet: &[]metav1.Time{at(-90)}[0],
				Approvers: []v1alpha1.Approver{{Name: "bob", Time: at(-90)}}},
			waiting: "1.0.3",
			want: ApprovalState{MinApprovers: 1, Policy: "1 distinct approver; anyone RBAC allows to update pipelines/approval",
				Revision: "1.0.3", Needed: 1, Progress: "0 of 1 approvals, 1 more needed"}},
		{name: "the revision waiting, approved once", approval: v1alpha1.Approval{MinApprovers: 2},
			record:  &v1alpha1.ApprovalRecord{Revision: "1.0.3", Approvers: []v1alpha1.Approver{{Name: "alice", Time: at(-3)}}},
			waiting: "1.0.3",
			want: ApprovalState{MinApprovers: 2, Policy: "2 distinct approvers; anyone RBAC allows to update pipelines/approval",
				Revision: "1.0.3", Approvers: []Approver{{Name: "alice", Time: at(-3).Time}}, Needed: 1, Progress: "1 of 2 approvals, 1 more needed"}},
		{name: "a shared key, nothing waits", approval: v1alpha1.Approval{SecretRef: &v1alpha1.SecretKeyReference{Name: "key"}, MinApprovers: 1},
			want: ApprovalState{MinApprovers: 1, Signed: true,
				Policy:   "1 distinct approver; anyone RBAC allows to update pipelines/approval; a signed approval counts as one machine approver",
				Progress: "no revision waits for approval"}},
		{name: "two people, one approved",
			approval: v1alpha1.Approval{MinApprovers: 2, Users: []string{"alice", "bob"}, Groups: []string{"release"}, SeparationOfDuties: true, SecretRef: &v1alpha1.SecretKeyReference{Name: "key"}},
			record:   &v1alpha1.ApprovalRecord{Revision: "1.0.3", Approver: "alice", Time: at(-3), Approvers: []v1alpha1.Approver{{Name: "alice", Time: at(-3), Comment: "looks good"}}},
			want: ApprovalState{MinApprovers: 2, Users: []string{"alice", "bob"}, Groups: []string{"release"}, SeparationOfDuties: true, Signed: true,
				Policy:   "2 distinct approvers; users alice, bob; groups release; not who approved it for staging; signed approvals do not count (the policy names people)",
				Revision: "1.0.3", Approvers: []Approver{{Name: "alice", Time: at(-3).Time, Comment: "looks good"}}, Needed: 1,
				Progress: "1 of 2 approvals, 1 more needed"}},
		{name: "the policy met",
			approval: v1alpha1.Approval{MinApprovers: 2},
			record: &v1alpha1.ApprovalRecord{Revision: "1.0.3", Approver: "bob", Time: at(-1), PolicyMet: &[]metav1.Time{at(-1)}[0],
				Approvers: []v1alpha1.Approver{{Name: "alice", Time: at(-3)}, {Name: "bob", Time: at(-1)}}},
			want: ApprovalState{MinApprovers: 2, Policy: "2 distinct approvers; anyone RBAC allows to update pipelines/approval",
				Revision: "1.0.3", Approvers: []Approver{{Name: "alice", Time: at(-3).Time}, {Name: "bob", Time: at(-1).Time}},
				PolicyMet: tp(-time.Minute), MetBy: "bob", Progress: "policy met by bob (2 of 2 approvals)"}},
		{name: "a record of no revision only holds used signatures",
			approval: v1alpha1.Approval{MinApprovers: 1, SecretRef: &v1alpha1.SecretKeyReference{Name: "key"}},
			record:   &v1alpha1.ApprovalRecord{UsedSignatures: []v1alpha1.UsedSignature{{SHA256: strings.Repeat("a", 64), Expires: at(4)}}},
			want: ApprovalState{MinApprovers: 1, Signed: true,
				Policy:   "1 distinct approver; anyone RBAC allows to update pipelines/approval; a signed approval counts as one machine approver",
				Progress: "no revision waits for approval"}},
		{name: "long lists of names and comments are cut",
			approval: v1alpha1.Approval{MinApprovers: 1, Users: many, Groups: many},
			record:   &v1alpha1.ApprovalRecord{Revision: "1.0.3", Approvers: []v1alpha1.Approver{{Name: "user-a", Time: at(-2), Comment: strings.Repeat("c", 1024)}}},
			want: ApprovalState{MinApprovers: 1, Users: many[:MaxPolicyNames], Groups: many[:MaxPolicyNames], NamesOmitted: 6,
				Policy: "1 distinct approver; users " + strings.Join(many[:MaxPolicyNames], ", ") + " and 3 more; groups " +
					strings.Join(many[:MaxPolicyNames], ", ") + " and 3 more",
				Revision: "1.0.3", Approvers: []Approver{{Name: "user-a", Time: at(-2).Time, Comment: strings.Repeat("c", MaxPolicyText-1) + "…"}},
				Progress: "1 of 1 approvals, 0 more needed"}},
		{name: "an unset minimum is one", approval: v1alpha1.Approval{Users: []string{"alice"}},
			want: ApprovalState{MinApprovers: 1, Users: []string{"alice"}, Policy: "1 distinct approver; users alice", Progress: "no revision waits for approval"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := threeEnvs(func(p *v1alpha1.Pipeline) {
				p.Spec.Environments[2].Approval = &tc.approval
				p.Status.Environments[2].Approval = tc.record
				if tc.waiting != "" {
					p.Status.Environments[2].WaitingApproval = &v1alpha1.WaitingApproval{Revision: tc.waiting}
				}
			})
			got := DescribePipeline(p, nil, policyNow).Environments[2].Approval
			if diff := cmp.Diff(&tc.want, got); diff != "" {
				t.Errorf("approval (-want +got):\n%s", diff)
			}
		})
	}
	if got := DescribePipeline(threeEnvs(nil), nil, policyNow).Environments[2].Approval; got != nil {
		t.Errorf("an environment without approval: %+v", got)
	}
	first := threeEnvs(func(p *v1alpha1.Pipeline) {
		p.Spec.Environments[0].Approval = &v1alpha1.Approval{MinApprovers: 1, SeparationOfDuties: true}
	})
	if got := DescribePipeline(first, nil, policyNow).Environments[0].Approval.Policy; !strings.Contains(got, "separation of duties (no environment comes before)") {
		t.Errorf("the first environment's policy %q", got)
	}
}

func TestDescribeRejections(t *testing.T) {
	at := func(m int) metav1.Time { return metav1.NewTime(policyNow.Add(time.Duration(m) * time.Minute)) }
	p := threeEnvs(func(p *v1alpha1.Pipeline) {
		p.Status.Environments[2].Rejections = []v1alpha1.RejectionRecord{
			{Revision: "1.0.1", By: "carol", Reason: "breaks the API", Time: at(-60)},
			{Revision: "1.0.3", By: "hmac:prod-key", Reason: strings.Repeat("<b>", 400), Time: at(-5)},
		}
	})
	want := []Rejection{
		{Revision: "1.0.3", By: "hmac:prod-key", Reason: strings.Repeat("<b>", 100)[:MaxPolicyText-1] + "…", Time: at(-5).Time},
		{Revision: "1.0.1", By: "carol", Reason: "breaks the API", Time: at(-60).Time},
	}
	if diff := cmp.Diff(want, DescribePipeline(p, nil, policyNow).Environments[2].Rejections); diff != "" {
		t.Errorf("rejections, newest first (-want +got):\n%s", diff)
	}
}

func TestDescribeFreezes(t *testing.T) {
	active := func(msg string) v1alpha1.ReleaseFreezeStatus {
		return v1alpha1.ReleaseFreezeStatus{Conditions: []metav1.Condition{{Type: v1alpha1.ConditionFreezeActive, Status: metav1.ConditionTrue, Message: msg}},
			ActiveSince: mt(-time.Hour)}
	}
	freeze := func(namespace, name string, spec v1alpha1.ReleaseFreezeSpec, status v1alpha1.ReleaseFreezeStatus) Freeze {
		return Freeze{Namespace: namespace, Name: name, Spec: &spec, Status: &status}
	}
	until := active("")
	until.ActiveUntil = mt(3 * time.Hour)
	next := v1alpha1.ReleaseFreezeStatus{Conditions: []metav1.Condition{{Type: v1alpha1.ConditionFreezeActive, Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonOutsideWindow}},
		NextStart: mt(48 * time.Hour)}
	ended := v1alpha1.ReleaseFreezeStatus{Conditions: []metav1.Condition{{Type: v1alpha1.ConditionFreezeActive, Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonFreezeEnded}},
		ActiveSince: mt(-48 * time.Hour), ActiveUntil: mt(-24 * time.Hour)}
	invalid := v1alpha1.ReleaseFreezeStatus{Conditions: []metav1.Condition{
		{Type: v1alpha1.ConditionFreezeActive, Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonInvalidFreeze},
		{Type: v1alpha1.ConditionReady, Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonInvalidFreeze, Message: `spec.schedule.timeZone: unknown time zone "Mars/Olympus"`},
	}}
	front := &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "front"}}
	back := &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "back"}}
	notASelector := &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "tier", Operator: "Near"}}}
	weekly := &v1alpha1.FreezeSchedule{Cron: "0 18 * * 5", Duration: metav1.Duration{Duration: 63 * time.Hour}, TimeZone: "Europe/Berlin"}
	freezes := []Freeze{
		freeze("", "stop", v1alpha1.ReleaseFreezeSpec{Reason: "incident 42"}, active("")),
		freeze("", "other-tier", v1alpha1.ReleaseFreezeSpec{Reason: "back end only", Pipelines: back}, active("")),
		freeze("", "broken-selector", v1alpha1.ReleaseFreezeSpec{Reason: "?", Pipelines: notASelector}, active("")),
		freeze("", "new", v1alpha1.ReleaseFreezeSpec{Reason: "not seen yet", Start: mt(time.Hour), End: mt(2 * time.Hour)}, v1alpha1.ReleaseFreezeStatus{}),
		freeze("apps", "weekend", v1alpha1.ReleaseFreezeSpec{Reason: "weekend", Schedule: weekly, Pipelines: front, Environments: []string{"prod", "qa"}}, next),
		freeze("apps", "release", v1alpha1.ReleaseFreezeSpec{Reason: "release day", Start: mt(-time.Hour), End: mt(3 * time.Hour), Environments: []string{"staging", "prod"}}, until),
		freeze("apps", "qa-only", v1alpha1.ReleaseFreezeSpec{Reason: "qa", Environments: []string{"qa"}}, active("")),
		freeze("apps", "last-week", v1alpha1.ReleaseFreezeSpec{Reason: "last week", Start: mt(-48 * time.Hour), End: mt(-24 * time.Hour)}, ended),
		freeze("apps", "mars", v1alpha1.ReleaseFreezeSpec{Reason: "mars", Schedule: &v1alpha1.FreezeSchedule{Cron: "0 0 * * *", Duration: metav1.Duration{Duration: time.Hour}, TimeZone: "Mars/Olympus"}}, invalid),
		freeze("team", "theirs", v1alpha1.ReleaseFreezeSpec{Reason: "another namespace"}, active("")),
	}
	all := []string{"dev", "staging", "prod"}
	// The active ones first.
	want := []AppliedFreeze{
		{Name: "stop", Cluster: true, Reason: "incident 42", Environments: all, Window: "from its creation until it is ended", Active: true, Since: tp(-time.Hour),
			State: "active until it is ended"},
		{Name: "apps/release", Reason: "release day", Environments: []string{"staging", "prod"}, Window: "from 12:27 UTC until 16:27 UTC", Active: true,
			Since: tp(-time.Hour), Until: tp(3 * time.Hour), State: "active until 16:27 UTC"},
		{Name: "new", Cluster: true, Reason: "not seen yet", Environments: all, Window: "from 14:27 UTC until 15:27 UTC", State: "not observed by the controller yet"},
		{Name: "apps/last-week", Reason: "last week", Environments: all, Window: "from Nov 20 13:27 UTC until Nov 21 13:27 UTC", Since: tp(-48 * time.Hour), Until: tp(-24 * time.Hour),
			State: "ended at Nov 21 13:27 UTC"},
		{Name: "apps/mars", Reason: "mars", Environments: all, Window: `every "0 0 * * *" (Mars/Olympus) for 1 h`,
			State: `holds nothing: spec.schedule.timeZone: unknown time zone "Mars/Olympus"`},
		{Name: "apps/weekend", Reason: "weekend", Environments: []string{"prod"}, Window: `every "0 18 * * 5" (Europe/Berlin) for 2 d 15 h`, NextStart: tp(48 * time.Hour),
			State: "next window at Nov 24 13:27 UTC"},
	}
	cat := New()
	for _, f := range freezes {
		if f.Namespace == "" {
			cat.SetClusterReleaseFreeze(&v1alpha1.ClusterReleaseFreeze{ObjectMeta: metav1.ObjectMeta{Name: f.Name}, Spec: *f.Spec, Status: *f.Status})
		} else {
			cat.SetReleaseFreeze(&v1alpha1.ReleaseFreeze{ObjectMeta: metav1.ObjectMeta{Namespace: f.Namespace, Name: f.Name}, Spec: *f.Spec, Status: *f.Status})
		}
	}
	got := DescribePipeline(threeEnvs(nil), cat.Freezes(), policyNow)
	if diff := cmp.Diff(want, got.Freezes); diff != "" {
		t.Errorf("freezes (-want +got):\n%s", diff)
	}

	// Past the bound, the freezes are counted; an active one is never left out for others.
	var lots []Freeze
	for range MaxPolicyFreezes + 4 {
		lots = append(lots, freeze("", "later", v1alpha1.ReleaseFreezeSpec{Reason: "r"}, next))
	}
	lots = append(lots, freeze("", "stop", v1alpha1.ReleaseFreezeSpec{Reason: "r"}, active("")))
	got = DescribePipeline(threeEnvs(nil), lots, policyNow)
	if len(got.Freezes) != MaxPolicyFreezes || got.FreezesOmitted != 5 || got.Freezes[0].Name != "stop" {
		t.Errorf("%d freezes listed (the first %s), %d omitted", len(got.Freezes), got.Freezes[0].Name, got.FreezesOmitted)
	}
}

func TestTimeWords(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		left string
		dur  string
	}{
		{d: 10 * time.Second, left: "less than a minute left", dur: "10s"},
		{d: time.Minute, left: "1 min left", dur: "1 min"},
		{d: 61 * time.Second, left: "2 min left", dur: "1 min"},
		{d: 2 * time.Hour, left: "2 h left", dur: "2 h"},
		{d: 2*time.Hour + 5*time.Minute, left: "2 h 5 min left", dur: "2 h 5 min"},
		{d: 63 * time.Hour, left: "2 d 15 h left", dur: "2 d 15 h"},
	} {
		if got := timeLeft(tc.d); got != tc.left {
			t.Errorf("timeLeft(%s) = %q, want %q", tc.d, got, tc.left)
		}
		if got := shortDuration(tc.d); got != tc.dur {
			t.Errorf("shortDuration(%s) = %q, want %q", tc.d, got, tc.dur)
		}
	}
}
