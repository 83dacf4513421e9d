package releaseapi

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"connectrpc.com/connect"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/release-controller/release-controller/api/v1alpha1"
)

// What a writer must be allowed to do, in Kubernetes RBAC terms: adding an entry creates or
// updates the day's ReleaseLog, and "create releaselogs" is the permission a Role grants to
// say "may write the release log".
const (
	writeVerb     = "create"
	writeResource = "releaselogs"
)

// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create

// Authorizer decides who may write the release log, by asking the API server: a TokenReview
// says who the bearer token belongs to, a SubjectAccessReview whether RBAC lets them create
// releaselogs in the log's namespace. Nothing is cached, so a revoked token or role takes
// effect at the next write.
type Authorizer struct {
	client    client.Client
	namespace string
}

// NewAuthorizer returns an authorizer that asks the API server c talks to. c needs to create
// tokenreviews (authentication.k8s.io) and subjectaccessreviews (authorization.k8s.io);
// namespace is the release log's.
func NewAuthorizer(c client.Client, namespace string) *Authorizer {
	return &Authorizer{client: c, namespace: namespace}
}

// Authorize checks the caller of a write whose request carried the Authorization header
// authorization, and returns the caller's username. Its errors are Connect errors:
// Unauthenticated without a valid bearer token, PermissionDenied when RBAC says no, Internal
// when the API server could not answer.
func (a *Authorizer) Authorize(ctx context.Context, authorization string) (string, error) {
	token, err := bearerToken(authorization)
	if err != nil {
		return "", err
	}
	review := &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token}}
	if err := a.client.Create(ctx, review); err != nil {
		return "", connect.NewError(connect.CodeInternal, fmt.Errorf("checking the bearer token with the API server: %w", err))
	}
	if !review.Status.Authenticated {
		// The review's own error says why (expired, unknown issuer...); it helps the caller
		// and reveals nothing they did not send.
		msg := "the bearer token is not valid"
		if review.Status.Error != "" {
			msg += ": " + review.Status.Error
		}
		return "", connect.NewError(connect.CodeUnauthenticated, errors.New(msg))
	}
	user := review.Status.User
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User:   user.Username,
		UID:    user.UID,
		Groups: user.Groups,
		Extra:  extra(user.Extra),
		ResourceAttributes: &authorizationv1.ResourceAttributes{
			Namespace: a.namespace,
			Verb:      writeVerb,
			Group:     v1alpha1.GroupVersion.Group,
			Resource:  writeResource,
		},
	}}
	if err := a.client.Create(ctx, sar); err != nil {
		return "", connect.NewError(connect.CodeInternal, fmt.Errorf("checking %q's permissions with the API server: %w", user.Username, err))
	}
	if !sar.Status.Allowed {
		msg := fmt.Sprintf("user %q may not %s %s.%s in namespace %q, which adding to the release log needs",
			user.Username, writeVerb, writeResource, v1alpha1.GroupVersion.Group, a.namespace)
		if sar.Status.Reason != "" {
			msg += " (" + sar.Status.Reason + ")"
		}
		return "", connect.NewError(connect.CodePermissionDenied, errors.New(msg))
	}
	return user.Username, nil
}

// bearerToken takes the token out of an Authorization header value.
func bearerToken(authorization string) (string, error) {
	if authorization == "" {
		return "", connect.NewError(connect.CodeUnauthenticated, errors.New("adding to the release log needs an Authorization: Bearer <token> header"))
	}
	scheme, token, _ := strings.Cut(authorization, " ")
	// The scheme is case-insensitive (RFC 9110).
	if !strings.EqualFold(scheme, "Bearer") {
		return "", connect.NewError(connect.CodeUnauthenticated, fmt.Errorf("the Authorization header must use the Bearer scheme, not %q", scheme))
	}
	token = strings.TrimSpace(token)
	if token == "" {
		return "", connect.NewError(connect.CodeUnauthenticated, errors.New("the Authorization header's bearer token is empty"))
	}
	return token, nil
}

func extra(in map[string]authenticationv1.ExtraValue) map[string]authorizationv1.ExtraValue {
	if len(in) == 0 {
		return nil
	}
	out := make(map[string]authorizationv1.ExtraValue, len(in))
	for k, v := range in {
		out[k] = authorizationv1.ExtraValue(v)
	}
	return out
}
