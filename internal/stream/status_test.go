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
	tests := []struct {
		name                   string
		pass                   pass
		imported, graph, ready cond
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
			name:     "a component does not resolve",
			pass:     pass{Components: append(resolvedComponents("api"), failedComponent("web", "manifest unknown")), Listed: true},
			imported: cond{metav1.ConditionFalse, v1alpha1.ReasonComponentsUnresolved, "1 of 2 components did not resolve; retrying with backoff: web (manifest unknown)"},
			ready:    cond{metav1.ConditionFalse, v1alpha1.ReasonComponentsUnresolved, "1 of 2 components did not resolve; no payload is created"},
			// Not a failed step: the import is retried with its own backoff, the spec was acted on.
			observedGeneration: 3,
		},
		{
			name: "failed steps: the first names Ready's reason, all are in its message",
			pass: pass{Components: resolvedComponents("api"), Decision: upToDate, Listed: true, Failures: []stepFailure{
				{Step: "publishing p1 as latest", Reason: v1alpha1.ReasonPublishFailed, Err: errors.New("denied")},
				{Step: "deleting payload p0", Reason: v1alpha1.ReasonReconcileFailed, Err: errors.New("conflict")},
			}},
			imported: cond{metav1.ConditionTrue, v1alpha1.ReasonComponentsResolved, "all 1"},
			ready:    cond{metav1.ConditionFalse, v1alpha1.ReasonPublishFailed, "publishing p1 as latest: denied; deleting payload p0: conflict"},
			// A failed pass leaves observedGeneration where it was.
			observedGeneration: 2,
		},
		{
			name: "a failure without a reason of its own",
			pass: pass{Components: resolvedComponents("api"), Decision: upToDate, Listed: true,
				Failures: []stepFailure{{Step: "listing payloads", Err: errors.New("cache stopped")}}},
			imported:           cond{metav1.ConditionTrue, v1alpha1.ReasonComponentsResolved, "all 1"},
			ready:              cond{metav1.ConditionFalse, v1alpha1.ReasonReconcileFailed, "listing payloads: cache stopped"},
			observedGeneration: 2,
		},
		{
			name: "an upgrade graph the stream does not own",
			pass: pass{Components: resolvedComponents("api"), Decision: upToDate, Listed: true, UpgradeGraph: notOwned,
				Failures: []stepFailure{{Step: "recording upgrade results in ConfigMap nightly-upgrade-graph", Reason: v1alpha1.ReasonUpgradeGraphNotOwned, Err: errors.New("not ours")}}},
			imported:           cond{metav1.ConditionTrue, v1alpha1.ReasonComponentsResolved, "all 1"},
			graph:              cond{metav1.ConditionFalse, v1alpha1.ReasonUpgradeGraphNotOwned, "ConfigMap nightly-upgrade-graph exists"},
			ready:              cond{metav1.ConditionFalse, v1alpha1.ReasonUpgradeGraphNotOwned, "recording upgrade results"},
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
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &v1alpha1.ReleaseStream{ObjectMeta: metav1.ObjectMeta{Name: "nightly", Generation: 3}}
			s.Status.ObservedGeneration = 2
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
			if status.ObservedGeneration != tt.observedGeneration {
				t.Errorf("observedGeneration = %d, want %d", status.ObservedGeneration, tt.observedGeneration)
			}
			if s.Status.Conditions != nil {
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
	unlisted := pass{Components: resolvedComponents("api"), Failures: []stepFailure{{Step: "listing payloads", Err: errors.New("no")}}}
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
	var failures []stepFailure
	for i := range 1000 {
		name := fmt.Sprintf("component-%04d", i)
		components = append(components, failedComponent(name, strings.Repeat("GET https://registry.example.com/v2/product/"+name+"/manifests/latest: MANIFEST_UNKNOWN; ", 4)))
		failures = append(failures, stepFailure{Step: "deleting job " + name, Err: errors.New("the server is currently unable to handle the request")})
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
