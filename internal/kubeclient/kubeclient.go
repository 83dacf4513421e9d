// Package kubeclient builds the one client configuration every command uses to reach the
// Kubernetes API server, whichever way the kubeconfig arrives (--kubeconfig, $KUBECONFIG, the
// in-cluster service account, ~/.kube/config), with the same client-side rate settings on
// every path.
//
// Client-side throttling is off unless asked for: client-go's default of 5 requests/s with a
// burst of 10 makes a controller with a few hundred payloads wait on itself, and the API
// server's priority and fairness already protects it from a busy client.
package kubeclient

import (
	"fmt"
	"os"

	"github.com/spf13/pflag"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Options say where the kubeconfig is and how fast the client may talk to the API server.
type Options struct {
	// Kubeconfig is the path given with --kubeconfig; empty tries $KUBECONFIG, the in-cluster
	// configuration, then ~/.kube/config.
	Kubeconfig string
	// QPS limits requests per second; zero or less means no client-side limit.
	QPS float32
	// Burst is how many requests may go above QPS at once; used only with a QPS limit.
	Burst int
}

// AddFlags binds --kubeconfig, --kube-api-qps and --kube-api-burst.
func (o *Options) AddFlags(f *pflag.FlagSet) {
	f.StringVar(&o.Kubeconfig, "kubeconfig", o.Kubeconfig, "path to a kubeconfig; default: $KUBECONFIG, the in-cluster configuration, then ~/.kube/config")
	o.AddRateFlags(f)
}

// AddRateFlags binds --kube-api-qps and --kube-api-burst only, for commands that make their
// own API server (dev).
func (o *Options) AddRateFlags(f *pflag.FlagSet) {
	f.Float32Var(&o.QPS, "kube-api-qps", o.QPS, "client-side limit of requests per second to the Kubernetes API server; 0 means none (the API server's priority and fairness protects it)")
	f.IntVar(&o.Burst, "kube-api-burst", o.Burst, "requests that may go above --kube-api-qps at once; default: twice the QPS")
}

// Config loads the configuration and applies the rate settings.
func (o Options) Config() (*rest.Config, error) {
	cfg, err := o.load()
	if err != nil {
		return nil, err
	}
	o.ApplyRate(cfg)
	return cfg, nil
}

// ApplyRate sets cfg's client-side rate limit from the options: none (QPS and Burst -1, which
// client-go reads as "no limiter") unless a QPS is given. It replaces whatever the loader or
// the kubeconfig set, so every path ends with the same settings.
func (o Options) ApplyRate(cfg *rest.Config) {
	cfg.RateLimiter = nil
	if o.QPS <= 0 {
		cfg.QPS, cfg.Burst = -1, -1
		return
	}
	cfg.QPS, cfg.Burst = o.QPS, o.Burst
	if cfg.Burst <= 0 {
		cfg.Burst = max(1, int(2*o.QPS))
	}
}

// inClusterConfig reads the pod's service account; a variable so that a test can point it at
// files of its own (rest.InClusterConfig reads fixed paths under /var/run/secrets).
var inClusterConfig = rest.InClusterConfig

// load finds the kubeconfig: --kubeconfig, else $KUBECONFIG, else the in-cluster
// configuration, else ~/.kube/config.
func (o Options) load() (*rest.Config, error) {
	if o.Kubeconfig != "" {
		cfg, err := clientcmd.BuildConfigFromFlags("", o.Kubeconfig)
		if err != nil {
			return nil, fmt.Errorf("loading --kubeconfig %s: %w", o.Kubeconfig, err)
		}
		return cfg, nil
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	fromFiles := func() (*rest.Config, error) {
		return clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	}
	if os.Getenv(clientcmd.RecommendedConfigPathEnvVar) != "" {
		cfg, err := fromFiles()
		if err != nil {
			return nil, fmt.Errorf("loading $%s: %w", clientcmd.RecommendedConfigPathEnvVar, err)
		}
		return cfg, nil
	}
	cfg, inClusterErr := inClusterConfig()
	if inClusterErr == nil {
		return cfg, nil
	}
	cfg, err := fromFiles()
	if err != nil {
		return nil, fmt.Errorf("no kubeconfig found: pass --kubeconfig or set $%s (in-cluster: %w; %s: %w)",
			clientcmd.RecommendedConfigPathEnvVar, inClusterErr, clientcmd.RecommendedHomeFile, err)
	}
	return cfg, nil
}
