package devenv

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/release-controller/release-controller/config/crd"
)

// controlPlane is kube-apiserver and etcd keeping their state in the data directory.
type controlPlane struct {
	env     *envtest.Environment
	config  *rest.Config
	dataDir string
}

// startControlPlane starts etcd and kube-apiserver from binDir on the ports of state, with
// etcd's data in dataDir, installs the CRDs and writes an administrator's kubeconfig.
func startControlPlane(binDir, dataDir string, st *state, kubeconfig string) (*controlPlane, error) {
	for _, bin := range []string{"kube-apiserver", "etcd"} {
		if _, err := os.Stat(filepath.Join(binDir, bin)); err != nil {
			return nil, fmt.Errorf("%s is missing from %s: run `make control-plane` in the release-controller repository, or point --control-plane-bin (or KUBEBUILDER_ASSETS) at a folder holding kube-apiserver and etcd", bin, binDir)
		}
	}
	crds, err := crd.All()
	if err != nil {
		return nil, err
	}
	etcd := &envtest.Etcd{
		DataDir: filepath.Join(dataDir, "etcd"),
		URL:     &url.URL{Scheme: "http", Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(st.EtcdPort))},
	}
	// envtest turns fsync off for speed; this etcd keeps the state of a whole environment.
	etcd.Configure().Set("unsafe-no-fsync", "false")
	etcd.Configure().Set("listen-peer-urls", fmt.Sprintf("http://127.0.0.1:%d", st.EtcdPeerPort))
	etcd.Configure().Set("initial-advertise-peer-urls", fmt.Sprintf("http://127.0.0.1:%d", st.EtcdPeerPort))
	etcd.Configure().Set("initial-cluster", fmt.Sprintf("default=http://127.0.0.1:%d", st.EtcdPeerPort))
	// The API server's certificates are made afresh at every start (envtest cannot reuse
	// them); the kubeconfig is rewritten to match. Only etcd's data needs to persist.
	api := &envtest.APIServer{}
	api.SecureServing.Address, api.SecureServing.Port = "127.0.0.1", strconv.Itoa(st.APIServerPort)
	if err := os.MkdirAll(etcd.DataDir, 0o700); err != nil {
		return nil, err
	}
	// Their own logs go to the data directory, to read when something is off.
	logs, err := openLogs(filepath.Join(dataDir, logsDir), "etcd.log", "kube-apiserver.log")
	if err != nil {
		return nil, err
	}
	etcd.Out, etcd.Err = logs[0], logs[0]
	api.Out, api.Err = logs[1], logs[1]
	env := &envtest.Environment{
		BinaryAssetsDirectory: binDir,
		ControlPlane:          envtest.ControlPlane{Etcd: etcd, APIServer: api},
		CRDInstallOptions:     envtest.CRDInstallOptions{CRDs: crds},
	}
	cfg, err := env.Start()
	if err != nil {
		return nil, fmt.Errorf("starting kube-apiserver and etcd: %w", err)
	}
	cp := &controlPlane{env: env, config: cfg, dataDir: dataDir}
	if err := recordControlPlane(dataDir); err != nil {
		_ = cp.stop()
		return nil, fmt.Errorf("recording the control plane's processes: %w", err)
	}
	user, err := env.AddUser(envtest.User{Name: "admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		_ = cp.stop()
		return nil, err
	}
	data, err := user.KubeConfig()
	if err == nil {
		err = os.WriteFile(kubeconfig, data, 0o600)
	}
	if err != nil {
		_ = cp.stop()
		return nil, fmt.Errorf("writing the kubeconfig: %w", err)
	}
	return cp, nil
}

func (cp *controlPlane) stop() error {
	if err := cp.env.Stop(); err != nil {
		return err
	}
	return forgetControlPlane(cp.dataDir)
}

// openLogs opens (appending) the named files in dir.
func openLogs(dir string, names ...string) ([]*os.File, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	files := make([]*os.File, 0, len(names))
	for _, name := range names {
		f, err := os.OpenFile(filepath.Join(dir, name), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			return nil, err
		}
		files = append(files, f)
	}
	return files, nil
}
