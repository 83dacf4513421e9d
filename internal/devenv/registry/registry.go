// Package registry runs an embedded OCI registry — distribution/distribution's own
// registry application over its filesystem storage driver — for `release-controller dev` and
// tests. Images persist in a directory across restarts, and manifests can be deleted.
//
// It serves plain HTTP by default (go-containerregistry speaks HTTP to loopback registries on
// its own), or HTTPS with htpasswd authentication, as the local cluster's registry does.
// distribution logs through logrus' process-wide standard logger, so Start points that
// logger at Options.Log (nil silences it).
package registry

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/distribution/distribution/v3/configuration"
	"github.com/distribution/distribution/v3/registry/handlers"
	"github.com/sirupsen/logrus"

	// Registers the "htpasswd" access controller with distribution's auth factory.
	_ "github.com/distribution/distribution/v3/registry/auth/htpasswd"
	// Registers the "filesystem" storage driver with distribution's driver factory.
	_ "github.com/distribution/distribution/v3/registry/storage/driver/filesystem"
)

// DefaultAddr listens on a free loopback port.
const DefaultAddr = "127.0.0.1:0"

// shutdownGrace bounds how long Close waits for requests in flight before cutting them off.
const shutdownGrace = 5 * time.Second

// Options configure the registry.
type Options struct {
	// Dir holds the registry's data; it is created when missing. Required.
	Dir string
	// Addr is the listen address; default DefaultAddr.
	Addr string
	// Log receives distribution's own log (every request); nil discards it.
	Log io.Writer
	// TLSCertFile and TLSKeyFile, when set, make it serve HTTPS with that certificate.
	TLSCertFile, TLSKeyFile string
	// Htpasswd, when set, is an htpasswd file (bcrypt): every request needs a user of it
	// (HTTP basic authentication, distribution's htpasswd access controller).
	Htpasswd string
}

// Server is a running registry.
type Server struct {
	app       *handlers.App
	http      *http.Server
	addr      string
	served    chan error
	closed    chan struct{}
	closeOnce sync.Once
	closeErr  error
}

// Start serves a registry storing its data in opts.Dir until Close is called or ctx is done.
func Start(ctx context.Context, opts Options) (*Server, error) {
	if opts.Dir == "" {
		return nil, errors.New("registry: Options.Dir is required")
	}
	dir, err := filepath.Abs(opts.Dir)
	if err != nil {
		return nil, fmt.Errorf("registry: %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("registry: creating its data directory: %w", err)
	}
	if opts.Addr == "" {
		opts.Addr = DefaultAddr
	}
	quietLogrus(opts.Log)

	app, err := newApp(ctx, dir, opts.Htpasswd)
	if err != nil {
		return nil, err
	}
	var tlsConfig *tls.Config
	if opts.TLSCertFile != "" || opts.TLSKeyFile != "" {
		cert, err := tls.LoadX509KeyPair(opts.TLSCertFile, opts.TLSKeyFile)
		if err != nil {
			_ = app.Shutdown()
			return nil, fmt.Errorf("registry: TLS certificate: %w", err)
		}
		tlsConfig = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	}
	ln, err := net.Listen("tcp", opts.Addr)
	if err != nil {
		_ = app.Shutdown()
		return nil, fmt.Errorf("registry: listening on %s: %w", opts.Addr, err)
	}
	if tlsConfig != nil {
		ln = tls.NewListener(ln, tlsConfig)
	}
	// Blobs are served straight from disk only where distribution would not ask who reads.
	var handler http.Handler = app
	if opts.Htpasswd == "" {
		handler = fastBlobs(dir, app)
	}
	s := &Server{
		app:    app,
		http:   &http.Server{Handler: handler, ReadHeaderTimeout: 30 * time.Second},
		addr:   ln.Addr().String(),
		served: make(chan error, 1),
		closed: make(chan struct{}),
	}
	go func() { s.served <- s.http.Serve(ln) }()
	go func() {
		select {
		case <-ctx.Done():
			_ = s.Close()
		case <-s.closed:
		}
	}()
	return s, nil
}

// newApp builds distribution's application, turning its configuration panics into errors.
func newApp(ctx context.Context, dir, htpasswd string) (app *handlers.App, err error) {
	secret := make([]byte, 32)
	if _, err := rand.Read(secret); err != nil {
		return nil, fmt.Errorf("registry: generating the upload secret: %w", err)
	}
	config := &configuration.Configuration{
		Storage: configuration.Storage{
			"filesystem": configuration.Parameters{"rootdirectory": dir},
			"delete":     configuration.Parameters{"enabled": true},
			"cache":      configuration.Parameters{"blobdescriptor": "inmemory"},
		},
	}
	if htpasswd != "" {
		config.Auth = configuration.Auth{"htpasswd": configuration.Parameters{"realm": "release-controller", "path": htpasswd}}
	}
	// The secret signs upload state between requests; a fresh one per start only loses
	// uploads that were in flight when the previous process stopped.
	config.HTTP.Secret = hex.EncodeToString(secret)
	defer func() {
		if r := recover(); r != nil {
			app, err = nil, fmt.Errorf("registry: configuring distribution: %v", r)
		}
	}()
	return handlers.NewApp(ctx, config), nil
}

// quietLogrus points logrus' standard logger, which distribution uses, at w; a nil w turns it
// off entirely, so that requests do not even format log entries.
func quietLogrus(w io.Writer) {
	if w == nil {
		logrus.SetOutput(io.Discard)
		logrus.SetLevel(logrus.PanicLevel)
		return
	}
	logrus.SetOutput(w)
	logrus.SetLevel(logrus.InfoLevel)
}

// Addr is the registry's host:port, to use as the registry part of image references.
func (s *Server) Addr() string {
	return s.addr
}

// Close stops serving and waits for the server to stop; it is safe to call more than once.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		defer close(s.closed)
		ctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
		defer cancel()
		err := s.http.Shutdown(ctx)
		if err != nil {
			// Requests still running after the grace period are cut off.
			err = s.http.Close()
		}
		if serveErr := <-s.served; serveErr != nil && !errors.Is(serveErr, http.ErrServerClosed) {
			err = errors.Join(err, serveErr)
		}
		s.closeErr = errors.Join(err, s.app.Shutdown())
	})
	return s.closeErr
}
