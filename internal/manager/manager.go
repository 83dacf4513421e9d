// Package manager builds the controller-runtime manager that runs every controller, with the
// scheme, cache restrictions and probes shared by `release-controller controller`, `dev` and tests.
package manager

import (
	"context"
	"fmt"
	"net/http"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	prowv1 "github.com/release-controller/release-controller/api/prow/v1"
	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/payload"
	"github.com/release-controller/release-controller/internal/registryclient"
	"github.com/release-controller/release-controller/internal/releaselog"
	"github.com/release-controller/release-controller/internal/stream"
	"github.com/release-controller/release-controller/internal/verify"
)

// Options configure the manager.
type Options struct {
	// MetricsAddr serves Prometheus metrics; "0" disables them.
	MetricsAddr string
	// ProbeAddr serves /healthz and /readyz; "0" disables them.
	ProbeAddr string
	// LeaderElection makes only one replica run the controllers at a time.
	LeaderElection          bool
	LeaderElectionNamespace string
	// Namespace restricts the controllers to one namespace; empty watches all.
	Namespace string
	// JobEventDelay batches job events per payload; zero uses the payload package's default.
	JobEventDelay time.Duration
	// PayloadWorkers is how many payloads are reconciled at once; zero uses the payload package's default.
	PayloadWorkers int

	// Registry talks to the registries of components and payloads; nil uses the default keychain.
	Registry *registryclient.Client
	// ImportInterval is how often components followed by tag are resolved again.
	ImportInterval time.Duration
	// RetryBackoff spaces retries of failed verification runs; zero uses verify.DefaultBackoff.
	RetryBackoff verify.Backoff
	// BuildImage and BuildServiceAccount run the payload creation jobs.
	BuildImage          string
	BuildServiceAccount string

	// ReleaseLog configures the release log: its namespace (empty: Namespace, or
	// releaselog.DefaultNamespace when that is empty too), time to live, entry types, and the
	// store that readers use.
	ReleaseLog releaselog.Options

	// SkipControllerNameValidation lets a process start the controllers more than once
	// (tests that restart them); controller names otherwise must be unique per process.
	SkipControllerNameValidation bool
}

// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

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
	return labelExists(v1alpha1.LabelJobType)
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
	cacheOpts := cache.Options{
		DefaultTransform: trimObject,
		ByObject: map[client.Object]cache.ByObject{
			&batchv1.Job{}:    {Label: ownJobs(), Transform: trimJob},
			&prowv1.ProwJob{}: {Label: ownJobs(), Transform: trimProwJob},
			&corev1.Pod{}:     {Label: ownJobs(), Transform: trimPod},
			// Without their job templates, read live when a run is launched.
			&v1alpha1.ReleasePayload{}: {Transform: trimPayload},
			// The release log lives in one namespace, which may differ from Namespace.
			&v1alpha1.ReleaseLog{}: {Namespaces: map[string]cache.Config{opts.ReleaseLog.WithDefaults(opts.Namespace).Namespace: {}}},
			// Only the streams' upgrade graphs, not every ConfigMap of the cluster.
			&corev1.ConfigMap{}: {Label: labelExists(v1alpha1.LabelStream)},
		},
	}
	if opts.Namespace != "" {
		cacheOpts.DefaultNamespaces = map[string]cache.Config{opts.Namespace: {}}
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                  NewScheme(),
		Cache:                   cacheOpts,
		Metrics:                 metricsserver.Options{BindAddress: opts.MetricsAddr},
		HealthProbeBindAddress:  opts.ProbeAddr,
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
	// and ProwJobs (see payload.JobCache); the manager's caches of those stay for whoever reads
	// whole jobs (the dev job runner), and are only filled when someone does.
	jobs, err := payload.NewJobCache(mgr, payload.JobCacheOptions{Namespace: opts.Namespace, Selector: ownJobs(), ProwJobs: prowJobs})
	if err != nil {
		return err
	}
	if err := mgr.Add(jobs); err != nil {
		return err
	}
	if err := payload.IndexPods(ctx, mgr.GetFieldIndexer()); err != nil {
		return err
	}
	payloads := &payload.Reconciler{Client: mgr.GetClient(), Jobs: jobs, JobEventDelay: opts.JobEventDelay, Workers: opts.PayloadWorkers}
	if err := payloads.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the payload controller: %w", err)
	}
	streams := &stream.Reconciler{
		Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Jobs: jobs, Registry: opts.Registry, WatchProwJobs: prowJobs,
		ImportInterval: opts.ImportInterval, RetryBackoff: opts.RetryBackoff,
		BuildImage: opts.BuildImage, BuildServiceAccount: opts.BuildServiceAccount,
	}
	if err := streams.SetupWithManager(ctx, mgr); err != nil {
		return fmt.Errorf("setting up the stream controller: %w", err)
	}
	if err := releaselog.SetupWithManager(mgr, opts.ReleaseLog.WithDefaults(opts.Namespace)); err != nil {
		return err
	}
	return nil
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
