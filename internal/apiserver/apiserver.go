// Package apiserver assembles the HTTP server of `release-controller api` and `dev`: the
// release log's Connect API, its MCP server and its web page, reading from the informer-fed
// store and writing through the release log's writer.
package apiserver

import (
	"context"
	"net/http"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/release-controller/release-controller/internal/releaselog"
	"github.com/release-controller/release-controller/internal/server"
	"github.com/release-controller/release-controller/internal/server/mcp"
	"github.com/release-controller/release-controller/internal/server/releaseapi"
	"github.com/release-controller/release-controller/internal/server/web"
)

// ShutdownGrace is how long requests in flight may take to finish when the server stops.
const ShutdownGrace = 10 * time.Second

// New builds the server for mgr; opts must hold the store the release log's projection feeds.
func New(mgr ctrl.Manager, opts releaselog.Options) *server.Server {
	s := server.New()
	writer := releaselog.NewWriter(mgr.GetClient(), mgr.GetAPIReader(), opts)
	auth := releaseapi.NewAuthorizer(mgr.GetClient(), opts.Namespace)
	releaseapi.Register(s, releaseapi.NewService(opts.Store, writer, opts, auth))
	mcp.Register(s, opts.Store, opts)
	web.Register(s, opts.Store, opts)
	s.Handle("GET /{$}", http.RedirectHandler("/releases", http.StatusFound))
	return s
}

// AddToManager runs s on addr for as long as mgr runs, on every replica.
func AddToManager(mgr ctrl.Manager, s *server.Server, addr string) error {
	return mgr.Add(serverRunnable{s: s, addr: addr})
}

type serverRunnable struct {
	s    *server.Server
	addr string
}

func (r serverRunnable) Start(ctx context.Context) error { return r.s.Run(ctx, r.addr, ShutdownGrace) }

// NeedLeaderElection is false: every replica serves reads.
func (serverRunnable) NeedLeaderElection() bool { return false }

var _ manager.LeaderElectionRunnable = serverRunnable{}
