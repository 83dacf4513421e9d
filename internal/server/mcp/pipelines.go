package mcp

import (
	"cmp"
	"context"
	"fmt"
	"net/url"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/server/approval"
	"github.com/release-controller/release-controller/internal/server/catalog"
)

// Tool names of pipelines.
const (
	ToolListPipelines = "list_pipelines"
	ToolGetPipeline   = "get_pipeline"
)

// AppRef is the app a pipeline promotes.
type AppRef struct {
	APIVersion string `json:"api_version"`
	Kind       string `json:"kind"`
	Name       string `json:"name" jsonschema:"the app object's name in every target's namespace"`
}

// EnvironmentSummary is one environment of a pipeline, in short.
type EnvironmentSummary struct {
	Name            string `json:"name"`
	Revision        string `json:"revision,omitempty" jsonschema:"the revision every target is ready at; empty unless they all are at one"`
	Ready           bool   `json:"ready" jsonschema:"every target is ready at revision"`
	WaitingApproval string `json:"waiting_approval,omitempty" jsonschema:"the revision a promotion into the environment waits to be approved"`
	State           string `json:"state,omitempty" jsonschema:"what holds the environment, in a word: frozen, verification failed, verifying or soaking; empty when none does"`
}

// PipelineSummary is one pipeline on list_pipelines.
type PipelineSummary struct {
	Namespace    string               `json:"namespace"`
	Name         string               `json:"name"`
	App          AppRef               `json:"app"`
	Source       string               `json:"source,omitempty" jsonschema:"the release stream (same namespace) whose accepted payloads are promoted into the first environment"`
	Ready        string               `json:"ready" jsonschema:"the Ready condition's status: True, False, or Unknown before the controller reports"`
	Environments []EnvironmentSummary `json:"environments" jsonschema:"in promotion order"`
	Link         string               `json:"link" jsonschema:"the pipeline's page on this server"`
}

// ListPipelinesOutput is the structured result of list_pipelines.
type ListPipelinesOutput struct {
	Pipelines []PipelineSummary `json:"pipelines" jsonschema:"by namespace, then name"`
}

// GetPipelineInput is the input of get_pipeline.
type GetPipelineInput struct {
	Name      string `json:"name" jsonschema:"the pipeline's name"`
	Namespace string `json:"namespace,omitempty" jsonschema:"the pipeline's namespace; needed only when pipelines of that name exist in several namespaces"`
}

// PipelineTarget is one target of an environment, as the controller observed it.
type PipelineTarget struct {
	Namespace  string `json:"namespace"`
	ClusterRef string `json:"cluster_ref,omitempty" jsonschema:"the Secret holding the target cluster's kubeconfig; empty: the cluster the controller runs against"`
	Revision   string `json:"revision,omitempty" jsonschema:"the revision the app is at"`
	Ready      bool   `json:"ready"`
	Observed   bool   `json:"observed" jsonschema:"false until the controller reports on the target"`
	Message    string `json:"message,omitempty" jsonschema:"why the target is not observed or not ready"`
}

// WaitingApproval is a promotion waiting for approval.
type WaitingApproval struct {
	Revision string `json:"revision"`
	Since    string `json:"since" jsonschema:"RFC 3339 in UTC"`
	Command  string `json:"command" jsonschema:"the command that approves it with the caller's Kubernetes credentials, quoted for a POSIX shell (add --server and this server's URL right after approve)"`
	// RejectCommand is the page's reject command.
	RejectCommand string `json:"reject_command" jsonschema:"the command that rejects it (never promoted into the environment), quoted for a POSIX shell: replace REASON by the reason, add --server and this server's URL right after reject"`
}

// Approval is the last approval an environment received (policy.approval has them all).
type Approval struct {
	Revision string `json:"revision"`
	Approver string `json:"approver"`
	Time     string `json:"time" jsonschema:"RFC 3339 in UTC"`
}

// Promotion is the last promotion into an environment.
type Promotion struct {
	ID       string `json:"id"`
	Revision string `json:"revision"`
	Strategy string `json:"strategy"`
	Time     string `json:"time" jsonschema:"RFC 3339 in UTC"`
	Approver string `json:"approver,omitempty"`
}

// PipelineEnvironment is one environment of get_pipeline.
type PipelineEnvironment struct {
	Name             string           `json:"name"`
	Strategy         string           `json:"strategy" jsonschema:"how revisions are promoted into it: patch, notification or pullRequest"`
	RequiresApproval bool             `json:"requires_approval"`
	Revision         string           `json:"revision,omitempty" jsonschema:"the revision every target is ready at; empty unless they all are at one"`
	Ready            bool             `json:"ready"`
	Targets          []PipelineTarget `json:"targets"`
	WaitingApproval  *WaitingApproval `json:"waiting_approval,omitempty"`
	Approval         *Approval        `json:"approval,omitempty"`
	LastPromotion    *Promotion       `json:"last_promotion,omitempty"`
	// Policy is what the pipeline page shows of the environment's promotion policy.
	Policy catalog.EnvironmentPolicy `json:"policy" jsonschema:"the environment's promotion policy and where it stands: soak, freeze, verification after rollout with its runs, rollback, revisions never promoted further, approval policy with the approvals, rejections"`
}

// Pipeline is one pipeline: its spec in short and its status.
type Pipeline struct {
	Namespace          string                  `json:"namespace"`
	Name               string                  `json:"name"`
	App                AppRef                  `json:"app"`
	Source             string                  `json:"source,omitempty" jsonschema:"the release stream (same namespace) whose accepted payloads are promoted into the first environment"`
	Generation         int64                   `json:"generation"`
	ObservedGeneration int64                   `json:"observed_generation" jsonschema:"the generation the status describes"`
	Environments       []PipelineEnvironment   `json:"environments" jsonschema:"in promotion order"`
	Conditions         []Condition             `json:"conditions" jsonschema:"Ready, ClusterUnreachable, PromotionFailed, Frozen, PromotionHeld, Reconciling and Stalled"`
	Freezes            []catalog.AppliedFreeze `json:"freezes" jsonschema:"the ReleaseFreezes of the pipeline's namespace and the ClusterReleaseFreezes that cover it, active or not, the active ones first"`
	FreezesOmitted     int                     `json:"freezes_omitted,omitempty" jsonschema:"how many more freezes cover the pipeline than are listed"`
	Link               string                  `json:"link" jsonschema:"the pipeline's page on this server"`
}

func addPipelineTools(s *sdk.Server, t catalogTools, readOnly *sdk.ToolAnnotations) {
	sdk.AddTool(s, &sdk.Tool{
		Name:        ToolListPipelines,
		Title:       "List pipelines",
		Description: "Lists the pipelines: the app each promotes, its release stream, whether it is Ready, and each environment's revision, readiness, waiting approval and what holds it (frozen, verification failed, verifying, soaking), in promotion order.",
		Annotations: readOnly,
	}, t.listPipelines)
	sdk.AddTool(s, &sdk.Tool{
		Name:  ToolGetPipeline,
		Title: "Get a pipeline",
		Description: "Shows one pipeline: for each environment its strategy, targets (cluster, namespace, revision, ready), the approval it waits for with the commands that approve and reject it, " +
			"the last promotion, and its policy: the soak and when the next environment takes the revision, the freeze holding it, the verification after rollout with its runs, " +
			"the last rollback and the revisions never promoted further, the approval policy with each approval and who met it, and the rejections; " +
			"the freezes that cover the pipeline; and the pipeline's conditions.",
		Annotations: readOnly,
	}, t.getPipeline)
}

func pipelineLink(p *v1alpha1.Pipeline) string {
	return "/pipelines/" + url.PathEscape(p.Namespace) + "/" + url.PathEscape(p.Name)
}

func appOf(p *v1alpha1.Pipeline) AppRef {
	return AppRef{APIVersion: p.Spec.AppRef.APIVersion, Kind: p.Spec.AppRef.Kind, Name: p.Spec.AppRef.Name}
}

func sourceOf(p *v1alpha1.Pipeline) string {
	if p.Spec.Source == nil {
		return ""
	}
	return p.Spec.Source.ReleaseStream
}

func (t catalogTools) listPipelines(_ context.Context, _ *sdk.CallToolRequest, _ any) (*sdk.CallToolResult, ListPipelinesOutput, error) {
	out := ListPipelinesOutput{Pipelines: []PipelineSummary{}}
	now := t.clock.Now()
	for _, p := range t.cat.Pipelines() {
		sum := PipelineSummary{Namespace: p.Namespace, Name: p.Name, App: appOf(p), Source: sourceOf(p), Ready: "Unknown",
			Environments: []EnvironmentSummary{}, Link: pipelineLink(p)}
		if c := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ConditionPipelineReady); c != nil {
			sum.Ready = string(c.Status)
		}
		for _, env := range p.Spec.Environments {
			es := EnvironmentSummary{Name: env.Name}
			if st := catalog.EnvironmentStatus(p, env.Name); st != nil {
				es.Revision, es.Ready = st.Revision, st.Ready
				if st.WaitingApproval != nil {
					es.WaitingApproval = st.WaitingApproval.Revision
				}
			}
			sum.Environments = append(sum.Environments, es)
		}
		for i, e := range catalog.DescribePipeline(p, nil, now).Environments {
			sum.Environments[i].State = e.State
		}
		out.Pipelines = append(out.Pipelines, sum)
	}
	// No text of its own: the SDK sends the JSON as the text too.
	return nil, out, nil
}

func (t catalogTools) getPipeline(_ context.Context, _ *sdk.CallToolRequest, in GetPipelineInput) (*sdk.CallToolResult, Pipeline, error) {
	var none Pipeline
	if in.Name == "" {
		return nil, none, fmt.Errorf("name is required; call %s for the pipelines", ToolListPipelines)
	}
	var found []*v1alpha1.Pipeline
	var namespaces []string
	for _, p := range t.cat.Pipelines() {
		if p.Name == in.Name && (in.Namespace == "" || p.Namespace == in.Namespace) {
			found = append(found, p)
			namespaces = append(namespaces, p.Namespace)
		}
	}
	switch len(found) {
	case 0:
		where := ""
		if in.Namespace != "" {
			where = " in namespace " + in.Namespace
		}
		return nil, none, fmt.Errorf("no pipeline %q%s; call %s for the pipelines", in.Name, where, ToolListPipelines)
	case 1:
	default:
		return nil, none, fmt.Errorf("pipeline %q exists in namespaces %s: give namespace", in.Name, strings.Join(namespaces, ", "))
	}
	out := pipelineOf(found[0], t.cat.Freezes(), t.clock.Now())
	return text(pipelineText(out)), out, nil
}

func pipelineOf(p *v1alpha1.Pipeline, freezes []catalog.Freeze, now time.Time) Pipeline {
	policy := catalog.DescribePipeline(p, freezes, now)
	out := Pipeline{Namespace: p.Namespace, Name: p.Name, App: appOf(p), Source: sourceOf(p), Generation: p.Generation,
		ObservedGeneration: p.Status.ObservedGeneration, Environments: []PipelineEnvironment{}, Conditions: []Condition{},
		Freezes: policy.Freezes, FreezesOmitted: policy.FreezesOmitted, Link: pipelineLink(p)}
	for i, env := range p.Spec.Environments {
		pe := PipelineEnvironment{Name: env.Name, Strategy: catalog.Strategy(p, env), RequiresApproval: env.Approval != nil, Targets: []PipelineTarget{},
			Policy: policy.Environments[i]}
		st := catalog.EnvironmentStatus(p, env.Name)
		for _, target := range env.Targets {
			pt := PipelineTarget{Namespace: target.Namespace, ClusterRef: target.ClusterRef}
			if ts := catalog.TargetStatus(st, target); ts != nil {
				pt.Revision, pt.Ready, pt.Message, pt.Observed = ts.Revision, ts.Ready, ts.Message, true
			}
			pe.Targets = append(pe.Targets, pt)
		}
		if st != nil {
			pe.Revision, pe.Ready = st.Revision, st.Ready
			if w := st.WaitingApproval; w != nil {
				pe.WaitingApproval = &WaitingApproval{Revision: w.Revision, Since: timeString(w.Since.Time),
					Command:       approval.Command("", p.Namespace, p.Name, env.Name, w.Revision),
					RejectCommand: approval.RejectCommand("", p.Namespace, p.Name, env.Name, w.Revision)}
			}
			// A record of no revision only holds the used signatures of the environment.
			if a := st.Approval; a != nil && a.Revision != "" {
				pe.Approval = &Approval{Revision: a.Revision, Approver: a.Approver, Time: timeString(a.Time.Time)}
			}
			if lp := st.LastPromotion; lp != nil {
				pe.LastPromotion = &Promotion{ID: lp.ID, Revision: lp.Revision, Strategy: lp.Strategy, Time: timeString(lp.Time.Time), Approver: lp.Approver}
			}
		}
		out.Environments = append(out.Environments, pe)
	}
	for _, c := range p.Status.Conditions {
		out.Conditions = append(out.Conditions, Condition{Type: c.Type, Status: string(c.Status), Reason: c.Reason, Message: c.Message,
			Since: timeString(c.LastTransitionTime.Time)})
	}
	return out
}

// pipelineText is get_pipeline's result in lines, for people and models that read text.
func pipelineText(p Pipeline) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Pipeline %s/%s promotes %s %s %s", p.Namespace, p.Name, p.App.APIVersion, p.App.Kind, p.App.Name)
	if p.Source != "" {
		fmt.Fprintf(&b, ", fed by the release stream %s", p.Source)
	}
	fmt.Fprintf(&b, " (page %s).\n", p.Link)
	for _, e := range p.Environments {
		revision := cmp.Or(e.Revision, "no one revision")
		ready := "not ready"
		if e.Ready {
			ready = "ready"
		}
		fmt.Fprintf(&b, "- %s: at %s, %s; promoted by %s", e.Name, revision, ready, e.Strategy)
		if e.Policy.State != "" {
			fmt.Fprintf(&b, "; %s", e.Policy.State)
		}
		b.WriteString("\n")
		policyText(&b, e)
	}
	for _, f := range p.Freezes {
		fmt.Fprintf(&b, "Freeze %s (%s): %s; %s: %s\n", f.Name, strings.Join(f.Environments, ", "), f.State, f.Window, f.Reason)
	}
	if p.FreezesOmitted > 0 {
		fmt.Fprintf(&b, "And %d more freezes.\n", p.FreezesOmitted)
	}
	for _, c := range p.Conditions {
		fmt.Fprintf(&b, "Condition %s=%s %s: %s\n", c.Type, c.Status, c.Reason, c.Message)
	}
	return b.String()
}

// policyText writes the lines of environment e's policy.
func policyText(b *strings.Builder, e PipelineEnvironment) {
	pol := e.Policy
	if pol.Frozen != nil {
		fmt.Fprintf(b, "  %s\n", pol.Frozen.Text)
	}
	if pol.MinSoak != "" {
		fmt.Fprintf(b, "  soak: %s before the next environment takes a revision\n", pol.MinSoak)
	}
	if pol.Soak != nil {
		fmt.Fprintf(b, "  %s\n", pol.Soak.Text)
	}
	if vp := pol.VerificationPolicy; vp != nil {
		fmt.Fprintf(b, "  verification after rollout: %s; on failure %s", strings.Join(vp.Verifications, ", "), vp.OnFailure)
		if pol.LastVerified != "" {
			fmt.Fprintf(b, "; last verified %s", pol.LastVerified)
		}
		b.WriteString("\n")
	}
	if v := pol.Verification; v != nil {
		fmt.Fprintf(b, "  verification of %s: %s\n", v.Revision, v.State)
		for _, r := range v.Verifications {
			fmt.Fprintf(b, "    %s: %s\n", r.Name, r.State)
			// As get_payload writes a run.
			for _, run := range r.Runs {
				fmt.Fprintf(b, "    - run %d %s <%s>", run.Attempt, run.State, cmp.Or(run.URL, run.Name))
				if run.Message != "" {
					fmt.Fprintf(b, ": %s", run.Message)
				}
				b.WriteString("\n")
			}
		}
	}
	if r := pol.LastRollback; r != nil {
		fmt.Fprintf(b, "  rolled back from %s to %s at %s\n", r.From, r.To, timeString(r.Time))
	}
	for _, u := range pol.Unpromotable {
		fmt.Fprintf(b, "  %s: %s\n", u.Revision, u.Text)
	}
	if a := pol.Approval; a != nil {
		fmt.Fprintf(b, "  approval policy: %s\n", a.Policy)
		if a.Revision != "" {
			fmt.Fprintf(b, "  approvals of %s: %s\n", a.Revision, a.Progress)
			for _, ap := range a.Approvers {
				fmt.Fprintf(b, "    %s at %s", ap.Name, timeString(ap.Time))
				if ap.Comment != "" {
					fmt.Fprintf(b, ": %q", ap.Comment)
				}
				b.WriteString("\n")
			}
		}
	}
	if w := e.WaitingApproval; w != nil {
		fmt.Fprintf(b, "  waiting for the approval of %s since %s\n  approve: %s\n  reject: %s\n", w.Revision, w.Since, w.Command, w.RejectCommand)
	}
	for _, r := range pol.Rejections {
		fmt.Fprintf(b, "  rejected %s by %s at %s (never promoted here): %s\n", r.Revision, r.By, timeString(r.Time), r.Reason)
	}
}
