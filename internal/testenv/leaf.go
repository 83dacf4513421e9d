package testenv

import (
	"fmt"
	"os"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/release-controller/release-controller/internal/manager"
)

// Leaf is a second API server without the project's CRDs: a cluster the controller reaches
// through a kubeconfig Secret (a pipeline's target, a verification's build farm). It keeps its
// certificates in a folder of its own, so that it can be stopped and started again behind the
// same address and CA (the tests of an unreachable cluster).
type Leaf struct {
	Config *rest.Config
	Client client.Client
	// Kubeconfig is an administrator's kubeconfig of the leaf, for the Secret.
	Kubeconfig []byte
	env        *envtest.Environment
	certDir    string
}

// StartLeaf starts a leaf API server.
func StartLeaf() (*Leaf, error) {
	root, err := ModuleRoot()
	if err != nil {
		return nil, err
	}
	assets, err := AssetsDir(root)
	if err != nil {
		return nil, err
	}
	certDir, err := os.MkdirTemp("", "leaf-certs-")
	if err != nil {
		return nil, err
	}
	l := &Leaf{certDir: certDir, env: &envtest.Environment{BinaryAssetsDirectory: assets, ControlPlaneStopTimeout: 2 * time.Minute}}
	l.env.ControlPlane.GetAPIServer().CertDir = certDir
	// Stopping with watches open (the controller's informers) waits for them to drain.
	l.env.ControlPlane.GetAPIServer().StopTimeout = 2 * time.Minute
	if l.Config, err = l.env.Start(); err != nil {
		_ = os.RemoveAll(certDir)
		return nil, fmt.Errorf("starting the leaf API server (make control-plane builds it): %w", err)
	}
	if l.Client, err = client.New(l.Config, client.Options{Scheme: manager.NewScheme()}); err == nil {
		l.Kubeconfig, err = clientcmd.Write(clientcmdapi.Config{
			Clusters:       map[string]*clientcmdapi.Cluster{"leaf": {Server: l.Config.Host, CertificateAuthorityData: l.Config.CAData}},
			AuthInfos:      map[string]*clientcmdapi.AuthInfo{"admin": {ClientCertificateData: l.Config.CertData, ClientKeyData: l.Config.KeyData}},
			Contexts:       map[string]*clientcmdapi.Context{"leaf": {Cluster: "leaf", AuthInfo: "admin"}},
			CurrentContext: "leaf",
		})
	}
	if err != nil {
		_ = l.Stop()
		return nil, err
	}
	return l, nil
}

// StopAPIServer stops the leaf's kube-apiserver (etcd keeps running); StartAPIServer starts it
// again behind the same address.
func (l *Leaf) StopAPIServer() error { return l.env.ControlPlane.APIServer.Stop() }

// StartAPIServer starts the leaf's kube-apiserver again after StopAPIServer.
func (l *Leaf) StartAPIServer() error { return l.env.ControlPlane.APIServer.Start() }

// Stop stops the leaf and removes its certificates.
func (l *Leaf) Stop() error {
	err := l.env.Stop()
	_ = os.RemoveAll(l.certDir)
	return err
}
