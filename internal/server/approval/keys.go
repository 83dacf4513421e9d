package approval

import (
	"context"
	"fmt"
	"net/http"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/release-controller/release-controller/api/v1alpha1"
)

// The api reads approval keys as the tenant: it impersonates a ServiceAccount of the
// pipeline's namespace, so it needs no right to read any tenant's Secret itself.
// +kubebuilder:rbac:groups="",resources=serviceaccounts,verbs=impersonate

// Keys reads the approval key of an environment.
type Keys interface {
	// Key returns the hmac-key of the Secret name in p's namespace. A refusal is an
	// *httpError naming the Secret (and the account that read it).
	Key(ctx context.Context, p *v1alpha1.Pipeline, name string) ([]byte, error)
}

// TenantKeys reads approval keys impersonating the ServiceAccount the pipeline acts as: its
// spec.serviceAccountName, else DefaultServiceAccount. With neither, it reads with the
// server's own rights (Own), which an install does not grant (the api's --default-service-
// account is "default"); tests and `dev` use it.
type TenantKeys struct {
	config                *rest.Config
	own                   client.Reader
	defaultServiceAccount string
}

// keyQPS and keyBurst bound the Secret reads of all impersonated clients together: each
// request has a client of its own, and they share this limiter.
const (
	keyQPS   = 20
	keyBurst = 40
)

// NewTenantKeys returns a reader of approval keys: cfg is the server's own configuration, own
// reads with its rights when no account applies.
func NewTenantKeys(cfg *rest.Config, own client.Reader, defaultServiceAccount string) *TenantKeys {
	cfg = rest.CopyConfig(cfg)
	cfg.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(keyQPS, keyBurst)
	return &TenantKeys{config: cfg, own: own, defaultServiceAccount: defaultServiceAccount}
}

// Account is the ServiceAccount (of p's namespace) the key of p is read as, and the field
// that chose it; empty: the server's own rights.
func Account(p *v1alpha1.Pipeline, defaultServiceAccount string) (name, from string) {
	if p.Spec.ServiceAccountName != "" {
		return p.Spec.ServiceAccountName, "the pipeline's spec.serviceAccountName"
	}
	if defaultServiceAccount != "" {
		return defaultServiceAccount, "the api's --default-service-account"
	}
	return "", ""
}

// ServiceAccountUser is the username of a ServiceAccount, as the API server authenticates it.
func ServiceAccountUser(namespace, name string) string {
	return "system:serviceaccount:" + namespace + ":" + name
}

// Key reads the Secret as the pipeline's account and returns its hmac-key.
func (k *TenantKeys) Key(ctx context.Context, p *v1alpha1.Pipeline, name string) ([]byte, error) {
	account, from := Account(p, k.defaultServiceAccount)
	var s *corev1.Secret
	var err error
	if account == "" {
		s = &corev1.Secret{}
		err = k.own.Get(ctx, types.NamespacedName{Namespace: p.Namespace, Name: name}, s)
	} else {
		cfg := rest.CopyConfig(k.config)
		cfg.Impersonate = rest.ImpersonationConfig{UserName: ServiceAccountUser(p.Namespace, account)}
		var c *corev1client.CoreV1Client
		if c, err = corev1client.NewForConfig(cfg); err != nil {
			return nil, err
		}
		s, err = c.Secrets(p.Namespace).Get(ctx, name, metav1.GetOptions{})
	}
	switch {
	case apierrors.IsNotFound(err):
		return nil, fail(http.StatusConflict, "the environment's approval key Secret %s/%s does not exist", p.Namespace, name)
	case apierrors.IsForbidden(err) && account != "":
		return nil, fail(http.StatusConflict,
			"the approval key Secret %s/%s is read as ServiceAccount %s/%s (%s), which may not get it: "+
				"grant that account get on the Secret (a Role with resourceNames [%s] bound to it); the API server said: %v",
			p.Namespace, name, p.Namespace, account, from, name, err)
	case err != nil:
		return nil, fmt.Errorf("reading the approval key Secret %s/%s: %w", p.Namespace, name, err)
	}
	key := s.Data[v1alpha1.SecretKeyHMAC]
	if len(key) == 0 {
		return nil, fail(http.StatusConflict, "the environment's approval key Secret %s/%s has no key %q", p.Namespace, name, v1alpha1.SecretKeyHMAC)
	}
	return key, nil
}
