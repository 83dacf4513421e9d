package web

import (
	"fmt"
	"html/template"
	"net/http"
	"slices"
	"strings"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/server/catalog"
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
}

type graphEdge struct {
	from, to int
	upgrade  catalog.Upgrade
	link     string
}

// upgradeGraph is what the graph page draws.
type upgradeGraph struct {
	title   string
	nodes   []graphNode
	edges   []graphEdge
	omitted int
}

// buildGraph takes a stream's payloads and the payloads its upgrades name, in semver order,
// and the upgrades between those drawn.
func buildGraph(s *catalog.Stream) upgradeGraph {
	g := upgradeGraph{title: "Upgrade graph of " + s.Namespace + "/" + s.Name}
	known := map[string]bool{}
	for _, e := range s.Entries {
		known[e.Tag()] = true
		g.nodes = append(g.nodes, graphNode{Tag: e.Tag(), Phase: string(e.Phase()), Link: entryPath(s, e.Tag())})
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
	return g
}

var xmlEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;", "'", "&apos;")

// svg draws the graph as a standalone SVG document (it is also embedded in the page).
func (g upgradeGraph) svg() string {
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
	width := labelX + graphLabels
	height := 2*graphMargin + graphRowHeight*max(len(g.nodes)-1, 0) + 2*graphRadius
	y := func(i int) int { return graphMargin + graphRadius + i*graphRowHeight }
	esc := xmlEscaper.Replace

	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" class="upgrade-graph" role="img" aria-labelledby="graph-title" width="%d" height="%d" viewBox="0 0 %d %d" font-family="system-ui, sans-serif" font-size="13">`, width, height, width, height)
	fmt.Fprintf(&b, `<title id="graph-title">%s: %s, %s</title>`, esc(g.title), plural(len(g.nodes), "payload"), plural(len(g.edges), "upgrade"))
	b.WriteString(`<defs>`)
	for _, c := range []string{colorSuccess, colorFailure, colorPending} {
		fmt.Fprintf(&b, `<marker id="arrow-%s" viewBox="0 0 8 8" refX="8" refY="4" markerUnits="userSpaceOnUse" markerWidth="8" markerHeight="8" orient="auto"><path d="M0,0 L8,4 L0,8 z" fill="%s"/></marker>`, c[1:], c)
	}
	b.WriteString(`</defs>`)

	// Arcs first, so the payloads' dots sit on top of them.
	b.WriteString(`<g class="edges" fill="none" stroke-width="2">`)
	for _, e := range g.edges {
		color := upgradeColor(e.upgrade)
		y1, y2, d := y(e.from), y(e.to), depth(e)
		x := nodeX - graphRadius - 2
		class, _, _ := result(e.upgrade)
		title := fmt.Sprintf("%s → %s: %d/%d succeeded", e.upgrade.From, e.upgrade.To, e.upgrade.Success, e.upgrade.Total)
		if e.upgrade.Pending > 0 {
			title += fmt.Sprintf(", %d pending", e.upgrade.Pending)
		}
		path := fmt.Sprintf(`<path class="edge %s" d="M%d,%d C%d,%d %d,%d %d,%d" stroke="%s" marker-end="url(#arrow-%s)" data-from="%s" data-to="%s"/>`,
			class, x, y1, nodeX-d, y1, nodeX-d, y2, x, y2, color, color[1:], esc(e.upgrade.From), esc(e.upgrade.To))
		if e.link != "" {
			fmt.Fprintf(&b, `<a href="%s"><title>%s</title>%s</a>`, esc(e.link), esc(title), path)
		} else {
			fmt.Fprintf(&b, `<g><title>%s</title>%s</g>`, esc(title), path)
		}
	}
	b.WriteString(`</g>`)

	b.WriteString(`<g class="nodes">`)
	for i, n := range g.nodes {
		cy := y(i)
		if n.Phase == "" {
			fmt.Fprintf(&b, `<g class="node collected" data-tag="%s"><title>%s: collected</title><circle cx="%d" cy="%d" r="%d" fill="#ffffff" stroke="%s" stroke-dasharray="2 2"/><text x="%d" y="%d" fill="%s">%s <tspan fill="%s">collected</tspan></text></g>`,
				esc(n.Tag), esc(n.Tag), nodeX, cy, graphRadius, colorMuted, labelX, cy+4, colorText, esc(n.Tag), colorMuted)
			continue
		}
		color := phaseColors[n.Phase]
		fmt.Fprintf(&b, `<a class="node" href="%s" data-tag="%s"><title>%s: %s</title><circle cx="%d" cy="%d" r="%d" fill="%s"/><text x="%d" y="%d" fill="%s">%s <tspan fill="%s">%s</tspan></text></a>`,
			esc(n.Link), esc(n.Tag), esc(n.Tag), esc(n.Phase), nodeX, cy, graphRadius, color, labelX, cy+4, colorText, esc(n.Tag), colorMuted, esc(n.Phase))
	}
	b.WriteString(`</g></svg>`)
	return b.String()
}

// graphPage is the page of a stream's upgrade graph.
type graphPage struct {
	pageBase
	Stream      streamHeader
	SVG         template.HTML
	SVGLink     string
	Note, Empty string
	Rows        []upgradeRow
}

type upgradeRow struct {
	From, To            link
	Class, Symbol, Word string
	Counts              string
	Runs                []runLink
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
	g := buildGraph(s)
	if format == "svg" {
		w.Header().Set("Content-Type", "image/svg+xml")
		_, _ = w.Write([]byte(`<?xml version="1.0" encoding="UTF-8"?>` + "\n" + g.svg() + "\n"))
		return
	}
	base := streamPath(s.Namespace, s.Name)
	page := graphPage{
		pageBase: pageBase{Title: g.title, Crumbs: []link{{"Streams", IndexPath}, {s.Namespace + "/" + s.Name, base}}},
		Stream:   streamLinks(s),
		SVGLink:  base + "/graph?format=svg",
	}
	switch {
	case len(g.nodes) == 0:
		page.Empty = EmptyStream
	default:
		// The SVG escapes every value it holds.
		page.SVG = template.HTML(g.svg())
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
		}
		page.Rows = append(page.Rows, row)
	}
	renderPage(w, http.StatusOK, "graph", page)
}
