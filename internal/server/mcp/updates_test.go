package mcp_test

import (
	"reflect"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/releaselog"
	"github.com/release-controller/release-controller/internal/server/catalog"
	"github.com/release-controller/release-controller/internal/server/mcp"
	"github.com/release-controller/release-controller/internal/updateservice"
	"github.com/release-controller/release-controller/internal/verdict/verdicttest"
)

// updatesCatalog: ocp/4.18 declares channels fast (accepted 4.18.*) and stable (fed from
// fast after 48h); 4.18.1 was accepted at 10:00, 4.18.2 upgrades from it and carries a
// conditional risk and a blocking one, 4.18.3 is tombstoned.
func updatesCatalog() *catalog.Catalog {
	c := catalog.New()
	stream := newStream("ocp", "4.18")
	stream.Spec.UpdateService = &v1alpha1.UpdateService{Channels: []v1alpha1.UpdateChannel{
		{Name: "fast", Versions: `^4\.18\..*$`},
		{Name: "stable", Feeders: []v1alpha1.ChannelFeeder{{From: "fast", Delay: metav1.Duration{Duration: 48 * time.Hour}}}},
	}}
	c.SetStream(stream)
	accepted := func(tag, since string) *v1alpha1.ReleasePayload {
		p := newPayload("ocp", "4.18", tag, v1alpha1.PhaseAccepted)
		verdicttest.Earn(p, v1alpha1.PhaseAccepted)
		for i := range p.Status.Conditions {
			p.Status.Conditions[i].LastTransitionTime = metav1.NewTime(at(since))
		}
		return p
	}
	c.SetPayload(accepted("4.18.1", "2026-11-22T10:00:00Z"))
	target := accepted("4.18.2", "2026-11-22T11:00:00Z")
	target.Status.Verifications = append(target.Status.Verifications, v1alpha1.VerificationStatus{
		Name: "upgrade", Type: v1alpha1.Informing, State: v1alpha1.JobSuccess, Runs: []v1alpha1.JobRun{
			{Kind: v1alpha1.RunKindJob, Namespace: "ocp", Name: "up-1", Attempt: 1, State: v1alpha1.JobSuccess, UpgradeFrom: "4.18.1"},
		}})
	c.SetPayload(target)
	dead := accepted("4.18.3", "2026-11-22T11:30:00Z")
	dead.Annotations = map[string]string{v1alpha1.AnnotationTombstone: "breaks ingress"}
	dead.Status.Conditions = append(dead.Status.Conditions, metav1.Condition{Type: v1alpha1.ConditionPayloadTombstoned, Status: metav1.ConditionTrue,
		Reason: v1alpha1.ReasonTombstoned, LastTransitionTime: metav1.NewTime(at("2026-11-22T12:00:00Z"))})
	c.SetPayload(dead)
	declared := metav1.NewTime(at("2026-11-22T11:30:00Z"))
	c.SetRisk(&v1alpha1.UpgradeRisk{ObjectMeta: metav1.ObjectMeta{Namespace: "ocp", Name: "old-boot", CreationTimestamp: declared}, Spec: v1alpha1.UpgradeRiskSpec{
		To: "4.18.2", From: `^4\.18\.1$`, Name: "OldBootImages", Message: "Old boot images fail to drain.", URL: "https://issues.example.com/1",
		MatchingRules: []v1alpha1.MatchingRule{{Type: v1alpha1.MatchingRulePromQL, PromQL: &v1alpha1.PromQLRule{PromQL: "node_boot_image_age_days > 365"}}, {Type: v1alpha1.MatchingRuleAlways}},
		FixedIn:       "4.18.4",
	}})
	return c
}

func TestGetPayloadUpdateService(t *testing.T) {
	opts := releaselog.Options{Clock: clocktesting.NewFakePassiveClock(at("2026-11-22T12:30:00Z"))}
	session := serveAll(t, releaselog.NewStore(), opts, updatesCatalog(), nil)

	var p mcp.Payload
	text, isError := call(t, session, mcp.ToolGetPayload, map[string]any{"tag": "4.18.2"}, &p)
	if isError {
		t.Fatalf("get_payload: %s", text)
	}
	want := updateservice.PayloadView{
		UpgradeRisks: []updateservice.PayloadRisk{{
			Name: "OldBootImages", Message: "Old boot images fail to drain.", URL: "https://issues.example.com/1",
			MatchingRules: []v1alpha1.MatchingRule{{Type: v1alpha1.MatchingRulePromQL, PromQL: &v1alpha1.PromQLRule{PromQL: "node_boot_image_age_days > 365"}}, {Type: v1alpha1.MatchingRuleAlways}},
			FixedIn:       "4.18.4", From: `^4\.18\.1$`, UpgradesFrom: []string{"4.18.1"}, DeclaredBy: "ocp/old-boot", Declared: at("2026-11-22T11:30:00Z"),
		}},
		TestedUpgrades: 1, RiskyUpgrades: 1,
		Channels:          []updateservice.ChannelMembership{{Name: "fast", Since: at("2026-11-22T11:00:00Z")}},
		PendingPromotions: []updateservice.PendingPromotion{{Channel: "stable", From: "fast", At: at("2026-11-24T11:00:00Z")}},
	}
	if !reflect.DeepEqual(p.UpdateService, want) {
		t.Errorf("update_service =\n%+v\nwant\n%+v", p.UpdateService, want)
	}
	for _, line := range []string{
		"Upgrade risks (1; 1 of 1 tested upgrades into it carry one, 0 blocked for every cluster):\n",
		"- OldBootImages (conditional; declared by ocp/old-boot): Old boot images fail to drain. <https://issues.example.com/1>\n",
		"  from ^4\\.18\\.1$; tested upgrades from: 4.18.1\n",
		"  matching rules in order: PromQL node_boot_image_age_days > 365; Always\n",
		"  fixed in 4.18.4\n",
		"Channels: fast (since 2026-11-22T11:00:00Z)\n",
		"Enters stable at 2026-11-24T11:00:00Z (fed from fast)\n",
	} {
		if !strings.Contains(text, line) {
			t.Errorf("get_payload text lacks %q:\n%s", line, text)
		}
	}

	// The tombstoned payload: withdrawn, in fast still, promoted no further.
	p = mcp.Payload{} // omitted fields must not keep the last call's values
	text, isError = call(t, session, mcp.ToolGetPayload, map[string]any{"tag": "4.18.3"}, &p)
	if isError || p.UpdateService.Tombstone == nil || p.UpdateService.Tombstone.Reason != "breaks ingress" || !p.UpdateService.Tombstone.Since.Equal(at("2026-11-22T12:00:00Z")) ||
		len(p.UpdateService.PendingPromotions) != 0 || len(p.UpdateService.Channels) != 1 {
		t.Errorf("tombstoned payload: %+v: %s", p.UpdateService, text)
	}
	if !strings.Contains(text, "Tombstoned since 2026-11-22T12:00:00Z: withdrawn, no upgrade leads into it (breaks ingress)\n") {
		t.Errorf("get_payload text lacks the tombstone:\n%s", text)
	}
}
