//go:build !unit

// Package cluster installs release-controller on a real one-node cluster and runs the release
// flow in pods: Kubernetes' own kube-apiserver, kube-controller-manager, kube-scheduler,
// kubelet and kube-proxy, containerd with runc and a CNI bridge, and a registry with TLS and
// htpasswd (internal/localcluster, what `make cluster` starts). The image is the one `make
// image` builds, pushed to that registry; the install is README's (kustomize's `images:`, and
// Helm's chart); the creation Job pushes from a pod, verification Jobs read the payload from
// pods, and the Job, Deployment and garbage collection controllers decide.
//
// One cluster serves the whole package: TestMain starts it and removes it at the end. It needs
// root, containerd, runc, the CNI plugins and iptables (make test installs them) and the node's
// binaries (make node-binaries); where the machine lacks one, the package fails and says which.
package cluster

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/release-controller/release-controller/internal/localcluster"
	"github.com/release-controller/release-controller/internal/manager"
	"github.com/release-controller/release-controller/internal/testenv"
)

var (
	// root is the module's folder; kubeBin holds kubectl and the cluster's binaries.
	root, kubeBin string
	// tmp holds what the tests build (the cluster command, pause).
	tmp string
	// paths are the cluster's files; kubeconfig its administrator's kubeconfig.
	paths localcluster.Paths
	// cfg, admin and clientset reach the cluster's API server as its administrator.
	cfg       *rest.Config
	admin     client.Client
	clientset *kubernetes.Clientset
	// pauseBinary is the static pause program, the tests' smallest workload.
	pauseBinary string
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	fail := func(err error) int {
		fmt.Fprintln(os.Stderr, "test/cluster:", err)
		return 1
	}
	var err error
	if root, err = testenv.ModuleRoot(); err != nil {
		return fail(err)
	}
	if kubeBin, err = testenv.AssetsDir(root); err != nil {
		return fail(err)
	}
	if tmp, err = os.MkdirTemp("", "release-controller-cluster-"); err != nil {
		return fail(err)
	}
	defer os.RemoveAll(tmp)
	tool := filepath.Join(tmp, "cluster")
	pauseBinary = filepath.Join(tmp, "pause")
	for out, pkg := range map[string]string{tool: "./hack/cluster", pauseBinary: "./hack/cluster/pause"} {
		build := exec.Command("go", "build", "-o", out, pkg)
		build.Dir, build.Env = root, append(os.Environ(), "CGO_ENABLED=0")
		if output, err := build.CombinedOutput(); err != nil {
			return fail(fmt.Errorf("go build %s: %w\n%s", pkg, err, output))
		}
	}
	paths = localcluster.Paths{Dir: filepath.Join(root, ".cluster")}
	if err := localcluster.Preflight(localcluster.Options{KubeBin: kubeBin, Pause: pauseBinary}); err != nil {
		return fail(fmt.Errorf("%w\n(make test installs the Debian packages and builds the node's binaries: make cluster-deps node-binaries)", err))
	}

	// Started as `make cluster` starts it; stopped on every path out of here (a crash or go
	// test's timeout leaves it to the next start, and to make test's trap).
	up := exec.Command(tool, "up", "--dir", paths.Dir, "--kube-bin", kubeBin, "--pause", pauseBinary)
	up.Stdout, up.Stderr = os.Stdout, os.Stderr
	start := time.Now()
	if err := up.Run(); err != nil {
		return fail(fmt.Errorf("cluster up: %w", err))
	}
	fmt.Printf("test/cluster: the cluster was up %.1fs after its start\n", time.Since(start).Seconds())
	defer func() {
		down := exec.Command(tool, "down")
		down.Stdout, down.Stderr = os.Stdout, os.Stderr
		if err := down.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "test/cluster: cluster down:", err)
		}
	}()

	ctrl.SetLogger(logr.Discard())
	if cfg, err = clientcmd.BuildConfigFromFlags("", paths.Kubeconfig()); err != nil {
		return fail(err)
	}
	if admin, err = client.New(cfg, client.Options{Scheme: manager.NewScheme()}); err != nil {
		return fail(err)
	}
	if clientset, err = kubernetes.NewForConfig(cfg); err != nil {
		return fail(err)
	}
	return m.Run()
}

// kubectl runs the cluster's kubectl as its administrator and returns its output.
func kubectl(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(kubeBin, "kubectl"), args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+paths.Kubeconfig())
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("kubectl %v: %w\n%s", args, err, out)
	}
	return string(out), nil
}
