package demo

import (
	"regexp"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/release-controller/release-controller/api/v1alpha1"
)

// The demo stream's update channels (/graph?channel=NAME): every accepted payload joins
// candidate; the feeders promote it into fast after FastDelay there, and into stable after
// StableDelay in fast, unless a risk that applies to every cluster or a tombstone came first.
const (
	ChannelCandidate = "candidate"
	ChannelFast      = "fast"
	ChannelStable    = "stable"

	FastDelay   = 2 * time.Minute
	StableDelay = 10 * time.Minute
)

// SampleRiskName is the demo's UpgradeRisk, in the stream's namespace.
const SampleRiskName = "sample-arm64-worker-restart"

// DefaultWebURL is where `release-controller dev` serves its pages unless told otherwise.
const DefaultWebURL = "http://127.0.0.1:8080"

func (o Options) webURL() string {
	if o.WebURL == "" {
		return DefaultWebURL
	}
	return strings.TrimSuffix(o.WebURL, "/")
}

// UpdateService is the demo stream's update service: the three channels, and the risks the
// controller sees itself (the flaky integration check, the informing conformance that fails).
func UpdateService() *v1alpha1.UpdateService {
	return &v1alpha1.UpdateService{
		DetectRisks: true,
		Channels: []v1alpha1.UpdateChannel{
			{Name: ChannelCandidate, Versions: "^" + regexp.QuoteMeta(TagPrefix) + "-.*$"},
			{Name: ChannelFast, Feeders: []v1alpha1.ChannelFeeder{{From: ChannelCandidate, Delay: metav1.Duration{Duration: FastDelay}}}},
			{Name: ChannelStable, Feeders: []v1alpha1.ChannelFeeder{{From: ChannelFast, Delay: metav1.Duration{Duration: StableDelay}}}},
		},
	}
}

// SampleRisk is the demo's declared risk, to show a conditional edge: upgrades into the
// payloads whose tag ends in an odd digit (about half of them) are said to restart the worker
// on clusters with arm64 nodes. Clusters answer its PromQL rule with 1 when they have such a
// node and 0 otherwise; the edges stay offered to everyone, as conditional ones.
func SampleRisk(opts Options) *v1alpha1.UpgradeRisk {
	return &v1alpha1.UpgradeRisk{
		ObjectMeta: metav1.ObjectMeta{Namespace: opts.namespace(), Name: SampleRiskName},
		Spec: v1alpha1.UpgradeRiskSpec{
			Stream:  StreamName,
			To:      "^" + regexp.QuoteMeta(TagPrefix) + "-.*[13579]$",
			Name:    "SampleArm64WorkerRestart",
			Message: "A sample risk of the demo: upgrades into payloads whose tag ends in an odd digit restart the worker on clusters with arm64 nodes.",
			URL:     opts.webURL() + "/namespaces/" + opts.namespace() + "/releasestream/" + StreamName + "/graph",
			MatchingRules: []v1alpha1.MatchingRule{{Type: v1alpha1.MatchingRulePromQL, PromQL: &v1alpha1.PromQLRule{
				PromQL: `group(kube_node_labels{label_kubernetes_io_arch="arm64"}) or 0 * group(kube_node_labels)`,
			}}},
		},
	}
}
