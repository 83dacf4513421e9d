package catalog

import (
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/release-controller/release-controller/api/v1alpha1"
)

// The promotion policy of a pipeline as its page and the MCP tools show it: for each
// environment its soak, the freeze holding it, its verification after rollout with the runs,
// rollbacks and the revisions never promoted further, its approval policy with the approvals
// and rejections; and the freezes that cover the pipeline. Everything is read from the
// pipeline's status (written by the controller and the approval route) and the freezes'
// status: DescribePipeline decides nothing the controllers decide, it says what they wrote.

// Bounds of what a description repeats of what tenants wrote (reasons, comments, run
// messages, lists of names), so that a page or a tool result stays small whatever they wrote.
const (
	// MaxPolicyText is the characters kept of a reason, comment or message; longer ones end
	// in "…".
	MaxPolicyText = 300
	// MaxPolicyNames is how many users or groups of an approval policy are named.
	MaxPolicyNames = 8
	// MaxPolicyRuns is how many of a verification's newest runs are listed.
	MaxPolicyRuns = 10
	// MaxPolicyFreezes is how many freezes covering a pipeline are listed.
	MaxPolicyFreezes = 20
)

// One-word states of an environment (EnvironmentPolicy.State), the first that holds.
const (
	EnvFrozen             = "frozen"
	EnvVerificationFailed = "verification failed"
	EnvVerifying          = "verifying"
	EnvSoaking            = "soaking"
)

// PipelinePolicy is the promotion policy of a pipeline and where each environment stands.
type PipelinePolicy struct {
	Environments []EnvironmentPolicy `json:"environments" jsonschema:"in promotion order"`
	Freezes      []AppliedFreeze     `json:"freezes" jsonschema:"the ReleaseFreezes of the pipeline's namespace and the ClusterReleaseFreezes that select it and name one of its environments (or none), active or not, the active ones first"`
	// FreezesOmitted counts the freezes past MaxPolicyFreezes.
	FreezesOmitted int `json:"freezesOmitted,omitempty" jsonschema:"how many more freezes cover the pipeline than are listed"`
}

// EnvironmentPolicy is one environment's policy and state.
type EnvironmentPolicy struct {
	Name string `json:"name"`
	// State is the first of frozen, verification failed, verifying and soaking that holds;
	// empty when none does.
	State string `json:"state,omitempty" jsonschema:"frozen, verification failed, verifying or soaking (the first that holds); empty when none does"`
	// MinSoak is how long a revision must have been ready here before the next environment
	// takes it (empty: no soak, or the last environment).
	MinSoak string  `json:"minSoak,omitempty" jsonschema:"how long a revision must be ready here before the next environment takes it, e.g. 2h"`
	Soak    *Soak   `json:"soak,omitempty" jsonschema:"the soak under way: set until the revision has soaked"`
	Frozen  *Frozen `json:"frozen,omitempty" jsonschema:"set while a freeze holds the environment: nothing is promoted into it"`

	VerificationPolicy *VerificationPolicy `json:"verificationPolicy,omitempty" jsonschema:"the verification after each rollout, when the environment has one"`
	Verification       *Verification       `json:"verification,omitempty" jsonschema:"the verification of the newest revision rolled out here"`
	LastVerified       string              `json:"lastVerified,omitempty" jsonschema:"the last revision that passed the verification here: where a rollback returns to"`
	LastRollback       *Rollback           `json:"lastRollback,omitempty"`
	Unpromotable       []Unpromotable      `json:"unpromotable,omitempty" jsonschema:"the revisions that failed their verification here, never promoted further, newest first"`

	Approval   *ApprovalState `json:"approval,omitempty" jsonschema:"the approval policy, when promotions into the environment need approval, and the approvals received"`
	Rejections []Rejection    `json:"rejections,omitempty" jsonschema:"the revisions refused here (never promoted here), newest first"`
}

// Soak is a revision soaking in an environment before the next takes it.
type Soak struct {
	Revision   string     `json:"revision"`
	ReadySince *time.Time `json:"readySince,omitempty" jsonschema:"when every target became ready at the revision: the start of the soak"`
	Until      time.Time  `json:"until" jsonschema:"when the soak is over"`
	// RemainingSeconds is Until minus the description's time, rounded up to the second.
	RemainingSeconds int64 `json:"remainingSeconds"`
	// Next is the environment that takes Revision once the soak is over; empty when none
	// will: the last environment, one at the revision already, or one that refused it.
	Next string `json:"next,omitempty" jsonschema:"the environment that takes the revision once the soak is over; empty when none will"`
	Text string `json:"text" jsonschema:"e.g. prod takes 1.0.3 at 14:05 UTC (soaking in staging, 38 min left)"`
}

// Frozen is the freeze holding an environment, as its status records it.
type Frozen struct {
	Freeze string     `json:"freeze" jsonschema:"namespace/name of a ReleaseFreeze, the name of a ClusterReleaseFreeze"`
	Reason string     `json:"reason"`
	Until  *time.Time `json:"until,omitempty" jsonschema:"when it ends; absent: until it is ended (a stop-the-line)"`
	Text   string     `json:"text" jsonschema:"e.g. frozen by ops/holidays until Dec 27 09:00 UTC: holidays"`
}

// AppliedFreeze is a freeze that covers some environments of the pipeline.
type AppliedFreeze struct {
	Name         string   `json:"name" jsonschema:"namespace/name of a ReleaseFreeze, the name of a ClusterReleaseFreeze"`
	Cluster      bool     `json:"cluster" jsonschema:"a ClusterReleaseFreeze"`
	Reason       string   `json:"reason"`
	Environments []string `json:"environments" jsonschema:"the pipeline's environments it covers"`
	// Window is the schedule of a recurring freeze, or its start and end.
	Window    string     `json:"window"`
	Active    bool       `json:"active" jsonschema:"the freeze holds now"`
	Since     *time.Time `json:"since,omitempty" jsonschema:"when the current (or last) window began"`
	Until     *time.Time `json:"until,omitempty" jsonschema:"when the current (or last) window ends; absent while active: until it is ended"`
	NextStart *time.Time `json:"nextStart,omitempty" jsonschema:"when the next window begins"`
	// State says where it stands in words.
	State string `json:"state" jsonschema:"e.g. active until it is ended; next window at Dec 24 18:00 UTC"`
}

// VerificationPolicy is an environment's verification after rollout.
type VerificationPolicy struct {
	Verifications []string `json:"verifications"`
	OnFailure     string   `json:"onFailure" jsonschema:"rollback or hold"`
}

// Verification is the verification of one revision rolled out to an environment.
type Verification struct {
	Revision      string               `json:"revision"`
	State         string               `json:"state" jsonschema:"Pending while the verifications run, then Success or Failure"`
	Started       *time.Time           `json:"started,omitempty"`
	Completed     *time.Time           `json:"completed,omitempty"`
	Verifications []VerificationResult `json:"verifications"`
}

// VerificationResult is one verification of a revision, with its runs.
type VerificationResult struct {
	Name     string `json:"name"`
	Blocking bool   `json:"blocking"`
	State    string `json:"state"`
	Message  string `json:"message,omitempty"`
	Runs     []Run  `json:"runs" jsonschema:"the newest runs, oldest first"`
	// RunsOmitted counts the older runs past MaxPolicyRuns.
	RunsOmitted int `json:"runsOmitted,omitempty"`
}

// Run is one run of a verification.
type Run struct {
	Attempt   int32      `json:"attempt"`
	Name      string     `json:"name" jsonschema:"the Job or ProwJob"`
	URL       string     `json:"url,omitempty" jsonschema:"the run's results"`
	State     string     `json:"state"`
	Started   *time.Time `json:"started,omitempty"`
	Completed *time.Time `json:"completed,omitempty"`
	Message   string     `json:"message,omitempty"`
}

// Rollback is an environment sent back to the last revision that passed there.
type Rollback struct {
	From string    `json:"from" jsonschema:"the revision that failed its verification"`
	To   string    `json:"to"`
	Time time.Time `json:"time"`
}

// Unpromotable is a revision never promoted further.
type Unpromotable struct {
	Revision string    `json:"revision"`
	Reason   string    `json:"reason" jsonschema:"the verifications that failed"`
	Time     time.Time `json:"time"`
	Text     string    `json:"text" jsonschema:"e.g. never promoted further: failed its verification in dev (blocking verifications failed: smoke)"`
}

// ApprovalState is an environment's approval policy and the approvals of the revision
// approved last or waiting.
type ApprovalState struct {
	MinApprovers int32    `json:"minApprovers"`
	Users        []string `json:"users,omitempty" jsonschema:"who may approve (on top of the RBAC check)"`
	Groups       []string `json:"groups,omitempty" jsonschema:"whose members may approve"`
	// NamesOmitted counts the users and groups past MaxPolicyNames each.
	NamesOmitted       int  `json:"namesOmitted,omitempty"`
	SeparationOfDuties bool `json:"separationOfDuties" jsonschema:"who approved a revision for the previous environment may not approve it here"`
	// Signed: a shared key signs approvals (one machine approver), counted unless users or
	// groups are named.
	Signed bool   `json:"signed" jsonschema:"a shared key may sign approvals: one machine approver, which never counts when users or groups are named"`
	Policy string `json:"policy" jsonschema:"the policy in words"`

	// Revision is the revision the approvals are of; empty before the first approval.
	Revision  string     `json:"revision,omitempty"`
	Approvers []Approver `json:"approvers,omitempty" jsonschema:"every approval of revision, in order"`
	// Needed is how many more approvals Revision needs (0 once met, or with no revision).
	Needed    int        `json:"needed"`
	PolicyMet *time.Time `json:"policyMet,omitempty" jsonschema:"when the approvals met the policy: the revision is promoted"`
	MetBy     string     `json:"metBy,omitempty" jsonschema:"whose approval met the policy"`
	Progress  string     `json:"progress" jsonschema:"e.g. 1 of 2 approvals, 1 more needed"`
}

// Approver is one approval.
type Approver struct {
	Name    string    `json:"name" jsonschema:"a Kubernetes user, or hmac:<secret> for a signed approval"`
	Time    time.Time `json:"time"`
	Comment string    `json:"comment,omitempty"`
}

// Rejection is a revision refused for an environment.
type Rejection struct {
	Revision string    `json:"revision"`
	By       string    `json:"by"`
	Reason   string    `json:"reason"`
	Time     time.Time `json:"time"`
}

// DescribePipeline is the policy of p and where its environments stand at now, with the
// freezes (of every namespace; those that cover p are kept). It is pure.
func DescribePipeline(p *v1alpha1.Pipeline, freezes []Freeze, now time.Time) PipelinePolicy {
	out := PipelinePolicy{Environments: []EnvironmentPolicy{}, Freezes: []AppliedFreeze{}}
	for i := range p.Spec.Environments {
		out.Environments = append(out.Environments, describeEnvironment(p, i, now))
	}
	for _, f := range freezes {
		if af, ok := applyFreeze(p, f, now); ok {
			out.Freezes = append(out.Freezes, af)
		}
	}
	// The active ones first; past the bound, counted.
	slices.SortStableFunc(out.Freezes, func(a, b AppliedFreeze) int {
		switch {
		case a.Active == b.Active:
			return 0
		case a.Active:
			return -1
		}
		return 1
	})
	if over := len(out.Freezes) - MaxPolicyFreezes; over > 0 {
		out.Freezes, out.FreezesOmitted = out.Freezes[:MaxPolicyFreezes], over
	}
	return out
}

// EnvironmentStatus is the status of environment name of p, nil before the controller
// wrote one.
func EnvironmentStatus(p *v1alpha1.Pipeline, name string) *v1alpha1.EnvironmentStatus {
	for i := range p.Status.Environments {
		if p.Status.Environments[i].Name == name {
			return &p.Status.Environments[i]
		}
	}
	return nil
}

func describeEnvironment(p *v1alpha1.Pipeline, i int, now time.Time) EnvironmentPolicy {
	env := p.Spec.Environments[i]
	out := EnvironmentPolicy{Name: env.Name}
	if d := minSoak(p, i); d > 0 {
		out.MinSoak = shortDuration(d)
	}
	if v := env.Verification; v != nil {
		vp := &VerificationPolicy{OnFailure: v.OnFailure}
		if vp.OnFailure == "" {
			vp.OnFailure = v1alpha1.OnFailureHold
		}
		for _, spec := range v.Verifications {
			vp.Verifications = append(vp.Verifications, spec.Name)
		}
		out.VerificationPolicy = vp
	}
	if env.Approval != nil {
		out.Approval = approvalPolicy(p, i)
	}
	st := EnvironmentStatus(p, env.Name)
	if st == nil {
		return out
	}
	out.Soak = soakOf(p, i, st, now)
	if f := st.Frozen; f != nil {
		out.Frozen = &Frozen{Freeze: f.Freeze, Reason: bound(f.Reason), Until: timeOf(f.Until)}
		until := "until it is ended"
		if f.Until != nil {
			until = "until " + clock(f.Until.Time, now)
		}
		out.Frozen.Text = fmt.Sprintf("frozen by %s %s: %s", f.Freeze, until, out.Frozen.Reason)
	}
	if v := st.Verification; v != nil {
		out.Verification = verificationOf(v)
	}
	out.LastVerified = st.LastVerified
	if r := st.LastRollback; r != nil {
		out.LastRollback = &Rollback{From: r.From, To: r.To, Time: r.Time.Time}
	}
	for _, u := range slices.Backward(p.Status.Unpromotable) {
		if u.Environment == env.Name {
			reason := bound(u.Reason)
			out.Unpromotable = append(out.Unpromotable, Unpromotable{Revision: u.Revision, Reason: reason, Time: u.Time.Time,
				Text: fmt.Sprintf("never promoted further: failed its verification in %s (%s)", env.Name, reason)})
		}
	}
	if out.Approval != nil {
		waiting := ""
		if st.WaitingApproval != nil {
			waiting = st.WaitingApproval.Revision
		}
		approvalsOf(out.Approval, st.Approval, waiting)
	}
	for _, r := range slices.Backward(st.Rejections) {
		out.Rejections = append(out.Rejections, Rejection{Revision: r.Revision, By: r.By, Reason: bound(r.Reason), Time: r.Time.Time})
	}
	switch v := out.Verification; {
	case out.Frozen != nil:
		out.State = EnvFrozen
	case v != nil && v.Revision == st.Revision && v.State == string(v1alpha1.JobFailure):
		out.State = EnvVerificationFailed
	case v != nil && v.State == string(v1alpha1.JobPending):
		out.State = EnvVerifying
	case out.Soak != nil:
		out.State = EnvSoaking
	}
	return out
}

// minSoak is the soak environment i of p asks before the next takes a revision: its
// promotion's minSoak, else the pipeline's; none for the last environment.
func minSoak(p *v1alpha1.Pipeline, i int) time.Duration {
	if i+1 >= len(p.Spec.Environments) {
		return 0
	}
	for _, promo := range []*v1alpha1.Promotion{p.Spec.Environments[i].Promotion, p.Spec.Promotion} {
		if promo != nil && promo.MinSoak != nil {
			return promo.MinSoak.Duration
		}
	}
	return 0
}

// soakOf is the soak under way in environment i (status st): set while soakUntil is ahead.
func soakOf(p *v1alpha1.Pipeline, i int, st *v1alpha1.EnvironmentStatus, now time.Time) *Soak {
	if st.SoakUntil == nil || !now.Before(st.SoakUntil.Time) || st.Revision == "" {
		return nil
	}
	env := p.Spec.Environments[i].Name
	s := &Soak{Revision: st.Revision, ReadySince: timeOf(st.ReadySince), Until: st.SoakUntil.Time,
		RemainingSeconds: int64((st.SoakUntil.Sub(now) + time.Second - 1) / time.Second)}
	left := fmt.Sprintf("soaking in %s, %s", env, timeLeft(st.SoakUntil.Sub(now)))
	if i+1 < len(p.Spec.Environments) {
		next := p.Spec.Environments[i+1]
		nst := EnvironmentStatus(p, next.Name)
		refused := slices.ContainsFunc(p.Status.Unpromotable, func(u v1alpha1.UnpromotableRevision) bool { return u.Revision == st.Revision })
		if nst != nil {
			refused = refused || nst.Revision == st.Revision ||
				slices.ContainsFunc(nst.Rejections, func(r v1alpha1.RejectionRecord) bool { return r.Revision == st.Revision })
		}
		if !refused {
			s.Next = next.Name
		}
	}
	if s.Next == "" {
		s.Text = fmt.Sprintf("%s is %s", st.Revision, left)
		return s
	}
	// What else must happen before the next environment takes it, besides the soak.
	var also []string
	verified := st.LastVerified == st.Revision || (st.Verification != nil && st.Verification.Revision == st.Revision && st.Verification.State == v1alpha1.JobSuccess)
	if p.Spec.Environments[i].Verification != nil && !verified {
		also = append(also, "once verified in "+env)
	}
	if p.Spec.Environments[i+1].Approval != nil {
		also = append(also, "once approved")
	}
	when := "at " + clock(s.Until, now)
	if len(also) > 0 {
		when += " at the earliest, " + strings.Join(also, " and ")
	}
	s.Text = fmt.Sprintf("%s takes %s %s (%s)", s.Next, st.Revision, when, left)
	return s
}

func verificationOf(v *v1alpha1.EnvironmentVerificationStatus) *Verification {
	out := &Verification{Revision: v.Revision, State: string(v.State), Completed: timeOf(v.CompletionTime), Verifications: []VerificationResult{}}
	if out.State == "" {
		out.State = string(v1alpha1.JobPending)
	}
	if !v.StartTime.IsZero() {
		out.Started = timeOf(&v.StartTime)
	}
	for _, s := range v.Verifications {
		r := VerificationResult{Name: s.Name, Blocking: s.Type != v1alpha1.Informing, State: string(s.State), Message: bound(s.Message), Runs: []Run{}}
		if r.State == "" {
			r.State = string(v1alpha1.JobPending)
		}
		runs := s.Runs
		if over := len(runs) - MaxPolicyRuns; over > 0 {
			runs, r.RunsOmitted = runs[over:], over
		}
		for _, run := range runs {
			r.Runs = append(r.Runs, Run{Attempt: run.Attempt, Name: run.Name, URL: run.URL, State: string(run.State),
				Started: timeOf(run.StartTime), Completed: timeOf(run.CompletionTime), Message: bound(run.Message)})
		}
		out.Verifications = append(out.Verifications, r)
	}
	return out
}

// approvalPolicy is the approval policy of environment i of p, in fields and in words.
func approvalPolicy(p *v1alpha1.Pipeline, i int) *ApprovalState {
	a := p.Spec.Environments[i].Approval
	out := &ApprovalState{MinApprovers: max(a.MinApprovers, 1), SeparationOfDuties: a.SeparationOfDuties, Signed: a.SecretRef != nil}
	var omitted int
	out.Users, omitted = firstNames(a.Users)
	out.NamesOmitted += omitted
	out.Groups, omitted = firstNames(a.Groups)
	out.NamesOmitted += omitted

	parts := []string{plural(int(out.MinApprovers), "distinct approver")}
	if len(a.Users) > 0 {
		parts = append(parts, "users "+names(out.Users, len(a.Users)))
	}
	if len(a.Groups) > 0 {
		parts = append(parts, "groups "+names(out.Groups, len(a.Groups)))
	}
	if len(a.Users) == 0 && len(a.Groups) == 0 {
		parts = append(parts, "anyone RBAC allows to update pipelines/approval")
	}
	if out.SeparationOfDuties {
		if i > 0 {
			parts = append(parts, "not who approved it for "+p.Spec.Environments[i-1].Name)
		} else {
			parts = append(parts, "separation of duties (no environment comes before)")
		}
	}
	switch {
	case out.Signed && (len(a.Users) > 0 || len(a.Groups) > 0):
		parts = append(parts, "signed approvals do not count (the policy names people)")
	case out.Signed:
		parts = append(parts, "a signed approval counts as one machine approver")
	}
	out.Policy = strings.Join(parts, "; ")
	out.Progress = "no revision waits for approval"
	return out
}

// approvalsOf adds the approvals of rec to out: those of the revision waiting (none yet when
// rec is of another), else of the revision rec is of. A record of no revision only keeps the
// used signatures of the environment: it holds no approval.
func approvalsOf(out *ApprovalState, rec *v1alpha1.ApprovalRecord, waiting string) {
	if waiting != "" && (rec == nil || rec.Revision != waiting) {
		out.Revision, out.Needed = waiting, int(out.MinApprovers)
		out.Progress = fmt.Sprintf("0 of %d approvals, %d more needed", out.MinApprovers, out.Needed)
		return
	}
	if rec == nil || rec.Revision == "" {
		return
	}
	out.Revision = rec.Revision
	for _, a := range rec.Approvers {
		out.Approvers = append(out.Approvers, Approver{Name: a.Name, Time: a.Time.Time, Comment: bound(a.Comment)})
	}
	n := len(out.Approvers)
	if rec.PolicyMet != nil {
		out.Needed, out.PolicyMet, out.MetBy = 0, timeOf(rec.PolicyMet), rec.Approver
		out.Progress = fmt.Sprintf("policy met by %s (%d of %d approvals)", rec.Approver, n, out.MinApprovers)
		return
	}
	out.Needed = max(int(out.MinApprovers)-n, 0)
	out.Progress = fmt.Sprintf("%d of %d approvals, %d more needed", n, out.MinApprovers, out.Needed)
}

// applyFreeze is f as it applies to p: ok when f is of p's namespace (or of the cluster), its
// selector matches p's labels and it names one of p's environments (or none). A selector that
// is not one selects nothing, as the controller reads it.
func applyFreeze(p *v1alpha1.Pipeline, f Freeze, now time.Time) (AppliedFreeze, bool) {
	if f.Namespace != "" && f.Namespace != p.Namespace {
		return AppliedFreeze{}, false
	}
	sel := labels.Everything()
	if f.Spec.Pipelines != nil {
		var err error
		if sel, err = metav1.LabelSelectorAsSelector(f.Spec.Pipelines); err != nil {
			return AppliedFreeze{}, false
		}
	}
	if !sel.Matches(labels.Set(p.Labels)) {
		return AppliedFreeze{}, false
	}
	out := AppliedFreeze{Name: f.Name, Cluster: f.Namespace == "", Reason: bound(f.Spec.Reason), Environments: []string{}}
	if f.Namespace != "" {
		out.Name = f.Namespace + "/" + f.Name
	}
	for _, env := range p.Spec.Environments {
		if len(f.Spec.Environments) == 0 || slices.Contains(f.Spec.Environments, env.Name) {
			out.Environments = append(out.Environments, env.Name)
		}
	}
	if len(out.Environments) == 0 {
		return AppliedFreeze{}, false
	}
	out.Window = window(f.Spec, now)
	st := f.Status
	out.Active = meta.IsStatusConditionTrue(st.Conditions, v1alpha1.ConditionFreezeActive)
	out.Since, out.Until, out.NextStart = timeOf(st.ActiveSince), timeOf(st.ActiveUntil), timeOf(st.NextStart)
	ready := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionReady)
	switch {
	case ready != nil && ready.Status == metav1.ConditionFalse && ready.Reason == v1alpha1.ReasonInvalidFreeze:
		out.State = "holds nothing: " + bound(ready.Message)
	case out.Active && out.Until != nil:
		out.State = "active until " + clock(*out.Until, now)
	case out.Active:
		out.State = "active until it is ended"
	case out.NextStart != nil:
		out.State = "next window at " + clock(*out.NextStart, now)
	case meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionFreezeActive) == nil:
		out.State = "not observed by the controller yet"
	case out.Until != nil:
		out.State = "ended at " + clock(*out.Until, now)
	default:
		out.State = "inactive"
	}
	return out, true
}

// window says when a freeze's spec holds: its schedule, or its start and end.
func window(spec *v1alpha1.ReleaseFreezeSpec, now time.Time) string {
	if s := spec.Schedule; s != nil {
		zone := s.TimeZone
		if zone == "" {
			zone = "UTC"
		}
		return fmt.Sprintf("every %q (%s) for %s", s.Cron, zone, shortDuration(s.Duration.Duration))
	}
	from := "from its creation"
	if spec.Start != nil {
		from = "from " + clock(spec.Start.Time, now)
	}
	if spec.End == nil {
		return from + " until it is ended"
	}
	return from + " until " + clock(spec.End.Time, now)
}

// clock is t for people, in UTC: the time alone on now's day, with the date in now's year,
// else the full date.
func clock(t, now time.Time) string {
	t, now = t.UTC(), now.UTC()
	switch {
	case t.YearDay() == now.YearDay() && t.Year() == now.Year():
		return t.Format("15:04 UTC")
	case t.Year() == now.Year():
		return t.Format("Jan 2 15:04 UTC")
	default:
		return t.Format("2006-01-02 15:04 UTC")
	}
}

// timeLeft is d for people, rounded up to the minute: "38 min left".
func timeLeft(d time.Duration) string {
	if d < time.Minute {
		return "less than a minute left"
	}
	return shortDuration(d.Round(time.Second)+time.Minute-time.Second) + " left"
}

// shortDuration is d in days, hours and minutes, the seconds left out: "1 d 2 h", "2 h 5 min",
// "38 min".
func shortDuration(d time.Duration) string {
	days, hours, mins := int(d/(24*time.Hour)), int(d%(24*time.Hour)/time.Hour), int(d%time.Hour/time.Minute)
	var parts []string
	if days > 0 {
		parts = append(parts, fmt.Sprintf("%d d", days))
	}
	if hours > 0 {
		parts = append(parts, fmt.Sprintf("%d h", hours))
	}
	if mins > 0 && days == 0 {
		parts = append(parts, fmt.Sprintf("%d min", mins))
	}
	if len(parts) == 0 {
		return d.String()
	}
	return strings.Join(parts, " ")
}

// bound is s cut to MaxPolicyText characters.
func bound(s string) string {
	if utf8.RuneCountInString(s) <= MaxPolicyText {
		return s
	}
	return string([]rune(s)[:MaxPolicyText-1]) + "…"
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

// firstNames is the first MaxPolicyNames of list, and how many are left out.
func firstNames(list []string) ([]string, int) {
	if len(list) <= MaxPolicyNames {
		return list, 0
	}
	return list[:MaxPolicyNames], len(list) - MaxPolicyNames
}

// names lists shown, the first of all: "alice, bob and 3 more".
func names(shown []string, all int) string {
	s := strings.Join(shown, ", ")
	if more := all - len(shown); more > 0 {
		s += fmt.Sprintf(" and %d more", more)
	}
	return s
}

func timeOf(t *metav1.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}
