package stream

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/conditions"
	"github.com/release-controller/release-controller/internal/eventlog"
)

func resolvedComponents(names ...string) []v1alpha1.ComponentStatus {
	var components []v1alpha1.ComponentStatus
	for _, n := range names {
		components = append(components, v1alpha1.ComponentStatus{Name: n, Image: "registry/" + n + "@sha256:1"})
	}
	return components
}

func failedComponent(name, err string) v1alpha1.ComponentStatus {
	return v1alpha1.ComponentStatus{Name: name, Error: err, Failures: 1}
}

// TestComputeStatus: the conditions, and observedGeneration, after a pass.
func TestComputeStatus(t *testing.T) {
	upToDate := &CreateDecision{Reason: v1alpha1.ReasonUpToDate, Message: "payload p1 has the current components"}
	create := &CreateDecision{Create: true, Reason: v1alpha1.ReasonPayloadCreated}
	notOwned := &graphOutcome{Reason: v1alpha1.ReasonUpgradeGraphNotOwned, Message: "ConfigMap nightly-upgrade-graph exists without the label"}
	type cond struct {
		status         metav1.ConditionStatus
		reason, prefix string
	}
	inFlight := []v1alpha1.ReleasePayload{
		payloadAt("p5", 0, ""), // no status written yet
		payloadAt("p4", time.Minute, v1alpha1.PhasePending),
		payloadAt("p3", 2*time.Minute, v1alpha1.PhaseReady),
		payloadAt("p2", 3*time.Minute, v1alpha1.PhasePending, v1alpha1.AnnotationAborted, "superseded by p4"),
		payloadAt("p1", time.Hour, v1alpha1.PhaseAccepted),
	}
	sourceMissing := &eventlog.Failure{Step: "planning the upgrades of p1", Reason: v1alpha1.ReasonUpgradeSourceMissing, Stalled: true,
		Err: errors.New("an upgrade verification starts from stream stable, which does not exist")}
	readyBefore := []metav1.Condition{{Type: v1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonUpToDate, Message: "payload p1 has the current components"}}
	tests := []struct {
		name string
		// before are the stream's conditions before the pass.
		before                 []metav1.Condition
		pass                   pass
		imported, graph, ready cond
		reconciling, stalled   cond
		observedGeneration     int64
	}{
		{
			name:     "up to date",
			pass:     pass{Components: resolvedComponents("api", "web"), Decision: upToDate, Listed: true},
			imported: cond{metav1.ConditionTrue, v1alpha1.ReasonComponentsResolved, "all 2 components resolved"},
			ready:    cond{metav1.ConditionTrue, v1alpha1.ReasonUpToDate, "payload p1 has the current components"},
			// The pass succeeded: the spec is observed.
			observedGeneration: 3,
		},
		{
			name:               "created a payload",
			pass:               pass{Components: resolvedComponents("api"), Decision: create, Created: "4.15.0-2026-11-22-093000", Listed: true},
			imported:           cond{metav1.ConditionTrue, v1alpha1.ReasonComponentsResolved, "all 1 components resolved"},
			ready:              cond{metav1.ConditionTrue, v1alpha1.ReasonPayloadCreated, "created payload 4.15.0-2026-11-22-093000"},
			reconciling:        cond{metav1.ConditionTrue, v1alpha1.ReasonProgressing, "payloads being built: [4.15.0-2026-11-22-093000]"},
			observedGeneration: 3,
		},
		{
			name:               "about to create (its tag was taken this second)",
			pass:               pass{Components: resolvedComponents("api"), Decision: create, Listed: true},
			imported:           cond{metav1.ConditionTrue, v1alpha1.ReasonComponentsResolved, "all 1"},
			ready:              cond{metav1.ConditionTrue, v1alpha1.ReasonPayloadCreated, "components changed; the next payload is created in a moment"},
			observedGeneration: 3,
		},
		{
			name:        "a component does not resolve",
			pass:        pass{Components: append(resolvedComponents("api"), failedComponent("web", "manifest unknown")), Listed: true},
			imported:    cond{metav1.ConditionFalse, v1alpha1.ReasonComponentsUnresolved, "1 of 2 components did not resolve; retrying with backoff: web (manifest unknown)"},
			ready:       cond{metav1.ConditionFalse, v1alpha1.ReasonComponentsUnresolved, "1 of 2 components did not resolve; no payload is created"},
			reconciling: cond{metav1.ConditionTrue, v1alpha1.ReasonProgressingWithRetry, "components did not resolve; retrying with backoff: web (manifest unknown)"},
			// Not a failed step: the import is retried with its own backoff, the spec was acted on.
			observedGeneration: 3,
		},
		{
			name: "failed steps: the first names Ready's reason, all are in its message",
			pass: pass{Components: resolvedComponents("api"), Decision: upToDate, Listed: true, Failures: []*eventlog.Failure{
				{Step: "publishing p1 as latest", Reason: v1alpha1.ReasonPublishFailed, Err: errors.New("denied")},
				{Step: "deleting payload p0", Reason: v1alpha1.ReasonReconcileFailed, Err: errors.New("conflict")},
			}},
			imported: cond{metav1.ConditionTrue, v1alpha1.ReasonComponentsResolved, "all 1"},
			ready:    cond{metav1.ConditionFalse, v1alpha1.ReasonPublishFailed, "publishing p1 as latest: denied; deleting payload p0: conflict"},
			// Retried with backoff.
			reconciling: cond{metav1.ConditionTrue, v1alpha1.ReasonProgressingWithRetry, "publishing p1 as latest: denied"},
			// A failed pass leaves observedGeneration where it was.
			observedGeneration: 2,
		},
		{
			name: "a failure of the general reason",
			pass: pass{Components: resolvedComponents("api"), Decision: upToDate, Listed: true,
				Failures: []*eventlog.Failure{{Step: "listing payloads", Reason: v1alpha1.ReasonReconcileFailed, Err: errors.New("cache stopped")}}},
			imported:           cond{metav1.ConditionTrue, v1alpha1.ReasonComponentsResolved, "all 1"},
			ready:              cond{metav1.ConditionFalse, v1alpha1.ReasonReconcileFailed, "listing payloads: cache stopped"},
			reconciling:        cond{metav1.ConditionTrue, v1alpha1.ReasonProgressingWithRetry, "listing payloads: cache stopped"},
			observedGeneration: 2,
		},
		{
			name: "an upgrade graph the stream does not own",
			pass: pass{Components: resolvedComponents("api"), Decision: upToDate, Listed: true, UpgradeGraph: notOwned,
				Failures: []*eventlog.Failure{{Step: "recording upgrade results in ConfigMap nightly-upgrade-graph", Reason: v1alpha1.ReasonUpgradeGraphNotOwned, Err: errors.New("not ours")}}},
			imported:           cond{metav1.ConditionTrue, v1alpha1.ReasonComponentsResolved, "all 1"},
			graph:              cond{metav1.ConditionFalse, v1alpha1.ReasonUpgradeGraphNotOwned, "ConfigMap nightly-upgrade-graph exists"},
			ready:              cond{metav1.ConditionFalse, v1alpha1.ReasonUpgradeGraphNotOwned, "recording upgrade results"},
			reconciling:        cond{metav1.ConditionTrue, v1alpha1.ReasonProgressingWithRetry, "recording upgrade results"},
			observedGeneration: 2,
		},
		{
			name: "the upgrade graph recorded",
			pass: pass{Components: resolvedComponents("api"), Decision: upToDate, Listed: true,
				UpgradeGraph: &graphOutcome{Reason: v1alpha1.ReasonUpgradeGraphUpToDate, Message: "upgrade results are recorded in ConfigMap nightly-upgrade-graph"}},
			imported:           cond{metav1.ConditionTrue, v1alpha1.ReasonComponentsResolved, "all 1"},
			graph:              cond{metav1.ConditionTrue, v1alpha1.ReasonUpgradeGraphUpToDate, "upgrade results are recorded"},
			ready:              cond{metav1.ConditionTrue, v1alpha1.ReasonUpToDate, "payload p1"},
			observedGeneration: 3,
		},
		{
			name:               "payloads being built and verified: Reconciling, aborted and judged ones aside",
			pass:               pass{Components: resolvedComponents("api"), Decision: upToDate, Listed: true, Payloads: inFlight},
			imported:           cond{metav1.ConditionTrue, v1alpha1.ReasonComponentsResolved, "all 1"},
			ready:              cond{metav1.ConditionTrue, v1alpha1.ReasonUpToDate, "payload p1"},
			reconciling:        cond{metav1.ConditionTrue, v1alpha1.ReasonProgressing, "payloads being built: [p5 p4]; payloads being verified: [p3]"},
			observedGeneration: 3,
		},
		{
			name:               "an upgrade source stream that does not exist: Stalled, observed",
			pass:               pass{Components: resolvedComponents("api"), Decision: upToDate, Listed: true, Failures: []*eventlog.Failure{sourceMissing}},
			imported:           cond{metav1.ConditionTrue, v1alpha1.ReasonComponentsResolved, "all 1"},
			ready:              cond{metav1.ConditionFalse, v1alpha1.ReasonUpgradeSourceMissing, "planning the upgrades of p1: an upgrade verification starts from stream stable"},
			stalled:            cond{metav1.ConditionTrue, v1alpha1.ReasonUpgradeSourceMissing, "planning the upgrades of p1"},
			observedGeneration: 3,
		},
		{
			name: "verification names that clash: Stalled",
			pass: pass{Components: resolvedComponents("api"), Listed: true,
				Decision: &CreateDecision{Blocked: true, Reason: v1alpha1.ReasonVerificationNameClash, Message: "two verifications would both be named e2e-amd64"},
				Failures: []*eventlog.Failure{{Step: "deciding the next payload", Reason: v1alpha1.ReasonVerificationNameClash, Stalled: true, Err: errors.New("two verifications would both be named e2e-amd64")}}},
			imported:           cond{metav1.ConditionTrue, v1alpha1.ReasonComponentsResolved, "all 1"},
			ready:              cond{metav1.ConditionFalse, v1alpha1.ReasonVerificationNameClash, "deciding the next payload: two verifications"},
			stalled:            cond{metav1.ConditionTrue, v1alpha1.ReasonVerificationNameClash, "deciding the next payload"},
			observedGeneration: 3,
		},
		{
			name: "a stall and a failure that is retried: Reconciling, not observed",
			pass: pass{Components: resolvedComponents("api"), Decision: upToDate, Listed: true, Failures: []*eventlog.Failure{sourceMissing,
				{Step: "deleting payload p0", Reason: v1alpha1.ReasonReconcileFailed, Err: errors.New("conflict")}}},
			imported:           cond{metav1.ConditionTrue, v1alpha1.ReasonComponentsResolved, "all 1"},
			ready:              cond{metav1.ConditionFalse, v1alpha1.ReasonUpgradeSourceMissing, "planning the upgrades of p1"},
			reconciling:        cond{metav1.ConditionTrue, v1alpha1.ReasonProgressingWithRetry, "planning the upgrades of p1"},
			observedGeneration: 2,
		},
		{
			name:               "suspended: Ready keeps its status and reason and says suspended; no Reconciling while payloads wait",
			before:             readyBefore,
			pass:               pass{Suspended: true, Components: resolvedComponents("api"), Listed: true, Payloads: inFlight},
			imported:           cond{metav1.ConditionTrue, v1alpha1.ReasonComponentsResolved, "all 1"},
			ready:              cond{metav1.ConditionTrue, v1alpha1.ReasonUpToDate, SuspendedMessage},
			observedGeneration: 3,
		},
		{
			name:               "suspended before any pass: Ready Unknown, Suspended",
			pass:               pass{Suspended: true, Listed: true},
			imported:           cond{metav1.ConditionTrue, v1alpha1.ReasonComponentsResolved, "all 0"},
			ready:              cond{metav1.ConditionUnknown, v1alpha1.ReasonSuspended, SuspendedMessage},
			observedGeneration: 3,
		},
		{
			name:   "suspended, the payloads could not be listed: the failure wins",
			before: readyBefore,
			pass: pass{Suspended: true, Components: resolvedComponents("api"),
				Failures: []*eventlog.Failure{{Step: "listing payloads", Reason: v1alpha1.ReasonReconcileFailed, Err: errors.New("cache stopped")}}},
			imported:           cond{metav1.ConditionTrue, v1alpha1.ReasonComponentsResolved, "all 1"},
			ready:              cond{metav1.ConditionFalse, v1alpha1.ReasonReconcileFailed, "listing payloads: cache stopped"},
			reconciling:        cond{metav1.ConditionTrue, v1alpha1.ReasonProgressingWithRetry, "listing payloads"},
			observedGeneration: 2,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &v1alpha1.ReleaseStream{ObjectMeta: metav1.ObjectMeta{Name: "nightly", Generation: 3}}
			s.Status.ObservedGeneration = 2
			s.Status.Conditions = tt.before
			status := ComputeStatus(s, tt.pass, now)
			check := func(typ string, want cond) {
				t.Helper()
				c := meta.FindStatusCondition(status.Conditions, typ)
				if want.reason == "" {
					if c != nil {
						t.Errorf("%s = %+v, want none", typ, *c)
					}
					return
				}
				if c == nil {
					t.Fatalf("no %s condition", typ)
				}
				if c.Status != want.status || c.Reason != want.reason || !strings.HasPrefix(c.Message, want.prefix) || c.ObservedGeneration != 3 {
					t.Errorf("%s = %s/%s %q (generation %d), want %s/%s %q…", typ, c.Status, c.Reason, c.Message, c.ObservedGeneration, want.status, want.reason, want.prefix)
				}
			}
			check(v1alpha1.ConditionImported, tt.imported)
			check(v1alpha1.ConditionUpgradeGraphRecorded, tt.graph)
			check(v1alpha1.ConditionReady, tt.ready)
			check(v1alpha1.ConditionReconciling, tt.reconciling)
			check(v1alpha1.ConditionStalled, tt.stalled)
			if status.ObservedGeneration != tt.observedGeneration {
				t.Errorf("observedGeneration = %d, want %d", status.ObservedGeneration, tt.observedGeneration)
			}
			if len(s.Status.Conditions) != len(tt.before) {
				t.Error("ComputeStatus modified the stream")
			}
		})
	}
}

// TestComputeStatusPayloads: what the status says of the payloads, and that a pass that could
// not list them leaves it as it was.
func TestComputeStatusPayloads(t *testing.T) {
	s := &v1alpha1.ReleaseStream{ObjectMeta: metav1.ObjectMeta{Name: "nightly", Generation: 1}}
	payloads := []v1alpha1.ReleasePayload{
		payloadAt("4.15.2-2026-11-22-000000", time.Hour, v1alpha1.PhasePending),
		payloadAt("4.15.1-2026-11-21-000000", 2*time.Hour, v1alpha1.PhaseAccepted),
		payloadAt("4.15.0-2026-11-20-000000", 3*time.Hour, v1alpha1.PhaseRejected),
	}
	p := pass{Components: resolvedComponents("api"), ComponentsHash: "abc", Decision: &CreateDecision{Reason: v1alpha1.ReasonUpToDate}, Listed: true,
		Payloads: payloads, Published: "registry/release@sha256:4.15.1-2026-11-21-000000"}
	status := ComputeStatus(s, p, now)
	want := v1alpha1.PayloadCounts{Pending: 1, Accepted: 1, Rejected: 1}
	if status.LatestPayload != payloads[0].Name || status.LatestAccepted != payloads[1].Name || status.Payloads != want ||
		status.ComponentsHash != "abc" || status.PublishedImage != p.Published {
		t.Errorf("status %+v", status)
	}
	s.Status = status
	unlisted := pass{Components: resolvedComponents("api"), Failures: []*eventlog.Failure{{Step: "listing payloads", Err: errors.New("no")}}}
	again := ComputeStatus(s, unlisted, now)
	if again.LatestPayload != status.LatestPayload || again.Payloads != status.Payloads || again.LatestAccepted != status.LatestAccepted ||
		again.ComponentsHash != "abc" || again.PublishedImage != status.PublishedImage {
		t.Errorf("a pass without payloads changed what the status says of them: %+v", again)
	}
}

// TestComputeStatusIsStable: the same pass twice gives the same status, transition times
// included, so an idle stream writes nothing.
func TestComputeStatusIsStable(t *testing.T) {
	s := &v1alpha1.ReleaseStream{ObjectMeta: metav1.ObjectMeta{Name: "nightly", Generation: 1}}
	p := pass{Components: resolvedComponents("api"), Decision: &CreateDecision{Reason: v1alpha1.ReasonUpToDate, Message: "up to date"}, Listed: true}
	s.Status = ComputeStatus(s, p, now)
	later := ComputeStatus(s, p, now.Add(time.Hour))
	for _, c := range later.Conditions {
		if !c.LastTransitionTime.Time.Equal(now) {
			t.Errorf("%s moved its transition time to %s", c.Type, c.LastTransitionTime)
		}
	}
}

// TestComputeStatusBoundsMessages: a stream whose 1,000 components all fail (each with a long
// error), and a pass with 1,000 failures, give condition messages within the bound.
func TestComputeStatusBoundsMessages(t *testing.T) {
	var components []v1alpha1.ComponentStatus
	var failures []*eventlog.Failure
	for i := range 1000 {
		name := fmt.Sprintf("component-%04d", i)
		components = append(components, failedComponent(name, strings.Repeat("GET https://registry.example.com/v2/product/"+name+"/manifests/latest: MANIFEST_UNKNOWN; ", 4)))
		failures = append(failures, &eventlog.Failure{Step: "deleting job " + name, Err: errors.New("the server is currently unable to handle the request")})
	}
	s := &v1alpha1.ReleaseStream{ObjectMeta: metav1.ObjectMeta{Name: "nightly", Generation: 1}}
	status := ComputeStatus(s, pass{Components: components, Failures: failures}, now)
	for _, c := range status.Conditions {
		if len(c.Message) > conditions.MaxMessageLength {
			t.Errorf("%s message is %d bytes", c.Type, len(c.Message))
		}
		if !strings.HasSuffix(c.Message, "more bytes]") {
			t.Errorf("%s message does not say it was cut: …%s", c.Type, c.Message[len(c.Message)-40:])
		}
	}
}

// TestComputeStatusReconcileRequest: the status repeats the reconcile-requested-at annotation
// of the stream the pass read, whatever the pass found.
func TestComputeStatusReconcileRequest(t *testing.T) {
	for _, tt := range []struct {
		name, annotation string
		pass             pass
	}{
		{"requested, the pass succeeded", "2026-11-28T12:00:00Z", pass{Components: resolvedComponents("api"), Decision: &CreateDecision{Reason: v1alpha1.ReasonUpToDate}}},
		{"requested, the pass failed", "2026-11-28T12:00:01Z", pass{Failures: []*eventlog.Failure{{Step: "listing payloads", Reason: v1alpha1.ReasonReconcileFailed, Err: errors.New("no")}}}},
		{"requested while suspended", "2026-11-28T12:00:02Z", pass{Suspended: true}},
		{"never requested", "", pass{Components: resolvedComponents("api"), Decision: &CreateDecision{Reason: v1alpha1.ReasonUpToDate}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := &v1alpha1.ReleaseStream{ObjectMeta: metav1.ObjectMeta{Name: "nightly", Generation: 1}}
			if tt.annotation != "" {
				s.Annotations = map[string]string{v1alpha1.AnnotationReconcileRequestedAt: tt.annotation}
			}
			if got := ComputeStatus(s, tt.pass, now).LastHandledReconcileAt; got != tt.annotation {
				t.Errorf("lastHandledReconcileAt = %q, want %q", got, tt.annotation)
			}
		})
	}
}
