package osrc

import (
	"cmp"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/server/catalog"
	"github.com/release-controller/release-controller/internal/updateservice"
)

// /graph is the update service: OSRC's graph with internal/updateservice applied. Everything
// its answers read of the catalog (the nodes, the risks, each stream's channel membership) is
// a graphModel, computed once per catalog version at one time and kept until the catalog
// changes or a feeder's delay ends; each answer (a channel, an architecture) is planned from
// it and encoded once.

// graphModel is the update service's view of one catalog version at one time.
type graphModel struct {
	streams []*catalog.Stream
	// bases[i] is the index of the first node of streams[i].
	bases []int
	// nodes are every payload of every stream, streams in catalog order and payloads in
	// semver order: the whole graph the answers are cut from.
	nodes []updateservice.Node
	// entries and streamOf are each node's payload and the index of its stream.
	entries  []catalog.Entry
	streamOf []int
	// channelsOf is each node's declared channels, sorted and joined by commas.
	channelsOf []string
	// channels is each stream's membership; nil for a stream that declares no channel.
	channels []*updateservice.Channels
	// declares[i] are the channel names streams[i] declares (nil: none).
	declares []map[string]bool
	// declared are the channel names some stream declares, sorted.
	declared []string
	risks    *updateservice.Index
	// until is when the next feeder promotes a payload (zero: none is pending): the model,
	// and every answer read from it, holds until then.
	until time.Time
}

// buildModel computes the model of streams and the UpgradeRisks at now. pageURL links to a
// payload's page (the URL of a detected risk whose run has none). It returns, beside the
// model, what it had to leave out: risks that do not compile, channels that do not.
func buildModel(streams []*catalog.Stream, upgradeRisks []*v1alpha1.UpgradeRisk, now time.Time, pageURL func(namespace, stream, tag string) string) (*graphModel, []error) {
	var problems []error
	declared := make([]updateservice.Risk, 0, len(upgradeRisks))
	for _, u := range upgradeRisks {
		r, err := updateservice.Compile(u)
		if err != nil {
			problems = append(problems, fmt.Errorf("UpgradeRisk %s/%s left out: %w", u.Namespace, u.Name, err))
			continue
		}
		declared = append(declared, r)
	}
	total := 0
	for _, s := range streams {
		total += len(s.Entries)
	}
	m := &graphModel{
		streams: streams, bases: make([]int, len(streams)), channels: make([]*updateservice.Channels, len(streams)), declares: make([]map[string]bool, len(streams)),
		nodes: make([]updateservice.Node, 0, total), entries: make([]catalog.Entry, 0, total),
		streamOf: make([]int, 0, total), channelsOf: make([]string, 0, total),
		risks: updateservice.RisksOf(declared, streams, pageURL),
	}
	names := map[string]bool{}
	for i, s := range streams {
		m.bases[i] = len(m.nodes)
		if s.Object != nil && s.Object.Spec.UpdateService != nil && len(s.Object.Spec.UpdateService.Channels) > 0 {
			m.declares[i] = map[string]bool{}
			for _, c := range s.Object.Spec.UpdateService.Channels {
				names[c.Name] = true
				m.declares[i][c.Name] = true
			}
			ch, err := updateservice.Membership(s, promotionRisks(m.risks, s), now)
			if err != nil {
				// Its declared channels hold nothing rather than what OSRC's rules would give.
				problems = append(problems, fmt.Errorf("the channels of stream %s/%s hold nothing: %w", s.Namespace, s.Name, err))
				ch = &updateservice.Channels{}
			}
			m.channels[i] = ch
			if !ch.Next.IsZero() && (m.until.IsZero() || ch.Next.Before(m.until)) {
				m.until = ch.Next
			}
		}
		for _, e := range s.Entries {
			_, tombstoned := updateservice.Tombstone(e, now)
			m.nodes = append(m.nodes, updateservice.Node{Namespace: s.Namespace, Stream: s.Name, Version: e.Tag(), Tombstoned: tombstoned})
			m.entries = append(m.entries, e)
			m.streamOf = append(m.streamOf, i)
			joined := ""
			if ch := m.channels[i]; ch != nil {
				joined = strings.Join(ch.Of(e.Tag()), ",")
			}
			m.channelsOf = append(m.channelsOf, joined)
		}
	}
	for name := range names {
		m.declared = append(m.declared, name)
	}
	slices.Sort(m.declared)
	return m, problems
}

// promotionRisks are the risks Membership may read for s: of its namespace and stream, and
// applying to every cluster (the only ones that hold a promotion back). The same answer as
// the whole index, with a fraction of the patterns to try on each payload.
func promotionRisks(all *updateservice.Index, s *catalog.Stream) *updateservice.Index {
	var risks []updateservice.Risk
	for _, r := range all.All() {
		if r.Namespace == s.Namespace && (r.Stream == "" || r.Stream == s.Name) && r.AppliesToAll() {
			risks = append(risks, *r)
		}
	}
	return updateservice.NewIndex(risks)
}

// promised is the rule of the channels clusters follow: an upgrade that succeeded at least
// once, into an Accepted payload.
func promised(u catalog.Upgrade, to catalog.Entry) bool {
	return u.Success > 0 && to.Phase() == v1alpha1.PhaseAccepted
}

// graphQuery is what one answer is asked for.
type graphQuery struct {
	channel string
	// osrc is the rule of channel as an OSRC channel name, for the streams that declare no
	// channel; nil when it is not one.
	osrc func(catalog.Upgrade, catalog.Entry) bool
	// arch is the architecture of the view ("" every payload as recorded).
	arch string
}

// query reads channel: an OSRC channel name or one some stream declares; false for neither.
func (m *graphModel) query(channel, arch string) (graphQuery, bool) {
	keep, isOSRC := channelFilter(channel)
	if !isOSRC {
		keep = nil
	}
	if _, isDeclared := slices.BinarySearch(m.declared, channel); !isOSRC && !isDeclared {
		return graphQuery{}, false
	}
	return graphQuery{channel: channel, osrc: keep, arch: arch}, true
}

// maxChannelsNamed bounds the declared channels the error of an unknown channel lists.
const maxChannelsNamed = 20

// badChannel is the error of an unknown channel: OSRC's text, then the declared channels.
func (m *graphModel) badChannel() string {
	if len(m.declared) == 0 {
		return textBadChannel
	}
	shown := m.declared[:min(len(m.declared), maxChannelsNamed)]
	msg := textBadChannel + "; channels the streams declare: " + strings.Join(shown, ", ")
	if more := len(m.declared) - len(shown); more > 0 {
		msg += fmt.Sprintf(" and %d more", more)
	}
	return msg
}

// graphAnswer is one answer: its nodes (indexes in the model) with the payload each offers,
// and its edges by index in the answer.
type graphAnswer struct {
	nodes       []int
	payloads    []string
	edges       [][2]int
	conditional []updateservice.Conditional
}

// answer cuts q's graph from the model. A stream that declares q.channel offers its members,
// with the upgrades that succeeded into an Accepted payload between them; any other stream
// offers every payload when q.channel is an OSRC channel name (the default "" included), with
// the upgrades that channel keeps (channelFilter). With an architecture, only the payloads
// clusters of it can run (archImage). A version is served once, by its first node in graph
// order; an upgrade starts at the node serving its from version. The edges are then planned
// (updateservice.PlanEdges) on the whole graph and numbered in the answer.
func (m *graphModel) answer(q graphQuery) graphAnswer {
	var a graphAnswer
	index := make([]int, len(m.nodes)) // the model's node → its index in the answer, -1 if left out
	served := make(map[string]int, len(m.nodes))
	for n := range m.nodes {
		index[n] = -1
		i, e := m.streamOf[n], m.entries[n]
		if m.declares[i][q.channel] {
			if !m.channels[i].Has(q.channel, e.Tag()) {
				continue
			}
		} else if q.osrc == nil {
			continue
		}
		payload, ok := offered(m.streams[i], e, q.arch)
		if !ok {
			continue
		}
		if _, dup := served[e.Tag()]; dup {
			continue
		}
		served[e.Tag()] = n
		index[n] = len(a.nodes)
		a.nodes = append(a.nodes, n)
		a.payloads = append(a.payloads, payload)
	}
	var edges [][2]int
	for i, s := range m.streams {
		keep := q.osrc
		if m.declares[i][q.channel] {
			keep = promised
		}
		if keep == nil {
			continue
		}
		for _, u := range s.Upgrades() {
			j := s.Index(u.To)
			if j < 0 || index[m.bases[i]+j] < 0 || !keep(u, s.Entries[j]) {
				continue
			}
			if from, ok := served[u.From]; ok {
				edges = append(edges, [2]int{from, m.bases[i] + j})
			}
		}
	}
	slices.SortFunc(edges, func(x, y [2]int) int { return cmp.Or(cmp.Compare(x[0], y[0]), cmp.Compare(x[1], y[1])) })
	plan := updateservice.PlanEdges(m.nodes, slices.Compact(edges), m.risks)
	renumber := func(es [][2]int) [][2]int {
		out := make([][2]int, len(es))
		for k, e := range es {
			out[k] = [2]int{index[e[0]], index[e[1]]}
		}
		return out
	}
	a.edges = renumber(plan.Edges)
	for _, c := range plan.Conditional {
		a.conditional = append(a.conditional, updateservice.Conditional{Edges: renumber(c.Edges), Risks: c.Risks})
	}
	return a
}

// offered is the payload e offers to clusters of arch ("" every payload as recorded), and
// whether it offers one.
func offered(s *catalog.Stream, e catalog.Entry, arch string) (string, bool) {
	if arch != "" {
		return archImage(s, e, arch)
	}
	repo, digest, ok := nodePayload(s, e)
	if ok {
		return repo + "@" + digest, true
	}
	return repo, true
}

// pagePath is the path of a payload's page; it names the namespace, as the pages' own links
// do, so that it stays valid when a stream of the same name appears in another namespace.
func pagePath(namespace, stream, tag string) string {
	return "/namespaces/" + url.PathEscape(namespace) + "/releasestream/" + url.PathEscape(stream) + "/release/" + url.PathEscape(tag)
}

// ParsePublicURL checks the address clients reach the server at (release-controller api's
// --public-url): empty, or an absolute http or https URL with a host and without a query or
// fragment. It returns it without a trailing slash.
func ParsePublicURL(raw string) (string, error) {
	if raw == "" {
		return "", nil
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("--public-url %q: want an absolute http or https URL without a query, e.g. https://release.example.com", raw)
	}
	return strings.TrimRight(raw, "/"), nil
}

// modelCache keeps the model of one catalog version until the catalog changes or the model's
// until passes. One model is built at a time: the requests that miss wait for it.
type modelCache struct {
	mu      sync.Mutex
	version <-chan struct{}
	model   *graphModel
}

func (c *modelCache) get(version <-chan struct{}, now time.Time, build func() *graphModel) *graphModel {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.model != nil && c.version == version && (c.model.until.IsZero() || now.Before(c.model.until)) {
		return c.model
	}
	m := build()
	select {
	case <-version:
		return m // the catalog changed meanwhile: m may be old already, do not keep it
	default:
	}
	c.version, c.model = version, m
	return m
}
