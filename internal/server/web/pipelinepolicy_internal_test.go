package web

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/release-controller/release-controller/internal/server/catalog"
)

func TestRunChip(t *testing.T) {
	for _, tc := range []struct {
		run  catalog.Run
		want runLink
	}{
		{run: catalog.Run{Attempt: 1, Name: "smoke-1", URL: "https://ci.example/1", State: "Failure", Message: "exit 1"},
			want: runLink{Label: "1 Failed", Title: "attempt 1, smoke-1: Failed — exit 1", URL: "https://ci.example/1", Class: "state-failure"}},
		{run: catalog.Run{Attempt: 2, Name: "smoke-2", State: "Success"},
			want: runLink{Label: "2 Success", Title: "attempt 2, smoke-2: Success", Class: "state-success"}},
		{run: catalog.Run{Attempt: 3, Name: "smoke-3", State: "Unknown"},
			want: runLink{Label: "3 Failed", Title: "attempt 3, smoke-3: Failed", Class: "state-failure"}},
		{run: catalog.Run{Attempt: 4, Name: "smoke-4", State: "Pending"},
			want: runLink{Label: "4 Pending", Title: "attempt 4, smoke-4: Pending", Class: "state-pending"}},
		{run: catalog.Run{Attempt: 5, Name: "smoke-5", State: "Skipped"},
			want: runLink{Label: "5 Skipped", Title: "attempt 5, smoke-5: Skipped", Class: "state-skipped"}},
	} {
		if got := runChip(tc.run); got != tc.want {
			t.Errorf("runChip(%+v) = %+v, want %+v", tc.run, got, tc.want)
		}
	}
}

func TestPolicyView(t *testing.T) {
	now := time.Date(2026, 11, 22, 16, 0, 0, 0, time.UTC)
	ago := func(m int) time.Time { return now.Add(-time.Duration(m) * time.Minute) }
	met := ago(1)
	started, completed := ago(20), ago(5)
	for _, tc := range []struct {
		name string
		in   catalog.EnvironmentPolicy
		want envPolicyView
	}{
		{name: "nothing to say", in: catalog.EnvironmentPolicy{Name: "dev"}, want: envPolicyView{Next: "staging"}},
		{name: "soaking",
			in: catalog.EnvironmentPolicy{Name: "staging", State: catalog.EnvSoaking, MinSoak: "2 h",
				Soak: &catalog.Soak{Text: "prod takes 1.0.3 at 16:38 UTC (soaking in staging, 38 min left)"}},
			want: envPolicyView{State: "soaking", StateClass: "pending", MinSoak: "2 h", Next: "staging",
				Soak: "prod takes 1.0.3 at 16:38 UTC (soaking in staging, 38 min left)"}},
		{name: "frozen", in: catalog.EnvironmentPolicy{State: catalog.EnvFrozen, Frozen: &catalog.Frozen{Text: "frozen by stop until it is ended: incident"}},
			want: envPolicyView{State: "frozen", StateClass: "failed", Next: "staging", Frozen: "frozen by stop until it is ended: incident"}},
		{name: "verified, rolled back",
			in: catalog.EnvironmentPolicy{State: catalog.EnvVerificationFailed,
				VerificationPolicy: &catalog.VerificationPolicy{Verifications: []string{"smoke", "load"}, OnFailure: "rollback"},
				Verification: &catalog.Verification{Revision: "1.0.4", State: "Failure", Started: &started, Completed: &completed,
					Verifications: []catalog.VerificationResult{
						{Name: "smoke", Blocking: true, State: "Failure", Message: "2 of 2 runs failed", RunsOmitted: 3,
							Runs: []catalog.Run{{Attempt: 4, Name: "smoke-4", URL: "https://ci.example/4", State: "Failure"}}},
						{Name: "load", State: "Success"},
					}},
				LastVerified: "1.0.3",
				LastRollback: &catalog.Rollback{From: "1.0.4", To: "1.0.3", Time: completed},
				Unpromotable: []catalog.Unpromotable{{Revision: "1.0.4", Text: "never promoted further: failed its verification in dev (smoke)", Time: completed}},
			},
			want: envPolicyView{State: "verification failed", StateClass: "failed", Next: "staging",
				Verification: &envVerificationView{Names: "smoke, load", OnFailure: "rollback", Revision: "1.0.4", State: "Failure", StateClass: "state-failure",
					Took: "15m 0s", LastVerified: "1.0.3", Verifications: []envVerificationResult{
						{Name: "smoke", Kind: "blocking", State: "Failure", StateClass: "state-failure", Message: "2 of 2 runs failed", RunsOmitted: 3,
							Runs: []runLink{{Label: "4 Failed", Title: "attempt 4, smoke-4: Failed", URL: "https://ci.example/4", Class: "state-failure"}}},
						{Name: "load", Kind: "informing", State: "Success", StateClass: "state-success"},
					}},
				Rollback:     &rollbackView{From: "1.0.4", To: "1.0.3", Time: stampOf(now, completed)},
				Unpromotable: []unpromotableView{{Revision: "1.0.4", Text: "never promoted further: failed its verification in dev (smoke)", Time: stampOf(now, completed)}},
			}},
		{name: "a verification not run yet",
			in:   catalog.EnvironmentPolicy{VerificationPolicy: &catalog.VerificationPolicy{Verifications: []string{"smoke"}, OnFailure: "hold"}},
			want: envPolicyView{Next: "staging", Verification: &envVerificationView{Names: "smoke", OnFailure: "hold"}}},
		{name: "approvals and rejections",
			in: catalog.EnvironmentPolicy{
				Approval: &catalog.ApprovalState{Policy: "2 distinct approvers", Progress: "policy met by bob (2 of 2 approvals)", Revision: "1.0.3",
					PolicyMet: &met, MetBy: "bob", Approvers: []catalog.Approver{{Name: "alice", Time: ago(3), Comment: "ok"}, {Name: "bob", Time: met}}},
				Rejections: []catalog.Rejection{{Revision: "1.0.2", By: "carol", Reason: "no", Time: ago(60)}},
			},
			want: envPolicyView{Next: "staging",
				Approval: &approvalPolicyView{Policy: "2 distinct approvers", Progress: "policy met by bob (2 of 2 approvals)", ProgressClass: "state-success",
					Revision: "1.0.3", MetBy: "bob", PolicyMet: stampOf(now, met),
					Approvers: []approverView{{Name: "alice", Comment: "ok", Time: stampOf(now, ago(3))}, {Name: "bob", Time: stampOf(now, met)}}},
				Rejections: []rejectionView{{Revision: "1.0.2", By: "carol", Reason: "no", Time: stampOf(now, ago(60))}},
			}},
		{name: "approvals still needed",
			in: catalog.EnvironmentPolicy{Approval: &catalog.ApprovalState{Policy: "1 distinct approver", Progress: "0 of 1 approvals, 1 more needed"}},
			want: envPolicyView{Next: "staging",
				Approval: &approvalPolicyView{Policy: "1 distinct approver", Progress: "0 of 1 approvals, 1 more needed", ProgressClass: "pending"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, policyView(tc.in, "staging", now)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestFreezeViews(t *testing.T) {
	in := []catalog.AppliedFreeze{
		{Name: "apps/stop", Reason: "incident", Environments: []string{"dev", "prod"}, Window: "from its creation until it is ended", Active: true, State: "active until it is ended"},
		{Name: "holidays", Cluster: true, Reason: "holidays", Environments: []string{"prod"}, Window: "every …", State: "next window at Dec 24 18:00 UTC"},
	}
	want := []freezeView{
		{Name: "apps/stop", Kind: "ReleaseFreeze", Reason: "incident", Environments: "dev, prod", Window: "from its creation until it is ended",
			State: "active until it is ended", Class: "failed"},
		{Name: "holidays", Kind: "ClusterReleaseFreeze", Reason: "holidays", Environments: "prod", Window: "every …",
			State: "next window at Dec 24 18:00 UTC", Class: "pending"},
	}
	if diff := cmp.Diff(want, freezeViews(in)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
