// Command cluster starts and stops the local one-node cluster of internal/localcluster:
// Kubernetes' own components as local processes, containerd, a CNI bridge and a registry with
// TLS and htpasswd. `make cluster` and `make cluster-down` run it, and so does test/cluster.
//
//	cluster up --dir .cluster --kube-bin bin/k8s/1.37.1-linux-amd64 --pause bin/pause
//	cluster down
//	cluster status                      (the components and their memory)
//	cluster registry --dir .cluster     (the registry in the foreground; up starts it)
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/release-controller/release-controller/internal/devenv/registry"
	"github.com/release-controller/release-controller/internal/localcluster"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "cluster:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, out io.Writer) error {
	if len(args) == 0 {
		return errors.New("usage: cluster up|down|status|registry [flags]")
	}
	fs := flag.NewFlagSet("cluster "+args[0], flag.ContinueOnError)
	dir := fs.String("dir", ".cluster", "the cluster's folder")
	kubeBin := fs.String("kube-bin", "", "folder of etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kubelet, kube-proxy and kubectl")
	pause := fs.String("pause", "", "the static pause binary (hack/cluster/pause)")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	switch args[0] {
	case "up":
		self, err := os.Executable()
		if err != nil {
			return err
		}
		err = localcluster.Up(ctx, localcluster.Options{
			Dir: *dir, KubeBin: *kubeBin, Pause: *pause, Log: out,
			Registry: []string{self, "registry"},
		})
		if err != nil {
			return err
		}
		abs, _ := filepath.Abs(*dir)
		printUsage(out, localcluster.Paths{Dir: abs}, *kubeBin)
		return nil
	case "down":
		return localcluster.Down(out)
	case "status":
		return localcluster.PrintStatus(out)
	case "registry":
		return serveRegistry(ctx, localcluster.Paths{Dir: *dir})
	default:
		return fmt.Errorf("unknown command %q: up, down, status or registry", args[0])
	}
}

// serveRegistry serves the cluster's registry until ctx ends.
func serveRegistry(ctx context.Context, p localcluster.Paths) error {
	srv, err := registry.Start(ctx, registry.Options{
		Dir:         p.RegistryData(),
		Addr:        localcluster.RegistryHost(),
		Log:         os.Stderr,
		TLSCertFile: filepath.Join(p.PKI(), "registry.crt"),
		TLSKeyFile:  filepath.Join(p.PKI(), "registry.key"),
		Htpasswd:    p.Htpasswd(),
	})
	if err != nil {
		return err
	}
	<-ctx.Done()
	return srv.Close()
}

func printUsage(out io.Writer, p localcluster.Paths, kubeBin string) {
	fmt.Fprintf(out, `
The cluster is up. Use it with:

  export KUBECONFIG=%s
  %s get nodes

The registry https://%s needs these for go-containerregistry, crane and make image:

  export DOCKER_CONFIG=%s SSL_CERT_DIR=%s

Its components and their memory: make cluster-status. Stop it with make cluster-down.
`, p.Kubeconfig(), filepath.Join(kubeBin, "kubectl"), localcluster.RegistryHost(), p.DockerConfigDir(), p.TrustDir())
}
