// Package assemble puts together the one HTTP server of `release-controller api` and `dev`
// from the server's features: the release log's Connect API (releaseapi), the MCP server
// (mcp), the pages (web: the Releases page, streams, payloads, pipelines), OpenShift's REST
// API and Cincinnati graph (osrc), pipeline approvals (approval) and the signatures
// (signatures). Streams, payloads and pipelines are read from a catalog that the manager's
// informers keep current, the release log from its informer-fed store; the only writes are
// release log entries (through the release log's writer), and approvals and rejections (with
// their Events and release log entries).
package assemble

import (
	"context"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/release-controller/release-controller/internal/changelog"
	"github.com/release-controller/release-controller/internal/eventlog"
	"github.com/release-controller/release-controller/internal/kubeauth"
	"github.com/release-controller/release-controller/internal/releaselog"
	"github.com/release-controller/release-controller/internal/server"
	"github.com/release-controller/release-controller/internal/server/approval"
	"github.com/release-controller/release-controller/internal/server/catalog"
	"github.com/release-controller/release-controller/internal/server/mcp"
	"github.com/release-controller/release-controller/internal/server/osrc"
	"github.com/release-controller/release-controller/internal/server/pipelineapi"
	"github.com/release-controller/release-controller/internal/server/releaseapi"
	"github.com/release-controller/release-controller/internal/server/signatures"
	"github.com/release-controller/release-controller/internal/server/web"
	signstore "github.com/release-controller/release-controller/internal/signing/store"
)

// ShutdownGrace is how long requests in flight may take to finish when the server stops.
const ShutdownGrace = 10 * time.Second

// Options configure the server.
type Options struct {
	// Log configures the release log; it must hold the store the log's projection feeds.
	Log releaselog.Options
	// ChangeLogs computes the changelogs of pages and the API; nil leaves them out.
	ChangeLogs changelog.PayloadChangeLogs
	// ArtifactsURL is the base of payloads' download links; empty leaves them out.
	ArtifactsURL string
	// PublicURL is where clients reach the server (osrc.ParsePublicURL): /graph links its
	// nodes to their pages under it; empty leaves the links out.
	PublicURL string
	// Server configures the HTTP server: TLS, timeouts and limits. Its MetricsFilter is set
	// by MetricsAuth.
	Server server.Options
	// MetricsAuth serves /metrics only to bearer tokens whose user Kubernetes RBAC allows to
	// get the non-resource URL /metrics (a TokenReview and a SubjectAccessReview, as
	// controller-runtime's filters.WithAuthenticationAndAuthorization asks them, but with 401
	// for a bad token where that answers 500).
	MetricsAuth bool
	// AuthCache configures how long the answers of TokenReviews and SubjectAccessReviews
	// (release log writes, /metrics) are cached.
	AuthCache kubeauth.Options
	// Signatures, when set, is the signature store served read-only at /signatures/ with
	// the public keys the signing controller published in it.
	Signatures *signstore.Store
	// DefaultServiceAccount is the ServiceAccount (of a pipeline's namespace) the approval
	// route impersonates to read an approval key when the pipeline names none
	// (spec.serviceAccountName): the api's --default-service-account. Empty: read with the
	// server's own rights (tests).
	DefaultServiceAccount string
}

// New builds the server for mgr. Streams and payloads are read from a catalog that mgr's
// informers keep current.
func New(mgr ctrl.Manager, opts Options) (*server.Server, error) {
	cat := catalog.New()
	if err := cat.Watch(context.Background(), mgr.GetCache()); err != nil {
		return nil, err
	}
	// One reviewer, so a token checked for a write is known to /metrics and the reverse.
	reviewer := kubeauth.NewReviewer(mgr.GetClient(), opts.AuthCache)
	serverOpts := opts.Server
	if opts.MetricsAuth {
		serverOpts.MetricsFilter = reviewer.Filter()
	}
	s, err := server.NewWithOptions(serverOpts)
	if err != nil {
		return nil, err
	}
	writer := releaselog.NewWriter(mgr.GetClient(), mgr.GetAPIReader(), opts.Log)
	auth := releaseapi.NewAuthorizerWithReviewer(reviewer, opts.Log.Namespace)
	releaseapi.Register(s, releaseapi.NewService(opts.Log.Store, writer, opts.Log, auth))
	mcp.Register(s, opts.Log.Store, opts.Log, cat, opts.ChangeLogs)
	web.Register(s, opts.Log.Store, opts.Log)
	keys := approval.NewTenantKeys(mgr.GetConfig(), mgr.GetAPIReader(), opts.DefaultServiceAccount)
	approvals := approval.NewHandler(mgr.GetClient(), mgr.GetAPIReader(), cat, keys, reviewer)
	approvals.Report = eventlog.Recorder{Events: mgr.GetEventRecorder(eventlog.Reporter)}
	approvals.Log = writer
	approval.Register(s, approvals)
	pipelineapi.Register(s, cat, opts.Log.Clock)
	osrc.Register(s, cat, osrc.Options{ChangeLogs: opts.ChangeLogs, ArtifactsURL: opts.ArtifactsURL, PublicURL: opts.PublicURL, Clock: opts.Log.Clock})
	if opts.Signatures != nil {
		signatures.Register(s, opts.Signatures)
	}
	web.RegisterPages(s, cat, web.PageOptions{ChangeLogs: opts.ChangeLogs, ArtifactsURL: opts.ArtifactsURL, Clock: opts.Log.Clock})
	return s, nil
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
