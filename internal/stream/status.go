package stream

import (
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/conditions"
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
	Failures []stepFailure
}

// graphOutcome is what recording the upgrade graph found.
type graphOutcome struct {
	// Reason is one of the UpgradeGraphRecorded reasons.
	Reason, Message string
}

// stepFailure is a step of the pass that failed. The reconcile goes on with the other steps,
// then returns the failures as its error.
type stepFailure struct {
	// Step says what failed, e.g. "creating payload 4.15.0-0.nightly-2026-11-22-093000".
	Step string
	// Reason is the Ready reason (and the Event's) for it: ReasonReconcileFailed unless the
	// step has its own.
	Reason string
	Err    error
}

func (f stepFailure) String() string {
	return fmt.Sprintf("%s: %v", f.Step, f.Err)
}

// ComputeStatus returns the stream's status after pass p. It does not modify the stream.
// Conditions are stamped with the stream's generation and now (their transition time moves
// only when their status does); observedGeneration moves only when the pass succeeded, so a
// spec the controller failed to act on is not reported as observed.
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
	set(readyCondition(p))
	if len(p.Failures) == 0 {
		status.ObservedGeneration = stream.Generation
	}
	return status
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
// failure's reason and every failure in the message; an unresolved component makes it False
// (ComponentsUnresolved); otherwise it is True and says what the creation decision waits for,
// or which payload the pass created.
func readyCondition(p pass) metav1.Condition {
	ready := metav1.Condition{Type: v1alpha1.ConditionReady}
	switch {
	case len(p.Failures) > 0:
		messages := make([]string, len(p.Failures))
		for i, f := range p.Failures {
			messages[i] = f.String()
		}
		ready.Status, ready.Reason, ready.Message = metav1.ConditionFalse, p.Failures[0].Reason, strings.Join(messages, "; ")
		if ready.Reason == "" {
			ready.Reason = v1alpha1.ReasonReconcileFailed
		}
	case p.Decision == nil:
		unresolved := len(unresolvedComponents(p.Components))
		ready.Status, ready.Reason = metav1.ConditionFalse, v1alpha1.ReasonComponentsUnresolved
		ready.Message = fmt.Sprintf("%d of %d components did not resolve; no payload is created until every component resolves", unresolved, len(p.Components))
	case p.Decision.Blocked:
		ready.Status, ready.Reason, ready.Message = metav1.ConditionFalse, p.Decision.Reason, p.Decision.Message
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
