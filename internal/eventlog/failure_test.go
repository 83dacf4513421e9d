package eventlog

import (
	"context"
	"errors"
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/release-controller/release-controller/api/v1alpha1"
)

func TestSummarize(t *testing.T) {
	apiErr := errors.New("connection refused")
	for _, tt := range []struct {
		name   string
		err    error
		want   Summary
		wantOK bool
	}{
		{name: "no failure", err: nil},
		{name: "a step", err: Step(v1alpha1.ReasonPublishFailed, "Publish", "moving latest", apiErr),
			want: Summary{Reason: v1alpha1.ReasonPublishFailed, Message: "moving latest: connection refused"}, wantOK: true},
		{name: "a plain error is ReconcileFailed", err: apiErr,
			want: Summary{Reason: v1alpha1.ReasonReconcileFailed, Message: "reconciling: connection refused"}, wantOK: true},
		{name: "joined: the first failure's reason, every message",
			err:  errors.Join(Step(v1alpha1.ReasonMirrorFailed, "Mirror", "mirroring", apiErr), nil, Stall("InvalidSpec", "Verify", "planning", errors.New("no such stream"))),
			want: Summary{Reason: v1alpha1.ReasonMirrorFailed, Message: "mirroring: connection refused; planning: no such stream"}, wantOK: true},
		{name: "stalled when every failure is",
			err:  errors.Join(Stall("InvalidSpec", "Verify", "planning", apiErr), Stall("InvalidSpec", "Observe", "reading the app", apiErr)),
			want: Summary{Reason: "InvalidSpec", Message: "planning: connection refused; reading the app: connection refused", Stalled: true}, wantOK: true},
		{name: "a wrapped step keeps its reason and its text once",
			err:  fmt.Errorf("pipeline web: %w", Step(v1alpha1.ReasonPromotionFailed, "Promote", "promoting", apiErr)),
			want: Summary{Reason: v1alpha1.ReasonPromotionFailed, Message: "pipeline web: promoting: connection refused"}, wantOK: true},
		{name: "nil steps are no failure", err: errors.Join(Step("X", "Y", "z", nil), StepOn(nil, "X", "Y", "z", nil), Stall("X", "Y", "z", nil))},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := Summarize(tt.err)
			if got != tt.want || ok != tt.wantOK {
				t.Errorf("Summarize = %+v, %v; want %+v, %v", got, ok, tt.want, tt.wantOK)
			}
		})
	}
}

func TestFinish(t *testing.T) {
	fake := events.NewFakeRecorder(10)
	r := Recorder{Events: fake}
	ctx := context.Background()
	stream := &v1alpha1.ReleaseStream{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "nightly"}}
	payload := &v1alpha1.ReleasePayload{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "4.15.0"}}

	if err := r.Finish(ctx, stream, nil); err != nil || len(fake.Events) != 0 {
		t.Fatalf("no failure: %v, %d events", err, len(fake.Events))
	}

	err := r.Finish(ctx, stream, errors.Join(
		Step(v1alpha1.ReasonPublishFailed, "Publish", "moving latest", errors.New("denied")),
		StepOn(payload, v1alpha1.ReasonReconcileFailed, "Verify", "launching e2e", errors.New("quota"))))
	if err == nil || errors.Is(err, reconcile.TerminalError(nil)) || err.Error() != "stream ns/nightly: moving latest: denied\nlaunching e2e: quota" {
		t.Errorf("returned %v", err)
	}
	for _, want := range []string{"Warning PublishFailed moving latest: denied", "Warning ReconcileFailed launching e2e: quota"} {
		if got := <-fake.Events; got != want {
			t.Errorf("event %q, want %q", got, want)
		}
	}

	err = r.Finish(ctx, stream, Stall("InvalidSpec", "Verify", "planning", errors.New("no stream b")))
	if !errors.Is(err, reconcile.TerminalError(nil)) {
		t.Errorf("a stalled reconcile returned %v, want a terminal error", err)
	}
	if got := <-fake.Events; got != "Warning InvalidSpec planning: no stream b" {
		t.Errorf("event %q", got)
	}
	if len(fake.Events) != 0 {
		t.Errorf("%d more events", len(fake.Events))
	}
}
