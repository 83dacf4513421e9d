package clusters_test

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/buildinput"
	"github.com/release-controller/release-controller/internal/clusters"
	"github.com/release-controller/release-controller/internal/verify"
)

// TestCheckKubeconfig: what a kubeconfig from a Secret may not hold, each named by its field
// and its rule; --insecure-kubeconfig-exec allows plugins and file paths, never a proxy.
func TestCheckKubeconfig(t *testing.T) {
	exec := &clientcmdapi.ExecConfig{Command: "sh", Args: []string{"-c", "touch /tmp/pwned"}, APIVersion: "client.authentication.k8s.io/v1"}
	cases := []struct {
		name      string
		users     map[string]*clientcmdapi.AuthInfo
		clusters  map[string]*clientcmdapi.Cluster
		allowExec bool
		want      []string // the refusals, in order, by their field: rule prefix
	}{
		{name: "data and token only", users: map[string]*clientcmdapi.AuthInfo{"ci": {Token: "t", ClientCertificateData: []byte("c"), ClientKeyData: []byte("k")}},
			clusters: map[string]*clientcmdapi.Cluster{"leaf": {Server: "https://leaf", CertificateAuthorityData: []byte("ca")}}},
		{name: "exec", users: map[string]*clientcmdapi.AuthInfo{"ci": {Exec: exec}},
			want: []string{"users[ci].user.exec: an exec plugin runs a command inside the controller; refused unless the controller runs with --insecure-kubeconfig-exec"}},
		{name: "auth-provider", users: map[string]*clientcmdapi.AuthInfo{"ci": {AuthProvider: &clientcmdapi.AuthProviderConfig{Name: "oidc"}}},
			want: []string{"users[ci].user.auth-provider: an auth provider runs provider code inside the controller; refused unless the controller runs with --insecure-kubeconfig-exec"}},
		{name: "tokenFile", users: map[string]*clientcmdapi.AuthInfo{"ci": {TokenFile: "/var/run/secrets/kubernetes.io/serviceaccount/token"}},
			want: []string{"users[ci].user.tokenFile: a file path reads a file of the controller's; refused unless the controller runs with --insecure-kubeconfig-exec (give the content in the *-data field)"}},
		{name: "certificate and key files", users: map[string]*clientcmdapi.AuthInfo{"ci": {ClientCertificate: "/etc/c.crt", ClientKey: "/etc/c.key"}},
			want: []string{"users[ci].user.client-certificate: a file path", "users[ci].user.client-key: a file path"}},
		{name: "CA file", clusters: map[string]*clientcmdapi.Cluster{"leaf": {Server: "https://leaf", CertificateAuthority: "/etc/ca.crt"}},
			want: []string{"clusters[leaf].cluster.certificate-authority: a file path"}},
		{name: "proxy", clusters: map[string]*clientcmdapi.Cluster{"leaf": {Server: "https://leaf", ProxyURL: "socks5://10.0.0.1:1080"}},
			want: []string{"clusters[leaf].cluster.proxy-url: a proxy sends the controller's connections through a host the Secret chooses; refused"}},
		{name: "every user and cluster, sorted by name", users: map[string]*clientcmdapi.AuthInfo{"b": {Exec: exec}, "a": {TokenFile: "/t"}},
			clusters: map[string]*clientcmdapi.Cluster{"z": {CertificateAuthority: "/ca"}, "y": {ProxyURL: "http://p"}},
			want:     []string{"users[a].user.tokenFile:", "users[b].user.exec:", "clusters[y].cluster.proxy-url:", "clusters[z].cluster.certificate-authority:"}},
		{name: "the flag allows plugins and files", allowExec: true,
			users:    map[string]*clientcmdapi.AuthInfo{"ci": {Exec: exec, AuthProvider: &clientcmdapi.AuthProviderConfig{Name: "oidc"}, TokenFile: "/t", ClientCertificate: "/c", ClientKey: "/k"}},
			clusters: map[string]*clientcmdapi.Cluster{"leaf": {CertificateAuthority: "/ca"}}},
		{name: "the flag never allows a proxy", allowExec: true,
			clusters: map[string]*clientcmdapi.Cluster{"leaf": {ProxyURL: "http://p"}},
			want:     []string{"clusters[leaf].cluster.proxy-url:"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := clientcmdapi.NewConfig()
			for k, v := range tc.users {
				cfg.AuthInfos[k] = v
			}
			for k, v := range tc.clusters {
				cfg.Clusters[k] = v
			}
			got := clusters.CheckKubeconfig(cfg, tc.allowExec)
			if len(got) != len(tc.want) {
				t.Fatalf("got %d refusals %q, want %d %q", len(got), got, len(tc.want), tc.want)
			}
			for i := range got {
				if len(got[i]) < len(tc.want[i]) || got[i][:len(tc.want[i])] != tc.want[i] {
					t.Errorf("refusal %d: got %q, want it to start with %q", i, got[i], tc.want[i])
				}
			}
		})
	}
}

// TestClusterKeysAreOfTheObjectsNamespace: whatever namespace a spec names for a cluster's
// jobs, the kubeconfig Secret is read from the object's own namespace (a pipeline's, a
// payload's), never from another tenant's.
func TestClusterKeysAreOfTheObjectsNamespace(t *testing.T) {
	p := &v1alpha1.ReleasePayload{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "4.1.0"}}
	p.Spec.PayloadCreationConfig.Cluster = &v1alpha1.VerificationCluster{SecretRef: "farm", Namespace: "team-b"}
	v := &v1alpha1.Verification{Name: "e2e", Cluster: &v1alpha1.VerificationCluster{SecretRef: "farm", Namespace: "team-b"}}
	p.Spec.PayloadVerificationConfig.Verifications = []v1alpha1.Verification{*v}

	want := clusters.Key{Namespace: "team-a", Secret: "farm"}
	if key, _, ok := buildinput.ClusterOf(p); !ok || key != want {
		t.Errorf("creation cluster: got %v, want %v", key, want)
	}
	if key, ok := verify.ClusterOf(p, v); !ok || key != want {
		t.Errorf("verification cluster: got %v, want %v", key, want)
	}
	for key := range verify.Clusters(nil, p) {
		if key != want {
			t.Errorf("verification clusters: got %v, want %v", key, want)
		}
	}
}
