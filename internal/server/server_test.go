package server

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

func start(t *testing.T, s *Server) (url string, stop func() error) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, l, 5*time.Second) }()
	return "http://" + l.Addr().String(), func() error { cancel(); return <-done }
}

func get(t *testing.T, c *http.Client, url string) (int, string) {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(body)
}

func TestServerServesRoutesHealthAndMetrics(t *testing.T) {
	s := New()
	s.Handle("GET /hello/{name}", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "hello "+r.PathValue("name"))
	}))
	url, stop := start(t, s)
	if code, body := get(t, http.DefaultClient, url+"/hello/world"); code != 200 || body != "hello world" {
		t.Errorf("GET /hello/world = %d %q", code, body)
	}
	if code, _ := get(t, http.DefaultClient, url+"/healthz"); code != 200 {
		t.Errorf("GET /healthz = %d", code)
	}
	code, metrics := get(t, http.DefaultClient, url+"/metrics")
	if code != 200 || !strings.Contains(metrics, `release_controller_http_requests_total{code="200",route="GET /hello/{name}"} 1`) {
		t.Errorf("GET /metrics = %d, without the route's counter:\n%s", code, metrics)
	}
	if err := stop(); err != nil {
		t.Errorf("stopping: %v", err)
	}
}

// TestServerSpeaksPlainHTTP2 checks a client that only speaks HTTP/2 without TLS, as gRPC
// clients do, is served.
func TestServerSpeaksPlainHTTP2(t *testing.T) {
	s := New()
	s.Handle("GET /proto", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, r.Proto)
	}))
	url, stop := start(t, s)
	defer func() {
		if err := stop(); err != nil {
			t.Errorf("serving: %v", err)
		}
	}()
	protocols := new(http.Protocols)
	protocols.SetUnencryptedHTTP2(true)
	client := &http.Client{Transport: &http.Transport{Protocols: protocols}}
	if _, body := get(t, client, url+"/proto"); body != "HTTP/2.0" {
		t.Errorf("served over %q, want HTTP/2.0", body)
	}
}

// TestShutdownEndsStreams checks a stream that only ends with its request's context does not
// hold the shutdown up.
func TestShutdownEndsStreams(t *testing.T) {
	s := New()
	streaming := make(chan struct{})
	s.Handle("GET /stream", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "data: hello\n\n")
		w.(http.Flusher).Flush()
		close(streaming)
		<-r.Context().Done()
	}))
	url, stop := start(t, s)
	resp, err := http.Get(url + "/stream")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	<-streaming
	if err := stop(); err != nil {
		t.Errorf("shutdown with an open stream: %v", err)
	}
}

// A client may dial a connection it never uses (net/http's transport races a dial against
// a connection coming free). Shutdown must not wait for it: net/http keeps such a
// connection for 5 s, longer than this grace, so the old server failed here.
func TestShutdownClosesConnectionsWithoutRequests(t *testing.T) {
	s := New()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, l, 4*time.Second) }()

	unused, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer unused.Close()
	// A request on another connection: the server is serving, and has accepted the first.
	if code, _ := get(t, http.DefaultClient, "http://"+l.Addr().String()+"/healthz"); code != http.StatusOK {
		t.Fatalf("GET /healthz = %d", code)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("shutdown with a connection that carried no request: %v", err)
	}
	if _, err := unused.Read(make([]byte, 1)); err == nil {
		t.Error("the unused connection is still open after shutdown")
	}
}
