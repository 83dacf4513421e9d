package eventlog

import (
	"context"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/release-controller/release-controller/api/v1alpha1"
)

// Failure is a failed step of a reconcile. A reconciler returns it (joined with the pass's
// other failures) and reports it in one deferred place, Finish: the failures become the Ready
// condition's reason and message (Summarize), one Warning Event each, and the returned error,
// which controller-runtime logs once and retries (or, when every failure is Stalled, logs and
// does not retry until the object changes). Nothing else logs or records it.
type Failure struct {
	// Reason is the Event's reason and, for the first failure, Ready's (api/v1alpha1).
	Reason string
	// Action is the Event's action ("Import", "Promote").
	Action string
	// Step says what was being done ("listing payloads").
	Step string
	// Object, when set, is what the Event is about when that is not the reconciled object
	// (a stream's step that failed on one of its payloads).
	Object client.Object
	// Stalled says the step can never work as the spec stands: retrying is pointless.
	Stalled bool
	Err     error
}

func (f *Failure) Error() string {
	if f.Step == "" {
		return f.Err.Error()
	}
	return f.Step + ": " + f.Err.Error()
}
func (f *Failure) Unwrap() error { return f.Err }

// Step is a failed step; nil when err is nil.
func Step(reason, action, step string, err error) error {
	if err == nil {
		return nil
	}
	return &Failure{Reason: reason, Action: action, Step: step, Err: err}
}

// StepOn is Step reported on obj instead of the reconciled object.
func StepOn(obj client.Object, reason, action, step string, err error) error {
	if err == nil {
		return nil
	}
	return &Failure{Reason: reason, Action: action, Step: step, Object: obj, Err: err}
}

// Stall is a step that can never work as the spec stands; nil when err is nil.
func Stall(reason, action, step string, err error) error {
	if err == nil {
		return nil
	}
	return &Failure{Reason: reason, Action: action, Step: step, Stalled: true, Err: err}
}

// Failures lists the failures in err, an error or a tree of errors.Join: an error that is no
// Failure (an API call's, returned as it is) counts as one with ReasonReconcileFailed.
func Failures(err error) []*Failure {
	if err == nil {
		return nil
	}
	if f, ok := err.(*Failure); ok { //nolint:errorlint // the error itself, not one it wraps: that case is below
		return []*Failure{f}
	}
	var f *Failure
	if joined, ok := err.(interface{ Unwrap() []error }); ok {
		var out []*Failure
		for _, e := range joined.Unwrap() {
			out = append(out, Failures(e)...)
		}
		return out
	}
	if errors.As(err, &f) { // wrapped: err's text already says the step
		return []*Failure{{Reason: f.Reason, Action: f.Action, Object: f.Object, Stalled: f.Stalled, Err: err}}
	}
	return []*Failure{{Reason: v1alpha1.ReasonReconcileFailed, Action: "Reconcile", Step: "reconciling", Err: err}}
}

// Summary is what err's failures make of an object's Ready and kstatus conditions.
type Summary struct {
	// Reason is the first failure's.
	Reason string
	// Message names each failure's step and error, "; "-separated.
	Message string
	// Stalled: every failure is one.
	Stalled bool
}

// Summarize summarizes err's failures; ok is false when there are none.
func Summarize(err error) (s Summary, ok bool) {
	failures := Failures(err)
	if len(failures) == 0 {
		return Summary{}, false
	}
	msgs := make([]string, len(failures))
	s.Stalled = true
	for i, f := range failures {
		msgs[i] = f.Error()
		s.Stalled = s.Stalled && f.Stalled
	}
	s.Reason = failures[0].Reason
	s.Message = strings.Join(msgs, "; ")
	return s, true
}

// Finish reports a reconcile's outcome, in its deferred function: one Warning Event per failure
// (on the failure's Object, else on obj), and the error for controller-runtime to log once and
// retry — a reconcile.TerminalError, not retried, when every failure is Stalled. nil when err is.
func (r Recorder) Finish(ctx context.Context, obj client.Object, err error) error {
	failures := Failures(err)
	if len(failures) == 0 {
		return nil
	}
	stalled := true
	for _, f := range failures {
		on := f.Object
		if on == nil {
			on = obj
		}
		r.record(on, nil, corev1.EventTypeWarning, f.Reason, f.Action, f.Error())
		stalled = stalled && f.Stalled
	}
	err = fmt.Errorf("%s %s/%s: %w", kind(obj), obj.GetNamespace(), obj.GetName(), err)
	if stalled {
		return reconcile.TerminalError(err)
	}
	return err
}

func kind(obj client.Object) string {
	switch obj.(type) {
	case *v1alpha1.ReleaseStream:
		return "stream"
	case *v1alpha1.ReleasePayload:
		return "payload"
	case *v1alpha1.Pipeline:
		return "pipeline"
	}
	return "object"
}
