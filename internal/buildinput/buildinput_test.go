package buildinput_test

import (
	"reflect"
	"testing"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/buildinput"
	"github.com/release-controller/release-controller/internal/verdict/verdicttest"
)

func TestPreviousReleases(t *testing.T) {
	payload := func(stream, tag string, phase v1alpha1.PayloadPhase) v1alpha1.ReleasePayload {
		p := v1alpha1.ReleasePayload{
			Spec: v1alpha1.ReleasePayloadSpec{PayloadCoordinates: v1alpha1.PayloadCoordinates{Stream: stream, Tag: tag}},
		}
		verdicttest.Earn(&p, phase)
		return p
	}
	accepted := func(stream, tag string) v1alpha1.ReleasePayload { return payload(stream, tag, v1alpha1.PhaseAccepted) }
	current := v1alpha1.PayloadCoordinates{Stream: "s", Tag: "4.15.0-0.nightly-2026-11-22-093000"}
	for _, tc := range []struct {
		name     string
		payloads []v1alpha1.ReleasePayload
		want     []string
	}{
		{"none", nil, []string{}},
		{"at most five, newest first", []v1alpha1.ReleasePayload{
			accepted("s", "4.15.0-0.nightly-2026-11-16-093000"),
			accepted("s", "4.15.0-0.nightly-2026-11-21-093000"),
			accepted("s", "4.15.0-0.nightly-2026-11-17-093000"),
			accepted("s", "4.14.9"),
			accepted("s", "4.15.0-0.nightly-2026-11-20-093000"),
			accepted("s", "4.15.0-0.nightly-2026-11-19-093000"),
			accepted("s", "4.15.0-0.nightly-2026-11-18-093000"),
		}, []string{
			"4.15.0-0.nightly-2026-11-21-093000", "4.15.0-0.nightly-2026-11-20-093000", "4.15.0-0.nightly-2026-11-19-093000",
			"4.15.0-0.nightly-2026-11-18-093000", "4.15.0-0.nightly-2026-11-17-093000",
		}},
		{"an earlier minor counts", []v1alpha1.ReleasePayload{accepted("s", "4.14.9")}, []string{"4.14.9"}},
		{"the release 4.15.0 is later than its pre-releases", []v1alpha1.ReleasePayload{accepted("s", "4.15.0"), accepted("s", "4.15.0-0.ci-2026-11-23-093000")},
			[]string{"4.15.0-0.ci-2026-11-23-093000"}},
		{"itself, later, other streams, not accepted, accepted by hand and bad tags do not", []v1alpha1.ReleasePayload{
			accepted("s", current.Tag),
			accepted("s", "4.15.1"),
			accepted("other", "4.14.0"),
			payload("s", "4.14.1", v1alpha1.PhaseRejected),
			payload("s", "4.14.2", v1alpha1.PhaseReady),
			*verdicttest.HandWritten("ns", "s", "4.14.3", v1alpha1.PhaseAccepted),
			accepted("s", "v4.14"),
		}, []string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := buildinput.PreviousReleases(current, tc.payloads)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("previous = %q, want %q", got, tc.want)
			}
		})
	}
	if _, err := buildinput.PreviousReleases(v1alpha1.PayloadCoordinates{Stream: "s", Tag: "latest"}, nil); err == nil {
		t.Error("a tag that is not a semantic version was accepted")
	}
}
