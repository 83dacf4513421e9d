package logcontroller

import (
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/release-controller/release-controller/internal/eventlog"
	"github.com/release-controller/release-controller/internal/releaselog"
)

// SetEvents makes the day reconciler record its Events with ev, for tests that call
// Reconcile themselves.
func (r *Reconciler) SetEvents(ev events.EventRecorder) { r.report = eventlog.Recorder{Events: ev} }

// NewPayloadLogger is the reconciler of the payloads' entries, with a store of its own.
func NewPayloadLogger(reader client.Reader, w *releaselog.Writer, ev events.EventRecorder) reconcile.Reconciler {
	return &payloadLogger{Reader: reader, writer: w, store: releaselog.NewStore(), report: eventlog.Recorder{Events: ev}}
}
