package pipeline

import (
	"strings"
	"testing"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/verdict/verdicttest"
)

func TestUntrustedSource(t *testing.T) {
	const tag = "1.0.0-0.nightly-2026-11-27-040000"
	earned := verdicttest.Payload("ns", "nightly", tag, true)
	for _, tc := range []struct {
		name    string
		payload *v1alpha1.ReleasePayload
		exists  bool
		stream  string
		want    string // a part of the reason; "" for a payload that may be promoted
	}{
		{name: "earned Accepted", payload: earned, exists: true, stream: "nightly"},
		{name: "no such payload", payload: &v1alpha1.ReleasePayload{}, stream: "nightly", want: "no such payload"},
		{name: "another stream's payload", payload: earned, exists: true, stream: "stable", want: `belongs to stream "nightly"`},
		{
			name: "hand-written Accepted", payload: verdicttest.HandWritten("ns", "nightly", tag, v1alpha1.PhaseAccepted),
			exists: true, stream: "nightly", want: "verdict is Ready, not Accepted",
		},
		{
			name: "still verifying", payload: verdicttest.Payload("ns", "nightly", tag, false),
			exists: true, stream: "nightly", want: "verdict is Ready, not Accepted",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := untrustedSource(tc.payload, tc.exists, tc.stream)
			if tc.want == "" && got != "" || tc.want != "" && !strings.Contains(got, tc.want) {
				t.Errorf("untrustedSource = %q, want %q", got, tc.want)
			}
		})
	}
}
