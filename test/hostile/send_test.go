//go:build !unit

package hostile

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
)

// request is one hostile request.
type request struct {
	surface string
	method  string
	// path is the request-target's path exactly as sent on the wire (escapes and all); query
	// is the raw query, without '?'.
	path, query string
	header      http.Header
	body        []byte
	// chunked sends the body without a Content-Length.
	chunked bool
	// h2c sends over HTTP/2 without TLS, as gRPC clients do; else HTTP/1.1.
	h2c bool
}

func (r request) String() string {
	target := r.path
	if r.query != "" {
		target += "?" + r.query
	}
	s := fmt.Sprintf("%s %.300q", r.method, target)
	if len(target) > 300 {
		s += fmt.Sprintf(" (%d bytes)", len(target))
	}
	for k, v := range r.header {
		s += fmt.Sprintf(" %s=%.80q", k, v)
	}
	if len(r.body) > 0 {
		s += fmt.Sprintf(" body=%.120q (%d bytes)", r.body, len(r.body))
	}
	return s
}

// h2cClient speaks HTTP/2 without TLS (prior knowledge), as a gRPC client does on loopback.
var h2cClient = func() *http.Client {
	protocols := new(http.Protocols)
	protocols.SetUnencryptedHTTP2(true)
	return &http.Client{Timeout: httpClient.Timeout, CheckRedirect: httpClient.CheckRedirect, Transport: &http.Transport{Protocols: protocols}}
}()

// response is what came back.
type response struct {
	status int
	header http.Header
	body   []byte
	// trailer holds gRPC's trailers (read after the body).
	trailer http.Header
}

// send sends r to the api. An error is a transport error: the request could not be sent, or
// the connection broke before an answer (no response) or during its body (a response with
// the status).
func send(r request) (*response, error) {
	req, err := http.NewRequest(r.method, base, nil)
	if err != nil {
		return nil, err
	}
	// Opaque is sent as the request-target's path as it is: no cleaning, no re-escaping.
	req.URL.Opaque, req.URL.RawQuery = r.path, r.query
	if r.body != nil {
		req.Body = http.NoBody
		if len(r.body) > 0 {
			req.Body = io.NopCloser(bytes.NewReader(r.body))
		}
		req.ContentLength = int64(len(r.body))
		if r.chunked {
			req.ContentLength = -1
		}
	}
	for k, v := range r.header {
		req.Header[k] = v
	}
	c := httpClient
	if r.h2c {
		c = h2cClient
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	data, err := readBody(resp)
	out := &response{status: resp.StatusCode, header: resp.Header, body: data, trailer: resp.Trailer}
	if err != nil {
		return out, fmt.Errorf("reading the answer (%s): %w", resp.Status, err)
	}
	return out, nil
}

// check returns what is wrong with the answer to r: a server error (an HTTP 5xx, or a gRPC
// status that says the server failed), a canary's content, or a /signatures/ answer that is
// not one of the store's files.
func check(r request, resp *response) error {
	if bytes.Contains(resp.body, []byte(canaryMark)) {
		return fmt.Errorf("%d: the answer holds a canary from outside the signature store: %.500q", resp.status, resp.body)
	}
	for k, v := range resp.header {
		if strings.Contains(strings.Join(v, " "), canaryMark) {
			return fmt.Errorf("%d: header %s holds a canary from outside the signature store", resp.status, k)
		}
	}
	if code, message, ok := grpcStatus(resp); ok && serverFailure[code] &&
		// connect-go answers a malformed gRPC envelope with Internal, as grpc-go does: the
		// gRPC convention for a broken protocol, over HTTP 200.
		!(code == grpcInternal && strings.Contains(message, "protocol error:")) {
		return fmt.Errorf("%d: gRPC status %d (%s): %.500q", resp.status, code, message, resp.body)
	}
	if r.surface == surfaceConnect && resp.status == http.StatusNotImplemented && bytes.Contains(resp.body, []byte(`"code":"unimplemented"`)) {
		// The Connect protocol answers an unknown compression with unimplemented, which it
		// maps to 501: what Connect clients expect, not a failure.
		return nil
	}
	if r.surface == surfaceConnect && resp.status == http.StatusGatewayTimeout && bytes.Contains(resp.body, []byte(`"code":"deadline_exceeded"`)) &&
		(r.header.Get("Connect-Timeout-Ms") != "" || r.header.Get("Grpc-Timeout") != "") {
		// The client's own deadline (Connect-Timeout-Ms: 0, say) ran out: the Connect
		// protocol maps deadline_exceeded to 504.
		return nil
	}
	if r.surface == surfaceSignatures && resp.status == http.StatusOK && r.method == http.MethodGet &&
		!bytes.Equal(resp.body, seeded.signature) && !bytes.HasPrefix(resp.body, []byte("-----BEGIN PGP PUBLIC KEY BLOCK-----")) {
		return fmt.Errorf("200 with a body that is none of the store's files: %.500q", resp.body)
	}
	if resp.status >= 500 {
		return fmt.Errorf("%d: %.500s", resp.status, resp.body)
	}
	return nil
}

const grpcInternal = 13

// serverFailure are the gRPC codes that mean the server failed rather than the request:
// Unknown, Internal, Unavailable, DataLoss (what Connect answers with 5xx over HTTP).
var serverFailure = map[int]bool{2: true, grpcInternal: true, 14: true, 15: true}

// grpcStatus reads the gRPC status and message of a gRPC answer (headers or trailers) or of
// a gRPC-Web answer (its trailers frame in the body).
func grpcStatus(resp *response) (int, string, bool) {
	for _, h := range []http.Header{resp.header, resp.trailer} {
		if v := h.Get("Grpc-Status"); v != "" {
			code, err := strconv.Atoi(v)
			message, _ := url.PathUnescape(h.Get("Grpc-Message"))
			return code, message, err == nil
		}
	}
	if !strings.HasPrefix(resp.header.Get("Content-Type"), "application/grpc-web") {
		return 0, "", false
	}
	trailers := http.Header{}
	// gRPC-Web frames: a flag byte (0x80 for the trailers), a 4-byte length, the data.
	for b := resp.body; len(b) >= 5; {
		n := int(binary.BigEndian.Uint32(b[1:5]))
		if len(b) < 5+n {
			break
		}
		if b[0]&0x80 != 0 {
			for line := range strings.SplitSeq(string(b[5:5+n]), "\r\n") {
				if k, v, ok := strings.Cut(line, ":"); ok {
					trailers.Set(strings.TrimSpace(k), strings.TrimSpace(v))
				}
			}
		}
		b = b[5+n:]
	}
	if trailers.Get("Grpc-Status") == "" {
		return 0, "", false
	}
	return grpcStatus(&response{trailer: trailers, header: http.Header{}})
}

// sendAndCheck sends r and reports to t what is wrong with the answer, and returns its
// status. A transport error is wrong too, unless the server refused the request without
// reading its body: it answers (a 400 for a malformed request line, a 413 for a
// Content-Length over the limit) and closes the connection, which resets it under the
// client still writing the body or reading the answer. Then the same request without a body
// must be answered without a server error, and the status is 0.
func sendAndCheck(t testing.TB, r request) int {
	t.Helper()
	resp, err := send(r)
	switch {
	case err != nil && resp != nil && resp.status >= 400 && resp.status < 500:
		return resp.status
	case err != nil && len(r.body) > 0:
		bodyless := r
		bodyless.body, bodyless.chunked = nil, false
		if again, err2 := send(bodyless); err2 == nil && check(bodyless, again) == nil {
			return 0
		}
		fallthrough
	case err != nil:
		t.Errorf("%s %s: %v", r.surface, r, err)
		requireHealthy(t)
		return 0
	}
	if err := check(r, resp); err != nil {
		t.Errorf("%s %s: %v", r.surface, r, err)
	}
	return resp.status
}

// escapeTarget makes s sendable as a request-target's path by net/http: control bytes,
// spaces, '#' and '?' are percent-encoded; everything else, '%' included, is left as it is.
func escapeTarget(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c == 0x7f || c == '#' || c == '?' {
			fmt.Fprintf(&b, "%%%02X", c)
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

// headerValue drops the bytes net/http refuses in a header value.
func headerValue(s string) string {
	return strings.Map(func(r rune) rune {
		if (r < ' ' && r != '\t') || r == 0x7f {
			return -1
		}
		return r
	}, s)
}
