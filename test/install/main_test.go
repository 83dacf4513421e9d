//go:build !unit

// Package install proves that the ways of installing release-controller on a cluster work on a
// real API server: config/default built with kustomize's Go library (what `kubectl apply -k`
// runs) and charts/release-controller rendered with Helm's Go library (what `helm template` and
// `helm install` render) apply cleanly with server-side apply, twice; a Pod made from each
// Deployment's template, and from a payload creation Job's, is admitted by a namespace that
// enforces the restricted Pod Security Standard; and the controller's account may read its own
// Pod, from which it takes the creation Jobs' image.
//
// The API server is envtest's kube-apiserver (PodSecurity admission is on by default) with no
// CRDs installed beforehand: the install brings its own.
package install

import (
	"fmt"
	"os"
	"testing"

	"github.com/go-logr/logr"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/release-controller/release-controller/internal/manager"
	"github.com/release-controller/release-controller/internal/testenv"
)

var (
	// cfg and admin reach the API server as a cluster administrator.
	cfg   *rest.Config
	admin client.Client
	// root is the module's folder, holding config/ and charts/.
	root string
	// tmp holds what the tests build (the binary); removed at the end.
	tmp string
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	var err error
	if tmp, err = os.MkdirTemp("", "release-controller-install-"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() {
		if err := os.RemoveAll(tmp); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
	}()
	if root, err = testenv.ModuleRoot(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	assets, err := testenv.AssetsDir(root)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	// The clients' own logs are not wanted (controller-runtime prints a warning with a stack
	// when no logger is set).
	ctrl.SetLogger(logr.Discard())
	env := &envtest.Environment{BinaryAssetsDirectory: assets}
	if cfg, err = env.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "starting the test API server from %s: %v\n", assets, err)
		return 1
	}
	defer func() {
		if err := env.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stopping the test API server:", err)
		}
	}()
	scheme := manager.NewScheme()
	if err := apiextensionsv1.AddToScheme(scheme); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if admin, err = client.New(cfg, client.Options{Scheme: scheme}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}
