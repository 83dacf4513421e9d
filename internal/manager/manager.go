// Package manager builds the controller-runtime manager that runs every controller, with the
// scheme, cache restrictions and probes shared by `release-controller controller`, `dev` and tests.
package manager

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/client-go/discovery"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	prowv1 "github.com/release-controller/release-controller/api/prow/v1"
	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/audit"
	"github.com/release-controller/release-controller/internal/changelog"
	"github.com/release-controller/release-controller/internal/clusters"
	"github.com/release-controller/release-controller/internal/freeze"
	"github.com/release-controller/release-controller/internal/jira"
	"github.com/release-controller/release-controller/internal/jobcache"
	"github.com/release-controller/release-controller/internal/jobcontract"
	"github.com/release-controller/release-controller/internal/payload"
	"github.com/release-controller/release-controller/internal/pipeline"
	"github.com/release-controller/release-controller/internal/registryclient"
	"github.com/release-controller/release-controller/internal/releaselog"
	"github.com/release-controller/release-controller/internal/releaselog/logcontroller"
	"github.com/release-controller/release-controller/internal/stream"
	"github.com/release-controller/release-controller/internal/verify"
)

// Options configure the manager.
type Options struct {
	// MetricsAddr serves Prometheus metrics; "0" disables them.
	MetricsAddr string
	// MetricsSecure serves the metrics over HTTPS, only to bearer tokens whose user RBAC
	// allows to get the non-resource URL /metrics (controller-runtime's
	// filters.WithAuthenticationAndAuthorization; the controller then needs to create
	// tokenreviews and subjectaccessreviews). MetricsCertDir holds its tls.crt and tls.key;
	// empty: a self-signed certificate made at start.
	MetricsSecure  bool
	MetricsCertDir string
	// ProbeAddr serves /healthz and /readyz; "0" disables them.
	ProbeAddr string
	// PprofAddr serves Go's /debug/pprof/ profiles; "" or "0" disables them.
	PprofAddr string
	// LeaderElection makes only one replica run the controllers at a time.
	LeaderElection          bool
	LeaderElectionNamespace string
	// Namespace restricts the controllers to one namespace, or to several separated by commas
	// (see Namespaces); empty watches all.
	Namespace string
	// ProwJobNamespaces are the namespaces, besides a payload's own, where its verifications
	// may create ProwJobs (a verification's prowJob.namespace, Prow's namespace), in every
	// mode: a ProwJob bound for any other namespace is a failed run naming it. With Namespace,
	// the controllers watch the ProwJobs there too.
	ProwJobNamespaces []string
	// JobEventDelay batches job events per payload; zero uses the payload package's default.
	JobEventDelay time.Duration
	// ClusterHealthInterval spaces the probes of a verification cluster that answers; zero uses
	// the clusters package's default.
	ClusterHealthInterval time.Duration
	// PayloadWorkers is how many payloads are reconciled at once; zero uses the payload package's default.
	PayloadWorkers int
	// PipelineWorkers is how many pipelines are reconciled at once; zero uses the pipeline package's default.
	PipelineWorkers int
	// DefaultServiceAccount is the ServiceAccount of an object's namespace the controllers
	// act as when the object names none (--default-service-account): a Pipeline's writes to
	// local targets and reads of its kubeconfig Secrets. "" acts with the controller's own
	// rights.
	DefaultServiceAccount string
	// InsecureKubeconfigExec lets kubeconfigs from Secrets (pipeline targets, verification
	// and creation clusters) run exec and auth-provider plugins and name files
	// (--insecure-kubeconfig-exec); by default they are refused (clusters.CheckKubeconfig).
	InsecureKubeconfigExec bool

	// Registry talks to the registries of components and payloads; nil uses the default keychain.
	Registry *registryclient.Client
	// ImportInterval is how often components followed by tag are resolved again.
	ImportInterval time.Duration
	// RetryBackoff spaces retries of failed verification runs; zero uses verify.DefaultBackoff.
	RetryBackoff verify.Backoff
	// BuildImage and BuildServiceAccount run the payload creation jobs.
	BuildImage          string
	BuildServiceAccount string
	// RegistryAuthSecret is the Secret the jobs pull and push with (--registry-auth-secret).
	RegistryAuthSecret string

	// ReleaseLog configures the release log: its namespace (empty: the first of Namespaces, or
	// releaselog.DefaultNamespace when there is none), time to live, entry types, and the
	// store that readers use.
	ReleaseLog releaselog.Options

	// Audit configures the audit of accepted payloads (always on) and their signing (with a
	// store and a key).
	Audit audit.Options

	// Jira configures the verification of the Jira issues of accepted payloads, for streams
	// with spec.jira; it runs when ChangeLogs is set.
	Jira JiraOptions

	// SkipControllerNameValidation lets a process start the controllers more than once
	// (tests that restart them); controller names otherwise must be unique per process.
	SkipControllerNameValidation bool
}

// JiraOptions configure the Jira controller.
type JiraOptions struct {
	// ChangeLogs computes the changelogs the issue keys are read from.
	ChangeLogs changelog.PayloadChangeLogs
	// WebURL is the base URL of the pages the comments link to; empty: streams with Jira get
	// a condition saying so.
	WebURL string
	// MaxAge: payloads accepted longer ago are left alone (zero: jira.DefaultMaxAge).
	MaxAge time.Duration
}

// Namespaces are the namespaces Namespace names, in its order, without blanks; nil: all.
func (o Options) Namespaces() []string {
	var namespaces []string
	for n := range strings.SplitSeq(o.Namespace, ",") {
		if n = strings.TrimSpace(n); n != "" && !slices.Contains(namespaces, n) {
			namespaces = append(namespaces, n)
		}
	}
	return namespaces
}

// releaseLog is the release log's options with its namespace defaulted.
func (o Options) releaseLog() releaselog.Options {
	var first string
	if namespaces := o.Namespaces(); len(namespaces) > 0 {
		first = namespaces[0]
	}
	return o.ReleaseLog.WithDefaults(first)
}

// Leader election (the `controller` command): controller-runtime's Lease lock reads the lease,
// creates it once and renews and releases it with updates, and records a "became leader" event
// (core events API) next to it. Both live in --leader-election-namespace only, so they are a
// Role of that namespace: in config/rbac/controller/role.yaml it is the Role
// release-controller-controller of namespace release-controller-system, which an install puts
// into its own namespace (kustomize's namespace, the chart's release namespace). A create
// cannot be limited to a name, so it covers every lease of the namespace; get and update are
// limited to the lease LeaderElectionID names.
// +kubebuilder:rbac:groups=coordination.k8s.io,namespace=release-controller-system,resources=leases,verbs=create
// +kubebuilder:rbac:groups=coordination.k8s.io,namespace=release-controller-system,resources=leases,resourceNames=release-controller.release-controller.dev,verbs=get;update
// +kubebuilder:rbac:groups="",namespace=release-controller-system,resources=events,verbs=create

// LeaderElectionID names the lease the replicas compete for.
const LeaderElectionID = "release-controller.release-controller.dev"

// NewScheme returns a scheme with every kind the controllers read or write.
func NewScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, v1alpha1.AddToScheme, prowv1.AddToScheme} {
		if err := add(s); err != nil {
			panic(fmt.Sprintf("building scheme: %v", err))
		}
	}
	return s
}

// ownJobs selects the jobs the controller created or watches: only they are cached, so the
// cache does not hold every Job of the cluster.
func ownJobs() labels.Selector {
	return jobcontract.Selector()
}

// labelExists selects the objects that carry the label key.
func labelExists(key string) labels.Selector {
	req, err := labels.NewRequirement(key, selection.Exists, nil)
	if err != nil {
		panic(err)
	}
	return labels.NewSelector().Add(*req)
}

// New builds a manager for cfg.
func New(cfg *rest.Config, opts Options) (ctrl.Manager, error) {
	prowJobs := cache.ByObject{Label: ownJobs(), Transform: trimProwJob}
	if namespaces := opts.Namespaces(); len(namespaces) > 0 {
		// ProwJobs also where verifications create them outside the watched namespaces.
		prowJobs.Namespaces = map[string]cache.Config{}
		for _, n := range slices.Concat(namespaces, opts.ProwJobNamespaces) {
			prowJobs.Namespaces[n] = cache.Config{}
		}
	}
	cacheOpts := cache.Options{
		DefaultTransform: trimObject,
		ByObject: map[client.Object]cache.ByObject{
			&batchv1.Job{}: {Label: ownJobs(), Transform: trimJob},
			&corev1.Pod{}:  {Label: ownJobs(), Transform: trimPod},
			// Without their job templates, read live when a run is launched.
			&v1alpha1.ReleasePayload{}: {Transform: trimPayload},
			// The release log lives in one namespace, which may differ from Namespace.
			&v1alpha1.ReleaseLog{}: {Namespaces: map[string]cache.Config{opts.releaseLog().Namespace: {}}},
			// Only the streams' upgrade graphs, not every ConfigMap of the cluster.
			&corev1.ConfigMap{}: {Label: labelExists(v1alpha1.LabelStream)},
		},
	}
	// The cache refuses options for a kind the API server does not serve, which would stop the
	// controller from starting on a cluster without Prow: ProwJobs only where they are served
	// (AddControllers watches them on the same condition).
	if served, err := servesProwJobs(cfg); err != nil {
		return nil, err
	} else if served {
		cacheOpts.ByObject[&prowv1.ProwJob{}] = prowJobs
	}
	if namespaces := opts.Namespaces(); len(namespaces) > 0 {
		cacheOpts.DefaultNamespaces = map[string]cache.Config{}
		for _, n := range namespaces {
			cacheOpts.DefaultNamespaces[n] = cache.Config{}
		}
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                  NewScheme(),
		Cache:                   cacheOpts,
		Metrics:                 opts.metricsServer(),
		HealthProbeBindAddress:  opts.ProbeAddr,
		PprofBindAddress:        opts.PprofAddr,
		LeaderElection:          opts.LeaderElection,
		LeaderElectionID:        LeaderElectionID,
		LeaderElectionNamespace: opts.LeaderElectionNamespace,
		// Stepping down at once lets a new leader start without waiting out the lease.
		LeaderElectionReleaseOnCancel: true,
		Controller:                    config.Controller{SkipNameValidation: &opts.SkipControllerNameValidation},
	})
	if err != nil {
		return nil, fmt.Errorf("creating manager: %w", err)
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return nil, err
	}
	if err := mgr.AddReadyzCheck("cache", func(req *http.Request) error {
		if !mgr.GetCache().WaitForCacheSync(req.Context()) {
			return fmt.Errorf("informer caches not synced")
		}
		return nil
	}); err != nil {
		return nil, err
	}
	return mgr, nil
}

// AddControllers registers every controller with mgr.
func AddControllers(ctx context.Context, mgr ctrl.Manager, opts Options) error {
	prowJobs, err := servesKind(mgr.GetRESTMapper(), schema.GroupVersionKind{Group: prowv1.SchemeGroupVersion.Group, Version: prowv1.SchemeGroupVersion.Version, Kind: "ProwJob"})
	if err != nil {
		return err
	}
	log := ctrl.LoggerFrom(ctx)
	if !prowJobs {
		log.Info("prow.k8s.io/v1 ProwJob is not served by this cluster; ProwJob verifications are not watched (restart after installing Prow's CRD)")
	}
	// The controllers keep a small record of each of their jobs, not the manager's cached Jobs
	// and ProwJobs (see jobcache.Cache); the manager's caches of those stay for whoever reads
	// whole jobs (the dev job runner), and are only filled when someone does.
	jobs, err := jobcache.New(mgr, jobcache.Options{
		Namespaces: opts.Namespaces(), ProwJobNamespaces: opts.ProwJobNamespaces, Selector: ownJobs(), ProwJobs: prowJobs,
	})
	if err != nil {
		return err
	}
	if err := mgr.Add(jobs); err != nil {
		return err
	}
	if err := payload.IndexPods(ctx, mgr.GetFieldIndexer()); err != nil {
		return err
	}
	// Verifications that name another cluster: their jobs there, one cache per cluster in use.
	remote := clusters.NewJobs(mgr.GetClient(), mgr.GetAPIReader(), ownJobs())
	if opts.ClusterHealthInterval > 0 {
		remote.HealthInterval = opts.ClusterHealthInterval
	}
	remote.InsecureKubeconfigExec = opts.InsecureKubeconfigExec
	if err := mgr.Add(remote); err != nil {
		return err
	}
	payloads := &payload.Reconciler{Client: mgr.GetClient(), Jobs: jobs, Clusters: remote, JobEventDelay: opts.JobEventDelay, Workers: opts.PayloadWorkers}
	if err := payloads.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the payload controller: %w", err)
	}
	streams := &stream.Reconciler{
		Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Jobs: jobs, Clusters: remote, Registry: opts.Registry, WatchProwJobs: prowJobs,
		ProwJobNamespaces: opts.ProwJobNamespaces,
		ImportInterval:    opts.ImportInterval, RetryBackoff: opts.RetryBackoff,
		BuildImage: opts.BuildImage, BuildServiceAccount: opts.BuildServiceAccount, RegistryAuthSecret: opts.RegistryAuthSecret,
	}
	if err := streams.SetupWithManager(ctx, mgr); err != nil {
		return fmt.Errorf("setting up the stream controller: %w", err)
	}
	if err := logcontroller.SetupWithManager(mgr, opts.releaseLog()); err != nil {
		return err
	}
	// Accepted payloads: read back from the registry, audited and signed.
	auditor := &audit.Reconciler{Client: mgr.GetClient(), Options: opts.Audit, APIReader: mgr.GetAPIReader(), Registry: opts.Registry}
	if err := auditor.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the audit controller: %w", err)
	}
	if opts.Jira.ChangeLogs != nil {
		verifier := &jira.Reconciler{Client: mgr.GetClient(), ChangeLogs: opts.Jira.ChangeLogs, MaxAge: opts.Jira.MaxAge}
		if opts.Jira.WebURL != "" {
			verifier.PayloadURL = jira.PayloadPageURL(opts.Jira.WebURL)
		}
		if err := verifier.SetupWithManager(ctx, mgr); err != nil {
			return fmt.Errorf("setting up the Jira controller: %w", err)
		}
	}
	// Pipelines: promotions into their environments, each logged in the release log; their
	// verification runs in the job records and on the remote clusters the others use.
	pipelines := &pipeline.Reconciler{
		Log: releaselog.NewWriter(mgr.GetClient(), mgr.GetAPIReader(), opts.releaseLog()), Workers: opts.PipelineWorkers,
		DefaultServiceAccount: opts.DefaultServiceAccount, InsecureKubeconfigExec: opts.InsecureKubeconfigExec,
		Verify: pipeline.VerifyOptions{Jobs: jobs, Clusters: remote, Backoff: opts.RetryBackoff, WatchProwJobs: prowJobs, ProwJobNamespaces: opts.ProwJobNamespaces},
	}
	if err := pipelines.SetupWithManager(ctx, mgr); err != nil {
		return fmt.Errorf("setting up the pipeline controller: %w", err)
	}
	// Freezes: where each window stands, its starts and ends logged in the release log.
	freezes := &freeze.Reconciler{Log: releaselog.NewWriter(mgr.GetClient(), mgr.GetAPIReader(), opts.releaseLog())}
	if err := freezes.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the freeze controller: %w", err)
	}
	return nil
}

// servesProwJobs asks the API server's discovery whether it serves prow.k8s.io/v1 ProwJobs.
func servesProwJobs(cfg *rest.Config) (bool, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return false, err
	}
	resources, err := dc.ServerResourcesForGroupVersion(prowv1.SchemeGroupVersion.String())
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("discovering %s: %w", prowv1.SchemeGroupVersion, err)
	}
	return slices.ContainsFunc(resources.APIResources, func(r metav1.APIResource) bool { return r.Kind == "ProwJob" }), nil
}

func servesKind(mapper meta.RESTMapper, gvk schema.GroupVersionKind) (bool, error) {
	_, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	switch {
	case err == nil:
		return true, nil
	case meta.IsNoMatchError(err):
		return false, nil
	}
	return false, fmt.Errorf("looking up %s: %w", gvk, err)
}

// metricsServer is the metrics endpoint's configuration.
func (o Options) metricsServer() metricsserver.Options {
	m := metricsserver.Options{BindAddress: o.MetricsAddr}
	if o.MetricsSecure {
		m.SecureServing = true
		m.FilterProvider = filters.WithAuthenticationAndAuthorization
		m.CertDir = o.MetricsCertDir
	}
	return m
}
