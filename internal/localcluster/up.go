package localcluster

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// Options say where a cluster lives and what it runs.
type Options struct {
	// Dir is the cluster's folder (made when missing; its earlier content is removed).
	Dir string
	// KubeBin holds etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kubelet,
	// kube-proxy and kubectl at the control plane's version.
	KubeBin string
	// Pause is the static pause binary (hack/cluster/pause).
	Pause string
	// Registry is the command that serves the registry in the foreground, given
	// RegistryArgs (`cluster registry --dir DIR`).
	Registry []string
	// Log receives a line per step.
	Log io.Writer
}

// components are the binaries Up starts from KubeBin.
var components = []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubelet", "kube-proxy", "kubectl"}

// hostTools are the programs Up needs on this machine, and the Debian package of each.
var hostTools = map[string]string{
	"containerd": "containerd", "containerd-shim-runc-v2": "containerd", "ctr": "containerd",
	"runc": "runc", "iptables": "iptables", "iptables-save": "iptables", "conntrack": "conntrack", "ip": "iproute2",
}

// Preflight says why this machine cannot run the cluster, or nil.
func Preflight(opts Options) error {
	var problems []string
	if os.Geteuid() != 0 {
		problems = append(problems, "not root: the kubelet, containerd and the CNI bridge need root")
	}
	for tool, pkg := range hostTools {
		if _, err := exec.LookPath(tool); err != nil {
			if _, err := os.Stat(filepath.Join("/usr/sbin", tool)); err != nil {
				problems = append(problems, fmt.Sprintf("%s missing (Debian package %s; make cluster installs it)", tool, pkg))
			}
		}
	}
	for _, plugin := range []string{"bridge", "host-local", "loopback"} {
		if _, err := os.Stat(filepath.Join("/usr/lib/cni", plugin)); err != nil {
			problems = append(problems, fmt.Sprintf("CNI plugin /usr/lib/cni/%s missing (Debian package containernetworking-plugins)", plugin))
		}
	}
	for _, c := range components {
		if _, err := os.Stat(filepath.Join(opts.KubeBin, c)); err != nil {
			problems = append(problems, fmt.Sprintf("%s missing in %s (make cluster builds it)", c, opts.KubeBin))
		}
	}
	if _, err := os.Stat(opts.Pause); err != nil {
		problems = append(problems, fmt.Sprintf("pause binary %s missing", opts.Pause))
	}
	if len(cgroupHierarchies()) == 0 {
		problems = append(problems, "no cgroup hierarchy mounted under /sys/fs/cgroup")
	}
	if len(problems) > 0 {
		return fmt.Errorf("this machine cannot run the local cluster:\n  %s", strings.Join(problems, "\n  "))
	}
	return nil
}

// foreign says what on this machine is in the cluster's way and was not made by a cluster of
// this package (Up has removed its own leftovers before it asks).
func foreign() error {
	var problems []string
	if linkExists(Bridge) {
		problems = append(problems, "network interface "+Bridge+" exists")
	}
	if out, err := output("ip", "-o", "route", "show", "to", "match", Gateway); err == nil {
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			if line != "" && !strings.HasPrefix(line, "default ") {
				problems = append(problems, "a route already covers "+Gateway+": "+line)
			}
		}
	}
	for _, cmd := range []string{"iptables", "ip6tables"} {
		if _, err := exec.LookPath(cmd); err != nil {
			continue
		}
		chains, err := kubeChains(cmd)
		if err != nil {
			problems = append(problems, err.Error())
		}
		for table, names := range chains {
			problems = append(problems, fmt.Sprintf("%s table %s has chains %s (another Kubernetes node on this machine?)", cmd, table, strings.Join(names, ", ")))
		}
	}
	if _, err := os.Stat("/var/lib/kubelet/device-plugins/kubelet.sock"); err == nil {
		problems = append(problems, "/var/lib/kubelet/device-plugins/kubelet.sock exists (another kubelet on this machine?)")
	}
	for _, h := range cgroupHierarchies() {
		if _, err := os.Stat(filepath.Join(h, CgroupRoot)); err == nil {
			problems = append(problems, "cgroup "+filepath.Join(h, CgroupRoot)+" exists")
			break
		}
	}
	for component, addr := range ports() {
		if ln, err := net.Listen("tcp", strings.Replace(addr, Gateway, "127.0.0.1", 1)); err != nil {
			problems = append(problems, fmt.Sprintf("port of %s (%s) is taken: %v", component, addr, err))
		} else {
			_ = ln.Close()
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("refusing to start: this machine has what no cluster of ours made:\n  %s", strings.Join(problems, "\n  "))
	}
	return nil
}

// Up starts the cluster in opts.Dir and returns once the node is Ready and a pod can be
// scheduled. A cluster left by an earlier run (a crash, an interrupted test), whatever its
// folder, is removed first; on failure, Up removes what it started.
func Up(ctx context.Context, opts Options) (err error) {
	start := time.Now()
	say := func(format string, args ...any) {
		fmt.Fprintf(opts.Log, "==> [%5.1fs] %s\n", time.Since(start).Seconds(), fmt.Sprintf(format, args...))
	}
	dir, err := filepath.Abs(opts.Dir)
	if err != nil {
		return err
	}
	opts.Dir = dir
	if err := Preflight(opts); err != nil {
		return err
	}
	prev, err := readState()
	if err != nil {
		return err
	}
	if prev != nil {
		say("removing the cluster an earlier run left in %s (started %s)", prev.Dir, prev.Started.Format(time.RFC3339))
		if err := Down(opts.Log); err != nil {
			return fmt.Errorf("removing the earlier cluster: %w", err)
		}
	}
	if err := foreign(); err != nil {
		return err
	}
	p := Paths{Dir: dir}
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := writeState(newState(dir)); err != nil {
		return fmt.Errorf("recording the host's state: %w", err)
	}
	defer func() {
		if err != nil {
			fmt.Fprintf(opts.Log, "==> start failed; the logs are in %s; removing what was started\n", p.Logs())
			if downErr := Down(opts.Log); downErr != nil {
				err = errors.Join(err, downErr)
			}
		}
	}()

	say("network: bridge %s at %s, pods in %s, Services in %s routed to the bridge, FORWARD from the bridge to elsewhere dropped", Bridge, Gateway, PodCIDR, ServiceCIDR)
	if err := setUpNetwork(); err != nil {
		return err
	}
	if err := makeCgroupRoot(); err != nil {
		return fmt.Errorf("cgroup %s: %w", CgroupRoot, err)
	}
	say("certificates, kubeconfigs and configurations in %s", dir)
	if err := writeFiles(p); err != nil {
		return err
	}
	if err := startControlPlane(ctx, p, opts, say); err != nil {
		return err
	}
	if err := startNode(ctx, p, opts, say); err != nil {
		return err
	}
	say("cluster up: kubeconfig %s, registry %s (user %s, password in %s)", p.Kubeconfig(), RegistryHost(), RegistryUser, p.Credentials())
	return nil
}

// writeFiles writes the PKI, kubeconfigs and every component's configuration.
func writeFiles(p Paths) error {
	if err := writePKI(p.PKI()); err != nil {
		return err
	}
	ca, err := os.ReadFile(p.CACert())
	if err != nil {
		return err
	}
	files := map[string]string{
		filepath.Join(p.TrustDir(), "ca.crt"):                         string(ca),
		p.join("kubelet.yaml"):                                        kubeletConfig(p),
		p.join("kube-proxy.yaml"):                                     kubeProxyConfig(p),
		p.join("containerd", "config.toml"):                           containerdConfig(p),
		p.join("containerd", "certs.d", RegistryHost(), "hosts.toml"): registryHosts(p),
		p.join("cni", "10-release-controller-cluster.conflist"):       cniConfig(p),
		p.join("resolv.conf"):                                         "",
	}
	for path, content := range files {
		if err := writeFile(path, content, 0o644); err != nil {
			return err
		}
	}
	for file, user := range map[string]string{
		p.Kubeconfig(): "admin",
		p.join("kube-controller-manager.kubeconfig"): "kube-controller-manager",
		p.join("kube-scheduler.kubeconfig"):          "kube-scheduler",
		p.join("kube-proxy.kubeconfig"):              "kube-proxy",
		p.join("kubelet.kubeconfig"):                 "kubelet-client",
	} {
		if err := writeKubeconfig(p, file, user); err != nil {
			return err
		}
	}
	return registryCredentials(p)
}

// startControlPlane starts etcd, the registry, kube-apiserver, kube-controller-manager and
// kube-scheduler, each once the one before answers.
func startControlPlane(ctx context.Context, p Paths, opts Options, say func(string, ...any)) error {
	bin := func(name string) string { return filepath.Join(opts.KubeBin, name) }
	pki := func(name string) string { return filepath.Join(p.PKI(), name) }
	etcdURL := "http://" + hostPort("127.0.0.1", EtcdPort)
	peerURL := "http://" + hostPort("127.0.0.1", EtcdPeerPort)

	say("etcd on %s", etcdURL)
	if _, err := startDetached(p.Log("etcd"), bin("etcd"), "--name=local", "--data-dir="+p.join("etcd"),
		"--listen-client-urls="+etcdURL, "--advertise-client-urls="+etcdURL,
		"--listen-peer-urls="+peerURL, "--initial-advertise-peer-urls="+peerURL, "--initial-cluster=local="+peerURL,
		"--listen-metrics-urls=", "--unsafe-no-fsync=true"); err != nil {
		return err
	}
	if err := waitHTTP(ctx, "etcd", p.Log("etcd"), etcdURL+"/health", nil, http.StatusOK); err != nil {
		return err
	}

	say("registry on https://%s (TLS, htpasswd)", RegistryHost())
	if _, err := startDetached(p.Log("registry"), opts.Registry[0], append(opts.Registry[1:], "--dir="+p.Dir)...); err != nil {
		return err
	}
	pool, err := caPool(p)
	if err != nil {
		return err
	}
	if err := waitHTTP(ctx, "registry", p.Log("registry"), "https://"+RegistryHost()+"/v2/", &tls.Config{RootCAs: pool}, http.StatusUnauthorized); err != nil {
		return err
	}

	say("kube-apiserver on %s", APIServerURL())
	if _, err := startDetached(p.Log("kube-apiserver"), bin("kube-apiserver"),
		"--etcd-servers="+etcdURL,
		"--bind-address="+Gateway, "--advertise-address="+Gateway, fmt.Sprintf("--secure-port=%d", APIServerPort),
		"--tls-cert-file="+pki("kube-apiserver.crt"), "--tls-private-key-file="+pki("kube-apiserver.key"),
		"--client-ca-file="+p.CACert(),
		"--kubelet-client-certificate="+pki("kube-apiserver-kubelet-client.crt"), "--kubelet-client-key="+pki("kube-apiserver-kubelet-client.key"),
		"--kubelet-certificate-authority="+p.CACert(), "--kubelet-preferred-address-types=InternalIP,Hostname",
		"--service-account-key-file="+pki("service-account.pub"), "--service-account-signing-key-file="+pki("service-account.key"),
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-cluster-ip-range="+ServiceCIDR,
		"--authorization-mode=Node,RBAC",
		"--enable-admission-plugins=NodeRestriction",
		"--allow-privileged=false",
		"--profiling=false"); err != nil {
		return err
	}
	client, err := adminClient(p)
	if err != nil {
		return err
	}
	if err := waitFor(ctx, "kube-apiserver", p.Log("kube-apiserver"), 2*time.Minute, func() bool {
		body, err := client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		return err == nil && string(body) == "ok"
	}); err != nil {
		return err
	}

	say("kube-controller-manager and kube-scheduler")
	kcm := p.join("kube-controller-manager.kubeconfig")
	if _, err := startDetached(p.Log("kube-controller-manager"), bin("kube-controller-manager"),
		"--kubeconfig="+kcm, "--authentication-kubeconfig="+kcm, "--authorization-kubeconfig="+kcm,
		"--bind-address=127.0.0.1", fmt.Sprintf("--secure-port=%d", ControllerPort),
		"--service-account-private-key-file="+pki("service-account.key"), "--root-ca-file="+p.CACert(),
		"--use-service-account-credentials=true", "--service-cluster-ip-range="+ServiceCIDR,
		"--leader-elect=false", "--profiling=false"); err != nil {
		return err
	}
	sched := p.join("kube-scheduler.kubeconfig")
	if _, err := startDetached(p.Log("kube-scheduler"), bin("kube-scheduler"),
		"--kubeconfig="+sched, "--authentication-kubeconfig="+sched, "--authorization-kubeconfig="+sched,
		"--bind-address=127.0.0.1", fmt.Sprintf("--secure-port=%d", SchedulerPort),
		"--leader-elect=false", "--profiling=false"); err != nil {
		return err
	}
	insecure := &tls.Config{InsecureSkipVerify: true} //nolint:gosec // the health endpoints of self-signed local components, on loopback
	if err := waitHTTP(ctx, "kube-controller-manager", p.Log("kube-controller-manager"), "https://"+hostPort("127.0.0.1", ControllerPort)+"/healthz", insecure, http.StatusOK); err != nil {
		return err
	}
	return waitHTTP(ctx, "kube-scheduler", p.Log("kube-scheduler"), "https://"+hostPort("127.0.0.1", SchedulerPort)+"/healthz", insecure, http.StatusOK)
}

// startNode starts containerd (with the sandbox image imported), the kubelet and kube-proxy,
// and waits for the node to be Ready and for the default ServiceAccount that pods need.
func startNode(ctx context.Context, p Paths, opts Options, say func(string, ...any)) error {
	bin := func(name string) string { return filepath.Join(opts.KubeBin, name) }

	say("containerd on %s", p.ContainerdSocket())
	if _, err := startDetached(p.Log("containerd"), "containerd", "--config="+p.join("containerd", "config.toml")); err != nil {
		return err
	}
	if err := waitFor(ctx, "containerd", p.Log("containerd"), time.Minute, func() bool {
		return exec.Command("ctr", "--address", p.ContainerdSocket(), "version").Run() == nil
	}); err != nil {
		return err
	}
	say("sandbox image %s built from %s and imported", SandboxImage, opts.Pause)
	if err := importSandboxImage(p, opts.Pause); err != nil {
		return err
	}

	say("kubelet (node %s) and kube-proxy (iptables)", NodeName)
	if _, err := startDetached(p.Log("kubelet"), bin("kubelet"),
		"--config="+p.join("kubelet.yaml"), "--kubeconfig="+p.join("kubelet.kubeconfig"),
		"--hostname-override="+NodeName, "--root-dir="+p.KubeletRoot(), "--cert-dir="+p.join("kubelet", "pki")); err != nil {
		return err
	}
	if _, err := startDetached(p.Log("kube-proxy"), bin("kube-proxy"), "--config="+p.join("kube-proxy.yaml")); err != nil {
		return err
	}
	client, err := adminClient(p)
	if err != nil {
		return err
	}
	if err := waitFor(ctx, "kubelet", p.Log("kubelet"), 3*time.Minute, func() bool {
		node, err := client.CoreV1().Nodes().Get(ctx, NodeName, metav1.GetOptions{})
		if err != nil {
			return false // not registered yet
		}
		for _, c := range node.Status.Conditions {
			if c.Type == corev1.NodeReady {
				return c.Status == corev1.ConditionTrue
			}
		}
		return false
	}); err != nil {
		return err
	}
	say("node %s Ready", NodeName)
	if err := waitHTTP(ctx, "kube-proxy", p.Log("kube-proxy"), "http://"+hostPort("127.0.0.1", ProxyHealthzPort)+"/healthz", nil, http.StatusOK); err != nil {
		return err
	}
	return waitFor(ctx, "kube-controller-manager (ServiceAccount default/default)", p.Log("kube-controller-manager"), time.Minute, func() bool {
		_, err := client.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{})
		return err == nil
	})
}

// AdminClient is a client of the cluster in p as its administrator.
func adminClient(p Paths) (*kubernetes.Clientset, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", p.Kubeconfig())
	if err != nil {
		return nil, err
	}
	cfg.QPS, cfg.Burst = -1, -1
	return kubernetes.NewForConfig(cfg)
}

func caPool(p Paths) (*x509.CertPool, error) {
	ca, err := os.ReadFile(p.CACert())
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		return nil, fmt.Errorf("%s holds no certificate", p.CACert())
	}
	return pool, nil
}

// waitHTTP waits until url answers want.
func waitHTTP(ctx context.Context, component, logPath, url string, tlsConfig *tls.Config, want int) error {
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: tlsConfig}}
	return waitFor(ctx, component, logPath, 2*time.Minute, func() bool {
		resp, err := client.Get(url)
		if err != nil {
			return false
		}
		_ = resp.Body.Close()
		return resp.StatusCode == want
	})
}

// waitFor polls ready until it says true, timeout passes or ctx ends; a timeout's error
// quotes the end of the component's log. Errors while waiting are the component not being
// ready yet.
func waitFor(ctx context.Context, component, logPath string, timeout time.Duration, ready func() bool) error {
	deadline := time.Now().Add(timeout)
	for {
		if ready() {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not ready after %s; the end of %s:\n%s", component, timeout, logPath, tail(logPath, 20))
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: %w", component, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// tail is the last n lines of a file.
func tail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
