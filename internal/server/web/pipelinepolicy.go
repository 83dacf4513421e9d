package web

import (
	"fmt"
	"strings"
	"time"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/server/catalog"
)

// The promotion policy on a pipeline's page: each environment's soak, the freeze holding it,
// its verification after rollout (the runs drawn as the payload pages draw an upgrade's),
// rollbacks and the revisions never promoted further, its approval policy with the
// approvals and rejections; and the freezes that cover the pipeline. The facts are
// catalog.DescribePipeline's, which the MCP tools show too; these views only format them.

// envPolicyView is what an environment's card shows of its policy.
type envPolicyView struct {
	// State is catalog.EnvironmentPolicy's one-word state; StateClass colours it.
	State, StateClass string
	MinSoak, Next     string
	Soak              string
	Frozen            string
	Verification      *envVerificationView
	Rollback          *rollbackView
	Unpromotable      []unpromotableView
	Approval          *approvalPolicyView
	Rejections        []rejectionView
}

type envVerificationView struct {
	// Names and OnFailure are the spec's; the rest is the newest revision's verification.
	Names, OnFailure            string
	Revision, State, StateClass string
	Started                     stamp
	Took                        string
	Verifications               []envVerificationResult
	LastVerified                string
}

type envVerificationResult struct {
	Name, Kind, State, StateClass, Message string
	Runs                                   []runLink
	RunsOmitted                            int
}

type rollbackView struct {
	From, To string
	Time     stamp
}

type unpromotableView struct {
	Revision, Text string
	Time           stamp
}

type approvalPolicyView struct {
	Policy, Progress, ProgressClass string
	Revision, MetBy                 string
	PolicyMet                       stamp
	Approvers                       []approverView
}

type approverView struct {
	Name, Comment string
	Time          stamp
}

type rejectionView struct {
	Revision, By, Reason string
	Time                 stamp
}

type freezeView struct {
	Name, Kind, Reason, Environments, Window string
	State, Class                             string
}

// stateClasses colour an environment's one-word state.
var stateClasses = map[string]string{
	catalog.EnvFrozen:             "failed",
	catalog.EnvVerificationFailed: "failed",
	catalog.EnvVerifying:          "pending",
	catalog.EnvSoaking:            "pending",
}

// policyView is the card's view of environment e's policy (next: the environment after it).
func policyView(e catalog.EnvironmentPolicy, next string, now time.Time) envPolicyView {
	v := envPolicyView{State: e.State, StateClass: stateClasses[e.State], MinSoak: e.MinSoak, Next: next}
	if e.Soak != nil {
		v.Soak = e.Soak.Text
	}
	if e.Frozen != nil {
		v.Frozen = e.Frozen.Text
	}
	if e.VerificationPolicy != nil {
		v.Verification = envVerification(e)
		v.Verification.LastVerified = e.LastVerified
	}
	if r := e.LastRollback; r != nil {
		v.Rollback = &rollbackView{From: r.From, To: r.To, Time: stampOf(now, r.Time)}
	}
	for _, u := range e.Unpromotable {
		v.Unpromotable = append(v.Unpromotable, unpromotableView{Revision: u.Revision, Text: u.Text, Time: stampOf(now, u.Time)})
	}
	if a := e.Approval; a != nil {
		av := &approvalPolicyView{Policy: a.Policy, Progress: a.Progress, ProgressClass: "pending", Revision: a.Revision, MetBy: a.MetBy}
		if a.PolicyMet != nil {
			av.ProgressClass, av.PolicyMet = "state-success", stampOf(now, *a.PolicyMet)
		}
		for _, ap := range a.Approvers {
			av.Approvers = append(av.Approvers, approverView{Name: ap.Name, Comment: ap.Comment, Time: stampOf(now, ap.Time)})
		}
		v.Approval = av
	}
	for _, r := range e.Rejections {
		v.Rejections = append(v.Rejections, rejectionView{Revision: r.Revision, By: r.By, Reason: r.Reason, Time: stampOf(now, r.Time)})
	}
	return v
}

func envVerification(e catalog.EnvironmentPolicy) *envVerificationView {
	vv := &envVerificationView{Names: strings.Join(e.VerificationPolicy.Verifications, ", "), OnFailure: e.VerificationPolicy.OnFailure}
	cur := e.Verification
	if cur == nil {
		return vv
	}
	vv.Revision, vv.State, vv.StateClass = cur.Revision, cur.State, stateClass(v1alpha1.JobState(cur.State))
	if cur.Started != nil && cur.Completed != nil {
		vv.Took = duration(cur.Completed.Sub(*cur.Started))
	}
	for _, r := range cur.Verifications {
		res := envVerificationResult{Name: r.Name, Kind: "informing", State: r.State, StateClass: stateClass(v1alpha1.JobState(r.State)),
			Message: r.Message, RunsOmitted: r.RunsOmitted}
		if r.Blocking {
			res.Kind = "blocking"
		}
		for _, run := range r.Runs {
			res.Runs = append(res.Runs, runChip(run))
		}
		vv.Verifications = append(vv.Verifications, res)
	}
	return vv
}

// runChip is a run as the payload pages draw an upgrade's runs: its state in a word, a link
// to its results, the rest in the title.
func runChip(r catalog.Run) runLink {
	word, class := "Pending", "state-pending"
	switch v1alpha1.JobState(r.State) {
	case v1alpha1.JobSuccess:
		word, class = "Success", "state-success"
	case v1alpha1.JobFailure, v1alpha1.JobUnknown:
		word, class = "Failed", "state-failure"
	case v1alpha1.JobSkipped:
		word, class = "Skipped", "state-skipped"
	}
	title := fmt.Sprintf("attempt %d, %s: %s", r.Attempt, r.Name, word)
	if r.Message != "" {
		title += " — " + r.Message
	}
	return runLink{Label: fmt.Sprintf("%d %s", r.Attempt, word), Title: title, URL: r.URL, Class: class}
}

// freezeViews are the freezes covering a pipeline (the active ones first).
func freezeViews(fs []catalog.AppliedFreeze) []freezeView {
	var out []freezeView
	for _, f := range fs {
		v := freezeView{Name: f.Name, Kind: "ReleaseFreeze", Reason: f.Reason, Environments: strings.Join(f.Environments, ", "), Window: f.Window,
			State: f.State, Class: "pending"}
		if f.Cluster {
			v.Kind = "ClusterReleaseFreeze"
		}
		if f.Active {
			v.Class = "failed"
		}
		out = append(out, v)
	}
	return out
}
