package v1alpha1

import (
	"slices"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PayloadStatusWriter is a controller that writes part of a ReleasePayload's status.
//
// Who writes what (docs/design.md, "Who writes a payload's status"): every field group of the
// status has exactly one writer, and each writer sends one write of the status carrying the
// resourceVersion it read (an optimistic lock): the payload controller an update of the status
// subresource, the others a JSON merge patch. Either replaces the conditions list whole, so the
// lock is what keeps a writer from dropping another's conditions: a write computed from an
// older version is refused, read again and retried. ForeignChanges is the check each writer
// applies before it writes.
type PayloadStatusWriter string

const (
	// WriterPayload, the payload controller: phase, the conditions PayloadCreated,
	// PayloadFailed, PayloadAccepted, PayloadRejected, ClusterUnreachable and PayloadTombstoned,
	// the creation job's result and the verifications.
	WriterPayload PayloadStatusWriter = "payload"
	// WriterStream, the stream controller: payloadImage and platformImages, once the creation
	// job built the image.
	WriterStream PayloadStatusWriter = "stream"
	// WriterAudit, the audit controller: the conditions PayloadAudited, PayloadSigned and
	// PayloadSigstoreSigned.
	WriterAudit PayloadStatusWriter = "audit"
	// WriterJira, the Jira controller: the condition PayloadIssuesVerified.
	WriterJira PayloadStatusWriter = "jira"
)

// PayloadConditionWriter names the writer of each condition type of a payload.
var PayloadConditionWriter = map[string]PayloadStatusWriter{
	ConditionPayloadCreated:        WriterPayload,
	ConditionPayloadFailed:         WriterPayload,
	ConditionPayloadAccepted:       WriterPayload,
	ConditionPayloadRejected:       WriterPayload,
	ConditionClusterUnreachable:    WriterPayload,
	ConditionPayloadTombstoned:     WriterPayload,
	ConditionReady:                 WriterPayload,
	ConditionReconciling:           WriterPayload,
	ConditionStalled:               WriterPayload,
	ConditionPayloadAudited:        WriterAudit,
	ConditionPayloadSigned:         WriterAudit,
	ConditionPayloadSigstoreSigned: WriterAudit,
	ConditionPayloadIssuesVerified: WriterJira,
}

// ForeignChanges lists what writer changed from before to after in fields another writer owns
// (condition types, or field names); empty when it kept to its own. It is pure.
func ForeignChanges(writer PayloadStatusWriter, before, after *ReleasePayloadStatus) []string {
	var changed []string
	field := func(name string, owner PayloadStatusWriter, same bool) {
		if owner != writer && !same {
			changed = append(changed, name)
		}
	}
	field("phase", WriterPayload, before.Phase == after.Phase)
	field("releaseCreationJobResult", WriterPayload, before.ReleaseCreationJobResult == after.ReleaseCreationJobResult)
	field("verifications", WriterPayload, equality.Semantic.DeepEqual(before.Verifications, after.Verifications))
	field("payloadImage", WriterStream, before.PayloadImage == after.PayloadImage)
	field("platformImages", WriterStream, slices.Equal(before.PlatformImages, after.PlatformImages))
	var types []string
	for _, c := range append(slices.Clone(before.Conditions), after.Conditions...) {
		if !slices.Contains(types, c.Type) {
			types = append(types, c.Type)
		}
	}
	for _, t := range types {
		owner, known := PayloadConditionWriter[t]
		if !known {
			continue // someone else's condition (a user's tool): the writers keep it as it is
		}
		field("condition "+t, owner, equality.Semantic.DeepEqual(findCondition(before.Conditions, t), findCondition(after.Conditions, t)))
	}
	return changed
}

func findCondition(conditions []metav1.Condition, t string) *metav1.Condition {
	for i := range conditions {
		if conditions[i].Type == t {
			return &conditions[i]
		}
	}
	return nil
}
