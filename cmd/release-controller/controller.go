package main

import (
	"context"
	"flag"

	"github.com/spf13/cobra"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/release-controller/release-controller/internal/kubeclient"
	"github.com/release-controller/release-controller/internal/manager"
	"github.com/release-controller/release-controller/internal/payload"
	"github.com/release-controller/release-controller/internal/releaselog"
	"github.com/release-controller/release-controller/internal/stream"
	"github.com/release-controller/release-controller/internal/verify"
)

func newControllerCommand() *cobra.Command {
	var (
		kube kubeclient.Options
		opts = manager.Options{
			JobEventDelay: payload.DefaultJobEventDelay, PayloadWorkers: payload.DefaultWorkers,
			ImportInterval: stream.DefaultImportInterval, RetryBackoff: verify.DefaultBackoff,
		}
		zapOpts = zap.Options{}
	)
	cmd := &cobra.Command{
		Use:   "controller",
		Short: "Run every controller against a cluster",
		Long: `Run every controller against the cluster of --kubeconfig, or the in-cluster
configuration when run in a pod. Replicas elect a leader; only the leader reconciles.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zapOpts)))
			cfg, err := kube.Config()
			if err != nil {
				return err
			}
			if opts.LeaderElection && opts.LeaderElectionNamespace == "" {
				// The pod's namespace: POD_NAMESPACE (the downward API) or the service
				// account's; "default" outside a pod.
				if pod, inPod := manager.OwnPod(); inPod {
					opts.LeaderElectionNamespace = pod.Namespace
				} else {
					opts.LeaderElectionNamespace = "default"
				}
			}
			ctx := ctrl.LoggerInto(cmd.Context(), ctrl.Log.WithName("controller"))
			if opts.BuildImage, err = resolveBuildImage(ctx, cfg, opts.BuildImage); err != nil {
				return err
			}
			ctrl.LoggerFrom(ctx).Info("payload creation jobs run this image", "buildImage", opts.BuildImage)
			mgr, err := manager.New(cfg, opts)
			if err != nil {
				return err
			}
			if err := manager.AddControllers(ctx, mgr, opts); err != nil {
				return err
			}
			return mgr.Start(ctx)
		},
	}
	f := cmd.Flags()
	kube.AddFlags(f)
	f.StringVar(&opts.MetricsAddr, "metrics-bind-address", ":9090", "address of the Prometheus metrics endpoint; 0 disables it")
	f.BoolVar(&opts.MetricsSecure, "metrics-secure", false, "serve the metrics over HTTPS, only to bearer tokens whose user may get the non-resource URL /metrics (TokenReview and SubjectAccessReview; the controller then needs to create both)")
	f.StringVar(&opts.MetricsCertDir, "metrics-cert-dir", "", "folder holding tls.crt and tls.key of --metrics-secure; default: a self-signed certificate made at start")
	f.StringVar(&opts.ProbeAddr, "health-probe-bind-address", ":9091", "address of /healthz and /readyz; 0 disables them")
	f.BoolVar(&opts.LeaderElection, "leader-elect", true, "elect a leader so that only one replica reconciles")
	f.StringVar(&opts.LeaderElectionNamespace, "leader-election-namespace", "", "namespace of the leader election lease; default: the pod's namespace, or \"default\" outside a cluster")
	f.StringVar(&opts.Namespace, "namespace", "", "only watch this namespace, or these namespaces separated by commas; default: all namespaces")
	f.StringSliceVar(&opts.ProwJobNamespaces, "prowjob-namespace", nil, "with --namespace: more namespaces where verifications create ProwJobs (their prowJob.namespace), whose ProwJobs are watched too")
	f.DurationVar(&opts.JobEventDelay, "job-event-delay", opts.JobEventDelay, "reconcile a payload this long after a job event: a verdict is written then, the rest of its status once its jobs have been quiet 5 times this (at most 50 times this after the first change), so jobs changing together are written at once")
	f.IntVar(&opts.PayloadWorkers, "payload-workers", opts.PayloadWorkers, "how many payloads are reconciled at once")
	f.DurationVar(&opts.ImportInterval, "import-interval", opts.ImportInterval, "how often components followed by tag are resolved again")
	f.DurationVar(&opts.RetryBackoff.Base, "retry-backoff", opts.RetryBackoff.Base, "wait before retrying a failed verification run; doubles with each further failure")
	f.DurationVar(&opts.RetryBackoff.Cap, "retry-backoff-max", opts.RetryBackoff.Cap, "longest wait before retrying a failed verification run")
	f.StringVar(&opts.BuildImage, "build-image", "", "image of the payload creation jobs (runs release-controller payload build); default in a pod: the pod's own image (its container \""+manager.ControllerContainer+"\", or its only one), pinned to the digest the node pulled, found through POD_NAMESPACE/POD_NAME (else the service account's namespace and HOSTNAME) and get on pods; required outside a pod")
	f.StringVar(&opts.BuildServiceAccount, "build-service-account", "", "service account of the payload creation jobs; it must be allowed to read releasepayloads")
	f.StringVar(&opts.ReleaseLog.Namespace, "log-namespace", "", "namespace of the ReleaseLog objects; default: --namespace, else "+releaselog.DefaultNamespace)
	f.DurationVar(&opts.ReleaseLog.TTL, "log-ttl", releaselog.DefaultTTL, "how long release log days are kept before they are deleted")
	f.IntVar(&opts.ReleaseLog.MaxEntriesPerDay, "log-max-entries", releaselog.DefaultMaxEntriesPerDay, "most entries a release log day holds (at most 10000); verdicts beyond it get a ReleaseLogFull event instead")
	logFlags := flag.NewFlagSet("", flag.ContinueOnError)
	zapOpts.BindFlags(logFlags)
	f.AddGoFlagSet(logFlags)
	return cmd
}

// resolveBuildImage returns flag, or the image of the pod the controller runs in, read live
// with cfg (the manager's cache does not hold it).
func resolveBuildImage(ctx context.Context, cfg *rest.Config, flag string) (string, error) {
	if flag != "" {
		return flag, nil
	}
	c, err := client.New(cfg, client.Options{Scheme: manager.NewScheme()})
	if err != nil {
		return "", err
	}
	return manager.ResolveBuildImage(ctx, c, flag)
}
