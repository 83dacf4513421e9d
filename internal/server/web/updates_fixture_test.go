package web_test

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/server/catalog"
)

// The update service's fixture: demo/nightly with declared channels and detectRisks, two
// UpgradeRisks and one that does not compile, and tag5 tombstoned.
const (
	oldBootQuery  = `topk(1, cluster_infrastructure_provider{type="AWS"}) * on() group_left() (node_boot_image_age_days > 365)`
	tombstoneText = "breaks <ingress> on upgrade"
	// stableDelay makes tag2 (accepted 2026-11-21T16:00) enter stable at 16:38 on the
	// fixture's day, 38 minutes after now.
	stableDelay = 24*time.Hour + 38*time.Minute
)

// upgradeRisk is an UpgradeRisk of namespace ns declared at 2026-11-22T14:00.
func upgradeRisk(ns, name string, spec v1alpha1.UpgradeRiskSpec) *v1alpha1.UpgradeRisk {
	return &v1alpha1.UpgradeRisk{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, ResourceVersion: "1", CreationTimestamp: metav1.NewTime(at("2026-11-22T14:00:00Z"))},
		Spec:       spec,
	}
}

// oldBootImages is a conditional risk on the upgrades from the payloads of 2026-11-21 into
// tag4: PromQL first, then Always.
func oldBootImages() *v1alpha1.UpgradeRisk {
	return upgradeRisk("demo", "old-boot-images", v1alpha1.UpgradeRiskSpec{
		Stream: "nightly", To: tag4, From: `^4\.15\.0-0\.nightly-2026-11-21-.*$`, Name: "OldBootImages",
		Message: "Clusters installed from boot images older than a year fail to drain their nodes during the upgrade.",
		URL:     "https://issues.example.com/browse/OCPBUGS-101",
		MatchingRules: []v1alpha1.MatchingRule{
			{Type: v1alpha1.MatchingRulePromQL, PromQL: &v1alpha1.PromQLRule{PromQL: oldBootQuery}},
			{Type: v1alpha1.MatchingRuleAlways},
		},
		FixedIn: "4.15.1",
	})
}

// brokenIngress blocks every upgrade into the payloads of 2026-11-22 09:xx (tag3).
func brokenIngress() *v1alpha1.UpgradeRisk {
	return upgradeRisk("demo", "broken-ingress", v1alpha1.UpgradeRiskSpec{
		To: `^4\.15\.0-0\.nightly-2026-11-22-09.*$`, Name: "BrokenIngress",
		Message: "The ingress controller crash-loops after the upgrade.", URL: "https://issues.example.com/browse/OCPBUGS-102",
	})
}

// riskFixture is fixture() with the update service at work on demo/nightly.
func riskFixture() *catalog.Catalog {
	cat := fixture()
	s, err := cat.StreamIn("demo", "nightly")
	if err != nil {
		panic(err)
	}
	stream := s.Object.DeepCopy()
	stream.Spec.UpdateService = &v1alpha1.UpdateService{
		DetectRisks: true,
		Channels: []v1alpha1.UpdateChannel{
			{Name: "candidate", Versions: `^4\.15\..*$`},
			{Name: "stable", Feeders: []v1alpha1.ChannelFeeder{{From: "candidate", Delay: metav1.Duration{Duration: stableDelay}}}},
		},
	}
	cat.SetStream(stream)
	e, _ := s.Entry(tag5)
	p := e.Payload.DeepCopy()
	p.Annotations = map[string]string{v1alpha1.AnnotationTombstone: tombstoneText}
	p.Status.Conditions = append(p.Status.Conditions, cond(v1alpha1.ConditionPayloadTombstoned, metav1.ConditionTrue, v1alpha1.ReasonTombstoned, tombstoneText, "2026-11-22T15:30:00Z"))
	setPayload(cat, p)
	cat.SetRisk(oldBootImages())
	cat.SetRisk(brokenIngress())
	// Stored before the CRD refused it: left out with a warning.
	cat.SetRisk(upgradeRisk("demo", "unparsable", v1alpha1.UpgradeRiskSpec{To: `^4\.15\.($`, Name: "Unparsable", Message: "m", URL: "https://issues.example.com/x"}))
	// Another namespace's risk on the same stream name and tag: not demo's.
	cat.SetRisk(upgradeRisk("team", "elsewhere", v1alpha1.UpgradeRiskSpec{Stream: "nightly", To: tag4, Name: "Elsewhere", Message: "m", URL: "https://issues.example.com/y"}))
	return cat
}

// manyRisks declares n conditional risks into tag.
func manyRisks(cat *catalog.Catalog, n int, tag string) {
	for i := range n {
		cat.SetRisk(upgradeRisk("demo", fmt.Sprintf("many-%03d", i), v1alpha1.UpgradeRiskSpec{
			To: tag, Name: fmt.Sprintf("Many%03d", i), Message: "One of many.", URL: "https://issues.example.com/many",
			MatchingRules: []v1alpha1.MatchingRule{{Type: v1alpha1.MatchingRuleAlways}},
		}))
	}
}
