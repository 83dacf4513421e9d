package pipeline

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/release-controller/release-controller/internal/pipeline/signature"
)

func TestNotify(t *testing.T) {
	key := []byte("hook-key")
	var calls atomic.Int32
	var failFirst atomic.Bool
	failFirst.Store(true)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		body, _ := io.ReadAll(r.Body)
		if err := signature.NewVerifier(nil).VerifyNotification(key, r.Method, r.URL.EscapedPath(), r.Header.Get(signature.HeaderTimestamp), r.Header.Get(signature.HeaderSignature), body); err != nil {
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		var ev PromotionEvent
		if err := json.Unmarshal(body, &ev); err != nil || ev.ID != "uid/prod/2" || ev.Revision != "2" || r.Header.Get("X-Release-Controller-Delivery") != ev.ID {
			http.Error(w, "bad event", http.StatusBadRequest)
			return
		}
		if failFirst.Swap(false) {
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	n := &Notifier{HTTP: srv.Client(), Backoff: wait.Backoff{Steps: 3, Duration: 10 * time.Millisecond, Factor: 1}, Now: time.Now}
	ev := PromotionEvent{ID: "uid/prod/2", Environment: "prod", Revision: "2"}

	// A 503 is retried.
	if err := n.Notify(context.Background(), srv.URL+"/hooks/promote", key, ev); err != nil {
		t.Fatalf("Notify: %v", err)
	}
	if got := calls.Load(); got != 2 {
		t.Errorf("%d calls, want 2 (a retry after the 503)", got)
	}
	// A refusal (401: wrong key) is not retried, and says why.
	calls.Store(0)
	err := n.Notify(context.Background(), srv.URL+"/hooks/promote", []byte("other"), ev)
	if err == nil || !strings.Contains(err.Error(), "401") {
		t.Errorf("Notify with a wrong key: %v", err)
	}
	if got := calls.Load(); got != 1 {
		t.Errorf("%d calls, want 1 (no retry of a 4xx)", got)
	}
	// A receiver that keeps failing: every attempt, then the last error.
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		http.Error(w, "down", http.StatusBadGateway)
	}))
	defer down.Close()
	calls.Store(0)
	if err := n.Notify(context.Background(), down.URL, nil, ev); err == nil || !strings.Contains(err.Error(), "502") {
		t.Errorf("Notify to a failing receiver: %v", err)
	}
	if got := calls.Load(); got != 3 {
		t.Errorf("%d calls, want 3", got)
	}
}

// A notification sent to a receiver of approvals, with the approval key itself, is refused:
// its signature covers the notification domain, which no approval's does.
func TestNotificationIsNotAnApproval(t *testing.T) {
	key := []byte("approval-key")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if err := signature.NewVerifier(nil).Verify(key, r.Method, r.URL.EscapedPath(), r.Header.Get(signature.HeaderTimestamp), r.Header.Get(signature.HeaderSignature), body); err != nil {
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()
	n := &Notifier{HTTP: srv.Client(), Backoff: wait.Backoff{Steps: 1}, Now: time.Now}
	err := n.Notify(context.Background(), srv.URL+"/pipelines/ns/web/prod/2/approve", key, PromotionEvent{ID: "uid/prod/2", Environment: "prod", Revision: "2"})
	if err == nil || !strings.Contains(err.Error(), "401") {
		t.Errorf("a notification to an approval receiver: %v, want 401", err)
	}
}
