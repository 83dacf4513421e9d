// Package clusters reaches the clusters other than the controller's own: a remote cluster is a
// kubeconfig in a Secret (key "value", the Cluster API convention), read into a REST
// configuration, checked with a probe and served by one controller-runtime cluster.Cluster.
// A Manager (manager.go) runs those clusters while they are in use; the pipeline controller
// watches apps through one (internal/pipeline), and the stream and payload controllers run
// verification jobs through one (Jobs, in jobs.go).
package clusters

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"

	"github.com/release-controller/release-controller/api/v1alpha1"
)

// Key names a cluster: the kubeconfig Secret namespace/name, or zero for the local cluster
// (the one the controller runs against).
type Key struct {
	Namespace, Secret string
}

func (k Key) String() string {
	if k.Secret == "" {
		return "local"
	}
	return k.Namespace + "/" + k.Secret
}

// IsLocal reports whether k is the controller's own cluster.
func (k Key) IsLocal() bool { return k.Secret == "" }

// InsecureKubeconfigExecFlag is the controller flag that lets kubeconfigs from Secrets run
// exec and auth-provider plugins and name files (Flux's flag of the same name).
const InsecureKubeconfigExecFlag = "--insecure-kubeconfig-exec"

// CheckKubeconfig lists what cfg holds that a kubeconfig from a Secret may not, each as
// "field: rule" (field as in the file, e.g. users[ci].user.exec), users then clusters, each by
// name; none means it may be used. A Secret is a tenant's: an exec or auth-provider plugin
// would run a command (or provider code) inside the controller, a file path would read the
// controller's own files (its service account token, its keys), and a proxy-url would send
// the controller's connections through a host of the tenant's choice. allowExec
// (InsecureKubeconfigExecFlag) allows plugins and file paths, never a proxy. It is pure.
func CheckKubeconfig(cfg *clientcmdapi.Config, allowExec bool) []string {
	var refused []string
	optIn := "; refused unless the controller runs with " + InsecureKubeconfigExecFlag
	file := func(field string) string {
		return field + ": a file path reads a file of the controller's" + optIn + " (give the content in the *-data field)"
	}
	for _, name := range slices.Sorted(maps.Keys(cfg.AuthInfos)) {
		u := cfg.AuthInfos[name]
		if u == nil {
			continue
		}
		field := fmt.Sprintf("users[%s].user.", name)
		if !allowExec {
			if u.Exec != nil {
				refused = append(refused, field+"exec: an exec plugin runs a command inside the controller"+optIn)
			}
			if u.AuthProvider != nil {
				refused = append(refused, field+"auth-provider: an auth provider runs provider code inside the controller"+optIn)
			}
			if u.TokenFile != "" {
				refused = append(refused, file(field+"tokenFile"))
			}
			if u.ClientCertificate != "" {
				refused = append(refused, file(field+"client-certificate"))
			}
			if u.ClientKey != "" {
				refused = append(refused, file(field+"client-key"))
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(cfg.Clusters)) {
		c := cfg.Clusters[name]
		if c == nil {
			continue
		}
		field := fmt.Sprintf("clusters[%s].cluster.", name)
		if !allowExec && c.CertificateAuthority != "" {
			refused = append(refused, file(field+"certificate-authority"))
		}
		if c.ProxyURL != "" {
			refused = append(refused, field+"proxy-url: a proxy sends the controller's connections through a host the Secret chooses; refused")
		}
	}
	return refused
}

// RESTConfig reads the kubeconfig Secret of key with secrets (an API reader: Secrets are not
// cached) and returns its configuration, without client-side rate limit (as for the local
// cluster: the API server's priority and fairness protects it), and the Secret's
// resourceVersion. A kubeconfig CheckKubeconfig refuses (with allowExec) is refused. Its error
// says why the Secret gives no cluster.
func RESTConfig(ctx context.Context, secrets client.Reader, key Key, allowExec bool) (*rest.Config, string, error) {
	var secret corev1.Secret
	err := secrets.Get(ctx, types.NamespacedName{Namespace: key.Namespace, Name: key.Secret}, &secret)
	switch {
	case apierrors.IsNotFound(err):
		return nil, "", fmt.Errorf("kubeconfig Secret %s not found", key)
	case err != nil:
		return nil, "", fmt.Errorf("reading kubeconfig Secret %s: %w", key, err)
	}
	data := secret.Data[v1alpha1.SecretKeyKubeconfig]
	if len(data) == 0 {
		return nil, "", fmt.Errorf("kubeconfig Secret %s has no key %q", key, v1alpha1.SecretKeyKubeconfig)
	}
	kc, err := clientcmd.Load(data)
	if err != nil {
		return nil, "", fmt.Errorf("kubeconfig Secret %s: %w", key, err)
	}
	if refused := CheckKubeconfig(kc, allowExec); len(refused) > 0 {
		return nil, "", fmt.Errorf("kubeconfig Secret %s (key %s): %s", key, v1alpha1.SecretKeyKubeconfig, strings.Join(refused, "; "))
	}
	cfg, err := clientcmd.NewDefaultClientConfig(*kc, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, "", fmt.Errorf("kubeconfig Secret %s: %w", key, err)
	}
	cfg.QPS, cfg.Burst = -1, -1
	return cfg, secret.ResourceVersion, nil
}

// New builds the cluster.Cluster (client and cache) of cfg. Its cache drops managedFields,
// the bulk of an object, which nothing here reads.
func New(cfg *rest.Config) (cluster.Cluster, error) {
	return cluster.New(cfg, func(o *cluster.Options) {
		o.Cache.DefaultTransform = cache.TransformStripManagedFields()
	})
}

// ProbeTimeout bounds one probe.
const ProbeTimeout = 5 * time.Second

// Probe asks the cluster's /version, which every authenticated user may read: an informer
// retries a refused connection by itself without a word, so only a probe tells an
// unreachable cluster.
func Probe(_ context.Context, cfg *rest.Config) error {
	cfg = rest.CopyConfig(cfg)
	cfg.Timeout = ProbeTimeout
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return err
	}
	_, err = dc.ServerVersion()
	return err
}

// Health is what WatchHealth probes and how often.
type Health struct {
	Key    Key
	Config *rest.Config
	Probe  func(context.Context, *rest.Config) error
	// Backoff spaces the probes while the cluster does not answer; Interval while it does.
	Backoff  workqueue.TypedRateLimiter[Key]
	Interval time.Duration
}

// WatchHealth probes h's cluster until ctx ends: every Interval while it answers, by Backoff
// while it does not. After each probe it calls set with the probe's error (nil: it answered),
// which reports whether the cluster's reachability changed; on a change it logs it and calls
// changed.
func WatchHealth(ctx context.Context, h Health, set func(error) bool, changed func()) {
	log := ctrl.LoggerFrom(ctx).WithValues("cluster", h.Key.String())
	for {
		err := h.Probe(ctx, h.Config)
		if ctx.Err() != nil {
			return
		}
		moved := set(err)
		delay := h.Interval
		if err != nil {
			delay = h.Backoff.When(h.Key)
		} else {
			h.Backoff.Forget(h.Key)
		}
		if moved {
			if err != nil {
				log.Info("cluster unreachable", "error", err.Error())
			} else {
				log.Info("cluster reachable again")
			}
			changed()
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(delay):
		}
	}
}

// Run builds the cluster of cfg with build and runs it (its client and cache) until the
// returned context, a child of parent, is cancelled; ctx carries the logger.
func Run(ctx, parent context.Context, key Key, cfg *rest.Config, build func(*rest.Config) (cluster.Cluster, error)) (cluster.Cluster, context.Context, context.CancelFunc, error) {
	cl, err := build(cfg)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("cluster %s: %w", key, err)
	}
	clusterCtx, cancel := context.WithCancel(parent)
	go func() {
		if err := cl.Start(clusterCtx); err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "cluster stopped", "cluster", key.String())
		}
	}()
	return cl, clusterCtx, cancel, nil
}

// SecretVersion reads the resourceVersion of key's kubeconfig Secret with secretMeta (a
// metadata cache: a watch of the Secrets' metadata tells their users when one changes, and
// the data is read, with RESTConfig, only when its version moved). Its error says why there is
// no Secret to read.
func SecretVersion(ctx context.Context, secretMeta client.Reader, key Key) (string, error) {
	var meta metav1.PartialObjectMetadata
	meta.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
	err := secretMeta.Get(ctx, types.NamespacedName{Namespace: key.Namespace, Name: key.Secret}, &meta)
	switch {
	case apierrors.IsNotFound(err):
		return "", fmt.Errorf("kubeconfig Secret %s not found", key)
	case err != nil:
		return "", fmt.Errorf("reading kubeconfig Secret %s: %w", key, err)
	}
	return meta.ResourceVersion, nil
}
