package v1alpha1

import (
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestForeignChanges(t *testing.T) {
	base := func() *ReleasePayloadStatus {
		return &ReleasePayloadStatus{
			Phase: PhaseAccepted,
			Conditions: []metav1.Condition{
				{Type: ConditionPayloadAccepted, Status: metav1.ConditionTrue},
				{Type: ConditionPayloadAudited, Status: metav1.ConditionTrue},
				{Type: "SomeoneElses", Status: metav1.ConditionTrue},
			},
			PayloadImage:  "registry.example.com/r@sha256:aa",
			Verifications: []VerificationStatus{{Name: "e2e", State: JobSuccess}},
		}
	}
	tests := []struct {
		name   string
		writer PayloadStatusWriter
		change func(*ReleasePayloadStatus)
		want   []string
	}{
		{"the payload controller sets its own", WriterPayload, func(s *ReleasePayloadStatus) {
			s.Phase = PhaseRejected
			s.Conditions[0].Status = metav1.ConditionFalse
			s.Verifications[0].State = JobFailure
		}, nil},
		{"the payload controller drops the audit's condition", WriterPayload, func(s *ReleasePayloadStatus) {
			s.Conditions = s.Conditions[:1]
		}, []string{"condition " + ConditionPayloadAudited}},
		{"the audit signs", WriterAudit, func(s *ReleasePayloadStatus) {
			s.Conditions = append(s.Conditions, metav1.Condition{Type: ConditionPayloadSigned, Status: metav1.ConditionTrue})
		}, nil},
		{"the audit touches the phase and the image", WriterAudit, func(s *ReleasePayloadStatus) {
			s.Phase, s.PayloadImage = PhaseReady, ""
		}, []string{"phase", "payloadImage"}},
		{"the stream records the image", WriterStream, func(s *ReleasePayloadStatus) { s.PayloadImage = "registry.example.com/r@sha256:bb" }, nil},
		{"Jira verifies", WriterJira, func(s *ReleasePayloadStatus) {
			s.Conditions = append(s.Conditions, metav1.Condition{Type: ConditionPayloadIssuesVerified, Status: metav1.ConditionTrue})
		}, nil},
		{"Jira sets the verdict", WriterJira, func(s *ReleasePayloadStatus) { s.Conditions[0].Status = metav1.ConditionFalse },
			[]string{"condition " + ConditionPayloadAccepted}},
		{"the payload controller sets kstatus's conditions", WriterPayload, func(s *ReleasePayloadStatus) {
			s.Conditions = append(s.Conditions, metav1.Condition{Type: ConditionReady, Status: metav1.ConditionTrue},
				metav1.Condition{Type: ConditionStalled, Status: metav1.ConditionTrue}, metav1.Condition{Type: ConditionReconciling, Status: metav1.ConditionTrue})
		}, nil},
		{"the audit marks the payload Ready", WriterAudit, func(s *ReleasePayloadStatus) {
			s.Conditions = append(s.Conditions, metav1.Condition{Type: ConditionReady, Status: metav1.ConditionTrue})
		}, []string{"condition " + ConditionReady}},
		{"the payload controller records a tombstone", WriterPayload, func(s *ReleasePayloadStatus) {
			s.Conditions = append(s.Conditions, metav1.Condition{Type: ConditionPayloadTombstoned, Status: metav1.ConditionTrue, Reason: ReasonTombstoned})
		}, nil},
		{"the audit records a tombstone", WriterAudit, func(s *ReleasePayloadStatus) {
			s.Conditions = append(s.Conditions, metav1.Condition{Type: ConditionPayloadTombstoned, Status: metav1.ConditionTrue, Reason: ReasonTombstoned})
		}, []string{"condition " + ConditionPayloadTombstoned}},
		{"a condition no writer owns is left to its owner", WriterPayload, func(s *ReleasePayloadStatus) { s.Conditions[2].Status = metav1.ConditionFalse }, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			after := base()
			tc.change(after)
			if got := ForeignChanges(tc.writer, base(), after); !slices.Equal(got, tc.want) {
				t.Errorf("ForeignChanges = %q, want %q", got, tc.want)
			}
		})
	}
}
