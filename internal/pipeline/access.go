package pipeline

import (
	"context"
	"fmt"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/kubeauth"
)

// DefaultAccessTTL is how long a SubjectAccessReview's answer (may the pipeline's account get
// a local target's app?) is reused: a revoked grant hides the target, and a new one shows
// it, within it. A pipeline with a hidden target is reconciled again after it, since nothing
// watched tells of a RoleBinding.
const DefaultAccessTTL = time.Minute

// AppAccess is what a SubjectAccessReview answered for a pipeline's account and a target's app.
type AppAccess struct {
	Allowed bool
	// Reason is the authorizer's, when it gave one.
	Reason string
}

// needsAccessCheck reports whether a pipeline acting as tenant (TenantOf) must be seen allowed
// to get target t's app before the target is observed. The controller watches the local
// cluster's apps with its own rights, so a local target is shown only if the account may get
// the app itself; a remote target is read with its kubeconfig's identity, which the tenant
// supplied, and "" is the controller's own rights (a single-tenant install). It is pure.
func needsAccessCheck(tenant string, t v1alpha1.Target) bool {
	return tenant != "" && t.ClusterRef == ""
}

// TargetHidden says why a pipeline acting as tenant may not see target t's app (name, a
// resource of kind res, in t.Namespace), given the SubjectAccessReview's answer (nil: none was
// made): "" when it may. A hidden target shows no revision or readiness, and nothing is
// promoted from or into it. A target that needs a review and has no answer is hidden. It is
// pure.
func TargetHidden(tenant string, t v1alpha1.Target, res schema.GroupResource, name string, answer *AppAccess) string {
	if !needsAccessCheck(tenant, t) || answer != nil && answer.Allowed {
		return ""
	}
	msg := fmt.Sprintf("account %s may not get %s %s in namespace %s", tenant, res, name, t.Namespace)
	if answer == nil {
		return msg + ": not checked"
	}
	if answer.Reason != "" {
		msg += " (" + answer.Reason + ")"
	}
	return msg + fmt.Sprintf("; the target is not shown or promoted until it may (grant it get, and patch to promote, on %s in %s)", res, t.Namespace)
}

// ServiceAccountGroups are the groups the API server gives the ServiceAccount user (a
// ServiceAccountUser), as when it is impersonated: system:serviceaccounts,
// system:serviceaccounts:<namespace> and system:authenticated. So a review asks about the
// identity the controller's impersonated writes have.
func ServiceAccountGroups(user string) []string {
	parts := strings.Split(user, ":")
	if len(parts) != 4 || parts[0] != "system" || parts[1] != "serviceaccount" {
		return []string{"system:authenticated"}
	}
	return []string{"system:serviceaccounts", "system:serviceaccounts:" + parts[2], "system:authenticated"}
}

// appAccess asks, with SubjectAccessReviews (created with the controller's own rights), whether
// a pipeline's account may get a target's app; the answers are cached (kubeauth.Reviewer:
// bounded, for the TTL, one review for concurrent askers).
type appAccess struct {
	reviewer *kubeauth.Reviewer
	mapper   meta.RESTMapper
}

func newAppAccess(c client.Client, mapper meta.RESTMapper, ttl time.Duration) *appAccess {
	return &appAccess{
		reviewer: kubeauth.NewReviewer(c, kubeauth.Options{AllowedTTL: ttl, DeniedTTL: ttl}),
		mapper:   mapper,
	}
}

// resource is the resource of the app kind gvk, as RBAC names it.
func (a *appAccess) resource(gvk schema.GroupVersionKind) (schema.GroupResource, error) {
	m, err := a.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return schema.GroupResource{}, fmt.Errorf("the resource of %s: %w", gvk, err)
	}
	return m.Resource.GroupResource(), nil
}

// mayGet asks whether user may get name, a res, in namespace; its error means the API server
// did not answer.
func (a *appAccess) mayGet(ctx context.Context, user string, res schema.GroupResource, namespace, name string) (AppAccess, error) {
	d, err := a.reviewer.Authorize(ctx, authenticationv1.UserInfo{Username: user, Groups: ServiceAccountGroups(user)}, kubeauth.Access{
		Resource: &authorizationv1.ResourceAttributes{Verb: "get", Group: res.Group, Resource: res.Resource, Namespace: namespace, Name: name},
	})
	if err != nil {
		return AppAccess{}, fmt.Errorf("asking whether %s may get %s %s in namespace %s: %w", user, res, name, namespace, err)
	}
	return AppAccess{Allowed: d.Allowed, Reason: d.Reason}, nil
}
