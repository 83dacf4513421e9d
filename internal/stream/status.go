package stream

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/conditions"
	"github.com/release-controller/release-controller/internal/eventlog"
	"github.com/release-controller/release-controller/internal/verdict"
)

// The stream's status is computed here, from what one reconcile found and did (a pass), by
// pure functions: the reconciler runs the steps, records their outcomes in a pass, and writes
// ComputeStatus's result once. The condition types and reasons are documented in
// api/v1alpha1/conditions.go. Every condition goes through conditions.Set, which bounds its
// message.

// pass is what one reconcile of a stream found and did.
type pass struct {
	// Components are the components' import results, in the spec's order.
	Components []v1alpha1.ComponentStatus
	// ComponentsHash identifies the resolved component set; empty while a component does not
	// resolve (the previous hash stays).
	ComponentsHash string
	// Decision is the creation decision; nil when no payload could be considered (a component
	// did not resolve).
	Decision *CreateDecision
	// Created is the tag of the payload this pass created.
	Created string
	// Listed is set when the payloads were listed; without, the status keeps what it said of them.
	Listed bool
	// Payloads are the stream's payloads after the pass, newest first.
	Payloads []v1alpha1.ReleasePayload
	// Published is the payload image the publish tags were moved to (or already pointed at).
	Published string
	// UpgradeGraph is the outcome of recording the upgrade results; nil when it did not run.
	UpgradeGraph *graphOutcome
	// Failures are the steps that failed, in order.
	Failures []*eventlog.Failure
	// Suspended: spec.suspend stopped the pass after listing the payloads.
	Suspended bool
}

// graphOutcome is what recording the upgrade graph found.
type graphOutcome struct {
	// Reason is one of the UpgradeGraphRecorded reasons.
	Reason, Message string
}

// ComputeStatus returns the stream's status after pass p. It does not modify the stream.
// Conditions are stamped with the stream's generation and now (their transition time moves
// only when their status does); observedGeneration moves only when the pass succeeded or
// stalled, so a spec the controller failed to act on (and retries) is not reported as
// observed, while a stalled one is (kstatus reads Stalled only at the observed generation).
// lastHandledReconcileAt repeats the reconcile-requested-at annotation of the stream the pass
// read.
func ComputeStatus(stream *v1alpha1.ReleaseStream, p pass, now time.Time) v1alpha1.ReleaseStreamStatus {
	status := *stream.Status.DeepCopy()
	status.Components = p.Components
	if p.ComponentsHash != "" {
		status.ComponentsHash = p.ComponentsHash
	}
	if p.Listed {
		if len(p.Payloads) > 0 {
			status.LatestPayload = p.Payloads[0].Name
		}
		status.Payloads = Counts(p.Payloads)
		if newest := NewestAccepted(p.Payloads); newest != nil {
			status.LatestAccepted = newest.Name
		}
	}
	if p.Published != "" {
		status.PublishedImage = p.Published
	}
	set := func(c metav1.Condition) {
		c.ObservedGeneration = stream.Generation
		c.LastTransitionTime = metav1.NewTime(now)
		conditions.Set(&status.Conditions, c)
	}
	set(importedCondition(p.Components))
	if p.UpgradeGraph != nil {
		set(upgradeGraphCondition(*p.UpgradeGraph))
	}
	set(readyCondition(p, meta.FindStatusCondition(stream.Status.Conditions, v1alpha1.ConditionReady)))
	conditions.SetProgress(&status.Conditions, stream.Generation, progress(p), now)
	if failures, stalled := failureSummary(p); failures == 0 || stalled {
		// A stall is observed as well: nothing more can be done with this generation.
		status.ObservedGeneration = stream.Generation
	}
	status.LastHandledReconcileAt = stream.Annotations[v1alpha1.AnnotationReconcileRequestedAt]
	return status
}

// failureSummary counts the pass's failures and says whether every one is a stall.
func failureSummary(p pass) (failures int, stalled bool) {
	s, ok := eventlog.Summarize(p.failed())
	return len(p.Failures), ok && s.Stalled
}

// failed is the pass's failures as one error.
func (p pass) failed() error {
	errs := make([]error, len(p.Failures))
	for i, f := range p.Failures {
		errs[i] = f
	}
	return errors.Join(errs...)
}

// SuspendedMessage opens Ready's message while spec.suspend is set.
const SuspendedMessage = "suspended (spec.suspend): nothing is imported, created, built, verified, published or collected"

// progress is the stream's kstatus progress after pass p:
//   - Stalled when every failed step is a stall (a spec that cannot work: an upgrade source
//     stream that does not exist, verification names that clash): not retried until the
//     stream or the stream it names changes;
//   - Reconciling ProgressingWithRetry when a step failed, or a component did not resolve:
//     retried with backoff, and Ready says what failed;
//   - Reconciling Progressing while a payload of the stream waits for its image to be built
//     (phase Pending, or none yet) or for the verifications the stream launched (phase
//     Ready), aborted ones aside: the stream's work is under way and reaches a verdict without a spec change;
//   - neither when suspended (Ready's message says so), or when every payload has a verdict.
func progress(p pass) conditions.Progress {
	if s, failed := eventlog.Summarize(p.failed()); failed {
		if s.Stalled {
			return conditions.Progress{Stalled: true, Reason: s.Reason, Message: s.Message}
		}
		return conditions.Progress{Reconciling: true, Reason: v1alpha1.ReasonProgressingWithRetry, Message: s.Message}
	}
	if p.Suspended {
		return conditions.Done
	}
	if p.Decision == nil {
		return conditions.Progress{Reconciling: true, Reason: v1alpha1.ReasonProgressingWithRetry,
			Message: "components did not resolve; retrying with backoff: " + strings.Join(unresolvedComponents(p.Components), "; ")}
	}
	var building, verifying []string
	for i := range p.Payloads {
		q := &p.Payloads[i]
		if q.Annotations[v1alpha1.AnnotationAborted] != "" {
			continue
		}
		switch phase := verdict.Of(q); {
		case phase == v1alpha1.PhaseReady:
			verifying = append(verifying, q.Name)
		case !verdict.IsVerdict(phase): // Pending, or no status written yet
			building = append(building, q.Name)
		}
	}
	if p.Created != "" && !slices.Contains(building, p.Created) {
		building = append(building, p.Created)
	}
	var waits []string
	if len(building) > 0 {
		waits = append(waits, "payloads being built: "+joinNames(building))
	}
	if len(verifying) > 0 {
		waits = append(waits, "payloads being verified: "+joinNames(verifying))
	}
	if len(waits) == 0 {
		return conditions.Done
	}
	return conditions.Progress{Reconciling: true, Reason: v1alpha1.ReasonProgressing, Message: strings.Join(waits, "; ")}
}

// importedCondition is Imported: True when every component resolved, else False naming the
// ones that did not and why.
func importedCondition(components []v1alpha1.ComponentStatus) metav1.Condition {
	unresolved := unresolvedComponents(components)
	if len(unresolved) == 0 {
		return metav1.Condition{Type: v1alpha1.ConditionImported, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonComponentsResolved,
			Message: fmt.Sprintf("all %d components resolved", len(components))}
	}
	return metav1.Condition{Type: v1alpha1.ConditionImported, Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonComponentsUnresolved,
		Message: fmt.Sprintf("%d of %d components did not resolve; retrying with backoff: %s", len(unresolved), len(components), strings.Join(unresolved, "; "))}
}

// unresolvedComponents names the components without a digest, with their errors.
func unresolvedComponents(components []v1alpha1.ComponentStatus) []string {
	var unresolved []string
	for _, c := range components {
		if c.Error != "" || c.Image == "" {
			unresolved = append(unresolved, fmt.Sprintf("%s (%s)", c.Name, c.Error))
		}
	}
	return unresolved
}

// upgradeGraphCondition is UpgradeGraphRecorded from the outcome of recording the graph.
func upgradeGraphCondition(o graphOutcome) metav1.Condition {
	status := metav1.ConditionFalse
	if o.Reason == v1alpha1.ReasonUpgradeGraphUpToDate {
		status = metav1.ConditionTrue
	}
	return metav1.Condition{Type: v1alpha1.ConditionUpgradeGraphRecorded, Status: status, Reason: o.Reason, Message: o.Message}
}

// readyCondition decides Ready, in this order: a failed step makes it False with the first
// failure's reason and every failure in the message (eventlog.Summarize; a blocked creation
// decision is such a failure, a stall); a suspended stream keeps its last Ready status and
// reason, its message saying it is suspended (SuspendedMessage); an unresolved
// component makes it False (ComponentsUnresolved); otherwise it is True and says what the
// creation decision waits for, or which payload the pass created. last is the Ready condition
// the stream had, nil when none.
func readyCondition(p pass, last *metav1.Condition) metav1.Condition {
	ready := metav1.Condition{Type: v1alpha1.ConditionReady}
	s, failed := eventlog.Summarize(p.failed())
	switch {
	case failed:
		ready.Status, ready.Reason, ready.Message = metav1.ConditionFalse, s.Reason, s.Message
	case p.Suspended:
		// Ready's status and reason stay what the last pass found (ReasonSuspended before any).
		ready.Status, ready.Reason, ready.Message = metav1.ConditionUnknown, v1alpha1.ReasonSuspended, SuspendedMessage
		if last != nil {
			ready.Status, ready.Reason = last.Status, last.Reason
		}
	case p.Decision == nil:
		unresolved := len(unresolvedComponents(p.Components))
		ready.Status, ready.Reason = metav1.ConditionFalse, v1alpha1.ReasonComponentsUnresolved
		ready.Message = fmt.Sprintf("%d of %d components did not resolve; no payload is created until every component resolves", unresolved, len(p.Components))
	default:
		ready.Status, ready.Reason, ready.Message = metav1.ConditionTrue, p.Decision.Reason, p.Decision.Message
		switch {
		case p.Created != "":
			ready.Message = "created payload " + p.Created
		case p.Decision.Create:
			ready.Message = "components changed; the next payload is created in a moment"
		}
	}
	return ready
}
