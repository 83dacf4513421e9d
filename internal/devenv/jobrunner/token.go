package jobrunner

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
)

// serviceAccountKubeconfig requests a token of the service account, as a kubelet does for the
// pods that run as it, and writes a kubeconfig holding it into a new temporary folder, which
// the caller removes when the run ends. It returns the kubeconfig's path.
func (r *Runner) serviceAccountKubeconfig(ctx context.Context, account types.NamespacedName) (string, error) {
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: account.Namespace, Name: account.Name}}
	req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		ExpirationSeconds: ptr.To(int64(ServiceAccountTokenTTL.Seconds())),
	}}
	if err := r.client.SubResource("token").Create(ctx, sa, req); err != nil {
		return "", fmt.Errorf("requesting a token of service account %s: %w", account, err)
	}
	server := r.opts.ServiceAccountAPIServer
	ca := server.CAData
	if len(ca) == 0 && server.CAFile != "" {
		data, err := os.ReadFile(server.CAFile)
		if err != nil {
			return "", fmt.Errorf("reading the API server's CA for service account %s: %w", account, err)
		}
		ca = data
	}
	const name = "service-account"
	cfg := clientcmdapi.Config{
		Clusters: map[string]*clientcmdapi.Cluster{name: {
			Server: server.Host, CertificateAuthorityData: ca, TLSServerName: server.ServerName, InsecureSkipTLSVerify: server.Insecure,
		}},
		AuthInfos:      map[string]*clientcmdapi.AuthInfo{name: {Token: req.Status.Token}},
		Contexts:       map[string]*clientcmdapi.Context{name: {Cluster: name, AuthInfo: name, Namespace: account.Namespace}},
		CurrentContext: name,
	}
	dir, err := os.MkdirTemp("", "jobrunner-token-")
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, "kubeconfig")
	if err := clientcmd.WriteToFile(cfg, path); err != nil {
		_ = os.RemoveAll(dir)
		return "", fmt.Errorf("writing the kubeconfig of service account %s: %w", account, err)
	}
	return path, nil
}
