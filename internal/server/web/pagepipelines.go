package web

import (
	"cmp"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/server"
	"github.com/release-controller/release-controller/internal/server/approval"
	"github.com/release-controller/release-controller/internal/server/catalog"
)

// The pipeline pages: every pipeline the server watches (/pipelines), with what holds each
// environment in a word, and one pipeline's environments left to right with their targets,
// their promotion policy (pipelinepolicy.go: soak, freeze, verification after rollout,
// rollbacks, approvals and rejections), the approvals they wait for (with the commands that
// approve and reject), the freezes that cover the pipeline, the promotions made and the
// pipeline's conditions. Both are live (the view pipelines and pipeline of the page events).

// Paths of the pipeline pages.
const (
	PipelinesPath = "/pipelines"
)

// Texts of the pipeline pages' states.
const (
	EmptyPipelines = "No pipelines yet."
	// LocalCluster names the cluster of a target without clusterRef.
	LocalCluster = "local cluster"
)

func pipelinePath(namespace, name string) string {
	return PipelinesPath + "/" + url.PathEscape(namespace) + "/" + url.PathEscape(name)
}

// registerPipelines serves the pipeline pages.
func (p *site) registerPipelines(s *server.Server) {
	s.Handle("GET "+PipelinesPath, http.HandlerFunc(p.pipelinesPage))
	s.Handle("GET "+PipelinesPath+"/{namespace}/{name}", http.HandlerFunc(p.pipelinePage))
}

// envSummary is one environment on the list of pipelines.
type envSummary struct {
	Name, Revision string
	// State is ready, not ready or unknown (not observed yet); Class colours it.
	State, Class string
	Waiting      string
	// Policy is the environment's one-word policy state (soaking, frozen…), PolicyClass its
	// colour.
	Policy, PolicyClass string
}

type pipelineRow struct {
	Namespace, Name, Link string
	App                   string
	Ready                 readyView
	Envs                  []envSummary
}

type pipelinesList struct {
	Empty string
	Rows  []pipelineRow
}

type pipelinesPage struct {
	pageBase
	List fragment
}

// readyView is the pipeline's Ready condition in a word.
type readyView struct {
	Text, Class, Title string
}

func pipelineReady(pl *v1alpha1.Pipeline) readyView {
	c := meta.FindStatusCondition(pl.Status.Conditions, v1alpha1.ConditionPipelineReady)
	stalled := meta.FindStatusCondition(pl.Status.Conditions, v1alpha1.ConditionStalled)
	switch {
	case pl.Spec.Suspend:
		return readyView{Text: "Suspended", Class: "pending", Title: "spec.suspend is set: nothing is promoted until it is false"}
	case stalled != nil && stalled.Status == metav1.ConditionTrue:
		return readyView{Text: "Stalled", Class: "failed", Title: cmp.Or(stalled.Message, stalled.Reason)}
	case c == nil:
		return readyView{Text: "Unknown", Class: "pending", Title: "not observed by the controller yet"}
	case c.Status == metav1.ConditionTrue:
		return readyView{Text: "Ready", Class: "state-success", Title: c.Message}
	default:
		return readyView{Text: "Not ready", Class: "failed", Title: cmp.Or(c.Message, c.Reason)}
	}
}

func appOf(pl *v1alpha1.Pipeline) string {
	return pl.Spec.AppRef.Kind + " " + pl.Spec.AppRef.Name
}

func envState(st *v1alpha1.EnvironmentStatus) (state, class string) {
	switch {
	case st == nil:
		return "unknown", "pending"
	case st.Ready:
		return "ready", "state-success"
	default:
		return "not ready", "failed"
	}
}

func (p *site) pipelinesPart() (fragment, error) {
	now := p.now()
	list := pipelinesList{}
	for _, pl := range p.cat.Pipelines() {
		row := pipelineRow{Namespace: pl.Namespace, Name: pl.Name, Link: pipelinePath(pl.Namespace, pl.Name), App: appOf(pl), Ready: pipelineReady(pl)}
		for _, env := range pl.Spec.Environments {
			st := catalog.EnvironmentStatus(pl, env.Name)
			s := envSummary{Name: env.Name}
			s.State, s.Class = envState(st)
			if st != nil {
				s.Revision = st.Revision
				if st.WaitingApproval != nil {
					s.Waiting = st.WaitingApproval.Revision
				}
			}
			row.Envs = append(row.Envs, s)
		}
		for i, e := range catalog.DescribePipeline(pl, nil, now).Environments {
			row.Envs[i].Policy, row.Envs[i].PolicyClass = e.State, stateClasses[e.State]
		}
		list.Rows = append(list.Rows, row)
	}
	if len(list.Rows) == 0 {
		list.Empty = EmptyPipelines
	}
	return part("pipelines-list", list)
}

func (p *site) pipelinesPage(w http.ResponseWriter, _ *http.Request) {
	list, err := p.pipelinesPart()
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	renderPage(w, http.StatusOK, "pipelines", pipelinesPage{
		pageBase: pageBase{Title: "Pipelines", Events: withQuery(PageEventsPath, "view", "pipelines")},
		List:     list,
	})
}

type targetView struct {
	Cluster, Namespace, Revision string
	State, Class, Message        string
}

type waitingView struct {
	Revision string
	Since    stamp
	// Command approves the revision with the user's Kubernetes credentials; CommandID is
	// its element's id, for the copy button. RejectCommand rejects it, with a reason to fill
	// in.
	Command, CommandID             string
	RejectCommand, RejectCommandID string
}

type envView struct {
	Name, Revision, State, Class, Strategy string
	Targets                                []targetView
	Waiting                                *waitingView
	NeedsApproval                          bool
	Policy                                 envPolicyView
}

type promotionRow struct {
	Environment, Revision, Strategy, Approver, ID string
	Time                                          stamp
}

type pipelineConditionRow struct {
	Type, Status, Reason, Message, Class string
	Since                                stamp
}

type pipelineState struct {
	Ready   readyView
	Stale   bool
	Envs    []envView
	Freezes []freezeView
	// FreezesOmitted counts the freezes past catalog.MaxPolicyFreezes.
	FreezesOmitted int
	History        []promotionRow
	Conditions     []pipelineConditionRow
}

type pipelinePage struct {
	pageBase
	Namespace, Name, App string
	Source               *link
	State                fragment
}

// serverURL is the URL the request reached this server at, for the commands a page shows.
func serverURL(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil || r.Header.Get("X-Forwarded-Proto") == "https" {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

// ApproveCommand is the command that approves revision into environment of the pipeline
// namespace/name through the API server at base.
func ApproveCommand(base, namespace, name, environment, revision string) string {
	return approval.Command(base, namespace, name, environment, revision)
}

func (p *site) pipelineStatePart(pl *v1alpha1.Pipeline, freezes []catalog.Freeze, base string) (fragment, error) {
	now := p.now()
	state := pipelineState{Ready: pipelineReady(pl), Stale: pl.Status.ObservedGeneration != 0 && pl.Status.ObservedGeneration != pl.Generation}
	policy := catalog.DescribePipeline(pl, freezes, now)
	state.Freezes, state.FreezesOmitted = freezeViews(policy.Freezes), policy.FreezesOmitted
	for i, env := range pl.Spec.Environments {
		st := catalog.EnvironmentStatus(pl, env.Name)
		v := envView{Name: env.Name, Strategy: catalog.Strategy(pl, env), NeedsApproval: env.Approval != nil}
		next := ""
		if i+1 < len(pl.Spec.Environments) {
			next = pl.Spec.Environments[i+1].Name
		}
		v.Policy = policyView(policy.Environments[i], next, now)
		v.State, v.Class = envState(st)
		for _, t := range env.Targets {
			tv := targetView{Cluster: cmp.Or(t.ClusterRef, LocalCluster), Namespace: t.Namespace, State: "unknown", Class: "pending"}
			if ts := catalog.TargetStatus(st, t); ts != nil {
				tv.Revision, tv.Message = ts.Revision, ts.Message
				tv.State, tv.Class = "not ready", "failed"
				if ts.Ready {
					tv.State, tv.Class = "ready", "state-success"
				}
			}
			v.Targets = append(v.Targets, tv)
		}
		if st != nil {
			v.Revision = st.Revision
			if w := st.WaitingApproval; w != nil {
				v.Waiting = &waitingView{Revision: w.Revision, Since: stampOf(now, w.Since.Time),
					Command:       ApproveCommand(base, pl.Namespace, pl.Name, env.Name, w.Revision),
					CommandID:     fmt.Sprintf("approve-%d", i),
					RejectCommand: approval.RejectCommand(base, pl.Namespace, pl.Name, env.Name, w.Revision), RejectCommandID: fmt.Sprintf("reject-%d", i)}
			}
			if lp := st.LastPromotion; lp != nil {
				state.History = append(state.History, promotionRow{Environment: env.Name, Revision: lp.Revision, Strategy: lp.Strategy,
					Approver: lp.Approver, ID: lp.ID, Time: stampOf(now, lp.Time.Time)})
			}
		}
		state.Envs = append(state.Envs, v)
	}
	// Newest first.
	slices.SortStableFunc(state.History, func(a, b promotionRow) int { return strings.Compare(b.Time.DateTime, a.Time.DateTime) })
	for _, c := range pl.Status.Conditions {
		row := pipelineConditionRow{Type: c.Type, Status: string(c.Status), Reason: c.Reason, Message: c.Message, Since: stampOf(now, c.LastTransitionTime.Time)}
		// A True Ready is good; a True problem condition is bad.
		good := (c.Type == v1alpha1.ConditionPipelineReady) == (c.Status == metav1.ConditionTrue)
		switch {
		case c.Status == metav1.ConditionUnknown:
			row.Class = "pending"
		case good:
			row.Class = "state-success"
		default:
			row.Class = "failed"
		}
		state.Conditions = append(state.Conditions, row)
	}
	return part("pipeline-state", state)
}

func (p *site) pipelinePage(w http.ResponseWriter, r *http.Request) {
	namespace, name := r.PathValue("namespace"), r.PathValue("name")
	pl, ok := p.cat.Pipeline(namespace, name)
	if !ok {
		data := errorPage{pageBase: pageBase{Title: "No such pipeline", Crumbs: []link{{"Pipelines", PipelinesPath}}},
			Message: fmt.Sprintf("There is no pipeline “%s” in the namespace “%s”.", name, namespace),
			Links:   []link{{"All pipelines", PipelinesPath}}}
		renderPage(w, http.StatusNotFound, "error", data)
		return
	}
	state, err := p.pipelineStatePart(pl, p.cat.Freezes(), serverURL(r))
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	page := pipelinePage{
		pageBase: pageBase{Title: pl.Namespace + "/" + pl.Name, Crumbs: []link{{"Pipelines", PipelinesPath}},
			Events: withQuery(PageEventsPath, "view", "pipeline", "namespace", pl.Namespace, "name", pl.Name)},
		Namespace: pl.Namespace, Name: pl.Name, App: pl.Spec.AppRef.APIVersion + " " + appOf(pl),
		State: state,
	}
	if src := pl.Spec.Source; src != nil {
		page.Source = &link{Text: pl.Namespace + "/" + src.ReleaseStream, URL: streamPath(pl.Namespace, src.ReleaseStream)}
	}
	renderPage(w, http.StatusOK, "pipeline", page)
}

// pipelineLiveView follows the list of pipelines (name empty) or one pipeline.
func (p *site) pipelineLiveView(r *http.Request, view string) (liveView, int, error) {
	if view == "pipelines" {
		var last []*v1alpha1.Pipeline
		return func() ([]livePart, error) {
			pls := p.cat.Pipelines()
			if last != nil && slices.Equal(pls, last) {
				return nil, nil
			}
			last = pls
			f, err := p.pipelinesPart()
			return []livePart{{ID: "pipelines", HTML: string(f.HTML), Version: f.Version}}, err
		}, 0, nil
	}
	q := r.URL.Query()
	namespace, name := q.Get("namespace"), q.Get("name")
	if _, ok := p.cat.Pipeline(namespace, name); !ok {
		return nil, http.StatusNotFound, fmt.Errorf("there is no pipeline %s/%s", namespace, name)
	}
	base := serverURL(r)
	var last *v1alpha1.Pipeline
	var lastFreezes []catalog.Freeze
	var lastMinute int64
	return func() ([]livePart, error) {
		pl, ok := p.cat.Pipeline(namespace, name)
		if !ok {
			return nil, errGone{fmt.Sprintf("The pipeline %s/%s no longer exists.", namespace, name)}
		}
		// Ages and soaks change with the minute; the freezes listed with their objects.
		minute := minuteOf(p.now())
		freezes := p.cat.Freezes()
		if pl == last && minute == lastMinute && slices.Equal(freezes, lastFreezes) {
			return nil, nil
		}
		last, lastMinute, lastFreezes = pl, minute, freezes
		f, err := p.pipelineStatePart(pl, freezes, base)
		return []livePart{{ID: "pipeline-state", HTML: string(f.HTML), Version: f.Version}}, err
	}, 0, nil
}
