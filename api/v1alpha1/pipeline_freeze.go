package v1alpha1

// Condition reasons of a ReleaseFreeze or ClusterReleaseFreeze (internal/freeze sets them).
const (
	// ReasonFreezeRead (Ready=True): the freeze's window is read; Active says where it stands.
	ReasonFreezeRead = "FreezeRead"
	// ReasonInvalidFreeze (Ready=False, Stalled=True, Active=False): the spec cannot be read (an
	// unknown time zone, a cron that does not parse, a selector that is not one); the message
	// names the field. The freeze holds nothing until it is fixed.
	ReasonInvalidFreeze = "InvalidFreeze"
	// ReasonInWindow (Active=True): now is inside a window of the freeze; the message says
	// since when and until when.
	ReasonInWindow = "InWindow"
	// ReasonOutsideWindow (Active=False): the freeze has not started, or is between two windows
	// of its schedule; the message says when the next window starts.
	ReasonOutsideWindow = "OutsideWindow"
	// ReasonFreezeEnded (Active=False): the freeze ended and no window is to come (its end has
	// passed); the object stays for the record.
	ReasonFreezeEnded = "Ended"
)

// Condition types and reasons of a Pipeline that freezes set (internal/pipeline/freeze.go).
const (
	// ConditionFrozen is True while a freeze covers an environment of the pipeline: nothing is
	// promoted into it. The message names each frozen environment, the freeze, its reason and
	// until when. Absent when no freeze covers the pipeline (abnormal-true, as Reconciling).
	ConditionFrozen = "Frozen"
	// ReasonFreezeActive (Frozen=True): a freeze's window covers an environment now.
	ReasonFreezeActive = "FreezeActive"
)

// Reasons of the Events of freezes.
const (
	// EventFreezeStarted (Normal, on the freeze): its window began; the release log has an
	// entry of type freeze.
	EventFreezeStarted = "FreezeStarted"
	// EventFreezeEnded (Normal, on the freeze): its window ended; the release log has an entry
	// of type freeze.
	EventFreezeEnded = "FreezeEnded"
)
