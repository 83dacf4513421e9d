package web

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/server/catalog"
	"github.com/release-controller/release-controller/internal/updateservice"
)

// What the update service (/graph) does with a stream's payloads, as the pages show it: the
// risks on upgrades into a payload, its channels and promotions to come, its tombstone
// (release page); risky, blocked and withdrawn edges (graph page); the risks of the newest
// accepted payloads (health page). The decisions are internal/updateservice's; this file
// only words them.

// Bounds of what the pages list of the update service (risks are tenant input).
const (
	// MaxRisksListed bounds the risks a page lists; the others are counted.
	MaxRisksListed = 50
	// maxRisksNamed bounds the risks a sentence names.
	maxRisksNamed = 5
	// healthAcceptedPayloads is how many of the newest accepted payloads the health page
	// lists the risks of.
	healthAcceptedPayloads = 5
)

// Texts the pages show of the update service, which tests and people look for.
const (
	// Withdrawn is what a tombstoned payload's page says first.
	Withdrawn = "Withdrawn: no upgrade leads into it."
	// RiskBlocks, RiskEveryCluster and RiskConditional say what a risk does with its
	// upgrades: no rules, a first rule Always, other rules.
	RiskBlocks       = "Blocks these upgrades for every cluster."
	RiskEveryCluster = "Conditional for every cluster: each is told of the risk and may still update; feeders hold the payload back."
	RiskConditional  = "Conditional: clusters the rules match are told of the risk and may still update."
)

// streamRisks are the risks of stream s as they are now, and warnings for the UpgradeRisks
// left out.
func (p *site) streamRisks(s *catalog.Stream) (*updateservice.Index, []string) {
	return updateservice.StreamRisks(s, p.cat.Risks(), releasePath)
}

// risksVersion identifies the UpgradeRisks of namespace as they are now: a risk added,
// changed (a new object and resourceVersion) or deleted makes another value. The pages' parts
// that show risks are kept under it.
func risksVersion(risks []*v1alpha1.UpgradeRisk, namespace string) string {
	h := sha256.New()
	for _, r := range risks {
		if r.Namespace == namespace {
			fmt.Fprintf(h, "%p %s %s\n", r, r.Name, r.ResourceVersion)
		}
	}
	return hex.EncodeToString(h.Sum(nil)[:8])
}

// updatesView is what the update service does with a payload, as its page shows it.
type updatesView struct {
	// Summary is the sentence that opens the section.
	Summary string
	Risks   []riskView
	// More counts the risks not listed.
	More string
	// ChannelsDeclared says the stream declares update channels (Channels then lists those
	// holding the payload, possibly none).
	ChannelsDeclared bool
	Channels         []channelView
	Pending          []pendingView
	Tombstone        *tombstoneView
	Warnings         []string
}

type riskView struct {
	Name, Message, URL, FixedIn string
	Blocks                      bool
	Effect                      string
	// Rules are the matching rules in order: "Always", or the PromQL query.
	Rules []ruleView
	// From and To are the versions the risk starts from and leads into, as people read them
	// (To empty: not shown); FromPattern and ToPattern say they are regular expressions.
	From, To               string
	FromPattern, ToPattern bool
	// ShowUpgrades shows Upgrades, the tested upgrades it is on; UpgradesMore counts those
	// not named.
	ShowUpgrades bool
	Upgrades     []link
	UpgradesMore int
	// Note follows what it does, e.g. how many upgrades drawn carry it.
	Note     string
	Source   string
	Declared stamp
}

type ruleView struct {
	Type, Query string
}

type channelView struct {
	Name  string
	Since stamp
}

type pendingView struct {
	Channel, From string
	// When is the time of day (and the day when it is not today), DateTime for machines,
	// Until how long from now.
	When, DateTime, Until string
}

type tombstoneView struct {
	Notice, Reason string
	Since          stamp
}

// Empty says the section has nothing to show: no risk, channel, promotion, tombstone or
// warning.
func (u updatesView) Empty() bool {
	return u.Summary == "" && len(u.Risks) == 0 && !u.ChannelsDeclared && len(u.Pending) == 0 && u.Tombstone == nil && len(u.Warnings) == 0
}

// updatesOf words a payload's view for its page.
func updatesOf(s *catalog.Stream, e catalog.Entry, v updateservice.PayloadView, now time.Time) updatesView {
	u := updatesView{Summary: riskSummary(s, v), Warnings: v.Warnings,
		ChannelsDeclared: s.Object.Spec.UpdateService != nil && len(s.Object.Spec.UpdateService.Channels) > 0}
	self := entryPath(s, e.Tag())
	for _, r := range v.UpgradeRisks[:min(len(v.UpgradeRisks), MaxRisksListed)] {
		rv := riskViewOf(r, now)
		for _, from := range r.UpgradesFrom {
			rv.Upgrades = append(rv.Upgrades, link{Text: shortTag(s, from), URL: withQuery(self, "from", from)})
		}
		rv.UpgradesMore, rv.ShowUpgrades = r.UpgradesFromMore, true
		u.Risks = append(u.Risks, rv)
	}
	if more := len(v.UpgradeRisks) - len(u.Risks) + v.UpgradeRisksOmitted; more > 0 {
		u.More = moreRisks(more)
	}
	for _, c := range v.Channels {
		u.Channels = append(u.Channels, channelView{Name: c.Name, Since: stampOf(now, c.Since)})
	}
	for _, p := range v.PendingPromotions {
		u.Pending = append(u.Pending, pendingOf(p, now))
	}
	if t := v.Tombstone; t != nil {
		u.Tombstone = &tombstoneView{Notice: Withdrawn, Reason: t.Reason, Since: stampOf(now, t.Since)}
	}
	return u
}

// riskViewOf words one risk of a payload (its upgrades are the caller's).
func riskViewOf(r updateservice.PayloadRisk, now time.Time) riskView {
	rv := riskView{Name: r.Name, Message: r.Message, URL: r.URL, FixedIn: r.FixedIn, Blocks: r.Blocks, Effect: RiskConditional,
		Source: "Declared by the UpgradeRisk " + r.DeclaredBy, Declared: stampOf(now, r.Declared)}
	switch {
	case r.Blocks:
		rv.Effect = RiskBlocks
	case r.MatchingRules[0].Type == v1alpha1.MatchingRuleAlways:
		rv.Effect = RiskEveryCluster
	}
	if r.Detected {
		rv.Source = "Detected by the controller in the stream’s own results (detectRisks)"
	}
	rv.From, rv.FromPattern = fromText(r.From)
	rv.Rules = rulesOf(r.MatchingRules)
	return rv
}

func rulesOf(rules []v1alpha1.MatchingRule) []ruleView {
	out := make([]ruleView, 0, len(rules))
	for _, m := range rules {
		rv := ruleView{Type: m.Type}
		if m.PromQL != nil {
			rv.Query = m.PromQL.PromQL
		}
		out = append(out, rv)
	}
	return out
}

// fromText is a risk's versions upgraded from, for people: every version, the version an
// anchored literal pattern matches, or the pattern itself (pattern true).
func fromText(from string) (text string, pattern bool) {
	if from == "" {
		return "every version", false
	}
	if lit, ok := updateservice.Literal(from); ok {
		return lit, false
	}
	return from, true
}

// riskSummary is the sentence that opens a payload's update service section: how many tested
// upgrades into it carry a risk, naming the risks; or that risks lead into it that no tested
// upgrade matches yet. Empty when no risk leads into it.
func riskSummary(s *catalog.Stream, v updateservice.PayloadView) string {
	total := len(v.UpgradeRisks) + v.UpgradeRisksOmitted
	if total == 0 {
		return ""
	}
	if v.RiskyUpgrades == 0 {
		return fmt.Sprintf("%s %s into this release; no tested upgrade into it matches yet.", plural(total, "risk"), agree(total, "leads", "lead"))
	}
	var named []string
	on := 0
	for _, r := range v.UpgradeRisks {
		if len(r.UpgradesFrom) == 0 {
			continue
		}
		on++
		if len(named) == maxRisksNamed {
			continue
		}
		from, _ := fromText(r.From)
		if lit, ok := updateservice.Literal(r.From); ok {
			from = shortTag(s, lit)
		}
		named = append(named, fmt.Sprintf("%s (from %s)", r.Name, from))
	}
	list := strings.Join(named, ", ")
	if more := on - len(named) + v.UpgradeRisksOmitted; more > 0 {
		list += fmt.Sprintf(" and %d more", more)
	}
	out := fmt.Sprintf("%s into this release %s a risk: %s.", plural(v.RiskyUpgrades, "upgrade path"), agree(v.RiskyUpgrades, "carries", "carry"), list)
	switch {
	case v.BlockedUpgrades == v.RiskyUpgrades && v.BlockedUpgrades == 1:
		out += " It is blocked for every cluster."
	case v.BlockedUpgrades == v.RiskyUpgrades:
		out += " All of them are blocked for every cluster."
	case v.BlockedUpgrades > 0:
		out += fmt.Sprintf(" %d of them %s blocked for every cluster; the others are conditional.", v.BlockedUpgrades, agree(v.BlockedUpgrades, "is", "are"))
	}
	return out
}

// agree is the verb one or many agree with for a count n.
func agree(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// pendingOf words a promotion still to come: "at 14:05 UTC", "38 minutes from now".
func pendingOf(p updateservice.PendingPromotion, now time.Time) pendingView {
	at := p.At.UTC()
	when := "at " + at.Format("15:04") + " UTC"
	if y, m, d := at.Date(); !sameDay(at, now.UTC()) {
		when = fmt.Sprintf("on %04d-%02d-%02d at %s UTC", y, m, d, at.Format("15:04"))
	}
	return pendingView{Channel: p.Channel, From: p.From, When: when, DateTime: at.Format(time.RFC3339), Until: fromNow(p.At.Sub(now))}
}

func sameDay(a, b time.Time) bool {
	ay, am, ad := a.Date()
	by, bm, bd := b.Date()
	return ay == by && am == bm && ad == bd
}

// fromNow says how far ahead something is: "38 minutes from now".
func fromNow(d time.Duration) string {
	switch {
	case d < time.Minute:
		return "less than a minute from now"
	case d < time.Hour:
		return plural(int(d/time.Minute), "minute") + " from now"
	case d < 48*time.Hour:
		h, m := int(d/time.Hour), int(d%time.Hour/time.Minute)
		if m == 0 {
			return plural(h, "hour") + " from now"
		}
		return plural(h, "hour") + " " + plural(m, "minute") + " from now"
	default:
		return plural(int(d/(24*time.Hour)), "day") + " from now"
	}
}

// healthRisks is the health page's account of the stream's risks: how many, and one line per
// risk leading into one of the newest accepted payloads.
type healthRisks struct {
	Summary  string
	Lines    []streamRiskView
	More     string
	Warnings []string
}

// healthRisksOf counts the stream's risks and lists those leading into its newest accepted
// payloads (at most healthAcceptedPayloads of them, newest first).
func healthRisksOf(s *catalog.Stream, risks *updateservice.Index, warnings []string, now time.Time) healthRisks {
	var accepted []string
	for _, e := range s.Entries {
		if len(accepted) == healthAcceptedPayloads {
			break
		}
		if e.Phase() == v1alpha1.PhaseAccepted {
			accepted = append(accepted, e.Tag())
		}
	}
	declared, detected := 0, 0
	h := healthRisks{Warnings: warnings}
	affecting := 0
	for _, r := range risks.All() {
		if r.Detected {
			detected++
		} else {
			declared++
		}
		var into []link
		for _, tag := range accepted {
			if r.Into(s.Namespace, s.Name, tag) {
				into = append(into, link{Text: tag, URL: entryPath(s, tag)})
			}
		}
		if len(into) == 0 {
			continue
		}
		affecting++
		if len(h.Lines) < MaxRisksListed {
			v := streamRiskOf(r, now)
			v.Into = into
			h.Lines = append(h.Lines, v)
		}
	}
	h.Summary = fmt.Sprintf("%s declared, %d detected", plural(declared, "risk"), detected)
	switch {
	case affecting > 0:
		h.Summary += fmt.Sprintf("; %d %s into the newest accepted payloads.", affecting, agree(affecting, "leads", "lead"))
	case len(accepted) > 0:
		h.Summary += "; none leads into the newest accepted payloads."
	default:
		h.Summary += "."
	}
	if more := affecting - len(h.Lines); more > 0 {
		h.More = moreRisks(more)
	}
	return h
}

// moreRisks counts the risks a list leaves out: "and 3 more risks".
func moreRisks(n int) string {
	return fmt.Sprintf("and %d more %s", n, agree(n, "risk", "risks"))
}
