//go:build !unit

package policies

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/release-controller/release-controller/internal/testenv"
)

// The verifiers whose CRDs the policies are checked against, and where each module keeps
// the CRD. Their Go modules are not dependencies: `go mod download` fetches them (through
// the module proxy, as any module) into the module cache.
var crdModules = []struct{ module, crd string }{
	{"github.com/kyverno/kyverno@v1.19.1", "config/crds/kyverno/kyverno.io_clusterpolicies.yaml"},
	{"github.com/sigstore/policy-controller@v0.13.1", "config/300-clusterimagepolicy.yaml"},
}

var (
	cfg   *rest.Config
	admin client.Client
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	root, err := testenv.ModuleRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	assets, err := testenv.AssetsDir(root)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	crds, err := downloadCRDs()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctrl.SetLogger(logr.Discard())
	env := &envtest.Environment{
		BinaryAssetsDirectory: assets,
		CRDInstallOptions:     envtest.CRDInstallOptions{Paths: crds, ErrorIfPathMissing: true},
	}
	if cfg, err = env.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "starting the test API server from %s: %v\n", assets, err)
		return 1
	}
	defer func() {
		if err := env.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stopping the test API server:", err)
		}
	}()
	if admin, err = client.New(cfg, client.Options{}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

// downloadCRDs fetches the verifiers' modules with `go mod download -json` (outside this
// module, so that its go.mod and go.sum stay as they are) and returns their CRD files.
func downloadCRDs() ([]string, error) {
	args := []string{"mod", "download", "-json"}
	for _, c := range crdModules {
		args = append(args, c.module)
	}
	cmd := exec.Command("go", args...)
	cmd.Dir = os.TempDir()
	cmd.Env = append(os.Environ(), "GOFLAGS=")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go %v: %w\n%s%s", args, err, out, stderr.Bytes())
	}
	dirs := map[string]string{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var mod struct{ Path, Version, Dir, Error string }
		if err := dec.Decode(&mod); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, fmt.Errorf("reading go mod download's output: %w", err)
		}
		if mod.Error != "" {
			return nil, fmt.Errorf("downloading %s@%s: %s", mod.Path, mod.Version, mod.Error)
		}
		dirs[mod.Path+"@"+mod.Version] = mod.Dir
	}
	var files []string
	for _, c := range crdModules {
		dir, ok := dirs[c.module]
		if !ok || dir == "" {
			return nil, fmt.Errorf("go mod download did not fetch %s", c.module)
		}
		files = append(files, filepath.Join(dir, filepath.FromSlash(c.crd)))
	}
	return files, nil
}
