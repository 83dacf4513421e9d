package localcluster

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

func TestNamesPathIn(t *testing.T) {
	dir := "/work/.cluster"
	for _, tc := range []struct {
		args []string
		want bool
	}{
		{[]string{"etcd", "--data-dir=/work/.cluster/etcd"}, true},
		{[]string{"containerd-shim-runc-v2", "-address", "/work/.cluster/containerd/containerd.sock"}, true},
		{[]string{"kubelet", "--container-runtime-endpoint=unix:///work/.cluster/containerd/containerd.sock"}, true},
		{[]string{"cluster", "registry", "--dir", "/work/.cluster"}, true},
		{[]string{"etcd", "--data-dir=/work/.cluster-other/etcd"}, false},
		{[]string{"vim", "/work/.clusterfile"}, false},
		{[]string{"bash"}, false},
	} {
		if got := namesPathIn(tc.args, dir); got != tc.want {
			t.Errorf("namesPathIn(%q) = %v, want %v", tc.args, got, tc.want)
		}
	}
}

func TestSplitRule(t *testing.T) {
	rule := `FORWARD -i rcc0 ! -o rcc0 -m comment --comment "release-controller-cluster" -j DROP`
	want := []string{"FORWARD", "-i", "rcc0", "!", "-o", "rcc0", "-m", "comment", "--comment", "release-controller-cluster", "-j", "DROP"}
	if got := splitRule(rule); !slices.Equal(got, want) {
		t.Errorf("splitRule = %q, want %q", got, want)
	}
	spaced := `KUBE-SERVICES -m comment --comment "kubernetes service nodeports; NOTE: this must be the last rule" -j KUBE-NODEPORTS`
	if got := splitRule(spaced); len(got) != 7 || got[4] != "kubernetes service nodeports; NOTE: this must be the last rule" {
		t.Errorf("splitRule kept the quoted comment as %q", got)
	}
}

func TestUnescapeMount(t *testing.T) {
	if got := unescapeMount(`/work/my\040cluster/kubelet`); got != "/work/my cluster/kubelet" {
		t.Errorf("unescapeMount = %q", got)
	}
	if got := unescapeMount("/plain"); got != "/plain" {
		t.Errorf("unescapeMount = %q", got)
	}
}

// The configurations keep everything in the cluster's folder and on this machine.
func TestConfigurations(t *testing.T) {
	p := Paths{Dir: "/work/.cluster"}
	var cni map[string]any
	if err := json.Unmarshal([]byte(cniConfig(p)), &cni); err != nil {
		t.Fatalf("CNI configuration: %v", err)
	}
	plugin := cni["plugins"].([]any)[0].(map[string]any)
	if plugin["bridge"] != Bridge || plugin["ipMasq"] != false || !strings.HasPrefix(plugin["ipam"].(map[string]any)["dataDir"].(string), p.Dir+"/") {
		t.Errorf("CNI plugin = %v: want the bridge %s, no masquerading, leases in the cluster's folder", plugin, Bridge)
	}
	for name, doc := range map[string]string{"kubelet": kubeletConfig(p), "kube-proxy": kubeProxyConfig(p)} {
		var m map[string]any
		if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
			t.Fatalf("%s configuration: %v", name, err)
		}
	}
	var kubelet map[string]any
	_ = yaml.Unmarshal([]byte(kubeletConfig(p)), &kubelet)
	for key, want := range map[string]any{"address": "127.0.0.1", "healthzBindAddress": "127.0.0.1", "failCgroupV1": false, "cgroupDriver": "cgroupfs", "readOnlyPort": float64(0)} {
		if kubelet[key] != want {
			t.Errorf("kubelet %s = %v, want %v", key, kubelet[key], want)
		}
	}
	if !strings.HasPrefix(kubelet["podLogsDir"].(string), p.Dir+"/") {
		t.Errorf("kubelet podLogsDir = %v, want it in %s", kubelet["podLogsDir"], p.Dir)
	}
	var proxy map[string]any
	_ = yaml.Unmarshal([]byte(kubeProxyConfig(p)), &proxy)
	conntrack := proxy["conntrack"].(map[string]any)
	if conntrack["maxPerCore"] != float64(0) || conntrack["min"] != float64(0) {
		t.Errorf("kube-proxy conntrack = %v: want the machine's settings left alone (0)", conntrack)
	}
	ctd := containerdConfig(p)
	for _, want := range []string{"restrict_oom_score_adj = true", "netns_mounts_under_state_dir = true", `stream_server_address = "127.0.0.1"`, "SystemdCgroup = false", `sandbox_image = "` + SandboxImage + `"`} {
		if !strings.Contains(ctd, want) {
			t.Errorf("containerd configuration lacks %s", want)
		}
	}
	for _, line := range strings.Split(ctd, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), " = "); ok && strings.HasPrefix(v, `"/`) && !strings.HasPrefix(v, `"`+p.Dir) && k != "bin_dir" {
			t.Errorf("containerd's %s is outside the cluster's folder: %s", k, v)
		}
	}
}

func TestLeavesCoverTheAPIServersAddresses(t *testing.T) {
	for _, l := range leaves() {
		if l.name != "kube-apiserver" {
			continue
		}
		for _, ip := range []string{Gateway, KubernetesServiceIP} {
			if !slices.Contains(l.ips, ip) {
				t.Errorf("the API server's certificate lacks %s", ip)
			}
		}
	}
}
