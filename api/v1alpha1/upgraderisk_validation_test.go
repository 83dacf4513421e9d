//go:build !unit

package v1alpha1_test

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/release-controller/release-controller/api/v1alpha1"
)

func validRisk(ns string) *v1alpha1.UpgradeRisk {
	return &v1alpha1.UpgradeRisk{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "old-boot-images"},
		Spec: v1alpha1.UpgradeRiskSpec{
			To: "4.15.3", From: `^4[.]14[.].*$`, Name: "OldBootImages",
			Message: "Clusters installed before 4.10 fail to boot new nodes.", URL: "https://issues.example.com/browse/OCPBUGS-1",
			MatchingRules: []v1alpha1.MatchingRule{
				{Type: v1alpha1.MatchingRulePromQL, PromQL: &v1alpha1.PromQLRule{PromQL: `cluster_installer{version=~"4.[0-9][.].*"}`}},
				{Type: v1alpha1.MatchingRuleAlways},
			},
		},
	}
}

func TestValidRisksAndChannelsAreAdmitted(t *testing.T) {
	ns := env.Namespace(t)
	ctx := context.Background()
	if err := env.Client.Create(ctx, validRisk(ns)); err != nil {
		t.Fatalf("creating a valid risk: %v", err)
	}
	blocked := validRisk(ns)
	blocked.Name, blocked.Spec.To, blocked.Spec.From, blocked.Spec.MatchingRules = "blocked", `^4[.]15[.][0-9]+$`, "", nil
	if err := env.Client.Create(ctx, blocked); err != nil {
		t.Fatalf("creating a risk blocking edges for everyone: %v", err)
	}
	s := validStream(ns)
	s.Spec.UpdateService = &v1alpha1.UpdateService{DetectRisks: true, Channels: []v1alpha1.UpdateChannel{
		{Name: "fast-4.15", Versions: `^4[.]15[.].*$`},
		{Name: "stable-4.15", Feeders: []v1alpha1.ChannelFeeder{{From: "fast-4.15", Delay: metav1.Duration{Duration: 48 * time.Hour}, Filter: `^4[.]15[.][0-9]+$`}}},
	}}
	if err := env.Client.Create(ctx, s); err != nil {
		t.Fatalf("creating a stream with channels: %v", err)
	}
}

func TestInvalidRisksAreRejected(t *testing.T) {
	ns := env.Namespace(t)
	tests := []struct {
		name   string
		mutate func(r *v1alpha1.UpgradeRisk)
		want   string
	}{
		{"to that is neither a version nor a pattern", func(r *v1alpha1.UpgradeRisk) { r.Spec.To = "4.15 or later" }, "to must be a version"},
		{"to pattern not anchored at the end", func(r *v1alpha1.UpgradeRisk) { r.Spec.To = "^4[.]15" }, "to must be a version or an anchored regular expression"},
		{"to pattern that does not compile", func(r *v1alpha1.UpgradeRisk) { r.Spec.To = "^4[.15$" }, "spec.to"},
		{"from not anchored", func(r *v1alpha1.UpgradeRisk) { r.Spec.From = "4.14.*" }, "from must be an anchored regular expression"},
		{"from that does not compile", func(r *v1alpha1.UpgradeRisk) { r.Spec.From = "^(4.14$" }, "spec.from"},
		{"risk name that is no reason", func(r *v1alpha1.UpgradeRisk) { r.Spec.Name = "old boot images" }, "spec.name in body should match"},
		{"no message", func(r *v1alpha1.UpgradeRisk) { r.Spec.Message = "" }, "spec.message"},
		{"url that is no URL", func(r *v1alpha1.UpgradeRisk) { r.Spec.URL = "OCPBUGS-1" }, "url must be an absolute http or https URL"},
		{"url of another scheme", func(r *v1alpha1.UpgradeRisk) { r.Spec.URL = "javascript:alert(1)" }, "url must be an absolute http or https URL"},
		{"PromQL rule without a query", func(r *v1alpha1.UpgradeRisk) { r.Spec.MatchingRules[0].PromQL = nil }, "promql is set exactly when type is PromQL"},
		{"Always rule with a query", func(r *v1alpha1.UpgradeRisk) {
			r.Spec.MatchingRules[1].PromQL = &v1alpha1.PromQLRule{PromQL: "up"}
		}, "promql is set exactly when type is PromQL"},
		{"unknown rule type", func(r *v1alpha1.UpgradeRisk) { r.Spec.MatchingRules[1].Type = "Sometimes" }, "Unsupported value"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := validRisk(ns)
			tt.mutate(r)
			expectRejected(t, env.Client.Create(context.Background(), r), tt.want)
		})
	}
}

func TestInvalidChannelsAreRejected(t *testing.T) {
	ns := env.Namespace(t)
	fast := v1alpha1.UpdateChannel{Name: "fast", Versions: `^.*$`}
	tests := []struct {
		name     string
		channels []v1alpha1.UpdateChannel
		want     string
	}{
		{"a channel that takes nothing", []v1alpha1.UpdateChannel{{Name: "empty"}}, "a channel takes payloads by versions, by feeders, or both"},
		{"versions not anchored", []v1alpha1.UpdateChannel{{Name: "fast", Versions: "4.15"}}, "versions must be an anchored regular expression"},
		{"a feeder from an unknown channel", []v1alpha1.UpdateChannel{fast, {Name: "stable", Feeders: []v1alpha1.ChannelFeeder{{From: "candidate"}}}},
			"a feeder's from must name another channel of the stream"},
		{"a channel feeding itself", []v1alpha1.UpdateChannel{{Name: "loop", Versions: "^.*$", Feeders: []v1alpha1.ChannelFeeder{{From: "loop"}}}},
			"a feeder's from must name another channel of the stream"},
		{"a negative delay", []v1alpha1.UpdateChannel{fast, {Name: "stable", Feeders: []v1alpha1.ChannelFeeder{{From: "fast", Delay: metav1.Duration{Duration: -time.Hour}}}}},
			"delay must be a non-negative duration"},
		{"a filter that does not compile", []v1alpha1.UpdateChannel{fast, {Name: "stable", Feeders: []v1alpha1.ChannelFeeder{{From: "fast", Filter: "^[$"}}}},
			"filter"},
		{"a channel name with capitals", []v1alpha1.UpdateChannel{{Name: "Fast", Versions: "^.*$"}}, "spec.updateService.channels[0].name in body should match"},
		{"a channel listed twice", []v1alpha1.UpdateChannel{fast, fast}, "Duplicate value"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := validStream(ns)
			s.Spec.UpdateService = &v1alpha1.UpdateService{Channels: tt.channels}
			expectRejected(t, env.Client.Create(context.Background(), s), tt.want)
		})
	}
}
