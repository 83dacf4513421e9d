package server

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestStreamRefusal(t *testing.T) {
	tests := []struct {
		name                          string
		total, ofClient, max, perClnt int
		want                          int
	}{
		{name: "first stream", max: 10, perClnt: 2},
		{name: "below both", total: 5, ofClient: 1, max: 10, perClnt: 2},
		{name: "client at its bound", total: 5, ofClient: 2, max: 10, perClnt: 2, want: http.StatusTooManyRequests},
		{name: "server at its bound", total: 10, ofClient: 0, max: 10, perClnt: 2, want: http.StatusServiceUnavailable},
		{name: "both: the client's bound answers", total: 10, ofClient: 2, max: 10, perClnt: 2, want: http.StatusTooManyRequests},
		{name: "no bound per client", total: 5, ofClient: 500, max: 10, perClnt: -1},
		{name: "no bound in all", total: 5000, ofClient: 1, max: -1, perClnt: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, msg := StreamRefusal(tt.total, tt.ofClient, tt.max, tt.perClnt, "192.0.2.1")
			if code != tt.want {
				t.Errorf("StreamRefusal = %d %q, want %d", code, msg, tt.want)
			}
			if code != 0 && !strings.Contains(msg, "--max-event-streams") {
				t.Errorf("the refusal does not name its option: %q", msg)
			}
		})
	}
}

// streamClient is an HTTP client whose connections come from the loopback address ip, so a
// test has several clients (remote addresses) on one machine. Each request has a connection
// of its own.
func streamClient(ip string) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	return &http.Client{Transport: &http.Transport{DialContext: d.DialContext, DisableKeepAlives: true}}
}

// openStream opens an event stream; it returns the status, the body of a refusal, and a
// function that closes an open stream.
func openStream(t *testing.T, c *http.Client, url string) (int, string, func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		cancel()
		return resp.StatusCode, string(body), func() {}
	}
	// The stream is counted once its first event arrives.
	if line, err := bufio.NewReader(resp.Body).ReadString('\n'); err != nil || line != "data: open\n" {
		t.Fatalf("reading the stream: %q %v", line, err)
	}
	return resp.StatusCode, "", func() { cancel(); resp.Body.Close() }
}

// Event streams are bounded per client and in all: the stream beyond a client's bound is
// 429, beyond the server's 503, both naming their option, and a stream closed frees its
// slot. Before the bounds, any client could open streams until the server ran out.
func TestEventStreamsAreBounded(t *testing.T) {
	s, err := NewWithOptions(Options{MaxStreams: 3, MaxStreamsPerClient: 2})
	if err != nil {
		t.Fatal(err)
	}
	s.Handle("GET /events", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: open\n\n")
		_ = http.NewResponseController(w).Flush()
		<-r.Context().Done()
	}), EventStream())
	s.Handle("GET /plain", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") }))
	url, stop := start(t, s)
	defer func() {
		if err := stop(); err != nil {
			t.Errorf("stopping: %v", err)
		}
	}()
	a, b := streamClient("127.0.0.1"), streamClient("127.0.0.2")

	_, _, closeA1 := openStream(t, a, url+"/events")
	_, _, closeA2 := openStream(t, a, url+"/events")
	defer closeA2()
	code, body, _ := openStream(t, a, url+"/events")
	if code != http.StatusTooManyRequests || !strings.Contains(body, "--max-event-streams-per-client") {
		t.Errorf("a client's third stream: %d %q, want 429 naming --max-event-streams-per-client", code, body)
	}
	// Other routes are not bounded.
	if code, _ := get(t, a, url+"/plain"); code != http.StatusOK {
		t.Errorf("GET /plain while the client's streams are at their bound: %d", code)
	}
	// Another client gets the server's last slot, then the server is full.
	_, _, closeB1 := openStream(t, b, url+"/events")
	defer closeB1()
	code, body, _ = openStream(t, b, url+"/events")
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "--max-event-streams") {
		t.Errorf("a stream beyond the server's bound: %d %q, want 503 naming --max-event-streams", code, body)
	}
	// A stream closed frees its slot: once the server saw it end, the client opens another.
	closeA1()
	deadline := time.Now().Add(30 * time.Second)
	for {
		code, body, closeAgain := openStream(t, a, url+"/events")
		if code == http.StatusOK {
			closeAgain()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a closed stream's slot was not freed within 30s: %d %q", code, body)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
