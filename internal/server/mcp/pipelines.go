package mcp

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/server/approval"
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
}

// Approval is the last approval an environment received.
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
}

// Pipeline is one pipeline: its spec in short and its status.
type Pipeline struct {
	Namespace          string                `json:"namespace"`
	Name               string                `json:"name"`
	App                AppRef                `json:"app"`
	Source             string                `json:"source,omitempty" jsonschema:"the release stream (same namespace) whose accepted payloads are promoted into the first environment"`
	Generation         int64                 `json:"generation"`
	ObservedGeneration int64                 `json:"observed_generation" jsonschema:"the generation the status describes"`
	Environments       []PipelineEnvironment `json:"environments" jsonschema:"in promotion order"`
	Conditions         []Condition           `json:"conditions" jsonschema:"Ready, ClusterUnreachable and PromotionFailed"`
	Link               string                `json:"link" jsonschema:"the pipeline's page on this server"`
}

func addPipelineTools(s *sdk.Server, t catalogTools, readOnly *sdk.ToolAnnotations) {
	sdk.AddTool(s, &sdk.Tool{
		Name:        ToolListPipelines,
		Title:       "List pipelines",
		Description: "Lists the pipelines: the app each promotes, its release stream, whether it is Ready, and each environment's revision, readiness and waiting approval, in promotion order.",
		Annotations: readOnly,
	}, t.listPipelines)
	sdk.AddTool(s, &sdk.Tool{
		Name:  ToolGetPipeline,
		Title: "Get a pipeline",
		Description: "Shows one pipeline: for each environment its strategy, targets (cluster, namespace, revision, ready), the approval it waits for with the command that gives it, " +
			"the last approval and the last promotion; and the pipeline's conditions.",
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

func envStatus(p *v1alpha1.Pipeline, name string) *v1alpha1.EnvironmentStatus {
	for i := range p.Status.Environments {
		if p.Status.Environments[i].Name == name {
			return &p.Status.Environments[i]
		}
	}
	return nil
}

func (t catalogTools) listPipelines(_ context.Context, _ *sdk.CallToolRequest, _ any) (*sdk.CallToolResult, ListPipelinesOutput, error) {
	out := ListPipelinesOutput{Pipelines: []PipelineSummary{}}
	for _, p := range t.cat.Pipelines() {
		sum := PipelineSummary{Namespace: p.Namespace, Name: p.Name, App: appOf(p), Source: sourceOf(p), Ready: "Unknown",
			Environments: []EnvironmentSummary{}, Link: pipelineLink(p)}
		if c := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ConditionPipelineReady); c != nil {
			sum.Ready = string(c.Status)
		}
		for _, env := range p.Spec.Environments {
			es := EnvironmentSummary{Name: env.Name}
			if st := envStatus(p, env.Name); st != nil {
				es.Revision, es.Ready = st.Revision, st.Ready
				if st.WaitingApproval != nil {
					es.WaitingApproval = st.WaitingApproval.Revision
				}
			}
			sum.Environments = append(sum.Environments, es)
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
	return nil, pipelineOf(found[0]), nil
}

func pipelineOf(p *v1alpha1.Pipeline) Pipeline {
	out := Pipeline{Namespace: p.Namespace, Name: p.Name, App: appOf(p), Source: sourceOf(p), Generation: p.Generation,
		ObservedGeneration: p.Status.ObservedGeneration, Environments: []PipelineEnvironment{}, Conditions: []Condition{}, Link: pipelineLink(p)}
	for _, env := range p.Spec.Environments {
		pe := PipelineEnvironment{Name: env.Name, Strategy: v1alpha1.StrategyPatch, RequiresApproval: env.Approval != nil, Targets: []PipelineTarget{}}
		if env.Promotion != nil && env.Promotion.Strategy != "" {
			pe.Strategy = env.Promotion.Strategy
		} else if p.Spec.Promotion != nil && p.Spec.Promotion.Strategy != "" {
			pe.Strategy = p.Spec.Promotion.Strategy
		}
		st := envStatus(p, env.Name)
		for _, target := range env.Targets {
			pt := PipelineTarget{Namespace: target.Namespace, ClusterRef: target.ClusterRef}
			if st != nil {
				for _, ts := range st.Targets {
					if ts.Namespace == target.Namespace && ts.ClusterRef == target.ClusterRef {
						pt.Revision, pt.Ready, pt.Message, pt.Observed = ts.Revision, ts.Ready, ts.Message, true
					}
				}
			}
			pe.Targets = append(pe.Targets, pt)
		}
		if st != nil {
			pe.Revision, pe.Ready = st.Revision, st.Ready
			if w := st.WaitingApproval; w != nil {
				pe.WaitingApproval = &WaitingApproval{Revision: w.Revision, Since: timeString(w.Since.Time),
					Command: approval.Command("", p.Namespace, p.Name, env.Name, w.Revision)}
			}
			if a := st.Approval; a != nil {
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
