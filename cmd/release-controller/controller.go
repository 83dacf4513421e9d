package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/release-controller/release-controller/internal/audit"
	"github.com/release-controller/release-controller/internal/changelog"
	"github.com/release-controller/release-controller/internal/jira"
	"github.com/release-controller/release-controller/internal/kubeclient"
	"github.com/release-controller/release-controller/internal/manager"
	"github.com/release-controller/release-controller/internal/payload"
	"github.com/release-controller/release-controller/internal/pipeline"
	"github.com/release-controller/release-controller/internal/releaselog"
	signstore "github.com/release-controller/release-controller/internal/signing/store"
	"github.com/release-controller/release-controller/internal/stream"
	"github.com/release-controller/release-controller/internal/verify"
)

func newControllerCommand() *cobra.Command {
	var (
		kube kubeclient.Options
		opts = manager.Options{
			JobEventDelay: payload.DefaultJobEventDelay, PayloadWorkers: payload.DefaultWorkers, PipelineWorkers: pipeline.DefaultWorkers,
			ImportInterval: stream.DefaultImportInterval, RetryBackoff: verify.DefaultBackoff,
		}
		zapOpts = zap.Options{}
		signer  signerFlags
		clFlags changelogFlags
		logKey  string
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
			if opts.Audit, err = signer.options(ctx); err != nil {
				return err
			}
			if opts.ReleaseLog.SealKey, err = releaseLogKey(ctx, cfg, logKey); err != nil {
				return err
			}
			if opts.Audit.Store != nil {
				defer opts.Audit.Store.Close()
			}
			mgr, err := manager.New(cfg, opts)
			if err != nil {
				return err
			}
			// Jira reads issue keys from changelogs; the clones go to a folder of this
			// process unless one is given.
			clDir := clFlags.cacheDir
			if clDir == "" {
				if clDir, err = os.MkdirTemp("", "release-controller-changelog-"); err != nil {
					return err
				}
				defer os.RemoveAll(clDir)
			}
			if opts.Jira.ChangeLogs, err = changelog.Setup(ctx, mgr.GetAPIReader(), clFlags.config(clDir)); err != nil {
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
	f.StringVar(&opts.PprofAddr, "pprof-bind-address", "", "address of Go's /debug/pprof/ profiles (CPU, heap, goroutines), e.g. localhost:6060; default: off")
	f.BoolVar(&opts.LeaderElection, "leader-elect", true, "elect a leader so that only one replica reconciles")
	f.StringVar(&opts.LeaderElectionNamespace, "leader-election-namespace", "", "namespace of the leader election lease; default: the pod's namespace, or \"default\" outside a cluster")
	f.StringVar(&opts.Namespace, "namespace", "", "only watch this namespace, or these namespaces separated by commas; default: all namespaces")
	f.StringSliceVar(&opts.ProwJobNamespaces, "prowjob-namespace", nil, "namespaces, besides a stream's own, where its verifications may create ProwJobs (their prowJob.namespace); a ProwJob bound elsewhere fails its run. With --namespace, their ProwJobs are watched too")
	f.DurationVar(&opts.JobEventDelay, "job-event-delay", opts.JobEventDelay, "reconcile a payload this long after a job event: a verdict is written then, the rest of its status once its jobs have been quiet 5 times this (at most 50 times this after the first change), so jobs changing together are written at once")
	f.IntVar(&opts.PayloadWorkers, "payload-workers", opts.PayloadWorkers, "how many payloads are reconciled at once")
	f.IntVar(&opts.PipelineWorkers, "pipeline-workers", opts.PipelineWorkers, "how many pipelines are reconciled at once (each mostly waits for the API servers of its targets' clusters)")
	addTenancyFlags(f, &opts.DefaultServiceAccount, &opts.InsecureKubeconfigExec)
	f.DurationVar(&opts.ImportInterval, "import-interval", opts.ImportInterval, "how often components followed by tag are resolved again")
	f.DurationVar(&opts.RetryBackoff.Base, "retry-backoff", opts.RetryBackoff.Base, "wait before retrying a failed verification run; doubles with each further failure")
	f.DurationVar(&opts.RetryBackoff.Cap, "retry-backoff-max", opts.RetryBackoff.Cap, "longest wait before retrying a failed verification run")
	f.StringVar(&opts.BuildImage, "build-image", "", "image of the payload creation jobs (runs release-controller payload build); default in a pod: the pod's own image (its container \""+manager.ControllerContainer+"\", or its only one), pinned to the digest the node pulled, found through POD_NAMESPACE/POD_NAME (else the service account's namespace and HOSTNAME) and get on pods; required outside a pod")
	f.StringVar(&opts.BuildServiceAccount, "build-service-account", "", "service account of the payload creation jobs; it must be allowed to read releasepayloads")
	f.StringVar(&opts.RegistryAuthSecret, "registry-auth-secret", "", "name of a kubernetes.io/dockerconfigjson Secret, in each stream's namespace, that the creation and verification Jobs pull their images with (imagePullSecrets) and find as $DOCKER_CONFIG/config.json, with its optional ca.crt in $SSL_CERT_DIR: the creation Jobs push payloads with it; default: none")
	f.StringVar(&opts.ReleaseLog.Namespace, "log-namespace", "", "namespace of the ReleaseLog objects; default: --namespace, else "+releaselog.DefaultNamespace)
	f.DurationVar(&opts.ReleaseLog.TTL, "log-ttl", releaselog.DefaultTTL, "how long release log days are kept before they are deleted")
	f.IntVar(&opts.ReleaseLog.MaxEntriesPerDay, "log-max-entries", releaselog.DefaultMaxEntriesPerDay, "most entries a release log day holds (at most 10000); verdicts beyond it get a ReleaseLogFull event instead")
	addLogKeyFlag(f, &logKey)
	signer.addFlags(f)
	f.StringVar(&opts.Jira.WebURL, "web-url", "", "base URL of the release pages (the api server's), e.g. https://releases.example.com: the comments Jira gets link a payload's page under it; needed by streams with spec.jira")
	f.DurationVar(&opts.Jira.MaxAge, "jira-max-age", jira.DefaultMaxAge, "leave the Jira issues of payloads accepted longer ago alone, so that configuring Jira on a stream does not comment on its whole history")
	clFlags.addFlags(f, "a new temporary folder, deleted at exit")
	logFlags := flag.NewFlagSet("", flag.ContinueOnError)
	zapOpts.BindFlags(logFlags)
	f.AddGoFlagSet(logFlags)
	return cmd
}

// addTenancyFlags adds the flags of what the controllers may do on a tenant's behalf (the
// controller and dev commands).
func addTenancyFlags(f *pflag.FlagSet, defaultServiceAccount *string, insecureExec *bool) {
	f.StringVar(defaultServiceAccount, "default-service-account", "default", "ServiceAccount of an object's namespace the controller acts as (impersonates) when the object names none: a Pipeline without spec.serviceAccountName writes its local targets and reads its kubeconfig Secrets with that account's rights; empty: with the controller's own (single-tenant installs only)")
	f.BoolVar(insecureExec, "insecure-kubeconfig-exec", false, "let kubeconfigs from Secrets (pipeline targets' clusterRef, verification and creation clusters) run exec and auth-provider plugins and name files (tokenFile, certificate and key paths) inside the controller; off: such a kubeconfig is refused with a condition naming the field")
}

// signerFlags configure the audit and signing of accepted payloads.
type signerFlags struct {
	store, keySecret string
	burst            int
	interval         time.Duration
	// The Sigstore key: a Secret, or a KMS URI.
	sigstoreKeySecret, sigstoreKMSKey string
}

func (s *signerFlags) addFlags(f *pflag.FlagSet) {
	f.StringVar(&s.store, "signature-store", "", "where audit records and signatures go, a gocloud.dev blob URL: file:///path, s3://bucket?region=..., gs://bucket, azblob://container (prefix=dir/ keeps them in a folder); empty: audit records are not kept and nothing is signed")
	f.StringVar(&s.keySecret, "signing-key-secret", "", "NAMESPACE/NAME (or NAME, in the controller's namespace) of the Secret whose "+audit.SecretKeyPrivate+" is the armored OpenPGP key that signs audited payloads, with an optional "+audit.SecretKeyPassphrase+" and "+audit.SecretKeyPublic+" (more public keys to publish, such as retired ones); needs --signature-store")
	f.StringVar(&s.sigstoreKeySecret, "sigstore-key-secret", "", "NAMESPACE/NAME (or NAME, in the controller's namespace) of the Secret whose "+audit.SecretKeyCosign+" is the PEM private key (as cosign generate-key-pair writes it, with an optional "+audit.SecretKeyCosignPassword+") that attaches Sigstore signatures and signed in-toto attestations to each audited payload's image in its registry (the .sig/.att tags and OCI referrers cosign, Kyverno and policy-controller verify); independent of --signing-key-secret; its public key is published as cosign.pub in --signature-store, when set")
	f.StringVar(&s.sigstoreKMSKey, "sigstore-kms-key", "", "URI of a KMS key, <scheme>://<key>, that attaches the Sigstore signatures instead of --sigstore-key-secret's: no cloud KMS is linked into this binary, so the scheme is served by sigstore's KMS plugin program sigstore-kms-<scheme> on the controller's PATH (the sigstore libraries' KMS plugin protocol)")
	f.IntVar(&s.burst, "audit-burst", audit.DefaultBurst, "audit at most this many accepted payloads per --audit-interval")
	f.DurationVar(&s.interval, "audit-interval", audit.DefaultInterval, "see --audit-burst")
}

// options checks the flags and opens the store.
func (s *signerFlags) options(ctx context.Context) (audit.Options, error) {
	opts := audit.Options{Burst: s.burst, Interval: s.interval}
	if s.burst < 1 || s.interval <= 0 {
		return opts, fmt.Errorf("--audit-burst (%d) must be at least 1 and --audit-interval (%s) positive", s.burst, s.interval)
	}
	if s.keySecret != "" {
		if s.store == "" {
			return opts, errors.New("--signing-key-secret needs --signature-store: signatures have to be stored somewhere")
		}
		var err error
		if opts.KeySecret, err = secretRef("--signing-key-secret", s.keySecret); err != nil {
			return opts, err
		}
	}
	switch {
	case s.sigstoreKeySecret != "" && s.sigstoreKMSKey != "":
		return opts, errors.New("--sigstore-key-secret and --sigstore-kms-key both name a Sigstore key: give one")
	case s.sigstoreKeySecret != "":
		var err error
		if opts.SigstoreKeySecret, err = secretRef("--sigstore-key-secret", s.sigstoreKeySecret); err != nil {
			return opts, err
		}
	case s.sigstoreKMSKey != "":
		// Checked when the key is first loaded, with the KMS's answer in the condition.
		opts.SigstoreKMSKey = s.sigstoreKMSKey
	}
	if s.store != "" {
		store, err := signstore.Open(ctx, s.store)
		if err != nil {
			return opts, err
		}
		opts.Store = store
	}
	return opts, nil
}

// secretRef reads flag's value, NAMESPACE/NAME, or NAME in the pod's namespace.
func secretRef(flag, value string) (types.NamespacedName, error) {
	namespace, name, found := strings.Cut(value, "/")
	if !found {
		namespace, name = "", value
		if pod, inPod := manager.OwnPod(); inPod {
			namespace = pod.Namespace
		}
	}
	if errs := validation.IsDNS1123Subdomain(name); name == "" || len(errs) > 0 || namespace == "" || len(validation.IsDNS1123Label(namespace)) > 0 {
		return types.NamespacedName{}, fmt.Errorf("%s %q: want NAMESPACE/NAME (NAME alone only in a pod)", flag, value)
	}
	return types.NamespacedName{Namespace: namespace, Name: name}, nil
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
