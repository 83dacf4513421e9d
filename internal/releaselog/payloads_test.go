package releaselog

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/verdict/verdicttest"
)

func TestPayloadEntry(t *testing.T) {
	const tag = "4.15.0-0.nightly-2026-03-02-093000"
	at := metav1.NewTime(date("2026-03-02T10:15:00Z"))
	cond := func(typ string, status metav1.ConditionStatus, msg string) metav1.Condition {
		return metav1.Condition{Type: typ, Status: status, Reason: "R", Message: msg, LastTransitionTime: at}
	}
	payload := func(phase v1alpha1.PayloadPhase, conditions ...metav1.Condition) *v1alpha1.ReleasePayload {
		p := &v1alpha1.ReleasePayload{
			ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: tag, UID: "0d9e"},
			Spec:       v1alpha1.ReleasePayloadSpec{PayloadCoordinates: v1alpha1.PayloadCoordinates{Stream: "nightly", Tag: tag}},
			Status:     v1alpha1.ReleasePayloadStatus{Phase: phase, Conditions: conditions},
		}
		if len(conditions) > 0 {
			verdicttest.Earn(p, phase) // keeps the conditions given
		}
		return p
	}
	tests := []struct {
		name    string
		payload *v1alpha1.ReleasePayload
		want    *Entry
	}{
		{"accepted", payload(v1alpha1.PhaseAccepted, cond(v1alpha1.ConditionPayloadAccepted, metav1.ConditionTrue, "all blocking jobs succeeded")),
			&Entry{ID: fmt.Sprintf("0d9e/Accepted/%d", at.Unix()), Type: TypeRelease, Version: tag, Origin: ControllerOrigin, Author: ControllerOrigin,
				Date: at.Time, Message: "all blocking jobs succeeded", Link: "/namespaces/demo/releasestream/nightly/release/" + tag}},
		{"rejected", payload(v1alpha1.PhaseRejected,
			cond(v1alpha1.ConditionPayloadAccepted, metav1.ConditionFalse, "rejected"),
			cond(v1alpha1.ConditionPayloadRejected, metav1.ConditionTrue, "e2e failed")),
			&Entry{ID: fmt.Sprintf("0d9e/Rejected/%d", at.Unix()), Type: TypeRejected, Version: tag, Origin: ControllerOrigin, Author: ControllerOrigin,
				Date: at.Time, Message: "e2e failed", Link: "/namespaces/demo/releasestream/nightly/release/" + tag}},
		{"ready: no verdict", payload(v1alpha1.PhaseReady, cond(v1alpha1.ConditionPayloadAccepted, metav1.ConditionFalse, "pending")), nil},
		{"failed: not logged", payload(v1alpha1.PhaseFailed, cond(v1alpha1.ConditionPayloadFailed, metav1.ConditionTrue, "build failed")), nil},
		{"accepted phase without its condition", payload(v1alpha1.PhaseAccepted), nil},
		{"accepted by hand: not logged", verdicttest.HandWritten("demo", "nightly", tag, v1alpha1.PhaseAccepted), nil},
		{"rejected by hand: not logged", verdicttest.HandWritten("demo", "nightly", tag, v1alpha1.PhaseRejected), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := PayloadEntry(tt.payload)
			if ok != (tt.want != nil) {
				t.Fatalf("ok = %v, want %v", ok, tt.want != nil)
			}
			if ok && !got.equal(*tt.want) {
				t.Errorf("got  %+v\nwant %+v", got, *tt.want)
			}
		})
	}
}

func TestPayloadEntryIDChangesWithTheTransition(t *testing.T) {
	p := &v1alpha1.ReleasePayload{ObjectMeta: metav1.ObjectMeta{UID: "u"}, Status: v1alpha1.ReleasePayloadStatus{
		Phase:      v1alpha1.PhaseAccepted,
		Conditions: []metav1.Condition{{Type: v1alpha1.ConditionPayloadAccepted, Status: metav1.ConditionTrue, LastTransitionTime: metav1.NewTime(date("2026-03-02T10:00:00Z"))}},
	}}
	verdicttest.Earn(p, v1alpha1.PhaseAccepted)
	first, _ := PayloadEntry(p)
	again, _ := PayloadEntry(p.DeepCopy())
	p.Status.Conditions[0].LastTransitionTime = metav1.NewTime(date("2026-03-02T11:00:00Z"))
	later, _ := PayloadEntry(p)
	if first.ID != again.ID || first.ID == later.ID {
		t.Errorf("ids %q, %q, %q: the same transition must give the same id, another transition another", first.ID, again.ID, later.ID)
	}
}

func TestTruncate(t *testing.T) {
	long := strings.Repeat("é", v1alpha1.MaxReleaseLogMessageLength+10)
	got := truncate(long, v1alpha1.MaxReleaseLogMessageLength)
	if n := utf8.RuneCountInString(got); n != v1alpha1.MaxReleaseLogMessageLength || !strings.HasSuffix(got, "…") {
		t.Errorf("truncated to %d characters ending %q", n, got[len(got)-3:])
	}
	if got := truncate("short", 10); got != "short" {
		t.Errorf("a short message changed: %q", got)
	}
}
