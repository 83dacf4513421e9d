package mcp

import (
	"fmt"
	"strings"
	"time"

	"github.com/release-controller/release-controller/internal/server/catalog"
	"github.com/release-controller/release-controller/internal/updateservice"
)

// What the update service (/graph) does with a payload, in get_payload and latest_payload:
// the same value as the release page and release info (updateservice.DescribePayload).

// updatesOf is the update service's view of payload e of stream s at the server's time.
func (t catalogTools) updatesOf(s *catalog.Stream, e catalog.Entry) updateservice.PayloadView {
	return updateservice.DescribePayload(s, e, t.cat.Risks(), t.clock.Now(), releaseLink)
}

// releaseLink is a payload's page, the link of the risks a stream detects.
func releaseLink(namespace, stream, tag string) string {
	return "/namespaces/" + namespace + "/releasestream/" + stream + "/release/" + tag
}

// updatesText is the update service's view as an assistant reads it; empty when it has
// nothing to say.
func updatesText(v updateservice.PayloadView) string {
	var b strings.Builder
	if t := v.Tombstone; t != nil {
		fmt.Fprintf(&b, "Tombstoned since %s: withdrawn, no upgrade leads into it", timeString(t.Since))
		if t.Reason != "" {
			fmt.Fprintf(&b, " (%s)", t.Reason)
		}
		b.WriteString("\n")
	}
	if n := len(v.UpgradeRisks) + v.UpgradeRisksOmitted; n > 0 {
		fmt.Fprintf(&b, "Upgrade risks (%d; %d of %d tested upgrades into it carry one, %d blocked for every cluster):\n",
			n, v.RiskyUpgrades, v.TestedUpgrades, v.BlockedUpgrades)
	}
	for _, r := range v.UpgradeRisks {
		kind := "conditional"
		if r.Blocks {
			kind = "blocks every cluster"
		}
		source := "declared by " + r.DeclaredBy
		if r.Detected {
			source = "detected by the controller"
		}
		fmt.Fprintf(&b, "- %s (%s; %s): %s <%s>\n", r.Name, kind, source, r.Message, r.URL)
		from := r.From
		if from == "" {
			from = "every version"
		}
		fmt.Fprintf(&b, "  from %s; tested upgrades from: %s", from, orNone(strings.Join(r.UpgradesFrom, ", ")))
		if r.UpgradesFromMore > 0 {
			fmt.Fprintf(&b, " and %d more", r.UpgradesFromMore)
		}
		b.WriteString("\n")
		if len(r.MatchingRules) > 0 {
			rules := make([]string, len(r.MatchingRules))
			for i, m := range r.MatchingRules {
				rules[i] = m.Type
				if m.PromQL != nil {
					rules[i] += " " + m.PromQL.PromQL
				}
			}
			fmt.Fprintf(&b, "  matching rules in order: %s\n", strings.Join(rules, "; "))
		}
		if r.FixedIn != "" {
			fmt.Fprintf(&b, "  fixed in %s\n", r.FixedIn)
		}
	}
	if v.UpgradeRisksOmitted > 0 {
		fmt.Fprintf(&b, "- and %d more\n", v.UpgradeRisksOmitted)
	}
	if len(v.Channels) > 0 {
		parts := make([]string, len(v.Channels))
		for i, c := range v.Channels {
			parts[i] = fmt.Sprintf("%s (since %s)", c.Name, timeString(c.Since))
		}
		fmt.Fprintf(&b, "Channels: %s\n", strings.Join(parts, ", "))
	}
	for _, p := range v.PendingPromotions {
		fmt.Fprintf(&b, "Enters %s at %s (fed from %s)\n", p.Channel, p.At.UTC().Format(time.RFC3339), p.From)
	}
	for _, w := range v.Warnings {
		fmt.Fprintf(&b, "Warning: %s\n", w)
	}
	return b.String()
}
