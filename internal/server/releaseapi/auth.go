package releaseapi

import (
	"context"
	"errors"
	"fmt"

	"connectrpc.com/connect"
	authorizationv1 "k8s.io/api/authorization/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/kubeauth"
)

// What a writer must be allowed to do, in Kubernetes RBAC terms: "create releaselogs/entries",
// a permission of its own that no API request uses, so that it says only "may add entries
// through the release controller, under one's own name". It is not "create releaselogs": whom
// RBAC lets create or update ReleaseLog objects may write entries directly, but those are
// not sealed, and readers show them as such; the entries AddRelease writes are sealed, and
// vouch for their author. RBAC never grants a subresource through its resource alone.
const (
	writeVerb        = "create"
	writeResource    = "releaselogs"
	writeSubresource = "entries"
)

// WritePermission is the permission AddRelease checks, as RBAC rules name it.
const WritePermission = writeVerb + " " + writeResource + "/" + writeSubresource

// The reviews of writers (and of /metrics with --metrics-auth, which shares the reviewer):
// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create

// The release log key that seals AddRelease's entries and checks every entry's seal
// (releaselog.EnsureKey, --release-log-key-secret) is a Secret of the api's own namespace,
// read at start and made there when missing (the controller or the api, whichever starts
// first).
// +kubebuilder:rbac:groups="",namespace=release-controller-system,resources=secrets,verbs=get;create

// How long the authorizer trusts its answers unless told otherwise (kubeauth's defaults).
const (
	DefaultAllowedTTL = kubeauth.DefaultAllowedTTL
	DefaultDeniedTTL  = kubeauth.DefaultDeniedTTL
)

// AuthorizerOptions configure the caches of an Authorizer's reviews.
type AuthorizerOptions = kubeauth.Options

// Authorizer decides who may write the release log, by asking the API server: a TokenReview
// says who the bearer token belongs to, a SubjectAccessReview whether RBAC lets them create
// releaselogs/entries in the log's namespace. Answers are cached briefly (kubeauth.Reviewer), so a
// burst of writes costs the API server one review of each kind; a revoked token or role
// binding takes effect once the cached yes expires (a minute by default).
type Authorizer struct {
	reviewer  *kubeauth.Reviewer
	namespace string
}

// NewAuthorizer returns an authorizer with the default caches that asks the API server c
// talks to. c needs to create tokenreviews (authentication.k8s.io) and subjectaccessreviews
// (authorization.k8s.io); namespace is the release log's.
func NewAuthorizer(c client.Client, namespace string) *Authorizer {
	return NewAuthorizerWithOptions(c, namespace, AuthorizerOptions{})
}

// NewAuthorizerWithOptions is NewAuthorizer with the caches configured by opts.
func NewAuthorizerWithOptions(c client.Client, namespace string, opts AuthorizerOptions) *Authorizer {
	return NewAuthorizerWithReviewer(kubeauth.NewReviewer(c, opts), namespace)
}

// NewAuthorizerWithReviewer is an authorizer asking r, whose caches it shares with r's other
// users (the server's /metrics).
func NewAuthorizerWithReviewer(r *kubeauth.Reviewer, namespace string) *Authorizer {
	return &Authorizer{reviewer: r, namespace: namespace}
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
	id, err := a.reviewer.Authenticate(ctx, token)
	if err != nil {
		return "", connect.NewError(connect.CodeInternal, fmt.Errorf("checking the bearer token with the API server: %w", err))
	}
	if !id.Authenticated {
		// The review's own error says why (expired, unknown issuer...); it helps the caller
		// and reveals nothing they did not send.
		msg := "the bearer token is not valid"
		if id.Error != "" {
			msg += ": " + id.Error
		}
		return "", connect.NewError(connect.CodeUnauthenticated, errors.New(msg))
	}
	user := id.User
	d, err := a.reviewer.Authorize(ctx, user, kubeauth.Access{Resource: &authorizationv1.ResourceAttributes{
		Namespace:   a.namespace,
		Verb:        writeVerb,
		Group:       v1alpha1.GroupVersion.Group,
		Resource:    writeResource,
		Subresource: writeSubresource,
	}})
	if err != nil {
		return "", connect.NewError(connect.CodeInternal, fmt.Errorf("checking %q's permissions with the API server: %w", user.Username, err))
	}
	if !d.Allowed {
		msg := fmt.Sprintf("user %q may not %s %s/%s (group %s) in namespace %q, which adding to the release log needs (create releaselogs does not grant it)",
			user.Username, writeVerb, writeResource, writeSubresource, v1alpha1.GroupVersion.Group, a.namespace)
		if d.Reason != "" {
			msg += " (" + d.Reason + ")"
		}
		return "", connect.NewError(connect.CodePermissionDenied, errors.New(msg))
	}
	return user.Username, nil
}

// bearerToken takes the token out of an Authorization header value, with Connect errors.
func bearerToken(authorization string) (string, error) {
	token, err := kubeauth.BearerToken(authorization)
	switch {
	case errors.Is(err, kubeauth.ErrNoAuthorization):
		return "", connect.NewError(connect.CodeUnauthenticated, errors.New("adding to the release log needs an Authorization: Bearer <token> header"))
	case err != nil:
		return "", connect.NewError(connect.CodeUnauthenticated, err)
	}
	return token, nil
}
