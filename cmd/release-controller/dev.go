package main

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/spf13/cobra"
	"go.uber.org/zap/zapcore"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/release-controller/release-controller/internal/devenv"
	"github.com/release-controller/release-controller/internal/devenv/demo"
)

// defaultDataDir is where `dev` keeps its state unless told otherwise.
const defaultDataDir = ".data"

func newDevCommand() *cobra.Command {
	opts := devenv.Options{Demo: true, BuildInterval: 3 * time.Minute}
	var clFlags changelogFlags
	cmd := &cobra.Command{
		Use:   "dev",
		Short: "Run everything on an embedded local environment",
		Long: `Run a real kube-apiserver and etcd, an embedded registry, a local job runner and every
controller on loopback, with a demo stream whose payloads are built, verified, accepted,
rejected and failed. State lives in --data-dir; a second start resumes where the first stopped.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctrl.SetLogger(zap.New(zap.WriteTo(cmd.ErrOrStderr()), zap.Level(zapcore.ErrorLevel)))
			opts.Out = cmd.OutOrStdout()
			opts.ChangeLog = clFlags.config("") // default: in the data dir
			if opts.ControlPlaneBin == "" {
				opts.ControlPlaneBin = defaultControlPlaneBin()
			}
			return devenv.Run(cmd.Context(), opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.DataDir, "data-dir", defaultDataDir, "folder holding all state of the environment")
	f.StringVar(&opts.ControlPlaneBin, "control-plane-bin", "", "folder holding kube-apiserver and etcd; default: $KUBEBUILDER_ASSETS, else k8s/ next to this binary (where make puts them)")
	f.BoolVar(&opts.Demo, "demo", opts.Demo, "create the demo stream and run its simulated build system")
	f.DurationVar(&opts.BuildInterval, "build-interval", opts.BuildInterval, "how often the demo's build system publishes a component build")
	f.StringVar(&opts.Listen, "listen", "127.0.0.1:8080", "address of the web UI, the Connect API and MCP")
	opts.Client.AddRateFlags(f)
	clFlags.addFlags(f, "<data-dir>/"+devenv.ChangeLogCacheDir)
	f.Lookup("git-source-allow").Usage += "; the demo's repositories (file://<data-dir>/git/) are always allowed"
	f.StringVar(&opts.MetricsAddr, "metrics-bind-address", "", "address serving Prometheus metrics (the controllers', and the Go runtime's: memory, goroutines) over plain HTTP, e.g. 127.0.0.1:8081; empty: none")
	addTenancyFlags(f, &opts.DefaultServiceAccount, &opts.InsecureKubeconfigExec)
	f.StringVar(&opts.ArtifactsURL, "artifacts-url", "", "base URL of the payloads' downloads (a payload's download link is <url>/<tag>); empty: no download links")
	cmd.AddCommand(newDevBumpCommand(), newDevCheckCommand())
	return cmd
}

// defaultControlPlaneBin is $KUBEBUILDER_ASSETS, else the folder `make control-plane` fills
// next to the binary built by `make build` (bin/release-controller, bin/k8s/...).
func defaultControlPlaneBin() string {
	if dir := os.Getenv("KUBEBUILDER_ASSETS"); dir != "" {
		return dir
	}
	exe, err := os.Executable()
	if err != nil {
		return ""
	}
	return filepath.Join(filepath.Dir(exe), "k8s", "1.37.1-"+runtime.GOOS+"-"+runtime.GOARCH)
}

func newDevBumpCommand() *cobra.Command {
	var dataDir, breakage string
	cmd := &cobra.Command{
		Use:   "bump [COMPONENT]",
		Short: "Publish a new build of a demo component now (a random one without COMPONENT)",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			registryAddr, err := devenv.ReadRegistryAddr(dataDir)
			if err != nil {
				return err
			}
			component := demo.Components[rand.IntN(len(demo.Components))]
			if len(args) == 1 {
				component = args[0]
			}
			var kind demo.Breakage
			switch breakage {
			case "":
			case "e2e":
				kind = demo.BreakE2E
			case "platform":
				kind = demo.MissingPlatform
			case "smoke":
				kind = demo.BreakSmoke
			default:
				return fmt.Errorf("--break must be e2e, platform or smoke, not %q", breakage)
			}
			build, err := demo.Bump(cmd.Context(), demo.Options{Dir: dataDir, Registry: registryAddr, Namespace: devenv.DemoNamespace}, component, kind)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "published %s: commit %s %q\n  %s\n", build.Component, build.Commit[:12], build.Message, build.Image)
			return nil
		},
	}
	cmd.Flags().StringVar(&dataDir, "data-dir", defaultDataDir, "data folder of the running environment")
	cmd.Flags().StringVar(&breakage, "break", "", "make the build break something: e2e (the e2e check fails), platform (built for one platform only: the stream refuses the component until its next build) or smoke (the stream accepts its payloads, the demo pipeline's smoke check in dev fails and rolls dev back)")
	return cmd
}

func newDevCheckCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "check KIND",
		Short: "A demo verification (e2e, flaky, upgrade, conformance, smoke); run by the demo's verification jobs",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return demo.Check(cmd.Context(), args[0], os.Getenv, cmd.OutOrStdout())
		},
	}
}
