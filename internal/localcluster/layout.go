// Package localcluster runs a one-node Kubernetes cluster made of Kubernetes' own components
// as local processes, the way Kubernetes' local-up-cluster does: etcd, kube-apiserver,
// kube-controller-manager, kube-scheduler, kubelet and kube-proxy at the control plane's
// version, containerd with runc and a CNI bridge from Debian's packages, and a registry with
// TLS and htpasswd authentication that both the node and its pods reach. `make cluster` and
// test/cluster start it; pods, Jobs, Deployments and garbage collection run for real.
//
// Nothing leaves the machine: every component listens on 127.0.0.1 where it has a flag; the
// API server and the registry listen on the bridge's own address, which exists only here; the
// Service range is routed to the bridge; and a FORWARD rule drops whatever a pod sends
// anywhere but the bridge. No image is pulled from the internet: the sandbox ("pause") image
// is built from hack/cluster/pause and imported into containerd.
//
// The ports are fixed, so there is one cluster per machine. Up records what it changes on the
// host (sysctls, folders at fixed paths) in a machine-wide state file before changing it, and
// first removes what an earlier cluster of its own left behind, whichever folder that one was
// in; Down stops every process and removes every mount, cgroup, interface and iptables rule the
// cluster made, and restores the sysctls.
package localcluster

import (
	"net"
	"path/filepath"
	"strconv"
)

// The cluster's network, on this machine only.
const (
	// Bridge is the CNI bridge every pod is attached to.
	Bridge = "rcc0"
	// PodCIDR is the bridge's subnet: the pods' addresses.
	PodCIDR = "10.213.0.0/24"
	// Gateway is the bridge's own address. The API server and the registry listen on it,
	// since pods cannot reach the host's 127.0.0.1 and Endpoints may not be loopback.
	Gateway = "10.213.0.1"
	// ServiceCIDR is the Service range, routed to the bridge so that nothing sent to a
	// Service address leaves the machine.
	ServiceCIDR = "10.213.1.0/24"
	// KubernetesServiceIP is the first address of ServiceCIDR: the Service "kubernetes".
	KubernetesServiceIP = "10.213.1.1"
	// NodeName is the node's name and address: the kubelet serves on 127.0.0.1, where the
	// API server reaches it for logs, exec and port-forward.
	NodeName = "127.0.0.1"
)

// Fixed ports. The Kubernetes components keep their usual ports; etcd is moved off 2379 so
// that an etcd of someone else's does not collide.
const (
	APIServerPort      = 6443
	RegistryPort       = 5443
	EtcdPort           = 23790
	EtcdPeerPort       = 23800
	KubeletPort        = 10250
	KubeletHealthzPort = 10248
	ControllerPort     = 10257
	SchedulerPort      = 10259
	ProxyHealthzPort   = 10256
	ProxyMetricsPort   = 10249
)

// CgroupRoot is the kubelet's cgroupRoot: every pod's cgroup is below it, in every hierarchy.
const CgroupRoot = "release-controller-cluster"

// SandboxImage is the name the pause image is imported under.
const SandboxImage = "localhost/release-controller-cluster/pause:1"

// ContainerdNamespace is the containerd namespace of the CRI plugin.
const ContainerdNamespace = "k8s.io"

// ports lists every port the cluster listens on, with the address, for the check that they
// are free before it starts.
func ports() map[string]string {
	return map[string]string{
		"kube-apiserver":          hostPort(Gateway, APIServerPort),
		"registry":                hostPort(Gateway, RegistryPort),
		"etcd":                    hostPort("127.0.0.1", EtcdPort),
		"etcd (peers)":            hostPort("127.0.0.1", EtcdPeerPort),
		"kubelet":                 hostPort("127.0.0.1", KubeletPort),
		"kubelet (healthz)":       hostPort("127.0.0.1", KubeletHealthzPort),
		"kube-controller-manager": hostPort("127.0.0.1", ControllerPort),
		"kube-scheduler":          hostPort("127.0.0.1", SchedulerPort),
		"kube-proxy (healthz)":    hostPort("127.0.0.1", ProxyHealthzPort),
		"kube-proxy (metrics)":    hostPort("127.0.0.1", ProxyMetricsPort),
	}
}

// Paths are the files of a cluster in its folder.
type Paths struct {
	Dir string
}

func (p Paths) join(elem ...string) string { return filepath.Join(append([]string{p.Dir}, elem...)...) }

// Kubeconfig is the cluster administrator's kubeconfig (system:masters).
func (p Paths) Kubeconfig() string { return p.join("kubeconfig") }

// PKI holds the certificate authority, every certificate and the service-account keys.
func (p Paths) PKI() string { return p.join("pki") }

// CACert is the cluster's certificate authority; it also signed the registry's certificate.
func (p Paths) CACert() string { return p.join("pki", "ca.crt") }

// TrustDir holds only ca.crt: SSL_CERT_DIR for programs on this machine that talk to the
// registry (Go and OpenSSL read every certificate in it, besides the system's).
func (p Paths) TrustDir() string { return p.join("trust") }

// DockerConfigDir holds config.json with the registry's credentials: DOCKER_CONFIG for
// crane, go-containerregistry and `make image`.
func (p Paths) DockerConfigDir() string { return p.join("docker") }

// RegistryData holds the registry's images.
func (p Paths) RegistryData() string { return p.join("registry", "data") }

// Htpasswd is the registry's htpasswd file.
func (p Paths) Htpasswd() string { return p.join("registry", "htpasswd") }

// Logs holds one log file per component.
func (p Paths) Logs() string { return p.join("logs") }

// Log is the log file of component.
func (p Paths) Log(component string) string { return p.join("logs", component+".log") }

// ContainerdSocket is containerd's gRPC socket.
func (p Paths) ContainerdSocket() string { return p.join("containerd", "containerd.sock") }

// ContainerdState is containerd's state folder (tasks, sandboxes' shm, network namespaces).
func (p Paths) ContainerdState() string { return p.join("containerd", "state") }

// KubeletRoot is the kubelet's --root-dir (pods' volumes).
func (p Paths) KubeletRoot() string { return p.join("kubelet") }

// Credentials is the registry's user name and password, one per line.
func (p Paths) Credentials() string { return p.join("registry", "credentials") }

func hostPort(host string, port int) string {
	return net.JoinHostPort(host, strconv.Itoa(port))
}
