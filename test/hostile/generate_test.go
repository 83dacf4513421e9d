//go:build !unit

package hostile

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	releasecontrollerv1 "github.com/release-controller/release-controller/internal/gen/releasecontroller/v1"
	"github.com/release-controller/release-controller/internal/gen/releasecontroller/v1/releasecontrollerv1connect"
	"github.com/release-controller/release-controller/internal/pipeline/signature"
)

// The surfaces, as the generator and the reports name them.
const (
	surfaceREST       = "rest"
	surfaceConnect    = "connect"
	surfaceApproval   = "approval"
	surfaceSignatures = "signatures"
)

// hostileStrings are values that have broken parsers before: traversal in every encoding,
// separators, escapes, numbers out of range, markup, odd Unicode. (None holds the word the
// log check looks for.)
var hostileStrings = []string{
	"", ".", "..", "...", "%2e%2e", "%2E%2E", ".%2e", "%2e.", "%252e%252e", "..%2f", "..%2F", "%2e%2e%2f",
	"%252f", "%2f", "/", "//", "\\", "..\\", "%5c", "..%5c", "%00", "\x00", "%0a", "\n", "%0d%0a", "\r\n", "\t",
	"%c0%ae%c0%ae", "%c0%af", "%ff", "\xff\xfe", "%", "%zz", "%%", "%2", "~", "*", "?", "#", "&", "=", ";", ":", "@",
	"'", "\"", "`", "<script>alert(1)</script>", "${jndi:ldap://x/a}", "{{.}}", "{{template \"x\"}}", "' OR 1=1 --",
	"-1", "0", "-0", "1", "2147483648", "-2147483649", "99999999999999999999", "1e309", "NaN", "Infinity", "0x10",
	"null", "true", "[]", "{}", "ä", "\u202e", "\ufeff", "😀", "\u0000", "\ud7ff",
	">=4.15.0 <4.16.0", ">4.16.0 || <1.0.0-0", "4.x", "4.20", ">= 1.x", "<0.0.0-0", "v1", "4.20.0-0.nightly-",
	"json", "pullSpec", "name", "downloadURL", "cincinnati", "short", "text", "html", "markdown", "Accepted", "Rejected",
	"2026-03-01", "2026-02-30", "9999-12-31", "0000-00-00", "2026-03-01T00:00:00Z", "stable-4.20", "candidate-4.20",
	"amd64", "multi", "sha256=", "signature-1", "signature-0", "pubkey.asc", "canary", "store-sibling",
	strings.Repeat("a", 300), strings.Repeat("9", 40), strings.Repeat("../", 40), strings.Repeat("%2e%2e%2f", 40),
}

// gen makes hostile requests from a seeded source: the same seed, the same requests.
type gen struct{ r *rand.Rand }

func newGen(seed uint64) *gen { return &gen{r: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))} }

func (g *gen) intn(n int) int        { return g.r.IntN(n) }
func (g *gen) chance(p float64) bool { return g.r.Float64() < p }

func pick[T any](g *gen, xs []T) T { return xs[g.r.IntN(len(xs))] }

// known are the names the seeded server knows, so that requests reach real code paths.
func known() []string {
	s := seeded
	return append([]string{s.namespace, s.otherNamespace, s.logNamespace, s.stream, s.dupStream, s.pipeline, s.approvalEnv,
		"dev", "prod", s.waiting, s.digest, "sha256=" + strings.TrimPrefix(s.digest, "sha256:")}, s.tags...)
}

// value is a hostile or a known value, sometimes mutated.
func (g *gen) value() string {
	var v string
	if g.chance(0.5) {
		v = pick(g, known())
	} else {
		v = pick(g, hostileStrings)
	}
	if g.chance(0.3) {
		v = g.mutate(v)
	}
	return v
}

// mutate edits s: a hostile string inserted, a byte flipped, a part cut or repeated.
func (g *gen) mutate(s string) string {
	b := []byte(s)
	switch g.intn(5) {
	case 0:
		i := g.intn(len(b) + 1)
		return string(b[:i]) + pick(g, hostileStrings) + string(b[i:])
	case 1:
		if len(b) > 0 {
			b[g.intn(len(b))] ^= byte(1 << g.intn(8))
		}
	case 2:
		if len(b) > 0 {
			i := g.intn(len(b))
			return string(b[:i]) + string(b[i+g.intn(len(b)-i)+1:])
		}
	case 3:
		return strings.Repeat(s, 1+g.intn(20))
	case 4:
		return string(b) + string(rune(g.intn(0x11000)))
	}
	return string(b)
}

// segment is a path segment: escaped as a client escapes it, or raw (escapeTarget makes it
// sendable either way).
func (g *gen) segment() string {
	v := g.value()
	if g.chance(0.5) {
		return url.PathEscape(v)
	}
	return v
}

// queryKeys are the query parameters the server reads, and a few it does not.
var queryKeys = []string{"in", "rel", "prefix", "phase", "format", "from", "to", "channel", "arch", "jobType", "view",
	"day", "page", "namespace", "name", "stream", "tag", "encoding", "message", "base64", "compression", "connect", "x", ""}

// query is a query string of hostile values, encoded or raw, keys repeated at times.
func (g *gen) query() string {
	var parts []string
	for range g.intn(5) {
		k, v := pick(g, queryKeys), g.value()
		if g.chance(0.7) {
			parts = append(parts, url.QueryEscape(k)+"="+url.QueryEscape(v))
		} else {
			parts = append(parts, escapeTarget(k+"="+v))
		}
	}
	if g.chance(0.05) {
		parts = append(parts, pick(g, []string{"&&", "=", "a=%", "%zz=1", ";x=1", strings.Repeat("a=1&", 2000)}))
	}
	return strings.Join(parts, "&")
}

// restRoutes are the REST routes and pages: {s} a stream, {t} a tag, {n} a namespace, {x}
// anything. The server-sent event streams are left out: they answer for as long as the
// client stays.
var restRoutes = []string{
	"/api/v1/releasestream/{s}/latest", "/api/v1/releasestream/{s}/tags", "/api/v1/releasestream/{s}/candidate",
	"/api/v1/releasestream/{s}/config", "/api/v1/releasestream/{s}/release/{t}",
	"/api/v1/namespaces/{n}/releasestream/{s}/latest", "/api/v1/namespaces/{n}/releasestream/{s}/tags",
	"/api/v1/namespaces/{n}/releasestream/{s}/candidate", "/api/v1/namespaces/{n}/releasestream/{s}/config",
	"/api/v1/namespaces/{n}/releasestream/{s}/release/{t}",
	"/api/v1/releasestreams/accepted", "/api/v1/releasestreams/rejected", "/api/v1/releasestreams/ready",
	"/api/v1/releasestreams/all", "/api/v1/releasestreams/{x}", "/api/v1/namespaces/{n}/releasestreams/all",
	"/releasestream/{s}/latest", "/releasestream/{s}/latest/download", "/releasestream/{s}/release/{t}/download",
	"/namespaces/{n}/releasestream/{s}/latest", "/namespaces/{n}/releasestream/{s}/release/{t}/download",
	"/releasestream/{s}", "/releasestream/{s}/release/{t}", "/releasestream/{s}/compare", "/releasestream/{s}/graph",
	"/releasestream/{s}/candidates", "/namespaces/{n}/releasestream/{s}/release/{t}", "/releasetag/{t}",
	"/changelog", "/graph", "/archive/graph", "/releases", "/releases/types.css", "/releases/{n}/{s}/{t}",
	"/pipelines", "/pipelines/{n}/{x}", "/static/{x}", "/static/pages/{x}", "/", "/healthz", "/{x}", "/{x}/{x}",
}

var methods = []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodDelete,
	http.MethodPatch, http.MethodOptions, "PROPFIND", "BREW"}

func (g *gen) rest() request {
	route := pick(g, restRoutes)
	for _, ph := range []string{"{s}", "{t}", "{n}", "{x}"} {
		for strings.Contains(route, ph) {
			route = strings.Replace(route, ph, g.segment(), 1)
		}
	}
	method := http.MethodGet
	if g.chance(0.1) {
		method = pick(g, methods)
	}
	r := request{surface: surfaceREST, method: method, path: escapeTarget(route), query: g.query(), header: http.Header{}}
	if g.chance(0.2) {
		r.header.Set(pick(g, []string{"Accept", "Accept-Encoding", "If-None-Match", "Range", "Origin", "X-Forwarded-For"}), headerValue(g.value()))
	}
	return r
}

// A Connect handler's protocols, by content type.
var connectContentTypes = []string{
	"application/proto", "application/json", "application/json; charset=utf-8", "application/connect+proto",
	"application/connect+json", "application/grpc", "application/grpc+proto", "application/grpc+json",
	"application/grpc-web", "application/grpc-web+proto", "application/grpc-web+json", "application/grpc-web-text",
	"application/x-protobuf", "text/plain", "", "application/proto; charset=latin1",
}

var connectProcedures = []string{
	releasecontrollerv1connect.ReleaseServiceAddReleaseProcedure,
	releasecontrollerv1connect.ReleaseServiceListReleasesProcedure,
	releasecontrollerv1connect.ReleaseServiceListReleaseDaysProcedure,
	"/releasecontroller.v1.ReleaseService/Nothing", "/releasecontroller.v1.ReleaseService/", "/grpc.health.v1.Health/Check",
}

// message is a valid request of procedure with hostile fields.
func (g *gen) message(procedure string) proto.Message {
	switch procedure {
	case releasecontrollerv1connect.ReleaseServiceAddReleaseProcedure:
		rel := &releasecontrollerv1.Release{
			Type: pick(g, []string{"release", "rejected", "promotion", "hotfix", g.value()}), Version: g.value(), Origin: g.value(),
			Author: g.value(), Message: g.value(), Link: g.value(), ReportedAuthor: g.value(),
		}
		if g.chance(0.7) {
			rel.Date = &timestamppb.Timestamp{Seconds: g.r.Int64N(1<<40) - 1<<39, Nanos: g.r.Int32()}
			if g.chance(0.5) {
				rel.Date = timestamppb.New(time.Now().Add(time.Duration(g.r.Int64N(int64(1000*time.Hour))) - 500*time.Hour))
			}
		}
		if g.chance(0.1) {
			rel = nil
		}
		return &releasecontrollerv1.AddReleaseRequest{Release: rel}
	case releasecontrollerv1connect.ReleaseServiceListReleasesProcedure:
		return &releasecontrollerv1.ListReleasesRequest{Day: g.value(), PageSize: g.r.Int32() - g.r.Int32(), PageToken: g.value()}
	}
	return &releasecontrollerv1.ListReleaseDaysRequest{}
}

// connectBody is a body for procedure in contentType: a valid message, mutated at times, or
// bytes that only look like one.
func (g *gen) connectBody(procedure, contentType string) []byte {
	msg := g.message(procedure)
	var body []byte
	if strings.Contains(contentType, "json") || contentType == "" || contentType == "text/plain" {
		body, _ = protojson.Marshal(msg)
		if g.chance(0.3) {
			body = []byte(pick(g, []string{
				strings.Repeat("[", 100000), strings.Repeat(`{"release":`, 20000) + "{}" + strings.Repeat("}", 20000),
				`{"pageSize":1e100}`, `{"page_size":"-1"}`, `{"day":"2026-02-30"}`, `{"day":1}`, `{"release":{"date":"9999-99-99T99:99:99Z"}}`,
				`{"release":{"date":"0001-01-01T00:00:00Z","type":"release","version":"1"}}`, `{"release":null}`, `{"release":[]}`,
				`{"pageToken":"` + strings.Repeat("A", 5000) + `"}`, `{"day":"\ud800"}`, `{"a":1,"a":2}`, "null", "", "\xff",
			}))
		}
	} else {
		body, _ = proto.Marshal(msg)
	}
	if g.chance(0.4) {
		body = []byte(g.mutate(string(body)))
	}
	if g.chance(0.05) {
		body = make([]byte, g.intn(2<<20))
		for i := range body {
			body[i] = byte(g.r.Uint32())
		}
	}
	// The streaming protocols wrap the message in an envelope: a flag byte and a length.
	if strings.HasPrefix(contentType, "application/grpc") || strings.HasPrefix(contentType, "application/connect+") {
		flag, length := byte(0), uint32(len(body))
		switch g.intn(6) {
		case 0:
			flag = byte(g.r.Uint32())
		case 1:
			length = g.r.Uint32()
		case 2:
			length = 0xffffffff
		}
		env := binary.BigEndian.AppendUint32([]byte{flag}, length)
		body = append(env, body...)
		if g.chance(0.2) {
			body = body[:g.intn(len(body)+1)]
		}
		if contentType == "application/grpc-web-text" {
			body = []byte(base64.StdEncoding.EncodeToString(body))
		}
	}
	return body
}

// gzipped is data compressed with gzip.
func gzipped(data []byte) []byte {
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	_, _ = w.Write(data)
	_ = w.Close()
	return buf.Bytes()
}

// bomb is a small gzip stream that inflates to 64 MiB.
var bomb = sync.OnceValue(func() []byte { return gzipped(make([]byte, 64<<20)) })

func (g *gen) connect() request {
	procedure := pick(g, connectProcedures[:3])
	if g.chance(0.15) {
		procedure = pick(g, connectProcedures)
	}
	contentType := pick(g, connectContentTypes)
	r := request{surface: surfaceConnect, method: http.MethodPost, path: procedure, header: http.Header{}}
	if contentType != "" {
		r.header.Set("Content-Type", contentType)
	}
	r.h2c = strings.HasPrefix(contentType, "application/grpc") && !strings.HasPrefix(contentType, "application/grpc-web") && g.chance(0.8)
	r.body = g.connectBody(procedure, contentType)
	if g.chance(0.15) {
		// Compressed, or claimed to be: gzip, a bomb, garbage, an unknown algorithm.
		header := pick(g, []string{"Content-Encoding", "Connect-Content-Encoding", "Grpc-Encoding"})
		r.header.Set(header, pick(g, []string{"gzip", "gzip", "br", "identity", "x"}))
		switch g.intn(3) {
		case 0:
			r.body = gzipped(r.body)
		case 1:
			r.body = bomb()
		}
	}
	switch g.intn(4) {
	case 0:
		r.header.Set("Authorization", "Bearer "+seeded.writerToken)
	case 1:
		r.header.Set("Authorization", headerValue(pick(g, []string{"Bearer ", "Bearer", "Basic YTpi", "Bearer " + g.value(), "bearer x", "Bearer a b"})))
	}
	if g.chance(0.3) {
		r.header.Set(pick(g, []string{"Connect-Protocol-Version", "Connect-Timeout-Ms", "Grpc-Timeout", "Te", "Accept-Encoding", "Connect-Accept-Encoding"}),
			headerValue(pick(g, []string{"1", "2", "0", "-1", "99999999999999999999", "1n", "1S", "trailers", "gzip", g.value()})))
	}
	if g.chance(0.1) {
		r.chunked = true
	}
	if g.chance(0.1) {
		// Connect's GET for the methods without side effects: the message in the query.
		r.method, r.body, r.chunked = http.MethodGet, nil, false
		msg, _ := protojson.Marshal(g.message(procedure))
		q := url.Values{"encoding": {pick(g, []string{"json", "proto", g.value()})}, "message": {string(msg)}, "connect": {pick(g, []string{"v1", g.value()})}}
		if g.chance(0.5) {
			q.Set("base64", "1")
			q.Set("message", base64.RawURLEncoding.EncodeToString([]byte(g.mutate(string(msg)))))
		}
		if g.chance(0.2) {
			q.Set("compression", pick(g, []string{"gzip", "x"}))
		}
		r.query = q.Encode()
	}
	if g.chance(0.05) {
		r.method = pick(g, methods)
	}
	return r
}

// approvalTarget is the route of an approval: the seeded pipeline's, or anything.
func (g *gen) approvalTarget() string {
	s := seeded
	parts := []string{s.namespace, s.pipeline, s.approvalEnv, s.waiting}
	for i := range parts {
		if g.chance(0.3) {
			parts[i] = g.segment()
		}
	}
	path := "/pipelines/" + strings.Join(parts, "/") + "/approve"
	if g.chance(0.05) {
		path = g.mutate(path)
	}
	return escapeTarget(path)
}

func (g *gen) approval() request {
	r := request{surface: surfaceApproval, method: http.MethodPost, path: g.approvalTarget(), header: http.Header{}}
	switch g.intn(5) {
	case 0:
	case 1:
		r.body = []byte(g.value())
	case 2:
		r.body = []byte(`{"comment":"` + strings.Repeat("x", g.intn(70<<10)) + `"}`)
	case 3:
		r.body = bytes.Repeat([]byte{0}, 64<<10+g.intn(3)-1) // at, below and over the limit
	case 4:
		r.body = []byte(g.mutate(`{"comment":"ship it"}`))
	}
	r.chunked = r.body != nil && g.chance(0.3)
	now := time.Now().UTC()
	ts := now.Format(time.RFC3339)
	switch g.intn(7) {
	case 0: // no credentials
	case 1: // a well-formed signature made without the key
		r.header.Set(signature.HeaderTimestamp, ts)
		r.header.Set(signature.HeaderSignature, fmt.Sprintf("sha256=%064x", g.r.Uint64()))
	case 2: // malformed headers
		r.header.Set(signature.HeaderTimestamp, headerValue(pick(g, []string{ts, "", g.value(), "2026-13-01T00:00:00Z", now.Format(time.RFC1123), "1700000000"})))
		r.header.Set(signature.HeaderSignature, headerValue(pick(g, []string{"", "sha256=", "sha1=00", "sha256=" + strings.Repeat("g", 64), "SHA256=" + strings.Repeat("0", 64), g.value()})))
	case 3, 4: // signed with the real key, but for another request than the one sent
		g.signOther(&r, ts)
	case 5: // a bearer token: garbage, or a user not allowed to approve
		r.header.Set("Authorization", headerValue(pick(g, []string{"Bearer " + g.value(), "Bearer " + seeded.writerToken, "Basic YTpi", "Bearer"})))
	case 6: // both
		r.header.Set("Authorization", "Bearer "+seeded.writerToken)
		g.signOther(&r, ts)
	}
	if g.chance(0.05) {
		r.method = pick(g, methods)
	}
	return r
}

// signOther signs, with the seeded pipeline's key, a request that differs from r in exactly
// one part that the server reads back differently (another path, body, timestamp or method),
// so that the signature can never be right for r.
func (g *gen) signOther(r *request, ts string) {
	method, path, signedTS, body := r.method, r.path, ts, r.body
	switch g.intn(4) {
	case 0:
		path = "/pipelines/" + strings.Join([]string{seeded.namespace, seeded.pipeline, seeded.approvalEnv, seeded.waiting}, "/") + "/approve"
		if path == r.path {
			path = strings.Replace(path, "/"+seeded.approvalEnv+"/", "/prod/", 1)
		}
	case 1:
		body = append(append([]byte{}, body...), 'x')
	case 2:
		signedTS = time.Now().UTC().Add(-time.Second).Format(time.RFC3339Nano)
	case 3:
		method = http.MethodPut
	}
	r.header.Set(signature.HeaderTimestamp, ts)
	r.header.Set(signature.HeaderSignature, signature.Header(seeded.approvalKey, method, path, signedTS, body))
}

// signatureSegments build paths under /signatures/: the store's layout, traversal in every
// encoding, the canaries' names and absolute paths.
func (g *gen) signatureSegments() []string {
	hexDigest := strings.TrimPrefix(seeded.digest, "sha256:")
	segs := []string{"sha256=" + hexDigest, "signature-1", "signature-2", "pubkey.asc", "canary", "store-sibling", "store",
		"..", "%2e%2e", "%2E%2e", ".%2e", "%2e.", "%252e%252e", "..%2f", "%2f..", "%2F", "%5c..", "..%5c", "..\\", ".",
		"%c0%ae%c0%ae", "%e0%80%ae%e0%80%ae", "..%00", "%00", "signature-1%00", "signature-1%2500", "signature-01",
		"signature-1.", "signature-1/", "sha256%3d" + hexDigest, "sha256=" + strings.ToUpper(hexDigest), "ocp/release@sha256=" + hexDigest,
		"..@sha256=" + hexDigest, "a@b@sha256=" + hexDigest, "%2e%2e%2fsha256=" + hexDigest, "sha256=" + hexDigest + "%2fsignature-1",
		"", "~", "*", "signature-999999999", "signature-9999999999", "signature--1", "signature-+1", "signature-0x1",
	}
	var parts []string
	for range 1 + g.intn(6) {
		parts = append(parts, pick(g, segs))
	}
	return parts
}

func (g *gen) signaturesRequest() request {
	var path string
	switch g.intn(6) {
	case 0: // an absolute path of a canary, raw or escaped
		canary := pick(g, seeded.canaries)
		if g.chance(0.5) {
			canary = url.PathEscape(canary)
		}
		path = "/signatures/" + canary
	case 1: // very long
		path = "/signatures/" + strings.Repeat(pick(g, []string{"../", "%2e%2e%2f", "a", "sha256="}), 1000+g.intn(30000))
	default:
		path = "/signatures/" + strings.Join(g.signatureSegments(), "/")
	}
	if g.chance(0.1) {
		path = g.mutate(path)
	}
	method := http.MethodGet
	if g.chance(0.1) {
		method = pick(g, methods)
	}
	r := request{surface: surfaceSignatures, method: method, path: escapeTarget(path), header: http.Header{}}
	if g.chance(0.1) {
		r.query = g.query()
	}
	return r
}
