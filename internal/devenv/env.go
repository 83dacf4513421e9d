// Package devenv is `release-controller dev`: the embedded local environment. On loopback
// only, it runs a real kube-apiserver and etcd, an embedded registry, the local job runner
// (which plays kubelet for Jobs and ProwJobs), every controller and, by default, a demo whose
// releases flow through every phase. All state lives in one data directory, so a second start
// resumes where the first stopped.
package devenv

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/release-controller/release-controller/config/crd"
	"github.com/release-controller/release-controller/internal/changelog"
	"github.com/release-controller/release-controller/internal/devenv/demo"
	"github.com/release-controller/release-controller/internal/devenv/jobrunner"
	"github.com/release-controller/release-controller/internal/devenv/registry"
	"github.com/release-controller/release-controller/internal/kubeclient"
	"github.com/release-controller/release-controller/internal/manager"
	"github.com/release-controller/release-controller/internal/releaselog"
	"github.com/release-controller/release-controller/internal/server"
	"github.com/release-controller/release-controller/internal/server/assemble"
	"github.com/release-controller/release-controller/internal/shellquote"
	"github.com/release-controller/release-controller/internal/verify"
)

// Options configure the environment.
type Options struct {
	// DataDir holds all state: etcd, the registry, git repositories, job logs, the kubeconfig.
	DataDir string
	// ControlPlaneBin holds kube-apiserver and etcd.
	ControlPlaneBin string
	// Demo creates the demo stream and runs the simulated build system.
	Demo bool
	// BuildInterval is how often the simulated build system publishes a component build.
	BuildInterval time.Duration
	// Executable runs the jobs' `release-controller` commands; default: this binary.
	Executable string
	// Listen is the address of the web UI and the APIs.
	Listen string
	// Out receives progress and the summary.
	Out io.Writer
	// Client sets the controllers' client-side rate limit (none by default), as on a cluster.
	Client kubeclient.Options
	// ChangeLog configures the changelogs of the pages and APIs; the clone cache defaults to
	// ChangeLogCacheDir in the data directory.
	ChangeLog changelog.Config
	// ArtifactsURL is the base of the payloads' download links; empty leaves them out.
	ArtifactsURL string
	// DefaultServiceAccount and InsecureKubeconfigExec are the controller's
	// --default-service-account and --insecure-kubeconfig-exec (manager.Options).
	DefaultServiceAccount  string
	InsecureKubeconfigExec bool
	// MetricsAddr, when set, serves the controllers' Prometheus metrics (and the Go
	// runtime's: memory, goroutines) on that address, as the controller's
	// --metrics-bind-address does; empty serves none.
	MetricsAddr string
}

// DemoNamespace holds the demo's stream and payloads.
const DemoNamespace = "demo"

// Paths inside the data directory.
const (
	KubeconfigFile = "kubeconfig"
	// ApprovalKeyFile holds the shared key that signs the demo pipeline's prod approvals.
	ApprovalKeyFile = "prod-approval-key"
	// ReleaseManagerTokenFile holds a token of the demo's release manager, prod's second
	// approver (demo.ReleaseManagerAccount).
	ReleaseManagerTokenFile = "release-manager-token"
	// ChangeLogCacheDir holds the git clones changelogs are read from.
	ChangeLogCacheDir = "changelog-cache"
	logsDir           = "logs"
)

// Run starts the environment and blocks until ctx is done, then stops everything.
func Run(ctx context.Context, opts Options) (err error) {
	if opts.Out == nil {
		opts.Out = io.Discard
	}
	dataDir, err := filepath.Abs(opts.DataDir)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return fmt.Errorf("creating the data directory: %w", err)
	}
	step := func(format string, args ...any) { fmt.Fprintf(opts.Out, "==> "+format+"\n", args...) }
	unlock, err := lockDataDir(dataDir)
	if err != nil {
		return err
	}
	defer unlock()
	// The lock is ours, so no environment runs on this folder: what its record names and
	// still runs was left by one that was killed.
	stopped, err := stopLeftovers(dataDir)
	if err != nil {
		return err
	}
	if stopped > 0 {
		step("stopped the kube-apiserver and etcd (%d processes) that an earlier start, killed before it could stop them, left running", stopped)
	}
	st, err := loadState(dataDir)
	if err != nil {
		return err
	}
	err = st.checkPorts()
	// The connections of stopped leftovers may hold their ports for a moment after they exit.
	for deadline := time.Now().Add(time.Minute); err != nil && stopped > 0 && time.Now().Before(deadline); err = st.checkPorts() {
		time.Sleep(500 * time.Millisecond)
	}
	if err != nil {
		return err
	}
	kubeconfig := filepath.Join(dataDir, KubeconfigFile)

	step("starting kube-apiserver and etcd (data in %s)", filepath.Join(dataDir, "etcd"))
	cp, err := startControlPlane(opts.ControlPlaneBin, dataDir, st, kubeconfig)
	if err != nil {
		return err
	}
	defer func() {
		step("stopping kube-apiserver and etcd")
		err = errors.Join(err, cp.stop())
	}()

	step("starting the registry on %s (data in %s)", st.RegistryAddr(), filepath.Join(dataDir, "registry"))
	reg, err := registry.Start(ctx, registry.Options{Dir: filepath.Join(dataDir, "registry"), Addr: st.RegistryAddr()})
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, reg.Close()) }()
	// The creation Jobs name a real image: this binary's, in the embedded registry.
	buildImage, err := pushBuildImage(ctx, dataDir, st.RegistryAddr(), opts.Executable, step)
	if err != nil {
		step("creation Jobs name the image %s: packaging this binary failed: %v", fallbackBuildImage, err)
		buildImage = fallbackBuildImage
	}

	// The manager's client reads from its cache, which starts with the manager.
	direct, err := client.New(cp.config, client.Options{Scheme: manager.NewScheme()})
	if err != nil {
		return err
	}
	// The ReleasePayload spec's rules live in an admission policy beside the CRDs.
	if err := crd.InstallPolicies(ctx, direct); err != nil {
		return err
	}
	if err := ensureNamespace(ctx, direct, DemoNamespace); err != nil {
		return err
	}
	logKey, err := releaseLogKey(ctx, direct)
	if err != nil {
		return err
	}
	signingKey, armoredKey, err := signingKey(dataDir)
	if err != nil {
		return err
	}
	step("accepted payloads are audited and signed by key %s into %s", signingKey.ID(), filepath.Join(dataDir, SignaturesDir))
	cosignSigner, cosignPEM, err := cosignKey(dataDir)
	if err != nil {
		return err
	}
	step("and get Sigstore signatures and attestations by key %s in the registry (public key %s)", cosignSigner.KeyID(), filepath.Join(dataDir, CosignPublicKeyFile))
	auditOpts, err := setUpSigning(ctx, direct, dataDir, armoredKey, cosignPEM)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, auditOpts.Store.Close()) }()

	metricsAddr := opts.MetricsAddr
	if metricsAddr == "" {
		metricsAddr = "0"
	}
	mgrOpts := manager.Options{
		MetricsAddr:    metricsAddr,
		ProbeAddr:      "0",
		ImportInterval: 5 * time.Second,
		RetryBackoff:   verify.Backoff{Base: 5 * time.Second, Cap: time.Minute},
		BuildImage:     buildImage,
		// The release log of the environment lives beside the demo.
		ReleaseLog: releaselog.Options{Namespace: DemoNamespace, Types: releaselog.DefaultTypes(), Store: releaselog.NewStore(), SealKey: logKey}.WithDefaults(""),
		Audit:      auditOpts,
		// Pipelines act as a ServiceAccount of their namespace, as on a cluster.
		DefaultServiceAccount:  opts.DefaultServiceAccount,
		InsecureKubeconfigExec: opts.InsecureKubeconfigExec,
	}
	// The controllers talk to the embedded API server as they would to a cluster's.
	opts.Client.ApplyRate(cp.config)
	mgr, err := manager.New(cp.config, mgrOpts)
	if err != nil {
		return err
	}
	if opts.Listen == "" {
		opts.Listen = server.DefaultAddr
	}
	clConfig := opts.ChangeLog
	if clConfig.CacheDir == "" {
		clConfig.CacheDir = filepath.Join(dataDir, ChangeLogCacheDir)
	}
	// The demo's components come from git repositories in the data dir: those, and no other
	// folder of this machine.
	if clConfig.SourceAllow == nil {
		clConfig.SourceAllow = changelog.DefaultSourceAllow
	}
	clConfig.SourceAllow = append(slices.Clip(clConfig.SourceAllow), "file://"+demo.Options{Dir: dataDir}.GitRoot()+"/")
	// Payload images are read from the embedded registry, as the controllers read them.
	clConfig.Registry = mgrOpts.Registry
	changeLogs, err := changelog.Setup(ctx, mgr.GetAPIReader(), clConfig)
	if err != nil {
		return err
	}
	// Streams that configure Jira get their issues verified, linking the pages served here.
	mgrOpts.Jira = manager.JiraOptions{ChangeLogs: changeLogs, WebURL: "http://" + opts.Listen}
	if err := manager.AddControllers(ctx, mgr, mgrOpts); err != nil {
		return err
	}
	srv, err := assemble.New(mgr, assemble.Options{Log: mgrOpts.ReleaseLog, ChangeLogs: changeLogs, ArtifactsURL: opts.ArtifactsURL, Signatures: auditOpts.Store,
		DefaultServiceAccount: opts.DefaultServiceAccount})
	if err != nil {
		return err
	}
	if err := assemble.AddToManager(mgr, srv, opts.Listen); err != nil {
		return err
	}
	runner, err := jobrunner.New(jobrunner.Options{
		Executable: opts.Executable,
		LogDir:     filepath.Join(dataDir, logsDir),
		Env:        []string{"KUBECONFIG=" + kubeconfig, "RELEASE_CONTROLLER_DATA_DIR=" + dataDir},
	})
	if err != nil {
		return err
	}
	if err := runner.SetupWithManager(mgr); err != nil {
		return err
	}

	demoOpts := demo.Options{Dir: dataDir, Registry: st.RegistryAddr(), Namespace: DemoNamespace, CheckImage: buildImage, WebURL: "http://" + opts.Listen}
	if opts.Demo {
		step("setting up the demo: git repositories, component images, the stream %s/nightly with its update channels, and a sample upgrade risk", DemoNamespace)
		if err := demo.Setup(ctx, direct, demoOpts); err != nil {
			return fmt.Errorf("setting up the demo: %w", err)
		}
		step("setting up the pipeline %s/%s: dev, then staging and prod on a remote cluster (this API server, through the kubeconfig Secret %s)", DemoNamespace, demo.PipelineName, demo.RemoteClusterSecret)
		key, err := demo.SetupPipeline(ctx, direct, demoOpts, cp.config)
		if err != nil {
			return fmt.Errorf("setting up the demo pipeline: %w", err)
		}
		if err := os.WriteFile(filepath.Join(dataDir, ApprovalKeyFile), append(key, '\n'), 0o600); err != nil {
			return fmt.Errorf("writing the approval key: %w", err)
		}
		manager, err := demo.ReleaseManagerToken(ctx, direct, demoOpts)
		if err != nil {
			return fmt.Errorf("setting up the demo pipeline: %w", err)
		}
		if err := writeToken(filepath.Join(dataDir, ReleaseManagerTokenFile), manager); err != nil {
			return fmt.Errorf("writing the release manager's token: %w", err)
		}
		// No kube-controller-manager here: the rollout step makes the demo's apps ready.
		if err := (&demo.Rollout{Client: mgr.GetClient()}).SetupWithManager(mgr); err != nil {
			return err
		}
	}
	token, err := logWriterToken(ctx, cp.config, DemoNamespace)
	if err != nil {
		return err
	}
	if err := writeToken(filepath.Join(dataDir, TokenFile), token); err != nil {
		return err
	}
	printSummary(opts.Out, dataDir, kubeconfig, st, opts, token)
	if opts.Demo {
		go demo.RunBuildSystem(ctx, demoOpts, opts.BuildInterval, opts.Out)
	}
	ctrl.LoggerFrom(ctx).Info("environment ready")
	if err := mgr.Start(ctx); err != nil {
		return err
	}
	step("stopping (the next start resumes from %s)", dataDir)
	return nil
}

func printSummary(out io.Writer, dataDir, kubeconfig string, st *state, opts Options, token string) {
	kubectl := "kubectl"
	if path := filepath.Join(opts.ControlPlaneBin, "kubectl"); fileExists(path) {
		kubectl = path // built by make control-plane next to kube-apiserver
	}
	kubectl += " --kubeconfig " + kubeconfig
	fmt.Fprintf(out, `
release-controller dev is running.

  web UI        http://%s/   (release log at /releases, REST at /api/v1, MCP at /mcp)
  kubeconfig    %s
  registry      %s
  job logs      %s
  API server    https://127.0.0.1:%d
  log token     %s  (service account %s/%s, may add to the release log)

Watch the releases:
  %s get releasepayloads -n %s -w
  %s get releasestreams -n %s
  release-controller payload info %s/demo/release:latest
  curl -s http://%s/api/v1/releasestream/%s/latest
  release-controller log list --server http://%s
  release-controller log add --server http://%s --token-file %s --type hotfix --version 1.0.1 --message "patched"

A token for other clients: %s
`, opts.Listen, kubeconfig, st.RegistryAddr(), filepath.Join(dataDir, logsDir), st.APIServerPort,
		filepath.Join(dataDir, TokenFile), DemoNamespace, LogWriterAccount,
		kubectl, DemoNamespace, kubectl, DemoNamespace, st.RegistryAddr(), opts.Listen, demo.StreamName, opts.Listen, opts.Listen, filepath.Join(dataDir, TokenFile), token)
	if opts.Demo {
		fmt.Fprintf(out, `
The demo's build system publishes a component build every %s; publish one now with:
  release-controller dev bump --data-dir %s [COMPONENT] [--break e2e|platform|smoke]
`, opts.BuildInterval, dataDir)
		PrintPipeline(out, kubectl, dataDir, kubeconfig, opts.Listen)
		PrintUpdateService(out, kubeconfig, opts.Listen)
	}
	fmt.Fprintf(out, `
Accepted payloads are audited, then signed into %s (public key at http://%s/signatures/pubkey.asc).
Check a payload's signature as a consumer would:
  release-controller payload verify %s/%s/release:TAG --key %s --store http://%s/signatures
`, filepath.Join(dataDir, SignaturesDir), opts.Listen, st.RegistryAddr(), DemoNamespace, filepath.Join(dataDir, PublicKeyFile), opts.Listen)
	PrintCosign(out, dataDir, opts.Listen)
	fmt.Fprintf(out, "\nCtrl-C stops everything; the next start resumes from %s.\n\n", dataDir)
}

// PrintCosign says how to verify the Sigstore signature and attestations of the newest accepted
// payload with cosign (make builds it as bin/cosign), which reads them from the registry, and
// with this binary. The payload is the stream's latest accepted one, as the REST API names it.
func PrintCosign(out io.Writer, dataDir, listen string) {
	key := shellquote.Quote(filepath.Join(dataDir, CosignPublicKeyFile))
	latest := LatestPullSpecCommand(listen)
	fmt.Fprintf(out, `
They also get a Sigstore signature and signed attestations in the registry (public key %s,
also at http://%s/signatures/cosign.pub). Verify the newest accepted payload with cosign
(make bin/cosign builds it, once):
  bin/cosign verify --key %s --insecure-ignore-tlog=true %s
  bin/cosign verify-attestation --key %s --insecure-ignore-tlog=true --type slsaprovenance1 %s
or with this binary (--format sigstore for the signature):
  release-controller payload verify --format attestation --key %s %s
`, key, listen, key, latest, key, latest, key, latest)
}

// LatestPullSpecCommand is a shell word that becomes the pull spec of the demo stream's newest
// accepted payload, read from the REST API on listen.
func LatestPullSpecCommand(listen string) string {
	return fmt.Sprintf(`"$(curl -s 'http://%s/api/v1/releasestream/%s/latest?format=pullSpec')"`, listen, demo.StreamName)
}

// PrintUpdateService says how to read the demo's update service and declare a risk into it.
func PrintUpdateService(out io.Writer, kubeconfig, listen string) {
	kubeconfig = shellquote.Quote(kubeconfig)
	fmt.Fprintf(out, `
The update service serves the stream's channels to clusters: every accepted payload joins %s,
then %s after %s, then %s after %s more (docs/update-service.md). Read a channel as the
cluster-version operator does:
  curl -s -H 'Accept: application/vnd.redhat.cincinnati.v1+json' 'http://%s/graph?channel=%s'
Declare a risk into a payload from its page's facts (served as a conditional edge; with no
--promql or --always, the upgrades into it are blocked), list the risks, tombstone a payload:
  release-controller risk declare my-risk --payload TAG -n %s --kubeconfig %s --server http://%s --promql 'QUERY'
  release-controller risk list -n %s --kubeconfig %s
  release-controller payload tombstone TAG -n %s --kubeconfig %s --reason "why"
`, demo.ChannelCandidate, demo.ChannelFast, shortDuration(demo.FastDelay), demo.ChannelStable, shortDuration(demo.StableDelay),
		listen, demo.ChannelStable, DemoNamespace, kubeconfig, listen, DemoNamespace, kubeconfig, DemoNamespace, kubeconfig)
}

// shortDuration writes d without its zero seconds: 2m rather than 2m0s.
func shortDuration(d time.Duration) string {
	return strings.TrimSuffix(d.String(), "0s")
}

// PrintPipeline says what the demo pipeline does and prints the commands that approve prod's
// waiting revision under its policy (signed with the approval key in dataDir, then with the
// release manager's token), reject it, and freeze the demo's promotions; kubectl (with its
// --kubeconfig) reads the waiting revision.
func PrintPipeline(out io.Writer, kubectl, dataDir, kubeconfig, listen string) {
	revision := fmt.Sprintf(`$(%s get pipeline -n %s %s -o jsonpath='{.status.environments[2].waitingApproval.revision}')`, kubectl, DemoNamespace, demo.PipelineName)
	prod := fmt.Sprintf("%s/%s prod %s --server http://%s", DemoNamespace, demo.PipelineName, revision, listen)
	key := "--key-file " + shellquote.Quote(filepath.Join(dataDir, ApprovalKeyFile))
	token := "--token-file " + shellquote.Quote(filepath.Join(dataDir, ReleaseManagerTokenFile))
	kubeconfig = shellquote.Quote(kubeconfig)
	fmt.Fprintf(out, `
The pipeline %s/%s promotes every accepted payload into dev, where a smoke check runs against
the rolled-out app: a payload that fails it (dev bump --break smoke) is rolled back and never
promoted further. Staging takes what passed and soaks it %s; prod then waits for %d distinct
approvers (%s get pipeline -n %s %s; http://%s/pipelines/%s/%s shows each step).
Approve prod's waiting revision with the signed key (one machine approver), then as the release
manager %s/%s (RBAC lets it update pipelines/approval):
  release-controller pipeline approve %s %s
  release-controller pipeline approve %s %s
Or reject it for prod, with a reason; it is never promoted there:
  release-controller pipeline reject %s --reason "why" %s
Stop the line: hold every promotion of the demo's pipelines until the freeze ends (docs/pipelines.md#freezes):
  release-controller freeze start incident -n %s --reason "why" --kubeconfig %s
  release-controller freeze end incident -n %s --kubeconfig %s
`, DemoNamespace, demo.PipelineName, shortDuration(demo.StagingSoak), demo.ProdApprovers, kubectl, DemoNamespace, demo.PipelineName,
		listen, DemoNamespace, demo.PipelineName, DemoNamespace, demo.ReleaseManagerAccount, prod, key, prod, token, prod, key,
		DemoNamespace, kubeconfig, DemoNamespace, kubeconfig)
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// ensureNamespace creates namespace unless it exists.
func ensureNamespace(ctx context.Context, c client.Client, namespace string) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}
	if err := c.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s: %w", namespace, err)
	}
	return nil
}
