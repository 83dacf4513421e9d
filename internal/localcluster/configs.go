package localcluster

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/crypto/bcrypt"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// RegistryUser is the registry's one user; its password is made at every start.
const RegistryUser = "release-controller"

// RegistryHost is the registry's host:port, the registry part of its image references.
func RegistryHost() string { return hostPort(Gateway, RegistryPort) }

// APIServerURL is the API server's address for every client, on the host and in pods.
func APIServerURL() string { return "https://" + hostPort(Gateway, APIServerPort) }

// writeKubeconfig writes a kubeconfig for the client certificate pki/<user>.crt.
func writeKubeconfig(p Paths, path, user string) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["local"] = &clientcmdapi.Cluster{Server: APIServerURL(), CertificateAuthority: p.CACert()}
	cfg.AuthInfos[user] = &clientcmdapi.AuthInfo{
		ClientCertificate: filepath.Join(p.PKI(), user+".crt"),
		ClientKey:         filepath.Join(p.PKI(), user+".key"),
	}
	cfg.Contexts["local"] = &clientcmdapi.Context{Cluster: "local", AuthInfo: user}
	cfg.CurrentContext = "local"
	return clientcmd.WriteToFile(*cfg, path)
}

// kubeletConfig is the kubelet's configuration file.
func kubeletConfig(p Paths) string {
	return `apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: 127.0.0.1
port: ` + fmt.Sprint(KubeletPort) + `
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: ` + fmt.Sprint(KubeletHealthzPort) + `
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: ` + p.CACert() + `}
authorization: {mode: Webhook}
tlsCertFile: ` + filepath.Join(p.PKI(), "kubelet.crt") + `
tlsPrivateKeyFile: ` + filepath.Join(p.PKI(), "kubelet.key") + `
# This machine's cgroups are v1, which the kubelet refuses since 1.35 unless failCgroupV1
# is false; the cgroupfs driver, since no systemd runs here.
failCgroupV1: false
cgroupDriver: cgroupfs
cgroupRoot: /` + CgroupRoot + `
failSwapOn: false
containerRuntimeEndpoint: unix://` + p.ContainerdSocket() + `
podLogsDir: ` + p.join("logs", "pods") + `
clusterDomain: cluster.local
# No cluster DNS: pods reach the API server and the registry by address, and an empty
# resolv.conf sends no query anywhere.
resolvConf: ` + p.join("resolv.conf") + `
# Images are built and pushed here; none is ever collected or pulled again.
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {memory.available: 100Mi, nodefs.available: 1%, nodefs.inodesFree: 1%, imagefs.available: 1%}
serializeImagePulls: false
registerNode: true
`
}

// kubeProxyConfig is kube-proxy's configuration file.
func kubeProxyConfig(p Paths) string {
	return `apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection: {kubeconfig: ` + p.join("kube-proxy.kubeconfig") + `}
mode: iptables
bindAddress: 127.0.0.1
healthzBindAddress: ` + hostPort("127.0.0.1", ProxyHealthzPort) + `
metricsBindAddress: ` + hostPort("127.0.0.1", ProxyMetricsPort) + `
hostnameOverride: ` + NodeName + `
clusterCIDR: ` + PodCIDR + `
nodePortAddresses: [` + Gateway + `/32]
# Traffic to a Service is masqueraded, so that the reply from a pod on the same bridge comes
# back through the host (no br_netfilter needed).
iptables: {masqueradeAll: true}
# Zero leaves the machine's conntrack settings as they are.
conntrack: {maxPerCore: 0, min: 0, tcpEstablishedTimeout: 0s, tcpCloseWaitTimeout: 0s}
`
}

// containerdConfig is containerd's configuration: everything under the cluster's folder, the
// local sandbox image, and the registry's certificate authority.
func containerdConfig(p Paths) string {
	q := func(s string) string { return fmt.Sprintf("%q", s) }
	return `version = 2
root = ` + q(p.join("containerd", "root")) + `
state = ` + q(p.ContainerdState()) + `

[grpc]
  address = ` + q(p.ContainerdSocket()) + `

[plugins."io.containerd.internal.v1.opt"]
  path = ` + q(p.join("containerd", "opt")) + `

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = ` + q(SandboxImage) + `
  # This VM's capability bounding set lacks CAP_SYS_RESOURCE: without this every sandbox
  # fails with "oom_score_adj: permission denied".
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  enable_unprivileged_ports = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = ` + q(p.join("cni")) + `
  [plugins."io.containerd.grpc.v1.cri".containerd]
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        Root = ` + q(p.join("containerd", "runc")) + `
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".registry]
    config_path = ` + q(p.join("containerd", "certs.d")) + `
`
}

// registryHosts is containerd's hosts.toml for the registry: its certificate authority.
// Credentials are not here: pods pull with imagePullSecrets, as on any cluster.
func registryHosts(p Paths) string {
	return `server = "https://` + RegistryHost() + `"

[host."https://` + RegistryHost() + `"]
  capabilities = ["pull", "resolve"]
  ca = "` + p.CACert() + `"
`
}

// cniConfig attaches every pod to the bridge; host-local keeps its leases in the cluster's
// folder. No masquerading: pods talk to the bridge's addresses only.
func cniConfig(p Paths) string {
	conf := map[string]any{
		"cniVersion": "1.0.0",
		"name":       "release-controller-cluster",
		"plugins": []any{
			map[string]any{
				"type": "bridge", "bridge": Bridge, "isGateway": true, "ipMasq": false, "hairpinMode": true,
				"ipam": map[string]any{
					"type":    "host-local",
					"ranges":  [][]map[string]string{{{"subnet": PodCIDR, "gateway": Gateway}}},
					"routes":  []map[string]string{{"dst": "0.0.0.0/0"}},
					"dataDir": p.join("cni", "ipam"),
				},
			},
		},
	}
	out, err := json.MarshalIndent(conf, "", "  ")
	if err != nil {
		panic(err) // a literal map always marshals
	}
	return string(out)
}

// registryCredentials makes the registry's password and writes the htpasswd file, the
// credentials file, and a Docker config.json for DOCKER_CONFIG.
func registryCredentials(p Paths) error {
	secret := make([]byte, 16)
	if _, err := rand.Read(secret); err != nil {
		return err
	}
	password := hex.EncodeToString(secret)
	hash, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.DefaultCost)
	if err != nil {
		return err
	}
	if err := writeFile(p.Htpasswd(), RegistryUser+":"+string(hash)+"\n", 0o600); err != nil {
		return err
	}
	if err := writeFile(p.Credentials(), RegistryUser+"\n"+password+"\n", 0o600); err != nil {
		return err
	}
	docker, err := DockerConfigJSON(RegistryUser, password)
	if err != nil {
		return err
	}
	return writeFile(filepath.Join(p.DockerConfigDir(), "config.json"), string(docker), 0o600)
}

// DockerConfigJSON is a Docker config.json (the content of a kubernetes.io/dockerconfigjson
// Secret) holding user's credentials for the registry.
func DockerConfigJSON(user, password string) ([]byte, error) {
	auth := base64.StdEncoding.EncodeToString([]byte(user + ":" + password))
	return json.Marshal(map[string]any{"auths": map[string]any{
		RegistryHost(): map[string]string{"username": user, "password": password, "auth": auth},
	}})
}

// ReadCredentials returns the registry's user and password of the cluster in p.
func ReadCredentials(p Paths) (user, password string, err error) {
	data, err := os.ReadFile(p.Credentials())
	if err != nil {
		return "", "", err
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) != 2 {
		return "", "", fmt.Errorf("%s: want two lines, user and password", p.Credentials())
	}
	return lines[0], lines[1], nil
}

func writeFile(path, content string, mode os.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, []byte(content), mode)
}
