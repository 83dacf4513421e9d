package web

import (
	"fmt"
	"html/template"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/server/catalog"
	"github.com/release-controller/release-controller/internal/updateservice"
)

// The upgrade graph of a stream, drawn on the server as SVG: one row per payload, newest on
// top (semver order), and one arc per tested upgrade on the left, from the older payload up
// to the newer one, coloured by its result. Payloads link to their pages, arcs to the
// changelog of the upgrade. A table of the same upgrades follows for readers that do not
// see the drawing.

// Colours of the graph (at least 4.5:1 against white).
const (
	colorSuccess = "#1a7f37"
	colorFailure = "#cf222e"
	colorPending = "#0969da"
	colorMuted   = "#6b7280"
	colorText    = "#1b1b1b"
	// colorRisk draws an upgrade served with a risk (amber, 4.5:1 against white).
	colorRisk = "#9a6700"
)

// How the update service serves an edge of the graph: to every cluster, with a risk, or not
// at all (a risk without rules blocks it, or its target is tombstoned).
const (
	edgeOffered     = "offered"
	edgeConditional = "conditional"
	edgeBlocked     = "blocked"
	edgeWithdrawn   = "withdrawn"
)

// Dash patterns of the edges the update service does not serve to every cluster.
const (
	dashConditional = "7 4"
	dashRemoved     = "2 4"
)

// maxGraphNodes bounds the payloads drawn: the newest ones.
const maxGraphNodes = 250

// Geometry of the drawing, in pixels.
const (
	graphRowHeight = 26
	graphMargin    = 16
	graphRadius    = 6
	graphMinDepth  = 28
	graphDepthRow  = 14
	graphMaxDepth  = 260
	graphLabels    = 480
)

var phaseColors = map[string]string{
	string(v1alpha1.PhaseAccepted): colorSuccess,
	string(v1alpha1.PhaseRejected): colorFailure,
	string(v1alpha1.PhaseFailed):   "#82071e",
	string(v1alpha1.PhaseReady):    colorPending,
	string(v1alpha1.PhasePending):  colorMuted,
}

// upgradeColor is an upgrade's colour: green when a run succeeded, red when only failures
// ended, blue while runs are pending.
func upgradeColor(u catalog.Upgrade) string {
	switch class, _, _ := result(u); class {
	case "upgrade-success":
		return colorSuccess
	case "upgrade-pending":
		return colorPending
	}
	return colorFailure
}

type graphNode struct {
	Tag   string
	Phase string // empty for a payload collected since its upgrades were recorded
	Link  string
	// Tombstoned: withdrawn from the update service, no upgrade leads into it.
	Tombstoned bool
}

type graphEdge struct {
	from, to int
	upgrade  catalog.Upgrade
	link     string
	// served is how the update service serves the edge (edgeOffered, …); risks are the
	// risks that make it conditional or block it.
	served string
	risks  []*updateservice.Risk
}

// upgradeGraph is what the graph page draws.
type upgradeGraph struct {
	title   string
	nodes   []graphNode
	edges   []graphEdge
	omitted int
}

// buildGraph takes a stream's payloads and the payloads its upgrades name, in semver order,
// and the upgrades between those drawn, each with how the update service serves it given
// the stream's risks at now.
func buildGraph(s *catalog.Stream, risks *updateservice.Index, now time.Time) upgradeGraph {
	g := upgradeGraph{title: "Upgrade graph of " + s.Namespace + "/" + s.Name}
	known := map[string]bool{}
	for _, e := range s.Entries {
		known[e.Tag()] = true
		_, dead := updateservice.Tombstone(e, now)
		g.nodes = append(g.nodes, graphNode{Tag: e.Tag(), Phase: string(e.Phase()), Link: entryPath(s, e.Tag()), Tombstoned: dead})
	}
	upgrades := s.Upgrades()
	for _, u := range upgrades {
		for _, tag := range []string{u.From, u.To} {
			if !known[tag] {
				known[tag] = true
				g.nodes = append(g.nodes, graphNode{Tag: tag})
			}
		}
	}
	slices.SortStableFunc(g.nodes, func(a, b graphNode) int { return catalog.CompareTags(a.Tag, b.Tag) })
	if len(g.nodes) > maxGraphNodes {
		g.omitted = len(g.nodes) - maxGraphNodes
		g.nodes = g.nodes[:maxGraphNodes]
	}
	row := make(map[string]int, len(g.nodes))
	for i, n := range g.nodes {
		row[n.Tag] = i
	}
	for _, u := range upgrades {
		from, okFrom := row[u.From]
		to, okTo := row[u.To]
		if !okFrom || !okTo {
			continue
		}
		e := graphEdge{from: from, to: to, upgrade: u}
		if g.nodes[to].Link != "" {
			e.link = withQuery(g.nodes[to].Link, "from", u.From)
		}
		g.edges = append(g.edges, e)
	}
	g.serve(s, risks)
	return g
}

// serve marks each edge with how the update service serves it, as /graph does
// (updateservice.PlanEdges).
func (g upgradeGraph) serve(s *catalog.Stream, risks *updateservice.Index) {
	nodes := make([]updateservice.Node, len(g.nodes))
	for i, n := range g.nodes {
		nodes[i] = updateservice.Node{Namespace: s.Namespace, Stream: s.Name, Version: n.Tag, Tombstoned: n.Tombstoned}
	}
	pairs := make([][2]int, len(g.edges))
	for i, e := range g.edges {
		pairs[i] = [2]int{e.from, e.to}
	}
	plan := updateservice.PlanEdges(nodes, pairs, risks)
	offered := make(map[[2]int]bool, len(plan.Edges))
	for _, e := range plan.Edges {
		offered[e] = true
	}
	conditional := map[[2]int][]*updateservice.Risk{}
	for _, c := range plan.Conditional {
		for _, e := range c.Edges {
			conditional[e] = c.Risks
		}
	}
	for i := range g.edges {
		e := &g.edges[i]
		pair := [2]int{e.from, e.to}
		switch {
		case offered[pair]:
			e.served = edgeOffered
		case conditional[pair] != nil:
			e.served, e.risks = edgeConditional, conditional[pair]
		case g.nodes[e.to].Tombstoned:
			e.served = edgeWithdrawn
		default:
			e.served = edgeBlocked
			for _, r := range risks.On(s.Namespace, s.Name, e.upgrade.From, e.upgrade.To) {
				if r.Blocks() {
					e.risks = append(e.risks, r)
				}
			}
		}
	}
}

// servedText says how the update service serves an edge: "conditional: OldBootImages".
func servedText(e graphEdge) string {
	switch e.served {
	case edgeConditional:
		return "conditional: " + riskNames(e.risks)
	case edgeBlocked:
		return "blocked for every cluster by " + riskNames(e.risks)
	case edgeWithdrawn:
		return "withdrawn: " + e.upgrade.To + " is tombstoned"
	}
	return "offered to every cluster"
}

// riskNames names risks, at most maxRisksNamed of them.
func riskNames(risks []*updateservice.Risk) string {
	names := make([]string, 0, min(len(risks), maxRisksNamed))
	for _, r := range risks[:min(len(risks), maxRisksNamed)] {
		names = append(names, r.Name)
	}
	out := strings.Join(names, ", ")
	if len(risks) > maxRisksNamed {
		out += fmt.Sprintf(" and %d more", len(risks)-maxRisksNamed)
	}
	return out
}

// graphSVG is the drawing of an upgradeGraph, its geometry computed here and its markup
// written by the template graph-svg (stream.html), which escapes every value.
type graphSVG struct {
	Title         string
	Width, Height int
	Markers       []svgMarker
	Edges         []svgEdge
	Nodes         []svgNode
	Radius        int
	Text, Muted   string
}

type svgMarker struct{ ID, Color string }

type svgEdge struct {
	Class, Path, Color, Marker string
	From, To, Title, Link      string
	// Served is how the update service serves the upgrade; Dash its stroke's dash pattern
	// when not to every cluster.
	Served, Dash string
}

type svgNode struct {
	Tag, Phase, Link, Color string
	X, Y, LabelX, TextY     int
	Collected, Tombstoned   bool
}

// drawing lays the graph out: one row per payload, newest on top, and an arc per upgrade,
// deeper the more rows it spans.
func (g upgradeGraph) drawing() graphSVG {
	depth := func(e graphEdge) int {
		span := e.from - e.to
		if span < 0 {
			span = -span
		}
		return min(graphMinDepth+graphDepthRow*span, graphMaxDepth)
	}
	maxDepth := graphMinDepth
	for _, e := range g.edges {
		maxDepth = max(maxDepth, depth(e))
	}
	nodeX := graphMargin + maxDepth
	labelX := nodeX + graphRadius + 8
	d := graphSVG{
		Title:  fmt.Sprintf("%s: %s, %s", g.title, plural(len(g.nodes), "payload"), plural(len(g.edges), "upgrade")),
		Width:  labelX + graphLabels,
		Height: 2*graphMargin + graphRowHeight*max(len(g.nodes)-1, 0) + 2*graphRadius,
		Radius: graphRadius, Text: colorText, Muted: colorMuted,
	}
	for _, c := range []string{colorSuccess, colorFailure, colorPending, colorRisk, colorMuted} {
		d.Markers = append(d.Markers, svgMarker{ID: "arrow-" + c[1:], Color: c})
	}
	y := func(i int) int { return graphMargin + graphRadius + i*graphRowHeight }
	for _, e := range g.edges {
		color := upgradeColor(e.upgrade)
		y1, y2, dep := y(e.from), y(e.to), depth(e)
		x := nodeX - graphRadius - 2
		class, _, _ := result(e.upgrade)
		title := fmt.Sprintf("%s → %s: %d/%d succeeded", e.upgrade.From, e.upgrade.To, e.upgrade.Success, e.upgrade.Total)
		if e.upgrade.Pending > 0 {
			title += fmt.Sprintf(", %d pending", e.upgrade.Pending)
		}
		// An upgrade not served to every cluster is drawn by how it is served instead of
		// by its result (the title and the table keep the result).
		dash := ""
		switch e.served {
		case edgeConditional:
			color, dash = colorRisk, dashConditional
		case edgeBlocked, edgeWithdrawn:
			color, dash = colorMuted, dashRemoved
		}
		title += "; " + servedText(e)
		d.Edges = append(d.Edges, svgEdge{
			Class: "edge " + class, Path: fmt.Sprintf("M%d,%d C%d,%d %d,%d %d,%d", x, y1, nodeX-dep, y1, nodeX-dep, y2, x, y2),
			Color: color, Marker: "url(#arrow-" + color[1:] + ")", From: e.upgrade.From, To: e.upgrade.To, Title: title, Link: e.link,
			Served: e.served, Dash: dash,
		})
	}
	for i, n := range g.nodes {
		node := svgNode{Tag: n.Tag, Phase: n.Phase, Link: n.Link, X: nodeX, Y: y(i), LabelX: labelX, TextY: y(i) + 4, Collected: n.Phase == "", Tombstoned: n.Tombstoned}
		if !node.Collected {
			node.Color = phaseColors[n.Phase]
		}
		d.Nodes = append(d.Nodes, node)
	}
	return d
}

// svg renders the drawing: the markup of an <svg> element, standalone or in the page.
func (g upgradeGraph) svg() (template.HTML, error) {
	var b strings.Builder
	if err := pageTemplates.ExecuteTemplate(&b, "graph-svg", g.drawing()); err != nil {
		return "", err
	}
	return template.HTML(b.String()), nil //nolint:gosec // html/template wrote and escaped it
}

// graphPage is the page of a stream's upgrade graph.
type graphPage struct {
	pageBase
	Stream      streamHeader
	SVG         template.HTML
	SVGLink     string
	Note, Empty string
	Rows        []upgradeRow
	// Legend shows how the drawing tells the update service's decisions apart.
	Legend []legendItem
	// Risks are the risks that apply to the stream, with the upgrades drawn that carry each.
	Risks     []streamRiskView
	RisksMore string
	Warnings  []string
}

type upgradeRow struct {
	From, To            link
	Class, Symbol, Word string
	Counts              string
	Runs                []runLink
	// Served says how the update service serves the upgrade.
	Served, ServedClass string
}

// legendItem is a line style of the graph and what it means.
type legendItem struct {
	Class, Color, Dash, Label string
}

// graphLegend is the legend of the update service's line styles.
var graphLegend = []legendItem{
	{Class: "served-" + edgeOffered, Color: colorSuccess, Label: "solid: offered to every cluster (coloured by the upgrade’s result)"},
	{Class: "served-" + edgeConditional, Color: colorRisk, Dash: dashConditional, Label: "dashed amber: conditional, carries a risk"},
	{Class: "served-" + edgeBlocked, Color: colorMuted, Dash: dashRemoved, Label: "dotted grey: not offered (blocked by a risk, or into a tombstoned payload)"},
}

// streamRiskView is a risk that applies to a stream, on the graph and health pages.
type streamRiskView struct {
	riskView
	// Edges counts the upgrades drawn that carry it (graph page).
	Edges int
	// Into names the newest accepted payloads it leads into (health page).
	Into []link
}

// streamRiskOf words a risk of a stream.
func streamRiskOf(r *updateservice.Risk, now time.Time) streamRiskView {
	pr := updateservice.PayloadRisk{Name: r.Name, Message: r.Message, URL: r.URL, MatchingRules: r.Rules, FixedIn: r.FixedIn,
		From: r.FromPattern(), Blocks: r.Blocks(), Detected: r.Detected, Declared: r.Declared, DeclaredBy: r.Namespace + "/" + r.Object}
	v := streamRiskView{riskView: riskViewOf(pr, now)}
	v.To = r.ToPattern()
	if strings.HasPrefix(v.To, "^") {
		if lit, ok := updateservice.Literal(v.To); ok {
			v.To = lit
		} else {
			v.ToPattern = true
		}
	}
	return v
}

func (p *site) graphPage(w http.ResponseWriter, r *http.Request) {
	s, ok := p.stream(w, r)
	if !ok {
		return
	}
	format := r.URL.Query().Get("format")
	if format != "" && format != "html" && format != "svg" {
		p.fail(w, http.StatusBadRequest, "Bad request", fmt.Sprintf("“%s” is not a format of this page: use html or svg.", format))
		return
	}
	now := p.now()
	risks, warnings := p.streamRisks(s)
	g := buildGraph(s, risks, now)
	var svg template.HTML
	if len(g.nodes) > 0 || format == "svg" {
		var err error
		if svg, err = g.svg(); err != nil {
			http.Error(w, "drawing the graph: "+err.Error(), http.StatusInternalServerError)
			return
		}
	}
	if format == "svg" {
		w.Header().Set("Content-Type", "image/svg+xml")
		_, _ = w.Write([]byte(`<?xml version="1.0" encoding="UTF-8"?>` + "\n" + string(svg) + "\n"))
		return
	}
	base := streamPath(s.Namespace, s.Name)
	page := graphPage{
		pageBase: pageBase{Title: g.title, Crumbs: []link{{"Streams", IndexPath}, {s.Namespace + "/" + s.Name, base}}},
		Stream:   streamLinks(s),
		SVGLink:  base + "/graph?format=svg",
		Legend:   graphLegend,
		Warnings: warnings,
	}
	switch {
	case len(g.nodes) == 0:
		page.Empty = EmptyStream
	default:
		page.SVG = svg
		if len(g.edges) == 0 {
			page.Empty = "No upgrades into this stream’s payloads were tested yet."
		}
	}
	if g.omitted > 0 {
		page.Note = fmt.Sprintf("The newest %d payloads are drawn; %d older ones and their upgrades are left out.", len(g.nodes), g.omitted)
	}
	for _, e := range g.edges {
		class, symbol, word := result(e.upgrade)
		uv := upgrade(s, e.upgrade, e.upgrade.To, "")
		row := upgradeRow{
			From:  link{e.upgrade.From, g.nodes[e.from].Link},
			To:    link{e.upgrade.To, g.nodes[e.to].Link},
			Class: class, Symbol: symbol, Word: word,
			Counts: uv.Counts,
			Runs:   uv.Runs,
			Served: servedText(e), ServedClass: "served-" + e.served,
		}
		page.Rows = append(page.Rows, row)
	}
	page.Risks, page.RisksMore = graphRisks(g, risks, now)
	renderPage(w, http.StatusOK, "graph", page)
}

// graphRisks lists the risks that apply to the stream (at most MaxRisksListed), each with
// the upgrades drawn that carry it.
func graphRisks(g upgradeGraph, risks *updateservice.Index, now time.Time) ([]streamRiskView, string) {
	edges := map[*updateservice.Risk]int{}
	for _, e := range g.edges {
		for _, r := range e.risks {
			edges[r]++
		}
	}
	all := risks.All()
	out := make([]streamRiskView, 0, min(len(all), MaxRisksListed))
	for _, r := range all[:min(len(all), MaxRisksListed)] {
		v := streamRiskOf(r, now)
		v.Edges = edges[r]
		v.Note = plural(v.Edges, "upgrade") + " drawn " + agree(v.Edges, "carries", "carry") + " it."
		out = append(out, v)
	}
	more := ""
	if n := len(all) - len(out); n > 0 {
		more = moreRisks(n)
	}
	return out, more
}
