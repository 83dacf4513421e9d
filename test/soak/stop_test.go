//go:build !unit

package soak

import (
	"testing"
	"time"
)

func TestCanceledByStop(t *testing.T) {
	stopped := time.Date(2026, 11, 27, 4, 46, 40, 300_000_000, time.UTC)
	for _, tc := range []struct {
		name, line string
		want       bool
	}{
		{"a status write cut short by the stop",
			`{"level":"error","ts":"2026-11-27T04:46:40Z","msg":"writing the status","error":"Put \"https://127.0.0.1:41625/apis/release-controller.dev/v1alpha1/namespaces/demo/releasepayloads/x/status\": context canceled"}`, true},
		{"an Event cut short a second later",
			`{"level":"error","ts":"2026-11-27T04:46:41Z","logger":"events","msg":"Unable to write event (may retry after sleeping)","error":"Post \"https://127.0.0.1:41625/apis/events.k8s.io/v1/namespaces/demo/events\": context canceled"}`, true},
		{"canceled before the stop",
			`{"level":"error","ts":"2026-11-27T04:46:39Z","msg":"writing the status","error":"Put \"https://127.0.0.1:41625/x\": context canceled"}`, false},
		{"another error after the stop",
			`{"level":"error","ts":"2026-11-27T04:46:41Z","msg":"writing the status","error":"Put \"https://127.0.0.1:41625/x\": connection refused"}`, false},
		{"not a log entry", `context canceled`, false},
	} {
		if got := canceledByStop(tc.line, stopped); got != tc.want {
			t.Errorf("%s: canceledByStop = %v, want %v", tc.name, got, tc.want)
		}
	}
}
