package eventlog

import (
	"context"
	"errors"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/conditions"
)

func TestRecorder(t *testing.T) {
	fake := events.NewFakeRecorder(10)
	r := Recorder{Events: fake}
	ctx := context.Background()
	stream := &v1alpha1.ReleaseStream{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "nightly"}}
	payload := &v1alpha1.ReleasePayload{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "4.15.0"}}

	r.Eventf(ctx, stream, payload, v1alpha1.EventPayloadCreated, "Create", "created payload %s", "4.15.0")
	r.Warningf(ctx, payload, nil, v1alpha1.EventRejected, "Decide", "rejected: %s", "e2e failed")
	_ = r.Finish(ctx, stream, Step(v1alpha1.ReasonPublishFailed, "Publish", "publishing 4.15.0 as latest", errors.New("denied")))
	_ = r.Finish(ctx, payload, Step(v1alpha1.ReasonReconcileFailed, "Verify", "launching e2e", errors.New(strings.Repeat("x", 5000))))
	want := []string{
		"Normal PayloadCreated created payload 4.15.0",
		"Warning Rejected rejected: e2e failed",
		"Warning PublishFailed publishing 4.15.0 as latest: denied",
	}
	for _, w := range want {
		if got := <-fake.Events; got != w {
			t.Errorf("event %q, want %q", got, w)
		}
	}
	long := <-fake.Events
	if note := strings.TrimPrefix(long, "Warning ReconcileFailed "); len(note) > conditions.MaxNoteLength || !strings.HasSuffix(note, "more bytes]") {
		t.Errorf("a long note is %d bytes: …%s", len(note), note[len(note)-30:])
	}
	// Without a recorder, only the log line.
	Recorder{}.Eventf(ctx, stream, nil, v1alpha1.EventPublished, "Publish", "moved")
}

func TestKeys(t *testing.T) {
	for _, tt := range []struct {
		obj  client.Object
		want []any
	}{
		{&v1alpha1.ReleaseStream{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "nightly"}}, []any{"stream", "ns/nightly"}},
		{&v1alpha1.ReleasePayload{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "4.15.0"},
			Spec: v1alpha1.ReleasePayloadSpec{PayloadCoordinates: v1alpha1.PayloadCoordinates{Stream: "nightly"}}}, []any{"payload", "ns/4.15.0", "stream", "ns/nightly"}},
		{&v1alpha1.ReleaseLog{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "release-2026-11-22"}}, []any{"object", "ns/release-2026-11-22"}},
		{&v1alpha1.Pipeline{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web"}}, []any{"pipeline", "ns/web"}},
	} {
		got := Keys(tt.obj)
		if len(got) != len(tt.want) {
			t.Errorf("Keys(%T) = %v, want %v", tt.obj, got, tt.want)
			continue
		}
		for i := range got {
			if got[i] != tt.want[i] {
				t.Errorf("Keys(%T) = %v, want %v", tt.obj, got, tt.want)
			}
		}
	}
}
