package updateservice

import (
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/verdict/verdicttest"
)

// TestMembershipOverTime follows one stream's channels through time: candidate takes every
// accepted 4.15 payload, fast is fed from candidate after 2h, stable from fast after 48h for
// final versions only.
func TestMembershipOverTime(t *testing.T) {
	us := &v1alpha1.UpdateService{Channels: []v1alpha1.UpdateChannel{
		{Name: "candidate", Versions: `^4\.15\..*$`},
		{Name: "fast", Feeders: []v1alpha1.ChannelFeeder{{From: "candidate", Delay: metav1.Duration{Duration: 2 * time.Hour}}}},
		{Name: "stable", Feeders: []v1alpha1.ChannelFeeder{{From: "fast", Delay: metav1.Duration{Duration: 48 * time.Hour}, Filter: `^4\.15\.[0-9]+$`}}},
	}}
	rejected := verdicttest.Payload("product", "4.15", "4.15.7", false)
	verdicttest.Earn(rejected, v1alpha1.PhaseRejected)
	s := streamOf(t, us,
		accepted("product", "4.15", "4.15.1", at(0)),
		accepted("product", "4.15", "4.15.2", at(time.Hour)),
		tombstoned(accepted("product", "4.15", "4.15.3", at(0)), at(3*time.Hour)), // after it reached fast
		accepted("product", "4.15", "4.15.4", at(0)),                              // blocked before fast
		accepted("product", "4.15", "4.15.5", at(0)),                              // risk after fast
		accepted("product", "4.15", "4.15.6-rc.0", at(0)),                         // never stable: filter
		rejected,
	)
	risks := mustIndex(t,
		risk("blocked", at(time.Hour), v1alpha1.UpgradeRiskSpec{To: "4.15.4"}),
		risk("always", at(10*time.Hour), v1alpha1.UpgradeRiskSpec{To: "4.15.5", MatchingRules: []v1alpha1.MatchingRule{{Type: v1alpha1.MatchingRuleAlways}}}),
		risk("conditional", at(0), v1alpha1.UpgradeRiskSpec{To: "4.15.1", MatchingRules: promql}), // only some clusters: no hold
	)
	all := []string{"4.15.1", "4.15.2", "4.15.3", "4.15.4", "4.15.5", "4.15.6-rc.0"}
	tests := []struct {
		now                   time.Duration
		candidate, fast, stab []string
		next                  time.Duration // 0: nothing pending
	}{
		{time.Hour, all, nil, nil, 2 * time.Hour},
		{2 * time.Hour, all, []string{"4.15.1", "4.15.3", "4.15.5", "4.15.6-rc.0"}, nil, 3 * time.Hour},
		{3 * time.Hour, all, []string{"4.15.1", "4.15.2", "4.15.3", "4.15.5", "4.15.6-rc.0"}, nil, 50 * time.Hour},
		{50*time.Hour - time.Second, all, []string{"4.15.1", "4.15.2", "4.15.3", "4.15.5", "4.15.6-rc.0"}, nil, 50 * time.Hour},
		{60 * time.Hour, all, []string{"4.15.1", "4.15.2", "4.15.3", "4.15.5", "4.15.6-rc.0"}, []string{"4.15.1", "4.15.2"}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.now.String(), func(t *testing.T) {
			c, err := Membership(s, risks, at(tt.now))
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range []struct {
				channel string
				tags    []string
			}{{"candidate", tt.candidate}, {"fast", tt.fast}, {"stable", tt.stab}} {
				var got []string
				for _, tag := range all {
					if c.Has(want.channel, tag) {
						got = append(got, tag)
					}
				}
				if !slices.Equal(got, want.tags) {
					t.Errorf("%s holds %v, want %v", want.channel, got, want.tags)
				}
			}
			if c.Has("candidate", "4.15.7") {
				t.Errorf("a rejected payload joined candidate")
			}
			wantNext := time.Time{}
			if tt.next != 0 {
				wantNext = at(tt.next)
			}
			if !c.Next.Equal(wantNext) {
				t.Errorf("Next = %v, want %v", c.Next, wantNext)
			}
		})
	}

	c, err := Membership(s, risks, at(3*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := c.Pending("4.15.1"), []Promotion{{Channel: "stable", From: "fast", At: at(50 * time.Hour)}}; !slices.Equal(got, want) {
		t.Errorf("Pending(4.15.1) = %v, want %v", got, want)
	}
	if got := c.Pending("4.15.3"); got != nil {
		t.Errorf("a tombstoned payload is pending promotion: %v", got)
	}
	if joined, ok := c.Joined("fast", "4.15.2"); !ok || !joined.Equal(at(3*time.Hour)) {
		t.Errorf("4.15.2 joined fast at %v (%v), want %v", joined, ok, at(3*time.Hour))
	}
	if got, want := c.Of("4.15.3"), []string{"candidate", "fast"}; !slices.Equal(got, want) {
		t.Errorf("Of(4.15.3) = %v, want %v: a tombstone keeps the channels a payload is in", got, want)
	}
}

func TestFeedersMayLoop(t *testing.T) {
	us := &v1alpha1.UpdateService{Channels: []v1alpha1.UpdateChannel{
		{Name: "a", Versions: `^4\.15\.1$`, Feeders: []v1alpha1.ChannelFeeder{{From: "b", Delay: metav1.Duration{Duration: time.Hour}}}},
		{Name: "b", Versions: `^4\.15\.2$`, Feeders: []v1alpha1.ChannelFeeder{{From: "a", Delay: metav1.Duration{Duration: time.Hour}}}},
	}}
	s := streamOf(t, us, accepted("product", "4.15", "4.15.1", at(0)), accepted("product", "4.15", "4.15.2", at(0)))
	c, err := Membership(s, nil, at(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	for _, tag := range []string{"4.15.1", "4.15.2"} {
		if got := c.Of(tag); !slices.Equal(got, []string{"a", "b"}) {
			t.Errorf("Of(%s) = %v, want [a b]", tag, got)
		}
	}
	if joined, _ := c.Joined("a", "4.15.1"); !joined.Equal(at(0)) {
		t.Errorf("a loop moved 4.15.1's direct join to %v", joined)
	}
}

func TestStreamsWithoutChannels(t *testing.T) {
	s := streamOf(t, nil, accepted("product", "4.15", "4.15.1", at(0)))
	c, err := Membership(s, nil, at(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Of("4.15.1"); got != nil || !c.Next.IsZero() {
		t.Errorf("a stream without channels: Of = %v, Next = %v", got, c.Next)
	}
}

func TestPhasesOfAChannel(t *testing.T) {
	us := &v1alpha1.UpdateService{Channels: []v1alpha1.UpdateChannel{
		{Name: "nightly", Versions: `^.*$`, Phases: []v1alpha1.PayloadPhase{v1alpha1.PhaseAccepted, v1alpha1.PhaseRejected}},
	}}
	ready := verdicttest.Payload("product", "4.15", "4.15.9", false)
	rejected := verdicttest.Payload("product", "4.15", "4.15.2", false)
	verdicttest.Earn(rejected, v1alpha1.PhaseRejected)
	handWritten := verdicttest.HandWritten("product", "4.15", "4.15.3", v1alpha1.PhaseRejected)
	s := streamOf(t, us, accepted("product", "4.15", "4.15.1", at(0)), rejected, handWritten, ready)
	c, err := Membership(s, nil, at(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, tag := range []string{"4.15.1", "4.15.2", "4.15.3", "4.15.9"} {
		if c.Has("nightly", tag) {
			got = append(got, tag)
		}
	}
	if want := []string{"4.15.1", "4.15.2"}; !slices.Equal(got, want) {
		t.Errorf("nightly holds %v, want %v (a verdict written by hand is no phase, a payload still verifying is not Accepted)", got, want)
	}
}
