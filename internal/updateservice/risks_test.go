package updateservice

import (
	"slices"
	"testing"

	"github.com/release-controller/release-controller/api/v1alpha1"
)

func TestRiskMatching(t *testing.T) {
	x := mustIndex(t,
		risk("exact", t0, v1alpha1.UpgradeRiskSpec{To: "4.15.3"}),
		risk("pattern-from", t0, v1alpha1.UpgradeRiskSpec{To: `^4[.]15[.][3-5]$`, From: `^4[.]14[.].*$`, MatchingRules: promql}),
		risk("one-stream", t0, v1alpha1.UpgradeRiskSpec{To: `^4\.15\..*$`, Stream: "4.15-ec"}),
		risk("literal-pattern", t0, v1alpha1.UpgradeRiskSpec{To: `^4\.15\.4$`}),
	)
	tests := []struct {
		name              string
		namespace, stream string
		from, to          string
		want              []string
	}{
		{"an exact version, any source", "product", "4.15", "4.15.1", "4.15.3", []string{"exact"}},
		{"exact and pattern with a matching source", "product", "4.15", "4.14.9", "4.15.3", []string{"exact", "pattern-from"}},
		{"a pattern whose source does not match", "product", "4.15", "4.15.2", "4.15.5", nil},
		{"a pattern that is a literal", "product", "4.15", "4.15.2", "4.15.4", []string{"literal-pattern"}},
		{"patterns are anchored", "product", "4.15", "4.14.9", "4.15.33", nil},
		{"a risk of one stream", "product", "4.15-ec", "4.15.0", "4.15.7", []string{"one-stream"}},
		{"another namespace", "other", "4.15", "4.14.9", "4.15.3", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, r := range x.On(tt.namespace, tt.stream, tt.from, tt.to) {
				got = append(got, r.Object)
			}
			slices.Sort(got)
			if !slices.Equal(got, tt.want) {
				t.Errorf("On(%s, %s → %s) = %v, want %v", tt.stream, tt.from, tt.to, got, tt.want)
			}
		})
	}
}

func TestRiskKinds(t *testing.T) {
	tests := []struct {
		name                 string
		rules                []v1alpha1.MatchingRule
		blocks, appliesToAll bool
	}{
		{"no rules: blocked for everyone", nil, true, true},
		{"Always first: conditional, everyone exposed", []v1alpha1.MatchingRule{{Type: v1alpha1.MatchingRuleAlways}}, false, true},
		{"PromQL first: conditional, some clusters", append(slices.Clone(promql), v1alpha1.MatchingRule{Type: v1alpha1.MatchingRuleAlways}), false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := Compile(risk("r", t0, v1alpha1.UpgradeRiskSpec{To: "4.15.3", MatchingRules: tt.rules}))
			if err != nil {
				t.Fatal(err)
			}
			if r.Blocks() != tt.blocks || r.AppliesToAll() != tt.appliesToAll {
				t.Errorf("Blocks=%v AppliesToAll=%v, want %v %v", r.Blocks(), r.AppliesToAll(), tt.blocks, tt.appliesToAll)
			}
		})
	}
}

func TestCompileRefusesWhatAdmissionWould(t *testing.T) {
	for _, spec := range []v1alpha1.UpgradeRiskSpec{{To: "^4[.15$"}, {To: "4.15.3", From: "^(4$"}} {
		if _, err := Compile(risk("bad", t0, spec)); err == nil {
			t.Errorf("Compile(%+v) = nil error, want one", spec)
		}
	}
}
