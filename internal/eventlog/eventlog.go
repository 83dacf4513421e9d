// Package eventlog reports what the controllers did, or failed to do, everywhere an operator
// looks (as Flux's eventLogf does): a Kubernetes Event on the object (events.k8s.io, its note
// bounded to what the API accepts) and a structured log line keyed by the object ("stream",
// "payload", "pipeline" or "object": "<namespace>/<name>"). The Events' reasons are in
// api/v1alpha1/events.go and conditions.go.
//
// Failures take one path (failure.go): a reconciler returns them as Failures, and its deferred
// function makes them the Ready condition (Summarize) and one Warning Event each (Finish); the
// returned error is the one log line, written by controller-runtime, which retries it with
// backoff and counts it in its error metrics.
package eventlog

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/conditions"
)

// Reporter is the reporting controller of the controllers' Events.
const Reporter = "release-controller"

// Recorder emits Events and log lines. The zero value only logs.
type Recorder struct {
	// Events records the Events; nil records none.
	Events events.EventRecorder
}

// Eventf reports a transition: a Normal Event with reason and action on obj (related, when
// not nil, is the other object involved) and an info log line.
func (r Recorder) Eventf(ctx context.Context, obj client.Object, related runtime.Object, reason, action, format string, args ...any) {
	note := fmt.Sprintf(format, args...)
	log.FromContext(ctx, Keys(obj)...).Info(note, "reason", reason, "action", action)
	r.record(obj, related, corev1.EventTypeNormal, reason, action, note)
}

// Warningf reports a problem that is not a failed step (a verdict against a payload, a run
// that failed): a Warning Event and an info log line.
func (r Recorder) Warningf(ctx context.Context, obj client.Object, related runtime.Object, reason, action, format string, args ...any) {
	note := fmt.Sprintf(format, args...)
	log.FromContext(ctx, Keys(obj)...).Info(note, "reason", reason, "action", action, "warning", true)
	r.record(obj, related, corev1.EventTypeWarning, reason, action, note)
}

func (r Recorder) record(obj client.Object, related runtime.Object, eventType, reason, action, note string) {
	if r.Events == nil {
		return
	}
	r.Events.Eventf(obj, related, eventType, reason, action, "%s", conditions.Truncate(note, conditions.MaxNoteLength))
}

// Keys are the log keys of obj: "stream" for a stream, "payload" and "stream" for a payload,
// "pipeline" for a pipeline, else "object"; each "<namespace>/<name>".
func Keys(obj client.Object) []any {
	key := obj.GetNamespace() + "/" + obj.GetName()
	switch o := obj.(type) {
	case *v1alpha1.ReleaseStream:
		return []any{"stream", key}
	case *v1alpha1.ReleasePayload:
		return []any{"payload", key, "stream", o.Namespace + "/" + o.Spec.PayloadCoordinates.Stream}
	case *v1alpha1.Pipeline:
		return []any{"pipeline", key}
	}
	return []any{"object", key}
}
