// Package server is the HTTP server of `release-controller api` and `dev`: one server on which
// every feature (pages, REST, Connect, MCP) registers its routes, with health, Prometheus
// metrics per route and a graceful shutdown that also ends long-lived streams (SSE).
package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
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

// Server is the HTTP server.
type Server struct {
	mux *http.ServeMux
}

// New returns a server with /healthz and /metrics; features add their routes with Handle.
func New() *Server {
	s := &Server{mux: http.NewServeMux()}
	s.Handle("GET /healthz", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("ok\n"))
	}))
	s.Handle("GET /metrics", promhttp.HandlerFor(metrics.Registry, promhttp.HandlerOpts{}))
	return s
}

// Handle registers h for pattern (net/http ServeMux syntax), counting its requests.
func (s *Server) Handle(pattern string, h http.Handler) {
	s.mux.Handle(pattern, instrument(pattern, h))
}

// Handler is the server's whole handler, for tests.
func (s *Server) Handler() http.Handler {
	return s.mux
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

// Serve is Run on a listener the caller opened.
func (s *Server) Serve(ctx context.Context, l net.Listener, grace time.Duration) error {
	// Handlers see this context end when shutdown starts, so SSE streams return and
	// Shutdown does not wait for them.
	base, stopStreams := context.WithCancel(context.Background())
	defer stopStreams()
	protocols := new(http.Protocols)
	protocols.SetHTTP1(true)
	protocols.SetUnencryptedHTTP2(true) // gRPC over plain HTTP/2 on loopback
	srv := &http.Server{
		Handler:           s.mux,
		Protocols:         protocols,
		ReadHeaderTimeout: 10 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return base },
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(l) }()
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	stopStreams()
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
