package v1alpha1

import "strings"

// SkippedUpgrades returns the verifications listed in the AnnotationUpgradeSkipped annotation.
func (p *ReleasePayload) SkippedUpgrades() map[string]bool {
	skipped := map[string]bool{}
	for name := range strings.SplitSeq(p.Annotations[AnnotationUpgradeSkipped], ",") {
		if name = strings.TrimSpace(name); name != "" {
			skipped[name] = true
		}
	}
	return skipped
}
