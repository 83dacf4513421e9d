// Package pipelineapi serves pipelines as JSON (not part of OSRC):
//
//	GET /api/v1/pipelines                                   every pipeline, in short
//	GET /api/v1/namespaces/{namespace}/pipelines            the pipelines of one namespace
//	GET /api/v1/namespaces/{namespace}/pipelines/{name}     one pipeline in full
//
// One pipeline is its environments in promotion order with their targets, the approval they
// wait for, their last promotion and their promotion policy (soak, freeze, verification
// after rollout with its runs, last rollback, revisions never promoted further, approval
// policy with the approvals, rejections): catalog.DescribePipeline's facts, which the pages
// and the MCP tools show too; then the pipeline's unpromotable revisions, the freezes that
// cover it and its conditions. Everything is read from the server's informer cache; nothing
// here writes, and the routes are open as the pages are.
package pipelineapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/clock"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/server"
	"github.com/release-controller/release-controller/internal/server/approval"
	"github.com/release-controller/release-controller/internal/server/catalog"
)

// The routes' patterns.
const (
	ListPath          = "/api/v1/pipelines"
	NamespaceListPath = "/api/v1/namespaces/{namespace}/pipelines"
	PipelinePath      = "/api/v1/namespaces/{namespace}/pipelines/{name}"
)

// Catalog is where the routes read pipelines and freezes: the server's catalog.
type Catalog interface {
	Pipelines() []*v1alpha1.Pipeline
	Pipeline(namespace, name string) (*v1alpha1.Pipeline, bool)
	Freezes() []catalog.Freeze
}

// Register adds the routes to s; clk tells the time soaks and freezes are described at (nil:
// the real clock).
func Register(s *server.Server, cat Catalog, clk clock.PassiveClock) {
	if clk == nil {
		clk = clock.RealClock{}
	}
	a := api{cat: cat, now: clk.Now}
	s.Handle("GET "+ListPath, http.HandlerFunc(a.list))
	s.Handle("GET "+NamespaceListPath, http.HandlerFunc(a.list))
	s.Handle("GET "+PipelinePath, http.HandlerFunc(a.get))
}

type api struct {
	cat Catalog
	now func() time.Time
}

// App is the app a pipeline promotes.
type App struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Name       string `json:"name"`
}

// Summary is a pipeline in a list.
type Summary struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	App       App    `json:"app"`
	// Source is the release stream (same namespace) feeding the first environment.
	Source string `json:"source,omitempty"`
	// Ready is the Ready condition's status: True, False, or Unknown before the controller
	// reports.
	Ready        string               `json:"ready"`
	Environments []EnvironmentSummary `json:"environments"`
	// URL is the pipeline's route here; Page its page.
	URL  string `json:"url"`
	Page string `json:"page"`
}

// EnvironmentSummary is an environment in a list.
type EnvironmentSummary struct {
	Name     string `json:"name"`
	Revision string `json:"revision,omitempty"`
	Ready    bool   `json:"ready"`
	// WaitingApproval is the revision a promotion into the environment waits to be approved.
	WaitingApproval string `json:"waitingApproval,omitempty"`
	// State is catalog.EnvironmentPolicy's: frozen, verification failed, verifying or soaking.
	State string `json:"state,omitempty"`
}

// List is the body of the list routes.
type List struct {
	Pipelines []Summary `json:"pipelines"`
}

// Pipeline is the body of one pipeline.
type Pipeline struct {
	Namespace          string        `json:"namespace"`
	Name               string        `json:"name"`
	App                App           `json:"app"`
	Source             string        `json:"source,omitempty"`
	Suspended          bool          `json:"suspended,omitempty"`
	Generation         int64         `json:"generation"`
	ObservedGeneration int64         `json:"observedGeneration"`
	Ready              string        `json:"ready"`
	Environments       []Environment `json:"environments"`
	// Unpromotable are the revisions never promoted further, newest first (each
	// environment's policy lists its own).
	Unpromotable []Unpromotable          `json:"unpromotable"`
	Freezes      []catalog.AppliedFreeze `json:"freezes"`
	// FreezesOmitted counts the freezes past catalog.MaxPolicyFreezes.
	FreezesOmitted int         `json:"freezesOmitted,omitempty"`
	Conditions     []Condition `json:"conditions"`
	Page           string      `json:"page"`
}

// Environment is one environment of a pipeline: the catalog's description of its policy,
// with its targets and promotions.
type Environment struct {
	catalog.EnvironmentPolicy
	// Strategy is how revisions are promoted into it: patch, notification or pullRequest.
	Strategy         string `json:"strategy"`
	RequiresApproval bool   `json:"requiresApproval"`
	// Revision every target is ready at; empty unless they all are at one.
	Revision string `json:"revision,omitempty"`
	Ready    bool   `json:"ready"`
	// ReadySince is when every target became ready at Revision.
	ReadySince      *time.Time       `json:"readySince,omitempty"`
	Targets         []Target         `json:"targets"`
	WaitingApproval *WaitingApproval `json:"waitingApproval,omitempty"`
	LastPromotion   *Promotion       `json:"lastPromotion,omitempty"`
}

// Target is one target of an environment, as the controller observed it.
type Target struct {
	Namespace string `json:"namespace"`
	// ClusterRef is the Secret holding the target cluster's kubeconfig; empty: the cluster
	// the controller runs against.
	ClusterRef string `json:"clusterRef,omitempty"`
	Revision   string `json:"revision,omitempty"`
	Ready      bool   `json:"ready"`
	// Observed is false until the controller reports on the target.
	Observed bool   `json:"observed"`
	Message  string `json:"message,omitempty"`
}

// WaitingApproval is a promotion waiting for approval, with the commands that approve and
// reject it (add --server with this server's URL; replace REASON).
type WaitingApproval struct {
	Revision      string    `json:"revision"`
	Since         time.Time `json:"since"`
	Command       string    `json:"command"`
	RejectCommand string    `json:"rejectCommand"`
}

// Promotion is the last promotion into an environment.
type Promotion struct {
	ID       string    `json:"id"`
	Revision string    `json:"revision"`
	Strategy string    `json:"strategy"`
	Time     time.Time `json:"time"`
	Approver string    `json:"approver,omitempty"`
}

// Unpromotable is a revision the pipeline never promotes further.
type Unpromotable struct {
	Revision    string    `json:"revision"`
	Environment string    `json:"environment"`
	Reason      string    `json:"reason"`
	Time        time.Time `json:"time"`
}

// Condition is a condition of the pipeline.
type Condition struct {
	Type    string    `json:"type"`
	Status  string    `json:"status"`
	Reason  string    `json:"reason"`
	Message string    `json:"message,omitempty"`
	Since   time.Time `json:"since"`
}

func (a api) list(w http.ResponseWriter, r *http.Request) {
	namespace := r.PathValue("namespace")
	out := List{Pipelines: []Summary{}}
	now := a.now()
	for _, p := range a.cat.Pipelines() {
		if namespace == "" || p.Namespace == namespace {
			out.Pipelines = append(out.Pipelines, summaryOf(p, now))
		}
	}
	writeJSON(w, out)
}

func (a api) get(w http.ResponseWriter, r *http.Request) {
	namespace, name := r.PathValue("namespace"), r.PathValue("name")
	// A namespace or name no object can have names no pipeline (and is not echoed back).
	if len(validation.IsDNS1123Label(namespace)) > 0 || len(validation.IsDNS1123Subdomain(name)) > 0 {
		http.Error(w, "no such pipeline: a namespace is a DNS label and a name a DNS subdomain", http.StatusNotFound)
		return
	}
	p, ok := a.cat.Pipeline(namespace, name)
	if !ok {
		http.Error(w, fmt.Sprintf("pipeline %s/%s not found", namespace, name), http.StatusNotFound)
		return
	}
	writeJSON(w, Describe(p, a.cat.Freezes(), a.now()))
}

// writeJSON answers v as JSON indented by two spaces, ending with a newline, as the OSRC
// routes do.
func writeJSON(w http.ResponseWriter, v any) {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		http.Error(w, "encoding the answer: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(append(data, '\n'))
}

func appOf(p *v1alpha1.Pipeline) App {
	return App{APIVersion: p.Spec.AppRef.APIVersion, Kind: p.Spec.AppRef.Kind, Name: p.Spec.AppRef.Name}
}

func sourceOf(p *v1alpha1.Pipeline) string {
	if p.Spec.Source == nil {
		return ""
	}
	return p.Spec.Source.ReleaseStream
}

func readyOf(p *v1alpha1.Pipeline) string {
	if c := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ConditionPipelineReady); c != nil {
		return string(c.Status)
	}
	return "Unknown"
}

// URL is the route of the pipeline namespace/name; Page its page.
func URL(namespace, name string) string {
	return "/api/v1/namespaces/" + url.PathEscape(namespace) + "/pipelines/" + url.PathEscape(name)
}

func page(p *v1alpha1.Pipeline) string {
	return "/pipelines/" + url.PathEscape(p.Namespace) + "/" + url.PathEscape(p.Name)
}

func summaryOf(p *v1alpha1.Pipeline, now time.Time) Summary {
	out := Summary{Namespace: p.Namespace, Name: p.Name, App: appOf(p), Source: sourceOf(p), Ready: readyOf(p),
		Environments: []EnvironmentSummary{}, URL: URL(p.Namespace, p.Name), Page: page(p)}
	// The freezes are left out: the state says frozen from the status alone.
	for _, e := range catalog.DescribePipeline(p, nil, now).Environments {
		es := EnvironmentSummary{Name: e.Name, State: e.State}
		if st := catalog.EnvironmentStatus(p, e.Name); st != nil {
			es.Revision, es.Ready = st.Revision, st.Ready
			if st.WaitingApproval != nil {
				es.WaitingApproval = st.WaitingApproval.Revision
			}
		}
		out.Environments = append(out.Environments, es)
	}
	return out
}

// Describe is pipeline p in full at now, with the freezes of the catalog (those covering p
// are kept). It is pure.
func Describe(p *v1alpha1.Pipeline, freezes []catalog.Freeze, now time.Time) Pipeline {
	policy := catalog.DescribePipeline(p, freezes, now)
	out := Pipeline{Namespace: p.Namespace, Name: p.Name, App: appOf(p), Source: sourceOf(p), Suspended: p.Spec.Suspend,
		Generation: p.Generation, ObservedGeneration: p.Status.ObservedGeneration, Ready: readyOf(p),
		Environments: []Environment{}, Unpromotable: []Unpromotable{}, Freezes: policy.Freezes, FreezesOmitted: policy.FreezesOmitted,
		Conditions: []Condition{}, Page: page(p)}
	for i, env := range p.Spec.Environments {
		e := Environment{EnvironmentPolicy: policy.Environments[i], Strategy: catalog.Strategy(p, env), RequiresApproval: env.Approval != nil,
			Targets: []Target{}}
		st := catalog.EnvironmentStatus(p, env.Name)
		for _, t := range env.Targets {
			target := Target{Namespace: t.Namespace, ClusterRef: t.ClusterRef}
			if ts := catalog.TargetStatus(st, t); ts != nil {
				target.Revision, target.Ready, target.Message, target.Observed = ts.Revision, ts.Ready, ts.Message, true
			}
			e.Targets = append(e.Targets, target)
		}
		if st != nil {
			e.Revision, e.Ready = st.Revision, st.Ready
			if st.ReadySince != nil {
				t := st.ReadySince.UTC()
				e.ReadySince = &t
			}
			if wa := st.WaitingApproval; wa != nil {
				e.WaitingApproval = &WaitingApproval{Revision: wa.Revision, Since: wa.Since.UTC(),
					Command:       approval.Command("", p.Namespace, p.Name, env.Name, wa.Revision),
					RejectCommand: approval.RejectCommand("", p.Namespace, p.Name, env.Name, wa.Revision)}
			}
			if lp := st.LastPromotion; lp != nil {
				e.LastPromotion = &Promotion{ID: lp.ID, Revision: lp.Revision, Strategy: lp.Strategy, Time: lp.Time.UTC(), Approver: lp.Approver}
			}
		}
		out.Environments = append(out.Environments, e)
	}
	for i := len(p.Status.Unpromotable) - 1; i >= 0; i-- {
		u := p.Status.Unpromotable[i]
		out.Unpromotable = append(out.Unpromotable, Unpromotable{Revision: u.Revision, Environment: u.Environment, Reason: u.Reason, Time: u.Time.UTC()})
	}
	for _, c := range p.Status.Conditions {
		out.Conditions = append(out.Conditions, Condition{Type: c.Type, Status: string(c.Status), Reason: c.Reason, Message: c.Message,
			Since: c.LastTransitionTime.UTC()})
	}
	return out
}
