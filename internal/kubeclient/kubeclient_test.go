package kubeclient

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

const kubeconfigYAML = `apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: "https://127.0.0.1:6443", insecure-skip-tls-verify: true}
users:
- name: u
  user: {token: secret}
contexts:
- name: x
  context: {cluster: c, user: u}
current-context: x
`

// paths sets up each way a kubeconfig arrives and returns the options to load it with.
var paths = []struct {
	name  string
	setup func(t *testing.T, file string) Options
}{
	{"--kubeconfig", func(t *testing.T, file string) Options {
		t.Setenv("KUBECONFIG", "")
		return Options{Kubeconfig: file}
	}},
	{"$KUBECONFIG", func(t *testing.T, file string) Options {
		t.Setenv("KUBECONFIG", file)
		return Options{}
	}},
	{"in-cluster", func(t *testing.T, _ string) Options {
		t.Setenv("KUBECONFIG", "")
		// What rest.InClusterConfig returns in a pod: host, token file and CA, no rate settings.
		dir := t.TempDir()
		token := filepath.Join(dir, "token")
		if err := os.WriteFile(token, []byte("pod-token"), 0o600); err != nil {
			t.Fatal(err)
		}
		saved := inClusterConfig
		inClusterConfig = func() (*rest.Config, error) {
			return &rest.Config{Host: "https://10.96.0.1:443", BearerTokenFile: token, TLSClientConfig: rest.TLSClientConfig{Insecure: true}}, nil
		}
		t.Cleanup(func() { inClusterConfig = saved })
		return Options{}
	}},
}

func TestEveryPathGetsTheSameRate(t *testing.T) {
	file := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(file, []byte(kubeconfigYAML), 0o600); err != nil {
		t.Fatal(err)
	}
	rates := []struct {
		name               string
		args               []string
		wantQPS            float32
		wantBurst          int
		wantClientLimiting bool
	}{
		{name: "default: no client-side limit", wantQPS: -1, wantBurst: -1},
		{name: "qps only: burst twice the qps", args: []string{"--kube-api-qps=50"}, wantQPS: 50, wantBurst: 100, wantClientLimiting: true},
		{name: "qps and burst", args: []string{"--kube-api-qps=20", "--kube-api-burst=30"}, wantQPS: 20, wantBurst: 30, wantClientLimiting: true},
		{name: "qps zero is no limit", args: []string{"--kube-api-qps=0", "--kube-api-burst=30"}, wantQPS: -1, wantBurst: -1},
	}
	for _, rate := range rates {
		for _, path := range paths {
			t.Run(rate.name+"/"+path.name, func(t *testing.T) {
				opts := path.setup(t, file)
				flags := pflag.NewFlagSet("test", pflag.ContinueOnError)
				opts.AddRateFlags(flags)
				if err := flags.Parse(rate.args); err != nil {
					t.Fatal(err)
				}
				cfg, err := opts.Config()
				if err != nil {
					t.Fatalf("loading: %v", err)
				}
				if cfg.QPS != rate.wantQPS || cfg.Burst != rate.wantBurst || cfg.RateLimiter != nil {
					t.Errorf("QPS %v burst %d limiter %v; want QPS %v burst %d and no preset limiter", cfg.QPS, cfg.Burst, cfg.RateLimiter, rate.wantQPS, rate.wantBurst)
				}
				// client-go builds a token bucket only for a positive QPS.
				cs, err := kubernetes.NewForConfig(cfg)
				if err != nil {
					t.Fatal(err)
				}
				if limited := cs.CoreV1().RESTClient().GetRateLimiter() != nil; limited != rate.wantClientLimiting {
					t.Errorf("client-side rate limiter present: %v, want %v", limited, rate.wantClientLimiting)
				}
			})
		}
	}
}

func TestKubeconfigFromFlagWinsOverEnvironment(t *testing.T) {
	dir := t.TempDir()
	flagFile, envFile := filepath.Join(dir, "flag"), filepath.Join(dir, "env")
	if err := os.WriteFile(flagFile, []byte(kubeconfigYAML), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(envFile, []byte(strings.ReplaceAll(kubeconfigYAML, "127.0.0.1:6443", "127.0.0.2:6443")), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("KUBECONFIG", envFile)
	cfg, err := Options{Kubeconfig: flagFile}.Config()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Host != "https://127.0.0.1:6443" {
		t.Errorf("host %s, want the --kubeconfig file's", cfg.Host)
	}
	cfg, err = Options{}.Config()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Host != "https://127.0.0.2:6443" {
		t.Errorf("host %s, want $KUBECONFIG's", cfg.Host)
	}
}

func TestNoKubeconfigNamesTheWaysToGiveOne(t *testing.T) {
	t.Setenv("KUBECONFIG", "")
	t.Setenv("HOME", t.TempDir())
	saved := inClusterConfig
	inClusterConfig = rest.InClusterConfig // outside a pod: fails
	t.Cleanup(func() { inClusterConfig = saved })
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	_, err := Options{}.Config()
	if err == nil || !strings.Contains(err.Error(), "pass --kubeconfig or set $KUBECONFIG") {
		t.Fatalf("error %v, want one that says to pass --kubeconfig", err)
	}
	_, err = Options{Kubeconfig: filepath.Join(t.TempDir(), "missing")}.Config()
	if err == nil || !strings.Contains(err.Error(), "--kubeconfig") {
		t.Fatalf("error %v, want one naming --kubeconfig", err)
	}
}
