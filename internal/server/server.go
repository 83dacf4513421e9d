// Package server is the HTTP server of `release-controller api` and `dev`: one server on which
// every feature (pages, REST, Connect, MCP) registers its routes, with health, Prometheus
// metrics per route (optionally behind Kubernetes authentication and authorization), a
// graceful shutdown that also ends long-lived streams (SSE), optional TLS, and the hardening
// every route gets: header and body read timeouts, bounded headers and bodies, and security
// headers on every response.
package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/certwatcher"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// DefaultAddr is where the server listens unless told otherwise.
const DefaultAddr = "127.0.0.1:8080"

var (
	requests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "release_controller_http_requests_total",
		Help: "HTTP requests served, by route pattern and status code.",
	}, []string{"route", "code"})
	durations = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "release_controller_http_request_duration_seconds",
		Help:    "Time to serve an HTTP request, by route pattern (streams count until they end).",
		Buckets: prometheus.ExponentialBuckets(0.0005, 4, 10),
	}, []string{"route"})
)

func init() {
	metrics.Registry.MustRegister(requests, durations)
}

// Limits of the server, the defaults of Options.
const (
	// DefaultReadHeaderTimeout bounds reading a request's headers.
	DefaultReadHeaderTimeout = 10 * time.Second
	// DefaultReadTimeout bounds reading a whole request, headers and body. It does not bound
	// the response, which may take longer (a changelog computed from git, server-sent events):
	// net/http lifts the read deadline once the request has been read.
	DefaultReadTimeout = 30 * time.Second
	// DefaultIdleTimeout closes a kept-alive connection that waits this long for its next request.
	DefaultIdleTimeout = 2 * time.Minute
	// DefaultMaxHeaderBytes bounds a request's headers (a bearer token takes a few KiB).
	DefaultMaxHeaderBytes = 64 << 10
	// DefaultMaxBodyBytes bounds a request's body on every route unless the route says
	// otherwise (MaxBodyBytes); the largest legitimate body, an AddRelease or an MCP call,
	// takes a few KiB.
	DefaultMaxBodyBytes = 1 << 20
)

// ContentSecurityPolicy is sent with every response: the pages load their own stylesheets
// and scripts and nothing else (no inline script or style, no frames, no plug-ins), scripts
// connect only to this server (server-sent events), forms post only here, and no other site
// may frame a page.
const ContentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; " +
	"form-action 'self'; base-uri 'none'; frame-ancestors 'none'"

// securityHeaders are set on every response before its handler runs; a handler may change them.
var securityHeaders = [][2]string{
	{"Content-Security-Policy", ContentSecurityPolicy},
	{"X-Content-Type-Options", "nosniff"},
	{"X-Frame-Options", "DENY"},
	{"Referrer-Policy", "same-origin"},
}

// Options configure the server; the zero value serves plain HTTP with the default limits.
type Options struct {
	// MetricsFilter, when set, guards /metrics: kubeauth.Reviewer.Filter (the api's
	// --metrics-auth), or controller-runtime's filters.WithAuthenticationAndAuthorization,
	// both a bearer token whose user may get the non-resource URL /metrics. Unset, /metrics
	// is open.
	MetricsFilter metricsserver.Filter
	// TLSCertFile and TLSKeyFile (PEM), when both are set, make the server speak HTTPS only
	// (HTTP/1.1 and HTTP/2). The files are read again when they change, so a rotated
	// certificate is served without a restart.
	TLSCertFile, TLSKeyFile string
	// ReadHeaderTimeout, ReadTimeout, IdleTimeout, MaxHeaderBytes: zero takes the default.
	ReadHeaderTimeout, ReadTimeout, IdleTimeout time.Duration
	MaxHeaderBytes                              int
	// MaxStreams and MaxStreamsPerClient bound the event streams (routes registered with
	// EventStream) open at once, in all (503 beyond) and per remote IP address (429 beyond);
	// zero takes the default, a negative value is no limit.
	MaxStreams, MaxStreamsPerClient int
}

func (o Options) withDefaults() Options {
	if o.ReadHeaderTimeout == 0 {
		o.ReadHeaderTimeout = DefaultReadHeaderTimeout
	}
	if o.ReadTimeout == 0 {
		o.ReadTimeout = DefaultReadTimeout
	}
	if o.IdleTimeout == 0 {
		o.IdleTimeout = DefaultIdleTimeout
	}
	if o.MaxHeaderBytes == 0 {
		o.MaxHeaderBytes = DefaultMaxHeaderBytes
	}
	if o.MaxStreams == 0 {
		o.MaxStreams = DefaultMaxStreams
	}
	if o.MaxStreamsPerClient == 0 {
		o.MaxStreamsPerClient = DefaultMaxStreamsPerClient
	}
	return o
}

// TLS reports whether the options serve HTTPS; a certificate without its key (or the
// reverse) is an error.
func (o Options) TLS() (bool, error) {
	switch {
	case o.TLSCertFile == "" && o.TLSKeyFile == "":
		return false, nil
	case o.TLSCertFile == "" || o.TLSKeyFile == "":
		return false, errors.New("serving TLS needs both a certificate and its key (--tls-cert-file and --tls-key-file)")
	}
	return true, nil
}

// Server is the HTTP server.
type Server struct {
	mux     *http.ServeMux
	handler http.Handler
	opts    Options
	// certs serves the TLS certificate, when there is one.
	certs *certwatcher.CertWatcher
	// streams counts the event streams open.
	streams *streamLimit
}

// New returns a server with the default options.
func New() *Server {
	s, err := NewWithOptions(Options{})
	if err != nil {
		panic(err) // only a metrics filter fails, and there is none
	}
	return s
}

// NewWithOptions returns a server with /healthz and /metrics; features add their routes with
// Handle.
func NewWithOptions(opts Options) (*Server, error) {
	opts = opts.withDefaults()
	tlsOn, err := opts.TLS()
	if err != nil {
		return nil, err
	}
	s := &Server{mux: http.NewServeMux(), opts: opts, streams: newStreamLimit(opts.MaxStreams, opts.MaxStreamsPerClient)}
	if tlsOn {
		// Read now, so a missing or broken certificate stops the start.
		if s.certs, err = certwatcher.New(opts.TLSCertFile, opts.TLSKeyFile); err != nil {
			return nil, fmt.Errorf("reading the TLS certificate and key: %w", err)
		}
	}
	s.handler = withSecurityHeaders(s.mux)
	s.Handle("GET /healthz", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("ok\n"))
	}))
	metricsHandler := promhttp.HandlerFor(metrics.Registry, promhttp.HandlerOpts{})
	if opts.MetricsFilter != nil {
		guarded, err := opts.MetricsFilter(ctrl.Log.WithName("metrics-auth"), metricsHandler)
		if err != nil {
			return nil, fmt.Errorf("guarding /metrics: %w", err)
		}
		metricsHandler = guarded
	}
	s.Handle("GET /metrics", metricsHandler)
	return s, nil
}

// RouteOption changes how a route is served.
type RouteOption func(*route)

type route struct {
	maxBodyBytes int64
	// ownTooLarge: the handler answers a body over the limit in its own protocol.
	ownTooLarge bool
	// stream: the route is an event stream, bounded by the server's stream limits.
	stream bool
}

// MaxBodyBytes bounds the route's request bodies to n bytes instead of DefaultMaxBodyBytes.
func MaxBodyBytes(n int64) RouteOption { return func(r *route) { r.maxBodyBytes = n } }

// OwnTooLargeErrors says the route's handler answers a body over the limit in its own
// protocol (Connect's resource_exhausted), so the server does not refuse a request whose
// Content-Length is over the limit with 413 before the handler sees it. The body is bounded
// all the same.
func OwnTooLargeErrors() RouteOption { return func(r *route) { r.ownTooLarge = true } }

// Handle registers h for pattern (net/http ServeMux syntax), counting its requests and
// bounding their bodies.
func (s *Server) Handle(pattern string, h http.Handler, opts ...RouteOption) {
	rt := route{maxBodyBytes: DefaultMaxBodyBytes}
	for _, o := range opts {
		o(&rt)
	}
	if rt.stream {
		h = s.streams.limitStreams(h)
	}
	s.mux.Handle(pattern, instrument(pattern, limitBody(rt, h)))
}

// Handler is the server's whole handler, for tests.
func (s *Server) Handler() http.Handler {
	return s.handler
}

// Run serves on addr until ctx is done, then shuts down: requests in flight get up to
// grace to finish, and streams are told to end at once.
func (s *Server) Run(ctx context.Context, addr string, grace time.Duration) error {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", addr, err)
	}
	return s.Serve(ctx, l, grace)
}

// Scheme is "https" when the server serves TLS, else "http".
func (s *Server) Scheme() string {
	if s.certs != nil {
		return "https"
	}
	return "http"
}

// Serve is Run on a listener the caller opened.
func (s *Server) Serve(ctx context.Context, l net.Listener, grace time.Duration) error {
	// Handlers see this context end when shutdown starts, so SSE streams return and
	// Shutdown does not wait for them.
	base, stopStreams := context.WithCancel(context.Background())
	defer stopStreams()
	unused := newUnusedConns()
	tlsOn := s.certs != nil
	protocols := new(http.Protocols)
	protocols.SetHTTP1(true)
	if tlsOn {
		protocols.SetHTTP2(true)
	} else {
		protocols.SetUnencryptedHTTP2(true) // gRPC over plain HTTP/2 on loopback
	}
	srv := &http.Server{
		Handler:           s.handler,
		Protocols:         protocols,
		ReadHeaderTimeout: s.opts.ReadHeaderTimeout,
		ReadTimeout:       s.opts.ReadTimeout,
		IdleTimeout:       s.opts.IdleTimeout,
		MaxHeaderBytes:    s.opts.MaxHeaderBytes,
		BaseContext:       func(net.Listener) context.Context { return base },
		ConnState:         unused.track,
		// No WriteTimeout: server-sent events and streamed pages write for as long as they
		// run; they end with their client, or at shutdown.
	}
	if tlsOn {
		watchCtx, stopWatching := context.WithCancel(ctx)
		defer stopWatching()
		go func() { _ = s.certs.Start(watchCtx) }()
		srv.TLSConfig = &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: s.certs.GetCertificate}
	}
	served := make(chan error, 1)
	go func() {
		if tlsOn {
			served <- srv.ServeTLS(l, "", "")
			return
		}
		served <- srv.Serve(l)
	}()
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	stopStreams()
	// Shutdown closes idle connections but waits 5 s for one on which no request has
	// arrived yet (a client's speculative dial); it carries nothing, so close it now.
	srv.RegisterOnShutdown(unused.closeAll)
	shutdownCtx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		return fmt.Errorf("shutting down the HTTP server: %w", err)
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// unusedConns are the connections on which no request has arrived yet.
type unusedConns struct {
	mu    sync.Mutex
	conns map[net.Conn]struct{}
}

func newUnusedConns() *unusedConns {
	return &unusedConns{conns: map[net.Conn]struct{}{}}
}

func (u *unusedConns) track(c net.Conn, state http.ConnState) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if state == http.StateNew {
		u.conns[c] = struct{}{}
		return
	}
	delete(u.conns, c)
}

func (u *unusedConns) closeAll() {
	u.mu.Lock()
	defer u.mu.Unlock()
	for c := range u.conns {
		_ = c.Close()
		delete(u.conns, c)
	}
}

// withSecurityHeaders sets the security headers on every response, the mux's own 404 and
// 405 included.
func withSecurityHeaders(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		header := w.Header()
		for _, kv := range securityHeaders {
			header.Set(kv[0], kv[1])
		}
		h.ServeHTTP(w, r)
	})
}

// limitBody bounds the request's body to the route's limit. (ReadTimeout needs no help here:
// net/http lifts the read deadline once a request has been read, so it never ends a long
// response such as server-sent events.)
func limitBody(rt route, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body == nil || r.Body == http.NoBody {
			h.ServeHTTP(w, r)
			return
		}
		if r.ContentLength > rt.maxBodyBytes && !rt.ownTooLarge {
			TooLarge(w, rt.maxBodyBytes)
			return
		}
		// MaxBytesReader closes the connection after an oversized body through the
		// server's own ResponseWriter, not the wrappers around it.
		r.Body = http.MaxBytesReader(innermost(w), r.Body, rt.maxBodyBytes)
		h.ServeHTTP(w, r)
	})
}

func innermost(w http.ResponseWriter) http.ResponseWriter {
	for {
		u, ok := w.(interface{ Unwrap() http.ResponseWriter })
		if !ok {
			return w
		}
		w = u.Unwrap()
	}
}

// TooLarge answers 413 for a request body over limit bytes.
func TooLarge(w http.ResponseWriter, limit int64) {
	// The rest of the body is not read: the connection closes after the answer.
	w.Header().Set("Connection", "close")
	http.Error(w, fmt.Sprintf("the request body is larger than this server accepts here (%d bytes)", limit), http.StatusRequestEntityTooLarge)
}

// instrument counts requests and their durations under the route pattern (never the raw
// path, which would make a metric series per URL).
func instrument(route string, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &statusRecorder{ResponseWriter: w, code: http.StatusOK}
		h.ServeHTTP(rec, r)
		requests.WithLabelValues(route, strconv.Itoa(rec.code)).Inc()
		durations.WithLabelValues(route).Observe(time.Since(start).Seconds())
	})
}

// statusRecorder remembers the status code; it passes Flush and Unwrap through, which SSE
// and Connect's streaming need.
type statusRecorder struct {
	http.ResponseWriter
	code        int
	wroteHeader bool
}

func (r *statusRecorder) WriteHeader(code int) {
	if !r.wroteHeader {
		r.code, r.wroteHeader = code, true
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Write(b []byte) (int, error) {
	r.wroteHeader = true
	return r.ResponseWriter.Write(b)
}

func (r *statusRecorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }
