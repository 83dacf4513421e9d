package updateservice_test

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/server/catalog"
	"github.com/release-controller/release-controller/internal/updateservice"
	"github.com/release-controller/release-controller/internal/verdict/verdicttest"
)

var epoch = time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)

// acceptedAt is an accepted payload of product/4.15 whose PayloadAccepted turned True at
// since, with upgrade runs into it from each of from (state by version).
func acceptedAt(tag string, since time.Time, from map[string][]v1alpha1.JobState) *v1alpha1.ReleasePayload {
	p := verdicttest.Payload("product", "4.15", tag, true)
	meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ConditionPayloadAccepted).LastTransitionTime = metav1.NewTime(since)
	if len(from) == 0 {
		return p
	}
	up := v1alpha1.VerificationStatus{Name: "upgrade", Type: v1alpha1.Informing, State: v1alpha1.JobSuccess}
	for version, states := range from {
		for i, st := range states {
			end := metav1.NewTime(since)
			up.Runs = append(up.Runs, v1alpha1.JobRun{Kind: v1alpha1.RunKindJob, Namespace: "product", Attempt: int32(i + 1),
				Name: fmt.Sprintf("upgrade-%s-%d", version, i), State: st, UpgradeFrom: version, CompletionTime: &end,
				URL: "https://ci.example.com/upgrade-" + version})
		}
	}
	p.Status.Verifications = append(p.Status.Verifications, up)
	return p
}

func upgradeRisk(ns, name string, spec v1alpha1.UpgradeRiskSpec) *v1alpha1.UpgradeRisk {
	if spec.Message == "" {
		spec.Message = name + " breaks."
	}
	if spec.URL == "" {
		spec.URL = "https://issues.example.com/" + name
	}
	return &v1alpha1.UpgradeRisk{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, CreationTimestamp: metav1.NewTime(epoch)}, Spec: spec}
}

func productStream(t *testing.T, payloads ...*v1alpha1.ReleasePayload) *catalog.Stream {
	t.Helper()
	c := catalog.New()
	c.SetStream(&v1alpha1.ReleaseStream{
		ObjectMeta: metav1.ObjectMeta{Namespace: "product", Name: "4.15"},
		Spec: v1alpha1.ReleaseStreamSpec{PayloadRepository: "registry.example.com/product/release", UpdateService: &v1alpha1.UpdateService{
			DetectRisks: true,
			Channels: []v1alpha1.UpdateChannel{
				{Name: "fast", Versions: `^4\.15\..*$`},
				{Name: "stable", Feeders: []v1alpha1.ChannelFeeder{{From: "fast", Delay: metav1.Duration{Duration: 48 * time.Hour}}}},
			},
		}},
	})
	for _, p := range payloads {
		c.SetPayload(p)
	}
	s, err := c.StreamIn("product", "4.15")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func pageURL(ns, stream, tag string) string {
	return "/namespaces/" + ns + "/releasestream/" + stream + "/release/" + tag
}

var promql = []v1alpha1.MatchingRule{{Type: v1alpha1.MatchingRulePromQL, PromQL: &v1alpha1.PromQLRule{PromQL: `topk(1, cluster_infrastructure{type="AWS"})`}}}

// TestDescribePayload: the risks into a payload (declared and detected; other namespaces,
// other streams and one that does not compile left out), the upgrades they are on, its
// channels and the promotion to come.
func TestDescribePayload(t *testing.T) {
	ok, fail := v1alpha1.JobSuccess, v1alpha1.JobFailure
	target := acceptedAt("4.15.2", epoch, map[string][]v1alpha1.JobState{
		"4.14.8": {ok}, "4.14.9": {ok}, "4.15.1": {fail, ok},
	})
	s := productStream(t, acceptedAt("4.15.1", epoch.Add(-time.Hour), nil), target)
	declared := []*v1alpha1.UpgradeRisk{
		upgradeRisk("product", "old-boot", v1alpha1.UpgradeRiskSpec{To: "4.15.2", From: `^4\.14\..*$`, Name: "OldBootImages", MatchingRules: promql, FixedIn: "4.15.3"}),
		upgradeRisk("product", "ingress", v1alpha1.UpgradeRiskSpec{To: `^4\.15\.[0-9]+$`, From: `^4\.15\.1$`, Name: "BrokenIngress"}),
		upgradeRisk("product", "other-stream", v1alpha1.UpgradeRiskSpec{Stream: "4.16", To: "4.15.2", Name: "Elsewhere"}),
		upgradeRisk("team", "other-namespace", v1alpha1.UpgradeRiskSpec{To: "4.15.2", Name: "Elsewhere"}),
		upgradeRisk("product", "broken", v1alpha1.UpgradeRiskSpec{To: `^4.15.($`, Name: "Broken"}),
	}
	e, _ := s.Entry("4.15.2")
	got := updateservice.DescribePayload(s, e, declared, epoch.Add(10*time.Hour), pageURL)

	if got.TestedUpgrades != 3 || got.RiskyUpgrades != 3 || got.BlockedUpgrades != 1 {
		t.Errorf("tested %d, risky %d, blocked %d; want 3, 3, 1", got.TestedUpgrades, got.RiskyUpgrades, got.BlockedUpgrades)
	}
	type brief struct {
		Name, DeclaredBy, From string
		Blocks, Detected       bool
		UpgradesFrom           []string
		Rules                  int
	}
	var risks []brief
	for _, r := range got.UpgradeRisks {
		risks = append(risks, brief{r.Name, r.DeclaredBy, r.From, r.Blocks, r.Detected, r.UpgradesFrom, len(r.MatchingRules)})
	}
	// Exact versions first (by stream, name), then patterns.
	want := []brief{
		{"OldBootImages", "product/old-boot", `^4\.14\..*$`, false, false, []string{"4.14.9", "4.14.8"}, 1},
		{updateservice.RiskFlakyUpgrade, "", `^4\.15\.1$`, false, true, []string{"4.15.1"}, 1},
		{"BrokenIngress", "product/ingress", `^4\.15\.1$`, true, false, []string{"4.15.1"}, 0},
	}
	if !reflect.DeepEqual(risks, want) {
		t.Errorf("risks\n%+v\nwant\n%+v", risks, want)
	}
	if r := got.UpgradeRisks[0]; r.FixedIn != "4.15.3" || r.URL != "https://issues.example.com/old-boot" || r.MatchingRules[0].PromQL.PromQL != promql[0].PromQL.PromQL {
		t.Errorf("OldBootImages is shown as %+v", r)
	}
	if r := got.UpgradeRisks[1]; !strings.Contains(r.Message, "failed in 1 of 2 runs") || r.URL != "https://ci.example.com/upgrade-4.15.1" {
		t.Errorf("the detected risk says %q, links %q", r.Message, r.URL)
	}
	if len(got.Warnings) != 1 || !strings.HasPrefix(got.Warnings[0], "UpgradeRisk product/broken is left out: ") {
		t.Errorf("warnings %q", got.Warnings)
	}
	if want := []updateservice.ChannelMembership{{Name: "fast", Since: epoch}}; !reflect.DeepEqual(got.Channels, want) {
		t.Errorf("channels %+v, want %+v", got.Channels, want)
	}
	// A risk that applies to every cluster (the detected one) holds the promotion back.
	if len(got.PendingPromotions) != 0 {
		t.Errorf("pending %+v, want none: an Always risk leads into the payload", got.PendingPromotions)
	}
	if got.Tombstone != nil {
		t.Errorf("tombstone %+v on a payload without the annotation", got.Tombstone)
	}

	// Without the detected risk (no flaky upgrade), stable waits for the delay.
	s = productStream(t, acceptedAt("4.15.1", epoch.Add(-time.Hour), nil), acceptedAt("4.15.2", epoch, map[string][]v1alpha1.JobState{"4.14.9": {ok}}))
	e, _ = s.Entry("4.15.2")
	got = updateservice.DescribePayload(s, e, declared[:1], epoch.Add(10*time.Hour), pageURL)
	if want := []updateservice.PendingPromotion{{Channel: "stable", From: "fast", At: epoch.Add(48 * time.Hour)}}; !reflect.DeepEqual(got.PendingPromotions, want) {
		t.Errorf("pending %+v, want %+v", got.PendingPromotions, want)
	}
	if got.RiskyUpgrades != 1 || got.BlockedUpgrades != 0 || len(got.Warnings) != 0 {
		t.Errorf("risky %d, blocked %d, warnings %q; want 1, 0, none", got.RiskyUpgrades, got.BlockedUpgrades, got.Warnings)
	}
}

// TestDescribeTombstonedPayload: the reason (bounded) and since when.
func TestDescribeTombstonedPayload(t *testing.T) {
	p := acceptedAt("4.15.2", epoch, nil)
	p.Annotations = map[string]string{v1alpha1.AnnotationTombstone: strings.Repeat("x", 5000)}
	p.Status.Conditions = append(p.Status.Conditions, metav1.Condition{Type: v1alpha1.ConditionPayloadTombstoned, Status: metav1.ConditionTrue,
		Reason: v1alpha1.ReasonTombstoned, LastTransitionTime: metav1.NewTime(epoch.Add(time.Hour))})
	s := productStream(t, p)
	e, _ := s.Entry("4.15.2")
	got := updateservice.DescribePayload(s, e, nil, epoch.Add(2*time.Hour), pageURL)
	if got.Tombstone == nil || !got.Tombstone.Since.Equal(epoch.Add(time.Hour)) || len(got.Tombstone.Reason) > 1024 || !strings.HasPrefix(got.Tombstone.Reason, "xxx") {
		t.Errorf("tombstone %+v", got.Tombstone)
	}
	if len(got.PendingPromotions) != 0 {
		t.Errorf("a tombstoned payload is still to be promoted: %+v", got.PendingPromotions)
	}
}

// TestDescribePayloadBounds: at most MaxPayloadRisks risks, MaxUpgradesNamed upgrades a risk.
func TestDescribePayloadBounds(t *testing.T) {
	from := map[string][]v1alpha1.JobState{}
	for i := range updateservice.MaxUpgradesNamed + 3 {
		from[fmt.Sprintf("4.14.%d", i)] = []v1alpha1.JobState{v1alpha1.JobSuccess}
	}
	s := productStream(t, acceptedAt("4.15.2", epoch, from))
	var declared []*v1alpha1.UpgradeRisk
	for i := range updateservice.MaxPayloadRisks + 7 {
		declared = append(declared, upgradeRisk("product", fmt.Sprintf("risk-%03d", i), v1alpha1.UpgradeRiskSpec{To: "4.15.2", Name: "Risk", MatchingRules: promql}))
	}
	e, _ := s.Entry("4.15.2")
	got := updateservice.DescribePayload(s, e, declared, epoch, pageURL)
	if len(got.UpgradeRisks) != updateservice.MaxPayloadRisks || got.UpgradeRisksOmitted != 7 {
		t.Errorf("%d risks listed, %d omitted; want %d, 7", len(got.UpgradeRisks), got.UpgradeRisksOmitted, updateservice.MaxPayloadRisks)
	}
	if r := got.UpgradeRisks[0]; len(r.UpgradesFrom) != updateservice.MaxUpgradesNamed || r.UpgradesFromMore != 3 {
		t.Errorf("a risk names %d upgrades, %d more; want %d, 3", len(r.UpgradesFrom), r.UpgradesFromMore, updateservice.MaxUpgradesNamed)
	}
	if got.RiskyUpgrades != updateservice.MaxUpgradesNamed+3 {
		t.Errorf("risky upgrades %d", got.RiskyUpgrades)
	}
}

func TestLiteral(t *testing.T) {
	tests := []struct {
		pattern, want string
		ok            bool
	}{
		{`^4\.14\.3$`, "4.14.3", true},
		{`^4\.15\.0-0\.nightly-2026-11-22-120000$`, "4.15.0-0.nightly-2026-11-22-120000", true},
		{`^a$`, "a", true},
		{`^4\.14\..*$`, "", false},
		{`^4\.14\.[0-9]+$`, "", false},
		{`4\.14\.3`, "", false},    // not anchored
		{`^(?i)abc$`, "", false},   // case folded: more than one string
		{`^$`, "", false},          // the empty version is no version
		{`^4\.14\.(3$`, "", false}, // does not compile
	}
	for _, tt := range tests {
		got, ok := updateservice.Literal(tt.pattern)
		if got != tt.want || ok != tt.ok {
			t.Errorf("Literal(%q) = %q, %v; want %q, %v", tt.pattern, got, ok, tt.want, tt.ok)
		}
	}
}
