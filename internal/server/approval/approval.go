// Package approval serves the approval of a pipeline's waiting promotion (a contract):
//
//	POST /pipelines/{namespace}/{name}/{environment}/{revision}/approve
//
// signed with the environment's approval key (package signature: X-Release-Controller-Timestamp
// and X-Release-Controller-Signature, a 5-minute window, each signature accepted once), or
// with a bearer token whose user Kubernetes RBAC allows to update pipelines/approval in the
// pipeline's namespace (a TokenReview and a SubjectAccessReview). The approval is recorded in
// the environment's status (status.environments[].approval, with the approver); the
// controller then promotes.
//
// Nothing is read from the API server for a signed request before its signature checks out:
// the headers' format, the timestamp's window and this process's memory of used signatures
// come first; the pipeline comes from the informer cache; the key Secret is read (as the
// pipeline's ServiceAccount) only to verify; the live pipeline only once the signature
// verified. The signatures accepted are recorded in the status with the approval
// (approval.usedSignatures, in the same write, conditioned on the resourceVersion read), so
// that another replica, or this one restarted, refuses them too.
package approval

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/util/retry"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/kubeauth"
	"github.com/release-controller/release-controller/internal/pipeline/signature"
	"github.com/release-controller/release-controller/internal/server"
)

// Path is the route's pattern.
const Path = "/pipelines/{namespace}/{name}/{environment}/{revision}/approve"

// What a bearer token's user must be allowed: update on the pipelines/approval subresource
// (which only RBAC knows of) in the pipeline's namespace.
const (
	approveVerb        = "update"
	approveResource    = "pipelines"
	approveSubresource = "approval"
)

// FieldManager is the field manager of the approvals recorded in pipelines' status.
const FieldManager = "release-controller-approval"

// maxBody bounds an approval's body (a comment, if anything).
const maxBody = 64 << 10

// The api reads a pipeline from the API server once a request checked out (the catalog's
// informer has list and watch), records the approval in the pipeline's status, and its
// reviewer asks about tokens. Keys are read as the tenant (keys.go).
// +kubebuilder:rbac:groups=release-controller.dev,resources=pipelines,verbs=get
// +kubebuilder:rbac:groups=release-controller.dev,resources=pipelines/status,verbs=patch
// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create

// Pipelines finds pipelines in an informer cache (the server's catalog).
type Pipelines interface {
	// Pipeline returns the pipeline namespace/name, never to be changed.
	Pipeline(namespace, name string) (*v1alpha1.Pipeline, bool)
}

// Handler serves approvals.
type Handler struct {
	// Client writes the pipelines' status; Live reads a pipeline from the API server once the
	// request checked out; Pipelines finds it in the cache before.
	Client    client.Client
	Live      client.Reader
	Pipelines Pipelines
	// Keys reads approval keys (as the tenant).
	Keys     Keys
	Reviewer *kubeauth.Reviewer
	// Verifier remembers the signatures this process accepted (the status records them for
	// every replica).
	Verifier *signature.Verifier
	Now      func() time.Time
}

// NewHandler returns a handler: c writes approvals, live reads pipelines from the API server,
// pipelines from the cache, keys reads approval keys, reviewer answers for bearer tokens.
func NewHandler(c client.Client, live client.Reader, pipelines Pipelines, keys Keys, reviewer *kubeauth.Reviewer) *Handler {
	return &Handler{Client: c, Live: live, Pipelines: pipelines, Keys: keys, Reviewer: reviewer, Verifier: signature.NewVerifier(nil), Now: time.Now}
}

// Register adds the route to s.
func Register(s *server.Server, h *Handler) {
	s.Handle("POST "+Path, h, server.MaxBodyBytes(maxBody))
}

// Response is the body of a recorded approval.
type Response struct {
	Namespace   string    `json:"namespace"`
	Pipeline    string    `json:"pipeline"`
	Environment string    `json:"environment"`
	Revision    string    `json:"revision"`
	Approver    string    `json:"approver"`
	Time        time.Time `json:"time"`
}

// httpError is an answer other than 200.
type httpError struct {
	code int
	msg  string
}

func (e *httpError) Error() string { return e.msg }

// StatusOf is the HTTP status code an error of the handler answers with.
func StatusOf(err error) int {
	var he *httpError
	if errors.As(err, &he) {
		return he.code
	}
	return http.StatusInternalServerError
}

func fail(code int, format string, args ...any) error {
	return &httpError{code: code, msg: fmt.Sprintf(format, args...)}
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	resp, err := h.approve(r)
	if err != nil {
		var he *httpError
		if !errors.As(err, &he) {
			ctrl.LoggerFrom(r.Context()).Error(err, "recording an approval", "path", r.URL.Path)
			he = &httpError{code: http.StatusInternalServerError, msg: "recording the approval failed: " + err.Error()}
		}
		if he.code == http.StatusUnauthorized {
			w.Header().Set("WWW-Authenticate", `Bearer realm="release-controller"`)
		}
		http.Error(w, he.msg, he.code)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(resp)
}

func (h *Handler) approve(r *http.Request) (*Response, error) {
	ctx := r.Context()
	key := types.NamespacedName{Namespace: r.PathValue("namespace"), Name: r.PathValue("name")}
	envName, revision := r.PathValue("environment"), r.PathValue("revision")
	body, err := io.ReadAll(r.Body)
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return nil, fail(http.StatusRequestEntityTooLarge, "the body is larger than %d bytes", maxBody)
		}
		return nil, fail(http.StatusBadRequest, "reading the body: %v", err)
	}

	// A bearer token is checked before anything is read, so that an unauthenticated caller
	// learns nothing of the pipelines; a signature's headers, window and this process's
	// memory of used signatures likewise.
	approver := ""
	var signed *signature.Signed
	switch {
	case r.Header.Get("Authorization") != "":
		if approver, err = h.authorize(ctx, r.Header.Get("Authorization"), key); err != nil {
			return nil, err
		}
	case r.Header.Get(signature.HeaderSignature) == "" && r.Header.Get(signature.HeaderTimestamp) == "":
		return nil, fail(http.StatusUnauthorized, "an approval is signed (%s and %s headers) or carries an Authorization: Bearer <token> header",
			signature.HeaderTimestamp, signature.HeaderSignature)
	default:
		s, err := signature.ParseHeaders(r.Header.Get(signature.HeaderTimestamp), r.Header.Get(signature.HeaderSignature))
		if err == nil {
			err = h.Verifier.Check(s)
		}
		if err != nil {
			return nil, signatureError(err)
		}
		signed = &s
	}

	// A namespace or name no object can have names no pipeline.
	if len(validation.IsDNS1123Label(key.Namespace)) > 0 || len(validation.IsDNS1123Subdomain(key.Name)) > 0 {
		return nil, fail(http.StatusNotFound, "pipeline %s not found", key)
	}
	cached, ok := h.Pipelines.Pipeline(key.Namespace, key.Name)
	if !ok {
		return nil, fail(http.StatusNotFound, "pipeline %s not found", key)
	}
	env := environment(cached, envName)
	if env == nil {
		return nil, fail(http.StatusNotFound, "pipeline %s has no environment %q", key, envName)
	}
	if env.Approval == nil {
		return nil, fail(http.StatusConflict, "environment %q of pipeline %s does not ask for approval", envName, key)
	}
	secretName := ""
	if signed != nil {
		if env.Approval.SecretRef == nil {
			return nil, fail(http.StatusForbidden, "environment %q has no approval.secretRef, so it takes no signed (HMAC) requests: send a bearer token (Authorization: Bearer)", envName)
		}
		secretName = env.Approval.SecretRef.Name
		secret, err := h.Keys.Key(ctx, cached, secretName)
		if err != nil {
			return nil, err
		}
		if err := h.Verifier.Accept(signature.Approval, secret, r.Method, r.URL.EscapedPath(), *signed, body); err != nil {
			return nil, signatureError(err)
		}
		approver = "hmac:" + secretName
	}

	now := h.Now().UTC()
	at := metav1.NewTime(now.Truncate(time.Second))
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var p v1alpha1.Pipeline
		if err := h.Live.Get(ctx, key, &p); err != nil {
			if apierrors.IsNotFound(err) {
				return fail(http.StatusNotFound, "pipeline %s not found", key)
			}
			return err
		}
		// The pipeline may have changed since the cache's copy: the approval must still be
		// asked for, with the key that verified the signature.
		live := environment(&p, envName)
		switch {
		case live == nil:
			return fail(http.StatusNotFound, "pipeline %s has no environment %q", key, envName)
		case live.Approval == nil:
			return fail(http.StatusConflict, "environment %q of pipeline %s does not ask for approval", envName, key)
		case signed != nil && live.Approval.SecretRef == nil:
			return fail(http.StatusForbidden, "environment %q has no approval.secretRef, so it takes no signed (HMAC) requests: send a bearer token (Authorization: Bearer)", envName)
		case signed != nil && live.Approval.SecretRef.Name != secretName:
			return fail(http.StatusConflict, "the approval key of environment %q of pipeline %s changed while the request was checked: sign it with the key of Secret %s",
				envName, key, live.Approval.SecretRef.Name)
		}
		st := environmentStatus(&p, envName)
		var used []v1alpha1.UsedSignature
		if st != nil && st.Approval != nil {
			used = st.Approval.UsedSignatures
		}
		var digest string
		var expires time.Time
		if signed != nil {
			digest, expires = signed.Digest(), signed.Expires()
		}
		used, err := RecordSignature(used, digest, expires, now)
		if err != nil {
			return err
		}
		if err := waiting(st, envName, revision); err != nil {
			return err
		}
		// Server-side apply of the approval alone (the used signatures with it), on the
		// condition that the pipeline is still the one checked (its resourceVersion): two
		// replicas cannot both record one signature, and the controller's part of the
		// status is left to it.
		record, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&v1alpha1.ApprovalRecord{Revision: revision, Approver: approver, Time: at, UsedSignatures: used})
		if err != nil {
			return err
		}
		u := &unstructured.Unstructured{Object: map[string]any{"status": map[string]any{
			"environments": []any{map[string]any{"name": envName, "approval": record}},
		}}}
		u.SetGroupVersionKind(v1alpha1.GroupVersion.WithKind("Pipeline"))
		u.SetNamespace(key.Namespace)
		u.SetName(key.Name)
		u.SetResourceVersion(p.ResourceVersion)
		return h.Client.Status().Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(FieldManager), client.ForceOwnership)
	})
	if err != nil {
		return nil, err
	}
	ctrl.LoggerFrom(ctx).Info("approval recorded", "pipeline", key, "environment", envName, "revision", revision, "approver", approver)
	return &Response{Namespace: key.Namespace, Pipeline: key.Name, Environment: envName, Revision: revision, Approver: approver, Time: at.Time}, nil
}

// RecordSignature is the list of used signatures after accepting the one of digest (empty:
// a bearer approval, none): the entries whose window has passed at now are dropped, digest
// added. It refuses a digest in the list (a replay: 409) and a full list (429: the oldest
// entry leaves the window soon).
func RecordSignature(used []v1alpha1.UsedSignature, digest string, expires, now time.Time) ([]v1alpha1.UsedSignature, error) {
	kept := make([]v1alpha1.UsedSignature, 0, len(used)+1)
	for _, u := range used {
		if !now.After(u.Expires.Time) {
			kept = append(kept, u)
		}
	}
	if digest == "" {
		return kept, nil
	}
	if slices.ContainsFunc(kept, func(u v1alpha1.UsedSignature) bool { return u.SHA256 == digest }) {
		return nil, signatureError(signature.ErrReplayed)
	}
	if len(kept) >= v1alpha1.MaxUsedApprovalSignatures {
		oldest := slices.MinFunc(kept, func(a, b v1alpha1.UsedSignature) int { return a.Expires.Compare(b.Expires.Time) })
		return nil, fail(http.StatusTooManyRequests, "the environment accepted %d signed approvals within %s, as many as status.environments[].approval.usedSignatures keeps: try again after %s",
			len(kept), signature.Window, oldest.Expires.UTC().Format(time.RFC3339))
	}
	return append(kept, v1alpha1.UsedSignature{SHA256: digest, Expires: metav1.NewTime(expires.UTC().Truncate(time.Second).Add(time.Second))}), nil
}

// waiting checks that s waits for the approval of revision.
func waiting(s *v1alpha1.EnvironmentStatus, env, revision string) error {
	switch {
	case s == nil || s.WaitingApproval == nil:
		if s != nil && s.LastPromotion != nil && s.LastPromotion.Revision == revision {
			return fail(http.StatusConflict, "environment %q was promoted to %s already", env, revision)
		}
		return fail(http.StatusConflict, "environment %q is not waiting for an approval", env)
	case s.WaitingApproval.Revision != revision:
		return fail(http.StatusConflict, "environment %q waits for the approval of revision %s, not %s", env, s.WaitingApproval.Revision, revision)
	case s.Approval != nil && s.Approval.Revision == revision:
		return fail(http.StatusConflict, "revision %s of environment %q is approved already (by %s)", revision, env, s.Approval.Approver)
	}
	return nil
}

// signatureError answers a refused signature; no message quotes an HMAC.
func signatureError(err error) error {
	switch {
	case errors.Is(err, signature.ErrMalformed), errors.Is(err, signature.ErrTimestamp):
		return fail(http.StatusBadRequest, "%v", err)
	case errors.Is(err, signature.ErrReplayed):
		return fail(http.StatusConflict, "%v", err)
	}
	return fail(http.StatusUnauthorized, "%v", err)
}

// authorize checks a bearer token: its user must be allowed to update pipelines/approval of
// the pipeline. It returns the username.
func (h *Handler) authorize(ctx context.Context, authorization string, key types.NamespacedName) (string, error) {
	token, err := kubeauth.BearerToken(authorization)
	if err != nil {
		return "", fail(http.StatusUnauthorized, "%v", err)
	}
	id, err := h.Reviewer.Authenticate(ctx, token)
	if err != nil {
		return "", fmt.Errorf("checking the bearer token with the API server: %w", err)
	}
	if !id.Authenticated {
		msg := "the bearer token is not valid"
		if id.Error != "" {
			msg += ": " + id.Error
		}
		return "", fail(http.StatusUnauthorized, "%s", msg)
	}
	d, err := h.Reviewer.Authorize(ctx, id.User, kubeauth.Access{Resource: &authorizationv1.ResourceAttributes{
		Namespace: key.Namespace, Verb: approveVerb, Group: v1alpha1.GroupVersion.Group,
		Resource: approveResource, Subresource: approveSubresource, Name: key.Name,
	}})
	if err != nil {
		return "", fmt.Errorf("checking %q's permissions with the API server: %w", id.User.Username, err)
	}
	if !d.Allowed {
		msg := fmt.Sprintf("user %q may not %s %s/%s of pipeline %s, which approving needs", id.User.Username, approveVerb, approveResource, approveSubresource, key)
		if d.Reason != "" {
			msg += " (" + d.Reason + ")"
		}
		return "", fail(http.StatusForbidden, "%s", msg)
	}
	return id.User.Username, nil
}

func environment(p *v1alpha1.Pipeline, name string) *v1alpha1.Environment {
	for i := range p.Spec.Environments {
		if p.Spec.Environments[i].Name == name {
			return &p.Spec.Environments[i]
		}
	}
	return nil
}

func environmentStatus(p *v1alpha1.Pipeline, name string) *v1alpha1.EnvironmentStatus {
	for i := range p.Status.Environments {
		if p.Status.Environments[i].Name == name {
			return &p.Status.Environments[i]
		}
	}
	return nil
}
