package pipeline_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/zap/zapcore"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/release-controller/release-controller/internal/manager"
	"github.com/release-controller/release-controller/internal/testenv"
)

// Two real API servers: the management cluster (mgmt: CRDs, pipelines, the controller) and a
// leaf cluster (leaf: only apps), reached through a kubeconfig Secret.
var (
	mgmt       *testenv.Env
	leaf       *envtest.Environment
	leafClient client.Client
	// leafKubeconfig is the leaf's kubeconfig (admin), for the Secret.
	leafKubeconfig []byte
)

func TestMain(m *testing.M) {
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(zapcore.ErrorLevel)))
	code, err := run(m)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(code)
}

func run(m *testing.M) (int, error) {
	var err error
	if mgmt, err = testenv.Start(); err != nil {
		return 0, err
	}
	defer func() { _ = mgmt.Stop() }()

	// The leaf keeps its certificates in a folder of its own, so that it can be stopped and
	// started again behind the same address and CA (the test of an unreachable leaf).
	certDir, err := os.MkdirTemp("", "leaf-certs-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(certDir)
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		root, _ := filepath.Abs("../..")
		assets = filepath.Join(root, "bin", "k8s", testenv.KubeVersion+"-linux-amd64")
	}
	leaf = &envtest.Environment{BinaryAssetsDirectory: assets, ControlPlaneStopTimeout: 2 * time.Minute}
	leaf.ControlPlane.GetAPIServer().CertDir = certDir
	// Stopping with watches open (the controller's informers) waits for them to drain.
	leaf.ControlPlane.GetAPIServer().StopTimeout = 2 * time.Minute
	cfg, err := leaf.Start()
	if err != nil {
		return 0, fmt.Errorf("starting the leaf API server (make control-plane builds it): %w", err)
	}
	defer func() { _ = leaf.Stop() }()
	if leafClient, err = client.New(cfg, client.Options{Scheme: manager.NewScheme()}); err != nil {
		return 0, err
	}
	if leafKubeconfig, err = kubeconfig(cfg); err != nil {
		return 0, err
	}
	return m.Run(), nil
}

func kubeconfig(cfg *rest.Config) ([]byte, error) {
	return clientcmd.Write(clientcmdapi.Config{
		Clusters:       map[string]*clientcmdapi.Cluster{"leaf": {Server: cfg.Host, CertificateAuthorityData: cfg.CAData}},
		AuthInfos:      map[string]*clientcmdapi.AuthInfo{"admin": {ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData}},
		Contexts:       map[string]*clientcmdapi.Context{"leaf": {Cluster: "leaf", AuthInfo: "admin"}},
		CurrentContext: "leaf",
	})
}
