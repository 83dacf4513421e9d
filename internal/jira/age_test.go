package jira

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/release-controller/release-controller/api/v1alpha1"
)

func TestAcceptedBefore(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	accepted := func(at time.Time) *v1alpha1.ReleasePayload {
		p := &v1alpha1.ReleasePayload{}
		p.Status.Conditions = []metav1.Condition{{Type: v1alpha1.ConditionPayloadAccepted, Status: metav1.ConditionTrue, LastTransitionTime: metav1.NewTime(at)}}
		return p
	}
	cutoff := now.Add(-DefaultMaxAge)
	for _, tc := range []struct {
		name string
		p    *v1alpha1.ReleasePayload
		want bool
	}{
		{"accepted an hour ago", accepted(now.Add(-time.Hour)), false},
		{"accepted two days ago", accepted(now.Add(-48 * time.Hour)), true},
		{"not accepted", &v1alpha1.ReleasePayload{}, false},
	} {
		if got := acceptedBefore(tc.p, cutoff); got != tc.want {
			t.Errorf("%s: acceptedBefore = %v, want %v", tc.name, got, tc.want)
		}
	}
}
