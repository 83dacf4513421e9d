package verdict

import (
	"testing"

	"github.com/release-controller/release-controller/api/v1alpha1"
)

func TestAggregate(t *testing.T) {
	blocking := func(name string, state v1alpha1.JobState) v1alpha1.VerificationStatus {
		return v1alpha1.VerificationStatus{Name: name, Type: v1alpha1.Blocking, State: state}
	}
	informing := func(name string, state v1alpha1.JobState) v1alpha1.VerificationStatus {
		return v1alpha1.VerificationStatus{Name: name, Type: v1alpha1.Informing, State: state}
	}
	for _, tc := range []struct {
		name          string
		verifications []v1alpha1.VerificationStatus
		state         v1alpha1.JobState
		message       string
	}{
		{"every blocking one passed, an informing one still running", []v1alpha1.VerificationStatus{
			blocking("smoke", v1alpha1.JobSuccess), informing("perf", v1alpha1.JobPending)}, v1alpha1.JobSuccess, "every blocking verification passed"},
		{"a blocking one failed while another runs", []v1alpha1.VerificationStatus{
			blocking("smoke", v1alpha1.JobFailure), blocking("e2e", v1alpha1.JobPending)}, v1alpha1.JobFailure, "blocking verifications failed: smoke"},
		{"an informing failure decides nothing", []v1alpha1.VerificationStatus{
			blocking("smoke", v1alpha1.JobSuccess), informing("perf", v1alpha1.JobFailure)}, v1alpha1.JobSuccess, "every blocking verification passed"},
		{"a blocking one running", []v1alpha1.VerificationStatus{
			blocking("smoke", v1alpha1.JobSuccess), blocking("e2e", v1alpha1.JobPending)}, v1alpha1.JobPending, "waiting for e2e"},
		{"results lost", []v1alpha1.VerificationStatus{
			blocking("smoke", v1alpha1.JobUnknown)}, v1alpha1.JobPending, "results lost of smoke"},
		{"informing only, running", []v1alpha1.VerificationStatus{
			informing("perf", v1alpha1.JobPending)}, v1alpha1.JobPending, "waiting for perf"},
		{"informing only, ended", []v1alpha1.VerificationStatus{
			informing("perf", v1alpha1.JobFailure)}, v1alpha1.JobSuccess, "no blocking verifications; every one ended"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			state, message := Aggregate(tc.verifications)
			if state != tc.state || message != tc.message {
				t.Errorf("Aggregate = %s %q, want %s %q", state, message, tc.state, tc.message)
			}
		})
	}
}
