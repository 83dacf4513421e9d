package web

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/server/catalog"
	"github.com/release-controller/release-controller/internal/updateservice"
)

func TestRiskSummary(t *testing.T) {
	cat := catalog.New()
	cat.SetStream(&v1alpha1.ReleaseStream{ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "nightly"},
		Spec: v1alpha1.ReleaseStreamSpec{TagPrefix: "4.15.0-0.nightly"}})
	s, err := cat.StreamIn("demo", "nightly")
	if err != nil {
		t.Fatal(err)
	}
	on := func(name, from string, upgrades ...string) updateservice.PayloadRisk {
		return updateservice.PayloadRisk{Name: name, From: from, UpgradesFrom: upgrades}
	}
	tests := []struct {
		name string
		view updateservice.PayloadView
		want string
	}{
		{"no risk", updateservice.PayloadView{TestedUpgrades: 3}, ""},
		{"risks on no tested upgrade", updateservice.PayloadView{UpgradeRisks: []updateservice.PayloadRisk{on("A", ""), on("B", "")}},
			"2 risks lead into this release; no tested upgrade into it matches yet."},
		{"one risk, not yet tested", updateservice.PayloadView{UpgradeRisks: []updateservice.PayloadRisk{on("A", "")}},
			"1 risk leads into this release; no tested upgrade into it matches yet."},
		{"pattern, literal of the stream and every version", updateservice.PayloadView{RiskyUpgrades: 3, UpgradeRisks: []updateservice.PayloadRisk{
			on("OldBootImages", `^4\.14\..*$`, "4.14.1", "4.14.2"), on("Flaky", `^4\.15\.0-0\.nightly-2026-11-21-150000$`, "4.15.0-0.nightly-2026-11-21-150000"),
			on("Untested", `^4\.13\..*$`), on("Everyone", "", "4.14.1"),
		}}, `3 upgrade paths into this release carry a risk: OldBootImages (from ^4\.14\..*$), Flaky (from 2026-11-21-150000), Everyone (from every version).`},
		{"some blocked", updateservice.PayloadView{RiskyUpgrades: 3, BlockedUpgrades: 1, UpgradeRisks: []updateservice.PayloadRisk{on("A", "", "x")}},
			"3 upgrade paths into this release carry a risk: A (from every version). 1 of them is blocked for every cluster; the others are conditional."},
		{"all blocked", updateservice.PayloadView{RiskyUpgrades: 2, BlockedUpgrades: 2, UpgradeRisks: []updateservice.PayloadRisk{on("A", "", "x")}},
			"2 upgrade paths into this release carry a risk: A (from every version). All of them are blocked for every cluster."},
		{"more than named, and omitted", updateservice.PayloadView{RiskyUpgrades: 1, UpgradeRisksOmitted: 4, UpgradeRisks: []updateservice.PayloadRisk{
			on("A", "", "x"), on("B", "", "x"), on("C", "", "x"), on("D", "", "x"), on("E", "", "x"), on("F", "", "x"),
		}}, "1 upgrade path into this release carries a risk: A (from every version), B (from every version), C (from every version), D (from every version), E (from every version) and 5 more."},
	}
	for _, tt := range tests {
		if got := riskSummary(s, tt.view); got != tt.want {
			t.Errorf("%s:\n got %q\nwant %q", tt.name, got, tt.want)
		}
	}
}

func TestFromNow(t *testing.T) {
	for _, tt := range []struct {
		d    time.Duration
		want string
	}{
		{30 * time.Second, "less than a minute from now"},
		{time.Minute, "1 minute from now"},
		{38*time.Minute + 59*time.Second, "38 minutes from now"},
		{time.Hour, "1 hour from now"},
		{25*time.Hour + 5*time.Minute, "25 hours 5 minutes from now"},
		{72 * time.Hour, "3 days from now"},
	} {
		if got := fromNow(tt.d); got != tt.want {
			t.Errorf("fromNow(%v) = %q, want %q", tt.d, got, tt.want)
		}
	}
}

func TestPendingOf(t *testing.T) {
	now := time.Date(2026, 11, 22, 13, 27, 0, 0, time.UTC)
	for _, tt := range []struct {
		at   time.Time
		want pendingView
	}{
		{time.Date(2026, 11, 22, 14, 5, 0, 0, time.UTC), pendingView{Channel: "stable", From: "fast", When: "at 14:05 UTC", DateTime: "2026-11-22T14:05:00Z", Until: "38 minutes from now"}},
		{time.Date(2026, 11, 24, 9, 0, 0, 0, time.UTC), pendingView{Channel: "stable", From: "fast", When: "on 2026-11-24 at 09:00 UTC", DateTime: "2026-11-24T09:00:00Z", Until: "43 hours 33 minutes from now"}},
	} {
		if got := pendingOf(updateservice.PendingPromotion{Channel: "stable", From: "fast", At: tt.at}, now); got != tt.want {
			t.Errorf("pendingOf(%v) = %+v, want %+v", tt.at, got, tt.want)
		}
	}
}

func TestFromText(t *testing.T) {
	for _, tt := range []struct {
		from, want string
		pattern    bool
	}{
		{"", "every version", false},
		{`^4\.14\.3$`, "4.14.3", false},
		{`^4\.14\..*$`, `^4\.14\..*$`, true},
	} {
		if got, pattern := fromText(tt.from); got != tt.want || pattern != tt.pattern {
			t.Errorf("fromText(%q) = %q, %v; want %q, %v", tt.from, got, pattern, tt.want, tt.pattern)
		}
	}
}

// risksVersion changes with a namespace's risks, and only with them.
func TestRisksVersion(t *testing.T) {
	a := &v1alpha1.UpgradeRisk{ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "a", ResourceVersion: "1"}}
	b := &v1alpha1.UpgradeRisk{ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "b", ResourceVersion: "1"}}
	other := &v1alpha1.UpgradeRisk{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "a", ResourceVersion: "1"}}
	changed := a.DeepCopy()
	changed.ResourceVersion = "2"
	base := risksVersion([]*v1alpha1.UpgradeRisk{a}, "demo")
	if risksVersion([]*v1alpha1.UpgradeRisk{a, other}, "demo") != base {
		t.Errorf("another namespace's risk changed demo's version")
	}
	for name, risks := range map[string][]*v1alpha1.UpgradeRisk{"added": {a, b}, "changed": {changed}, "deleted": nil} {
		if risksVersion(risks, "demo") == base {
			t.Errorf("a risk %s kept the version", name)
		}
	}
}
