package main

import (
	"flag"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/release-controller/release-controller/internal/changelog"
	"github.com/release-controller/release-controller/internal/kubeauth"
	"github.com/release-controller/release-controller/internal/kubeclient"
	"github.com/release-controller/release-controller/internal/manager"
	"github.com/release-controller/release-controller/internal/releaselog"
	"github.com/release-controller/release-controller/internal/releaselog/logcontroller"
	"github.com/release-controller/release-controller/internal/server"
	"github.com/release-controller/release-controller/internal/server/assemble"
	"github.com/release-controller/release-controller/internal/server/osrc"
	"github.com/release-controller/release-controller/internal/server/web"
	signstore "github.com/release-controller/release-controller/internal/signing/store"
)

func newAPICommand() *cobra.Command {
	var (
		kube         kubeclient.Options
		listen       string
		logOpts      releaselog.Options
		types        []string
		zapOpts      = zap.Options{}
		clFlags      changelogFlags
		artifactsURL string
		publicURL    string
		serverOpts   server.Options
		metricsAuth  bool
		authCache    kubeauth.Options
		sigStore     string
		logKey       string
		defaultSA    string
	)
	cmd := &cobra.Command{
		Use:   "api",
		Short: "Serve the web UI, the Connect API and MCP from the cluster's informer caches",
		Long: `Serve the release pages (/, /releasestream/..., /releasetag/..., /changelog), the
OpenShift-compatible REST API (/api/v1/..., /graph), the release log's page (/releases) and
Connect API (Connect, gRPC and gRPC-Web at the root) and MCP at /mcp, reading from informer
caches. Writes to the log need a bearer token that Kubernetes RBAC allows to create
releaselogs/entries; the token's user is the entry's author, and the entry is sealed with the
release log key (--release-log-key-secret) so that readers can tell it from one written
directly. With --tls-cert-file and --tls-key-file it serves HTTPS; with --metrics-auth,
/metrics needs a token allowed to get the non-resource URL /metrics.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zapOpts)))
			if _, err := serverOpts.TLS(); err != nil {
				return err
			}
			public, err := osrc.ParsePublicURL(publicURL)
			if err != nil {
				return err
			}
			parsed, err := parseTypes(types)
			if err != nil {
				return err
			}
			logOpts.Types = parsed
			logOpts.Store = releaselog.NewStore()
			logOpts = logOpts.WithDefaults("")
			cfg, err := kube.Config()
			if err != nil {
				return err
			}
			if logOpts.SealKey, err = releaseLogKey(cmd.Context(), cfg, logKey); err != nil {
				return err
			}
			mgr, err := manager.New(cfg, manager.Options{MetricsAddr: "0", ProbeAddr: "0", ReleaseLog: logOpts})
			if err != nil {
				return err
			}
			if err := logcontroller.SetupStoreWithManager(mgr, logOpts); err != nil {
				return err
			}
			// The manager's client reads from its cache, which starts with the manager; the
			// Secret is read once, now.
			changeLogs, err := changelog.Setup(cmd.Context(), mgr.GetAPIReader(), clFlags.config(userCacheDir()))
			if apierrors.IsForbidden(err) {
				// Its Role grants Secrets of its own namespace only (docs/security.md).
				return fmt.Errorf("%w: the api reads --git-credentials-secret only in its own namespace (the Role release-controller-api there): create the Secret in that namespace", err)
			}
			if err != nil {
				return err
			}
			apiOpts := assemble.Options{
				Log: logOpts, ChangeLogs: changeLogs, ArtifactsURL: artifactsURL, PublicURL: public,
				Server: serverOpts, MetricsAuth: metricsAuth, AuthCache: authCache, DefaultServiceAccount: defaultSA,
			}
			if sigStore != "" {
				if apiOpts.Signatures, err = signstore.Open(cmd.Context(), sigStore); err != nil {
					return err
				}
				defer apiOpts.Signatures.Close()
			}
			srv, err := assemble.New(mgr, apiOpts)
			if err != nil {
				return err
			}
			if err := assemble.AddToManager(mgr, srv, listen); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "serving on %s://%s (release log in namespace %s)\n", srv.Scheme(), listen, logOpts.Namespace)
			return mgr.Start(cmd.Context())
		},
	}
	f := cmd.Flags()
	kube.AddFlags(f)
	f.StringVar(&listen, "listen", ":8080", "address to serve on")
	f.StringVar(&logOpts.Namespace, "log-namespace", releaselog.DefaultNamespace, "namespace of the ReleaseLog objects")
	f.DurationVar(&logOpts.TTL, "log-ttl", releaselog.DefaultTTL, "how long release log days are kept")
	f.IntVar(&logOpts.MaxEntriesPerDay, "log-max-entries", releaselog.DefaultMaxEntriesPerDay, "most entries a release log day holds (at most 10000); AddRelease beyond it fails with FailedPrecondition")
	addLogKeyFlag(f, &logKey)
	f.StringSliceVar(&types, "log-type", nil, "an allowed entry type and its colour, NAME=COLOR (repeatable); default: release, rejected, promotion, hotfix")
	clFlags.addFlags(f, userCacheDir())
	f.StringVar(&artifactsURL, "artifacts-url", "", "base URL of the payloads' downloads (a payload's download link is <url>/<tag>); empty: no download links")
	f.StringVar(&publicURL, "public-url", "", "where clients reach this server, an absolute http(s) URL such as https://release.example.com: /graph's nodes link to their payload's page under it (metadata \"url\"); empty: no links")
	f.StringVar(&serverOpts.TLSCertFile, "tls-cert-file", "", "serve HTTPS with this PEM certificate (chain); needs --tls-key-file; read again when it changes")
	f.StringVar(&serverOpts.TLSKeyFile, "tls-key-file", "", "the PEM private key of --tls-cert-file")
	f.BoolVar(&metricsAuth, "metrics-auth", false, "serve /metrics only to bearer tokens whose user may get the non-resource URL /metrics (TokenReview and SubjectAccessReview)")
	f.DurationVar(&authCache.AllowedTTL, "auth-cache-allowed-ttl", kubeauth.DefaultAllowedTTL, "how long an authenticated token and an allowed access (release log writes, /metrics) are trusted without asking the API server again")
	f.DurationVar(&authCache.DeniedTTL, "auth-cache-denied-ttl", kubeauth.DefaultDeniedTTL, "how long a refused token or a denied access is remembered")
	f.StringVar(&sigStore, "signature-store", "", "serve this signature store (the controller's --signature-store, a gocloud.dev blob URL) read-only at /signatures/, with the public keys at /signatures/pubkey.asc; empty: no /signatures/")
	f.IntVar(&serverOpts.MaxStreams, "max-event-streams", server.DefaultMaxStreams, "most live-update event streams (pages' server-sent events) open at once; more are refused with 503; negative: no limit")
	f.IntVar(&serverOpts.MaxStreamsPerClient, "max-event-streams-per-client", server.DefaultMaxStreamsPerClient, "most event streams one client (remote IP address) may have open; more are refused with 429; behind a reverse proxy every client has the proxy's address, so raise it there; negative: no limit")
	f.StringVar(&defaultSA, "default-service-account", "default", "ServiceAccount of a pipeline's namespace the approval route acts as (impersonates) to read an approval key Secret when the pipeline names none (spec.serviceAccountName); empty: with the api's own rights, which its ClusterRole does not grant")
	logFlags := flag.NewFlagSet("", flag.ContinueOnError)
	zapOpts.BindFlags(logFlags)
	f.AddGoFlagSet(logFlags)
	return cmd
}

// parseTypes reads NAME=COLOR pairs; none gives the default types.
func parseTypes(pairs []string) ([]releaselog.TypeConfig, error) {
	if len(pairs) == 0 {
		return releaselog.DefaultTypes(), nil
	}
	types := make([]releaselog.TypeConfig, 0, len(pairs))
	for _, p := range pairs {
		name, color, ok := strings.Cut(p, "=")
		if !ok || name == "" || color == "" {
			return nil, fmt.Errorf("--log-type %q: want NAME=COLOR, e.g. release=#1a7f37", p)
		}
		if !web.ValidColor(color) {
			return nil, fmt.Errorf("--log-type %q: %q is not a CSS colour this server writes into its stylesheet: use a name, #hex, or rgb(...), hsl(...) and the like", p, color)
		}
		types = append(types, releaselog.TypeConfig{Name: name, Color: color})
	}
	return types, nil
}
