package pipeline

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/lru"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/release-controller/release-controller/api/v1alpha1"
)

// ServiceAccountUser is the user name of the ServiceAccount name of namespace, as the API
// server knows it (and as impersonation names it).
func ServiceAccountUser(namespace, name string) string {
	return "system:serviceaccount:" + namespace + ":" + name
}

// TenantOf is the user a pipeline acts as on the local cluster: its spec.serviceAccountName,
// else defaultAccount, as a ServiceAccount of its own namespace; "" (no account named and no
// default) means the controller's own rights. It is pure.
func TenantOf(p *v1alpha1.Pipeline, defaultAccount string) string {
	if p == nil {
		return ""
	}
	name := p.Spec.ServiceAccountName
	if name == "" {
		name = defaultAccount
	}
	if name == "" {
		return ""
	}
	return ServiceAccountUser(p.Namespace, name)
}

// MaxTenantClients bounds the impersonating clients kept (one per service account in use);
// the least recently used goes first, and is built again when needed.
const MaxTenantClients = 512

// tenantClients builds and keeps the clients that impersonate the pipelines' service accounts
// on the local cluster. They share the local config's transport (impersonation is a header)
// and one REST mapper.
type tenantClients struct {
	local *rest.Config

	once    sync.Once
	mapper  meta.RESTMapper
	initErr error
	clients *lru.Cache // user → client.Client
}

func newTenantClients(local *rest.Config) *tenantClients {
	return &tenantClients{local: local, clients: lru.New(MaxTenantClients)}
}

// get returns the client acting as user (a ServiceAccountUser).
func (t *tenantClients) get(user string) (client.Client, error) {
	if c, ok := t.clients.Get(user); ok {
		return c.(client.Client), nil
	}
	t.once.Do(func() {
		httpClient, err := rest.HTTPClientFor(t.local)
		if err != nil {
			t.initErr = err
			return
		}
		t.mapper, t.initErr = apiutil.NewDynamicRESTMapper(t.local, httpClient)
	})
	if t.initErr != nil {
		return nil, fmt.Errorf("a client for %s: %w", user, t.initErr)
	}
	cfg := rest.CopyConfig(t.local)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	c, err := client.New(cfg, client.Options{Scheme: clientgoscheme.Scheme, Mapper: t.mapper})
	if err != nil {
		return nil, fmt.Errorf("a client for %s: %w", user, err)
	}
	t.clients.Add(user, c)
	return c, nil
}

// mayRead checks, with one metadata read as user, that user may get the kubeconfig Secret of
// key; its error names the Secret and the user.
func (t *tenantClients) mayRead(ctx context.Context, user string, key ClusterKey) error {
	c, err := t.get(user)
	if err != nil {
		return err
	}
	var m metav1.PartialObjectMetadata
	m.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
	err = c.Get(ctx, types.NamespacedName{Namespace: key.Namespace, Name: key.Secret}, &m)
	return tenantSecretError(err, user, key)
}

// tenantSecretError says why user could not read the kubeconfig Secret of key: a Forbidden is
// the account's RBAC, and says so with the Secret, the account and the API server's message.
func tenantSecretError(err error, user string, key ClusterKey) error {
	if err == nil {
		return nil
	}
	var status apierrors.APIStatus
	if apierrors.IsForbidden(err) && errors.As(err, &status) {
		return tenantForbidden(fmt.Sprintf("kubeconfig Secret %s: the pipeline's service account %s may not read it (grant it get on secrets in %s): %s",
			key, user, key.Namespace, status.Status().Message))
	}
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("kubeconfig Secret %s not found", key)
	}
	return fmt.Errorf("reading kubeconfig Secret %s as %s: %w", key, user, err)
}

// tenantForbidden is a pipeline's service account refused a read by RBAC.
type tenantForbidden string

func (e tenantForbidden) Error() string { return string(e) }

// TenantRetry is how soon a pipeline whose service account may not read its kubeconfig
// Secret is reconciled again: a grant (a RoleBinding) is not watched.
const TenantRetry = 30 * time.Second

// isTenantForbidden reports whether err is a tenantForbidden.
func isTenantForbidden(err error) bool {
	var f tenantForbidden
	return errors.As(err, &f)
}
