package updateservice

import (
	"fmt"
	"regexp/syntax"
	"time"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/conditions"
	"github.com/release-controller/release-controller/internal/server/catalog"
)

// What the update service does with one payload, for people and API clients: the release
// page, release info (REST) and MCP's get_payload show it. Everything is bounded, since
// risks, annotations and channel names are written by tenants.

// Bounds of a payload's view.
const (
	// MaxPayloadRisks bounds the risks listed; the others are counted.
	MaxPayloadRisks = 50
	// MaxUpgradesNamed bounds the tested upgrades a risk names; the others are counted.
	MaxUpgradesNamed = 20
	// maxWarnings bounds the warnings of a view.
	maxWarnings = 10
	// maxTombstoneReason bounds the reason shown (an annotation's value).
	maxTombstoneReason = 1024
)

// PayloadView is what the update service does with one payload at a moment.
type PayloadView struct {
	// UpgradeRisks are the risks leading into the payload, in the index's order.
	UpgradeRisks []PayloadRisk `json:"upgradeRisks" jsonschema:"the risks of upgrades into this payload: UpgradeRisk objects and risks the controller detected"`
	// UpgradeRisksOmitted counts the risks beyond MaxPayloadRisks.
	UpgradeRisksOmitted int `json:"upgradeRisksOmitted,omitempty" jsonschema:"how many more risks lead into the payload than are listed"`
	// TestedUpgrades counts the tested upgrades into the payload; RiskyUpgrades those that
	// carry a risk, BlockedUpgrades those removed for every cluster by a risk without rules.
	TestedUpgrades  int `json:"testedUpgrades" jsonschema:"how many tested upgrades lead into the payload"`
	RiskyUpgrades   int `json:"riskyUpgrades" jsonschema:"how many of them carry a risk (conditional or blocked)"`
	BlockedUpgrades int `json:"blockedUpgrades" jsonschema:"how many of them are blocked for every cluster"`
	// Channels are the stream's declared channels holding the payload, by name.
	Channels []ChannelMembership `json:"channels" jsonschema:"the stream's declared update channels holding the payload, and since when"`
	// PendingPromotions are the feeders' moves of the payload still to come, soonest first.
	PendingPromotions []PendingPromotion `json:"pendingPromotions,omitempty" jsonschema:"channels the payload will enter once a feeder's delay is over, soonest first"`
	// Tombstone is set when the payload is withdrawn from the update service.
	Tombstone *PayloadTombstone `json:"tombstone,omitempty" jsonschema:"set when the payload is withdrawn: no upgrade leads into it"`
	// Warnings say what the view could not take into account (a risk or channel that does not
	// compile).
	Warnings []string `json:"updateServiceWarnings,omitempty" jsonschema:"risks or channels left out because they do not compile"`
}

// PayloadRisk is one risk leading into a payload.
type PayloadRisk struct {
	Name          string                  `json:"name"`
	Message       string                  `json:"message"`
	URL           string                  `json:"url"`
	MatchingRules []v1alpha1.MatchingRule `json:"matchingRules" jsonschema:"which clusters the risk applies to, evaluated in order; empty: it blocks the upgrades for every cluster"`
	FixedIn       string                  `json:"fixedIn,omitempty"`
	// From is the risk's pattern of versions upgraded from; empty: every version.
	From string `json:"from,omitempty" jsonschema:"the anchored regular expression of the versions upgraded from; empty: every version"`
	// UpgradesFrom are the versions of the tested upgrades into the payload the risk is on.
	UpgradesFrom     []string `json:"upgradesFrom" jsonschema:"the versions of the tested upgrades into this payload that carry the risk"`
	UpgradesFromMore int      `json:"upgradesFromMore,omitempty" jsonschema:"how many more such upgrades there are than are named"`
	// Blocks: no matching rules, the upgrades are removed for every cluster.
	Blocks bool `json:"blocks" jsonschema:"true: the upgrades are removed for every cluster; false: they are served as conditional updates"`
	// DeclaredBy names the UpgradeRisk (namespace/name); empty for a detected risk.
	DeclaredBy string `json:"declaredBy,omitempty" jsonschema:"the UpgradeRisk that declares the risk, as namespace/name"`
	// Detected marks a risk the controller found in the stream's results (detectRisks).
	Detected bool      `json:"detected,omitempty" jsonschema:"true for a risk the controller detected in the stream's own results"`
	Declared time.Time `json:"declared,omitzero" jsonschema:"when the risk was declared"`
}

// ChannelMembership is a channel holding a payload, and since when.
type ChannelMembership struct {
	Name  string    `json:"name"`
	Since time.Time `json:"since"`
}

// PendingPromotion is a feeder's move of a payload into Channel from From at At, still to
// come.
type PendingPromotion struct {
	Channel string    `json:"channel"`
	From    string    `json:"from"`
	At      time.Time `json:"at"`
}

// PayloadTombstone is a payload's withdrawal from the update service.
type PayloadTombstone struct {
	Reason string    `json:"reason"`
	Since  time.Time `json:"since"`
}

// StreamRisks compiles the UpgradeRisks that may apply to stream s (those of its namespace
// naming it or no stream) and adds those s detects itself (Detect). An UpgradeRisk that does
// not compile (stored before its CRD refused it) is left out with a warning naming it.
func StreamRisks(s *catalog.Stream, declared []*v1alpha1.UpgradeRisk, pageURL func(namespace, stream, tag string) string) (*Index, []string) {
	var compiled []Risk
	var warnings []string
	for _, u := range declared {
		if u.Namespace != s.Namespace || (u.Spec.Stream != "" && u.Spec.Stream != s.Name) {
			continue
		}
		r, err := Compile(u)
		if err != nil {
			warnings = addWarning(warnings, fmt.Sprintf("UpgradeRisk %s/%s is left out: %v", u.Namespace, u.Name, err))
			continue
		}
		compiled = append(compiled, r)
	}
	return RisksOf(compiled, []*catalog.Stream{s}, pageURL), warnings
}

// addWarning appends w unless maxWarnings are there already (the last one then says so).
func addWarning(warnings []string, w string) []string {
	switch {
	case len(warnings) < maxWarnings-1:
		return append(warnings, conditions.Truncate(w, 512))
	case len(warnings) == maxWarnings-1:
		return append(warnings, "More risks or channels are left out.")
	}
	return warnings
}

// PayloadOf is what the update service does with payload e of stream s at now, given the
// stream's risks (StreamRisks).
func PayloadOf(s *catalog.Stream, e catalog.Entry, risks *Index, now time.Time) PayloadView {
	tag := e.Tag()
	v := PayloadView{UpgradeRisks: []PayloadRisk{}, Channels: []ChannelMembership{}}
	into := s.UpgradesInto(tag)
	v.TestedUpgrades = len(into)
	for _, u := range into {
		on := risks.On(s.Namespace, s.Name, u.From, tag)
		if len(on) == 0 {
			continue
		}
		v.RiskyUpgrades++
		for _, r := range on {
			if r.Blocks() {
				v.BlockedUpgrades++
				break
			}
		}
	}
	for _, r := range risks.Into(s.Namespace, s.Name, tag) {
		if len(v.UpgradeRisks) == MaxPayloadRisks {
			v.UpgradeRisksOmitted++
			continue
		}
		v.UpgradeRisks = append(v.UpgradeRisks, payloadRisk(r, into))
	}
	if since, dead := Tombstone(e, now); dead {
		v.Tombstone = &PayloadTombstone{Reason: conditions.Truncate(e.Payload.Annotations[v1alpha1.AnnotationTombstone], maxTombstoneReason), Since: since}
	}
	m, err := Membership(s, risks, now)
	if err != nil {
		v.Warnings = addWarning(v.Warnings, "The stream's channels are left out: "+err.Error())
		return v
	}
	for _, name := range m.Of(tag) {
		since, _ := m.Joined(name, tag)
		v.Channels = append(v.Channels, ChannelMembership{Name: name, Since: since})
	}
	for _, p := range m.Pending(tag) {
		v.PendingPromotions = append(v.PendingPromotions, PendingPromotion(p))
	}
	return v
}

// DescribePayload is StreamRisks and PayloadOf in one call, for a handler that shows one
// payload (release info, MCP): declared are every UpgradeRisk (catalog.Risks), pageURL
// links a payload's page for the risks the stream detects.
func DescribePayload(s *catalog.Stream, e catalog.Entry, declared []*v1alpha1.UpgradeRisk, now time.Time, pageURL func(namespace, stream, tag string) string) PayloadView {
	risks, warnings := StreamRisks(s, declared, pageURL)
	v := PayloadOf(s, e, risks, now)
	for _, w := range v.Warnings {
		warnings = addWarning(warnings, w)
	}
	v.Warnings = warnings
	return v
}

// payloadRisk is r as a payload's view shows it, with the tested upgrades into the payload
// it is on.
func payloadRisk(r *Risk, into []catalog.Upgrade) PayloadRisk {
	pr := PayloadRisk{
		Name: r.Name, Message: r.Message, URL: r.URL, MatchingRules: r.Rules, FixedIn: r.FixedIn,
		From: r.FromPattern(), UpgradesFrom: []string{}, Blocks: r.Blocks(), Detected: r.Detected, Declared: r.Declared,
	}
	if pr.MatchingRules == nil {
		pr.MatchingRules = []v1alpha1.MatchingRule{}
	}
	if !r.Detected {
		pr.DeclaredBy = r.Namespace + "/" + r.Object
	}
	for _, u := range into {
		if r.from != nil && !r.from.MatchString(u.From) {
			continue
		}
		if len(pr.UpgradesFrom) == MaxUpgradesNamed {
			pr.UpgradesFromMore++
			continue
		}
		pr.UpgradesFrom = append(pr.UpgradesFrom, u.From)
	}
	return pr
}

// ToPattern is the version the risk leads into, or its pattern of such versions.
func (r *Risk) ToPattern() string {
	if r.to != nil {
		return r.to.String()
	}
	return r.toExact
}

// FromPattern is the risk's pattern of versions upgraded from; empty: every version.
func (r *Risk) FromPattern() string {
	if r.from == nil {
		return ""
	}
	return r.from.String()
}

// Literal is the one string an anchored pattern (^…$) matches, when it matches only one:
// ^4\.14\.3$ is 4.14.3. People read a version better than its pattern.
func Literal(pattern string) (string, bool) {
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return "", false
	}
	re = re.Simplify()
	if re.Op != syntax.OpConcat || len(re.Sub) != 3 {
		return "", false
	}
	begin, lit, end := re.Sub[0], re.Sub[1], re.Sub[2]
	if begin.Op != syntax.OpBeginText || end.Op != syntax.OpEndText || lit.Op != syntax.OpLiteral || lit.Flags&syntax.FoldCase != 0 {
		return "", false
	}
	return string(lit.Rune), true
}
