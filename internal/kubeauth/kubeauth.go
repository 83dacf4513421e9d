// Package kubeauth authenticates and authorizes the server's callers with Kubernetes, as the
// API server's own delegated authentication does (and kube-rbac-proxy): a TokenReview says
// who a bearer token belongs to, a SubjectAccessReview whether RBAC lets that user do
// something. Answers are cached briefly, so a burst of requests costs the API server one
// review of each kind.
package kubeauth

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sync/singleflight"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/util/cache"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// A Reviewer's client needs to create tokenreviews and subjectaccessreviews; the packages
// that use one declare it in their RBAC markers (releaseapi, for the api's role).

// Defaults of Options, as kube-rbac-proxy and the API server's webhook authorizers cache: a
// yes long enough that a burst of requests asks once, a no briefly, so that a token or a role
// binding just created works at once.
const (
	DefaultAllowedTTL = time.Minute
	DefaultDeniedTTL  = 10 * time.Second
	// DefaultCacheSize bounds each cache (tokens, access reviews); the least recently used
	// answer goes first.
	DefaultCacheSize = 4096
	// reviewTimeout bounds one review, which a burst of callers may all be waiting for.
	reviewTimeout = 10 * time.Second
)

// Options configure a Reviewer's caches; zero values take the defaults.
type Options struct {
	// AllowedTTL is how long an authenticated token, and an allowed access, are trusted
	// without asking again: a revoked token or role binding takes effect after it.
	AllowedTTL time.Duration
	// DeniedTTL is how long a refused token, and a denied access, are remembered.
	DeniedTTL time.Duration
	// CacheSize bounds each of the two caches.
	CacheSize int
	// Clock tells the time of the caches; nil is the real clock (tests pass a fake one).
	Clock clock.PassiveClock
}

// Reviewer asks the API server who a token belongs to and what its user may do, and caches
// the answers: keyed by the token's SHA-256 and by a hash of the user and the attributes of
// the access, yes and no for their own times to live, in caches of bounded size. Callers
// asking the same question at once share one review. Errors are never cached.
type Reviewer struct {
	client   client.Client
	opts     Options
	tokens   *cache.LRUExpireCache // token hash -> Identity
	access   *cache.LRUExpireCache // access key -> Decision
	inFlight singleflight.Group
}

// NewReviewer returns a reviewer that asks the API server c talks to; c needs to create
// tokenreviews (authentication.k8s.io) and subjectaccessreviews (authorization.k8s.io).
func NewReviewer(c client.Client, opts Options) *Reviewer {
	if opts.AllowedTTL <= 0 {
		opts.AllowedTTL = DefaultAllowedTTL
	}
	if opts.DeniedTTL <= 0 {
		opts.DeniedTTL = DefaultDeniedTTL
	}
	if opts.CacheSize <= 0 {
		opts.CacheSize = DefaultCacheSize
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	return &Reviewer{
		client: c, opts: opts,
		tokens: cache.NewLRUExpireCacheWithClock(opts.CacheSize, opts.Clock),
		access: cache.NewLRUExpireCacheWithClock(opts.CacheSize, opts.Clock),
	}
}

// Identity is what a TokenReview said of a token.
type Identity struct {
	Authenticated bool
	User          authenticationv1.UserInfo
	// Error is the review's reason for not authenticating the token (expired, unknown
	// issuer...); it reveals nothing the caller did not send.
	Error string
}

// Decision is what a SubjectAccessReview said of an access.
type Decision struct {
	Allowed bool
	Reason  string
}

// Access is what a user wants to do: exactly one of Resource and NonResource.
type Access struct {
	Resource    *authorizationv1.ResourceAttributes
	NonResource *authorizationv1.NonResourceAttributes
}

// Authenticate says who token belongs to; its error means the API server could not answer.
func (r *Reviewer) Authenticate(ctx context.Context, token string) (Identity, error) {
	sum := sha256.Sum256([]byte(token))
	key := "token:" + hex.EncodeToString(sum[:])
	v, err := r.cached(ctx, r.tokens, key, func(ctx context.Context) (any, bool, error) {
		review := &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token}}
		if err := r.client.Create(ctx, review); err != nil {
			return nil, false, err
		}
		id := Identity{Authenticated: review.Status.Authenticated, User: review.Status.User, Error: review.Status.Error}
		return id, id.Authenticated, nil
	})
	if err != nil {
		return Identity{}, err
	}
	return v.(Identity), nil
}

// Authorize says whether user may do what access names; its error means the API server could
// not answer.
func (r *Reviewer) Authorize(ctx context.Context, user authenticationv1.UserInfo, access Access) (Decision, error) {
	if (access.Resource == nil) == (access.NonResource == nil) {
		return Decision{}, errors.New("an access names either a resource or a non-resource URL")
	}
	key := accessKey(user, access)
	v, err := r.cached(ctx, r.access, key, func(ctx context.Context) (any, bool, error) {
		sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User:                  user.Username,
			UID:                   user.UID,
			Groups:                user.Groups,
			Extra:                 extra(user.Extra),
			ResourceAttributes:    access.Resource,
			NonResourceAttributes: access.NonResource,
		}}
		if err := r.client.Create(ctx, sar); err != nil {
			return nil, false, err
		}
		d := Decision{Allowed: sar.Status.Allowed, Reason: sar.Status.Reason}
		return d, d.Allowed, nil
	})
	if err != nil {
		return Decision{}, err
	}
	return v.(Decision), nil
}

// cached answers key from c, or asks review once for every caller waiting on key and caches
// its answer for the allowed or the denied time to live.
func (r *Reviewer) cached(ctx context.Context, c *cache.LRUExpireCache, key string, review func(context.Context) (any, bool, error)) (any, error) {
	if v, ok := c.Get(key); ok {
		return v, nil
	}
	v, err, _ := r.inFlight.Do(key, func() (any, error) {
		if v, ok := c.Get(key); ok { // answered while this caller waited
			return v, nil
		}
		// One caller's review serves them all: it must not end with that caller's request.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), reviewTimeout)
		defer cancel()
		v, yes, err := review(ctx)
		if err != nil {
			return nil, err
		}
		ttl := r.opts.DeniedTTL
		if yes {
			ttl = r.opts.AllowedTTL
		}
		c.Add(key, v, ttl)
		return v, nil
	})
	return v, err
}

// accessKey identifies a SubjectAccessReview: everything the API server decides on, the
// user's whole identity and the attributes, hashed. Each part is length-prefixed, so no two
// different reviews write the same bytes.
func accessKey(user authenticationv1.UserInfo, access Access) string {
	h := sha256.New()
	write := func(s string) { _, _ = fmt.Fprintf(h, "%d:%s;", len(s), s) }
	writeAll := func(values []string) {
		sorted := slices.Sorted(slices.Values(values))
		write(strconv.Itoa(len(sorted)))
		for _, v := range sorted {
			write(v)
		}
	}
	write(user.Username)
	write(user.UID)
	writeAll(user.Groups)
	keys := slices.Sorted(maps.Keys(user.Extra))
	write(strconv.Itoa(len(keys)))
	for _, k := range keys {
		write(k)
		writeAll(user.Extra[k])
	}
	if a := access.Resource; a != nil {
		for _, s := range []string{"resource", a.Namespace, a.Verb, a.Group, a.Version, a.Resource, a.Subresource, a.Name} {
			write(s)
		}
	}
	if a := access.NonResource; a != nil {
		for _, s := range []string{"non-resource", a.Path, a.Verb} {
			write(s)
		}
	}
	return "access:" + hex.EncodeToString(h.Sum(nil))
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

// Errors of BearerToken.
var (
	ErrNoAuthorization = errors.New("no Authorization header")
	ErrNotBearer       = errors.New("the Authorization header must use the Bearer scheme")
	ErrEmptyToken      = errors.New("the Authorization header's bearer token is empty")
)

// BearerToken takes the token out of an Authorization header value. Its errors are
// ErrNoAuthorization, ErrNotBearer and ErrEmptyToken.
func BearerToken(authorization string) (string, error) {
	if authorization == "" {
		return "", ErrNoAuthorization
	}
	scheme, token, _ := strings.Cut(authorization, " ")
	// The scheme is case-insensitive (RFC 9110).
	if !strings.EqualFold(scheme, "Bearer") {
		return "", fmt.Errorf("%w, not %q", ErrNotBearer, scheme)
	}
	token = strings.TrimSpace(token)
	if token == "" {
		return "", ErrEmptyToken
	}
	return token, nil
}
