//go:build !unit

package server

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/release-controller/release-controller/internal/server/servertest"
)

// waitTimeout bounds every wait: a deadline for a broken test, not a performance assertion.
const waitTimeout = 30 * time.Second

// startWith serves s on a loopback port until the test ends and returns its address.
func startWith(t *testing.T, s *Server) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, l, 5*time.Second) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("server stopped with: %v", err)
		}
	})
	return l.Addr().String()
}

// Every response carries the security headers: routes, health, metrics, and the mux's own
// 404 and 405.
func TestSecurityHeadersOnEveryResponse(t *testing.T) {
	s := New()
	s.Handle("GET /page", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "<p>page</p>")
	}))
	base := "http://" + startWith(t, s)
	for _, tc := range []struct {
		method, path string
		code         int
	}{
		{"GET", "/page", 200}, {"GET", "/healthz", 200}, {"GET", "/metrics", 200},
		{"GET", "/nothing-here", 404}, {"POST", "/page", 405},
	} {
		req, _ := http.NewRequest(tc.method, base+tc.path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != tc.code {
			t.Errorf("%s %s: %d, want %d", tc.method, tc.path, resp.StatusCode, tc.code)
		}
		for name, want := range map[string]string{
			"Content-Security-Policy": ContentSecurityPolicy,
			"X-Content-Type-Options":  "nosniff",
			"X-Frame-Options":         "DENY",
			"Referrer-Policy":         "same-origin",
		} {
			if got := resp.Header.Get(name); got != want {
				t.Errorf("%s %s: %s %q, want %q", tc.method, tc.path, name, got, want)
			}
		}
	}
	for _, directive := range []string{"default-src 'none'", "script-src 'self'", "style-src 'self'", "frame-ancestors 'none'"} {
		if !strings.Contains(ContentSecurityPolicy, directive+";") && !strings.HasSuffix(ContentSecurityPolicy, directive) {
			t.Errorf("the policy lacks %s", directive)
		}
	}
	if strings.Contains(ContentSecurityPolicy, "unsafe") {
		t.Errorf("the policy allows something unsafe: %s", ContentSecurityPolicy)
	}
}

// echoBody answers with the length of the body it read, or the error that ended the read.
var echoBody = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	n, err := io.Copy(io.Discard, r.Body)
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		TooLarge(w, tooLarge.Limit)
	case err != nil:
		http.Error(w, err.Error(), http.StatusBadRequest)
	default:
		_, _ = fmt.Fprintf(w, "read %d bytes", n)
	}
})

// A body over the route's limit is refused with 413: at once when its length is announced,
// when the limit is reached while reading a chunked one (the handler sees an
// *http.MaxBytesError).
func TestRequestBodyLimits(t *testing.T) {
	s := New()
	s.Handle("POST /default", echoBody)
	s.Handle("POST /small", echoBody, MaxBodyBytes(10))
	base := "http://" + startWith(t, s)
	post := func(path string, body io.Reader) (int, string) {
		t.Helper()
		resp, err := http.Post(base+path, "application/octet-stream", body)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		text, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, strings.TrimSpace(string(text))
	}
	// onlyReader hides the reader's length, so the client sends the body chunked.
	type onlyReader struct{ io.Reader }

	for _, tc := range []struct {
		name, path string
		body       io.Reader
		code       int
		says       string
	}{
		{"within the default limit", "/default", strings.NewReader(strings.Repeat("x", DefaultMaxBodyBytes)), 200, fmt.Sprintf("read %d bytes", DefaultMaxBodyBytes)},
		{"over the default limit, announced", "/default", strings.NewReader(strings.Repeat("x", DefaultMaxBodyBytes+1)), 413, fmt.Sprintf("larger than this server accepts here (%d bytes)", DefaultMaxBodyBytes)},
		{"over the default limit, chunked", "/default", onlyReader{strings.NewReader(strings.Repeat("x", 2*DefaultMaxBodyBytes))}, 413, fmt.Sprintf("(%d bytes)", DefaultMaxBodyBytes)},
		{"within a route's own limit", "/small", strings.NewReader("0123456789"), 200, "read 10 bytes"},
		{"over a route's own limit, announced", "/small", strings.NewReader("0123456789a"), 413, "(10 bytes)"},
		{"over a route's own limit, chunked", "/small", onlyReader{strings.NewReader("0123456789a")}, 413, "(10 bytes)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, text := post(tc.path, tc.body)
			if code != tc.code || !strings.Contains(text, tc.says) {
				t.Errorf("%d %q, want %d saying %q", code, text, tc.code, tc.says)
			}
		})
	}
}

// Headers over MaxHeaderBytes are refused with 431 before any handler runs.
func TestHeaderLimit(t *testing.T) {
	s := New()
	base := "http://" + startWith(t, s)
	req, _ := http.NewRequest(http.MethodGet, base+"/healthz", nil)
	req.Header.Set("X-Big", strings.Repeat("x", 2*DefaultMaxHeaderBytes))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Errorf("status %d, want 431", resp.StatusCode)
	}
	// A bearer token of a few KiB is fine.
	req.Header.Del("X-Big")
	req.Header.Set("Authorization", "Bearer "+strings.Repeat("x", 4<<10))
	if resp, err = http.DefaultClient.Do(req); err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("with a 4 KiB token: status %d", resp.StatusCode)
	}
}

// ReadTimeout bounds reading a request, not answering it: a client that stops sending its
// body is cut off, while a response that streams past the timeout (server-sent events) goes
// on with its request's context alive, over HTTP/1.1 and HTTP/2, and so does one that takes
// long after reading a body.
func TestReadTimeoutEndsSlowBodiesNotSlowResponses(t *testing.T) {
	const readTimeout = 200 * time.Millisecond
	s, err := NewWithOptions(Options{ReadTimeout: readTimeout})
	if err != nil {
		t.Fatal(err)
	}
	bodyErr := make(chan error, 1)
	s.Handle("POST /upload", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, err := io.Copy(io.Discard, r.Body)
		bodyErr <- err
	}))
	// Both streaming handlers wait past the read timeout before they answer.
	past := func() { time.Sleep(3 * readTimeout) }
	s.Handle("GET /events", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "data: first\n\n")
		http.NewResponseController(w).Flush()
		past()
		_, _ = fmt.Fprintf(w, "data: later, context error %v\n\n", r.Context().Err())
	}))
	s.Handle("POST /slow", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		past()
		_, _ = fmt.Fprintf(w, "%s, context error %v", body, r.Context().Err())
	}))
	addr := startWith(t, s)

	// A client that sends the headers and half its announced body, then nothing.
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_, _ = io.WriteString(conn, "POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n"+strings.Repeat("x", 50))
	select {
	case err := <-bodyErr:
		var netErr net.Error
		if !errors.As(err, &netErr) || !netErr.Timeout() {
			t.Errorf("the stalled body ended with %v, want a timeout", err)
		}
	case <-time.After(waitTimeout):
		t.Fatal("the stalled body was never cut off")
	}

	for _, http2 := range []bool{false, true} {
		p := new(http.Protocols)
		if http2 {
			p.SetUnencryptedHTTP2(true) // as gRPC clients speak
		} else {
			p.SetHTTP1(true)
		}
		tr := &http.Transport{Protocols: p}
		defer tr.CloseIdleConnections()
		client := &http.Client{Transport: tr}
		resp, err := client.Get("http://" + addr + "/events")
		if err != nil {
			t.Fatal(err)
		}
		events, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if want := "data: first\n\ndata: later, context error <nil>\n\n"; string(events) != want {
			t.Errorf("%s: the stream sent %q, want %q", resp.Proto, events, want)
		}

		resp, err = client.Post("http://"+addr+"/slow", "text/plain", strings.NewReader("body"))
		if err != nil {
			t.Fatal(err)
		}
		answer, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if want := "body, context error <nil>"; string(answer) != want {
			t.Errorf("%s: the slow answer was %q, want %q", resp.Proto, answer, want)
		}
	}
}

// A kept-alive connection that sends no further request is closed after IdleTimeout.
func TestIdleConnectionsAreClosed(t *testing.T) {
	s, err := NewWithOptions(Options{IdleTimeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	conn, err := net.Dial("tcp", startWith(t, s))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_, _ = io.WriteString(conn, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
	r := bufio.NewReader(conn)
	resp, err := http.ReadResponse(r, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	// The connection is kept alive, then closed by the server: the next read ends with EOF
	// (our own deadline only bounds a broken test).
	_ = conn.SetReadDeadline(time.Now().Add(waitTimeout))
	if _, err := r.ReadByte(); !errors.Is(err, io.EOF) {
		t.Errorf("the idle connection read %v, want EOF from the server closing it", err)
	}
}

// With a certificate the server speaks HTTPS only, HTTP/2 and HTTP/1.1, and serves a rotated
// certificate without a restart.
func TestTLS(t *testing.T) {
	dir := t.TempDir()
	first := servertest.WriteCert(t, dir, "first")
	s, err := NewWithOptions(Options{TLSCertFile: filepath.Join(dir, servertest.CertFile), TLSKeyFile: filepath.Join(dir, servertest.KeyFile)})
	if err != nil {
		t.Fatal(err)
	}
	if s.Scheme() != "https" {
		t.Errorf("scheme %q", s.Scheme())
	}
	addr := startWith(t, s)
	for _, http2 := range []bool{true, false} {
		resp, err := servertest.TrustingClient(t, first, http2).Get("https://" + addr + "/healthz")
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		wantProto := map[bool]string{true: "HTTP/2.0", false: "HTTP/1.1"}[http2]
		if resp.StatusCode != http.StatusOK || resp.Proto != wantProto || resp.TLS == nil || resp.TLS.PeerCertificates[0].Subject.CommonName != "first" {
			t.Errorf("GET /healthz over TLS: %d %s, want 200 over %s with the first certificate", resp.StatusCode, resp.Proto, wantProto)
		}
		if resp.Header.Get("Content-Security-Policy") == "" {
			t.Errorf("no security headers over TLS")
		}
	}
	// Plain HTTP is refused.
	resp, err := http.Get("http://" + addr + "/healthz")
	if err == nil {
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("plain HTTP to the TLS port: %d, want 400", resp.StatusCode)
		}
	}
	// An untrusting client is refused by its own TLS check.
	if _, err := http.Get("https://" + addr + "/healthz"); err == nil {
		t.Errorf("a client that does not trust the certificate connected")
	}

	// Rotate: the new certificate is served once the watcher has read it.
	second := servertest.WriteCert(t, dir, "second")
	client := servertest.TrustingClient(t, second, true)
	deadline := time.Now().Add(waitTimeout)
	for {
		client.Transport.(*http.Transport).CloseIdleConnections()
		resp, err := client.Get("https://" + addr + "/healthz")
		if err == nil {
			_ = resp.Body.Close()
			if resp.TLS.PeerCertificates[0].Subject.CommonName == "second" {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the rotated certificate was not served: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestTLSOptionsNeedBothFiles(t *testing.T) {
	dir := t.TempDir()
	for _, opts := range []Options{
		{TLSCertFile: filepath.Join(dir, "tls.crt")},
		{TLSKeyFile: filepath.Join(dir, "tls.key")},
	} {
		if _, err := NewWithOptions(opts); err == nil || !strings.Contains(err.Error(), "--tls-cert-file and --tls-key-file") {
			t.Errorf("%+v: %v, want an error naming both flags", opts, err)
		}
	}
	// Files that are not there stop the start, not the first connection.
	if _, err := NewWithOptions(Options{TLSCertFile: filepath.Join(dir, "tls.crt"), TLSKeyFile: filepath.Join(dir, "tls.key")}); err == nil {
		t.Errorf("missing certificate files were accepted")
	}
}
