// Package approval serves the approval and the rejection of a pipeline's promotions (a
// contract):
//
//	POST /pipelines/{namespace}/{name}/{environment}/{revision}/approve
//	POST /pipelines/{namespace}/{name}/{environment}/{revision}/reject   {"reason": "..."}
//
// each signed with the environment's approval key (package signature: X-Release-Controller-
// Timestamp and X-Release-Controller-Signature, a 5-minute window, each signature accepted
// once), or sent with a bearer token whose user Kubernetes RBAC allows to update
// pipelines/approval in the pipeline's namespace (a TokenReview and a SubjectAccessReview),
// and whom the environment's approval policy admits (approval.users, approval.groups; a
// signed request is one machine approver and never counts under a policy naming people).
// An approval is appended to the environment's status.environments[].approval; once the
// policy's minApprovers distinct approvers approved (and none of them approved the revision
// for the previous environment, under separationOfDuties), policyMet is set in the same
// write and the controller promotes. A rejection is appended to
// status.environments[].rejections and clears the approvals of its revision: the controller
// never promotes it there. Each is an Event on the pipeline and a release log entry.
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
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
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
	"github.com/release-controller/release-controller/internal/eventlog"
	"github.com/release-controller/release-controller/internal/kubeauth"
	"github.com/release-controller/release-controller/internal/pipeline/signature"
	"github.com/release-controller/release-controller/internal/releaselog"
	"github.com/release-controller/release-controller/internal/server"
	"github.com/release-controller/release-controller/internal/server/catalog"
)

// The routes' patterns.
const (
	Path       = "/pipelines/{namespace}/{name}/{environment}/{revision}/approve"
	RejectPath = "/pipelines/{namespace}/{name}/{environment}/{revision}/reject"
)

// What a bearer token's user must be allowed, to approve or reject: update on the
// pipelines/approval subresource (which only RBAC knows of) in the pipeline's namespace.
const (
	approveVerb        = "update"
	approveResource    = "pipelines"
	approveSubresource = "approval"
)

// FieldManager is the field manager of the approvals and rejections recorded in pipelines'
// status.
const FieldManager = "release-controller-approval"

// maxBody bounds the body of an approval (read by nobody but the signature) or a rejection
// (its reason, at most MaxReasonLength characters).
const maxBody = 64 << 10

// The api reads a pipeline from the API server once a request checked out (the catalog's
// informer has list and watch), records approvals and rejections in the pipeline's status,
// reports them as Events (create only: an approval's note never recurs, which is when the
// event recorder would patch a series), and its reviewer asks about tokens. Keys are read as the tenant
// (keys.go); release log entries are written through the release log's writer, whose rights
// the api has for the Connect API.
// +kubebuilder:rbac:groups=release-controller.dev,resources=pipelines,verbs=get
// +kubebuilder:rbac:groups=release-controller.dev,resources=pipelines/status,verbs=patch
// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create

// Pipelines finds pipelines in an informer cache (the server's catalog).
type Pipelines interface {
	// Pipeline returns the pipeline namespace/name, never to be changed.
	Pipeline(namespace, name string) (*v1alpha1.Pipeline, bool)
}

// Handler serves approvals and rejections.
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
	// Report records an Event on the pipeline for each approval and rejection; Log, when set,
	// writes their release log entries.
	Report eventlog.Recorder
	Log    *releaselog.Writer
	Now    func() time.Time

	// repeats remembers, by signature, how to answer a repeat of each signed request this
	// process recorded (a second approval signed in the same second is one), until the
	// signature leaves its window: so that the repeat is answered without reading anything.
	repeatsMu sync.Mutex
	repeats   map[string]repeat
}

// repeat is the answer to a signed request recorded before, sent again.
type repeat struct {
	// request is the digest of the request the signature was accepted for (requestDigest).
	request string
	answer  error
	expires time.Time
}

// NewHandler returns a handler: c writes approvals, live reads pipelines from the API server,
// pipelines from the cache, keys reads approval keys, reviewer answers for bearer tokens.
// Set Report and Log to have approvals and rejections recorded as Events and in the release
// log.
func NewHandler(c client.Client, live client.Reader, pipelines Pipelines, keys Keys, reviewer *kubeauth.Reviewer) *Handler {
	return &Handler{Client: c, Live: live, Pipelines: pipelines, Keys: keys, Reviewer: reviewer, Verifier: signature.NewVerifier(nil), Now: time.Now}
}

// Register adds the routes to s.
func Register(s *server.Server, h *Handler) {
	s.Handle("POST "+Path, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { serve(w, r, "recording an approval", h.approve) }),
		server.MaxBodyBytes(maxBody))
	s.Handle("POST "+RejectPath, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { serve(w, r, "recording a rejection", h.reject) }),
		server.MaxBodyBytes(maxBody))
}

// Response is the body of a recorded approval.
type Response struct {
	Namespace   string `json:"namespace"`
	Pipeline    string `json:"pipeline"`
	Environment string `json:"environment"`
	Revision    string `json:"revision"`
	// Approver is who sent this approval.
	Approver string    `json:"approver"`
	Time     time.Time `json:"time"`
	// Approvers are every approver of the revision so far, in order, this one last.
	Approvers []string `json:"approvers"`
	// MinApprovers is how many distinct approvers the environment's policy needs.
	MinApprovers int `json:"minApprovers"`
	// PolicyMet is when the approvals met the policy (this one's time); absent while more
	// are needed.
	PolicyMet *time.Time `json:"policyMet,omitempty"`
	// Warnings say what could not be reported of a recorded approval (its release log entry).
	Warnings []string `json:"warnings,omitempty"`
}

// RejectBody is the body of a rejection.
type RejectBody struct {
	// Reason is why the revision is rejected: required, at most MaxReasonLength characters.
	Reason string `json:"reason"`
}

// RejectResponse is the body of a recorded rejection.
type RejectResponse struct {
	Namespace   string    `json:"namespace"`
	Pipeline    string    `json:"pipeline"`
	Environment string    `json:"environment"`
	Revision    string    `json:"revision"`
	By          string    `json:"by"`
	Reason      string    `json:"reason"`
	Time        time.Time `json:"time"`
	// Withdrawn are the approvers whose approvals of the revision the rejection cleared.
	Withdrawn []string `json:"withdrawn,omitempty"`
	// Warnings say what could not be reported of a recorded rejection (its release log entry).
	Warnings []string `json:"warnings,omitempty"`
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

// serve answers r with what do returns: its JSON, or the refusal.
func serve[T any](w http.ResponseWriter, r *http.Request, what string, do func(*http.Request) (T, error)) {
	resp, err := do(r)
	if err != nil {
		var he *httpError
		if !errors.As(err, &he) {
			ctrl.LoggerFrom(r.Context()).Error(err, what, "path", r.URL.Path)
			he = &httpError{code: http.StatusInternalServerError, msg: what + " failed: " + err.Error()}
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

// request is an approval or a rejection whose sender checked out.
type request struct {
	key           types.NamespacedName
	env, revision string
	body          []byte
	who           Identity
	// signed is the signature of a signed request, secret the name of the Secret whose key
	// verified it.
	signed *signature.Signed
	secret string
	// digest is requestDigest of a signed request.
	digest string
}

func (h *Handler) approve(r *http.Request) (*Response, error) {
	req, err := h.check(r)
	if err != nil {
		return nil, err
	}
	now := h.Now().UTC()
	var need int
	p, rec, err := h.write(r.Context(), req, now, func(policy v1alpha1.Approval, current, previous *v1alpha1.EnvironmentStatus) (*v1alpha1.ApprovalRecord, []v1alpha1.RejectionRecord, error) {
		need = MinApprovers(policy)
		rec, err := Decide(policy, current, previous, req.who, req.revision, now)
		return rec, current.Rejections, err
	})
	if err != nil {
		return nil, err
	}
	resp := &Response{Namespace: req.key.Namespace, Pipeline: req.key.Name, Environment: req.env, Revision: req.revision,
		Approver: req.who.Name, Time: rec.Time.Time, Approvers: approverNames(rec), MinApprovers: need}
	if rec.PolicyMet != nil {
		resp.PolicyMet = &rec.PolicyMet.Time
	}
	h.remember(req, now, Repeated(req.env, req.revision, req.who, rec, nil, need))
	resp.Warnings = h.reportApproval(r.Context(), p, req, rec, need)
	return resp, nil
}

func (h *Handler) reject(r *http.Request) (*RejectResponse, error) {
	req, err := h.check(r)
	if err != nil {
		return nil, err
	}
	var body RejectBody
	dec := json.NewDecoder(bytes.NewReader(req.body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&body); err != nil {
		return nil, fail(http.StatusBadRequest, `a rejection's body is {"reason": "..."}: %v`, err)
	}
	if dec.More() {
		return nil, fail(http.StatusBadRequest, `a rejection's body is one JSON object, {"reason": "..."}`)
	}
	now := h.Now().UTC()
	var decided Rejection
	p, _, err := h.write(r.Context(), req, now, func(policy v1alpha1.Approval, current, _ *v1alpha1.EnvironmentStatus) (*v1alpha1.ApprovalRecord, []v1alpha1.RejectionRecord, error) {
		var err error
		decided, err = DecideRejection(policy, current, req.who, req.revision, body.Reason, now)
		return decided.Approval, decided.Rejections, err
	})
	if err != nil {
		return nil, err
	}
	rejected := decided.Rejections[len(decided.Rejections)-1]
	h.remember(req, now, Repeated(req.env, req.revision, req.who, nil, decided.Rejections, 0))
	resp := &RejectResponse{Namespace: req.key.Namespace, Pipeline: req.key.Name, Environment: req.env, Revision: req.revision,
		By: rejected.By, Reason: rejected.Reason, Time: rejected.Time.Time, Withdrawn: decided.Withdrawn}
	resp.Warnings = h.reportRejection(r.Context(), p, req, rejected, decided.Withdrawn)
	return resp, nil
}

// check authenticates r and checks it against the cached pipeline: its sender may approve
// or reject in the environment (RBAC, the policy's users and groups, the key of a signature).
func (h *Handler) check(r *http.Request) (*request, error) {
	ctx := r.Context()
	req := &request{
		key: types.NamespacedName{Namespace: r.PathValue("namespace"), Name: r.PathValue("name")},
		env: r.PathValue("environment"), revision: r.PathValue("revision"),
	}
	var err error
	if req.body, err = io.ReadAll(r.Body); err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return nil, fail(http.StatusRequestEntityTooLarge, "the body is larger than %d bytes", maxBody)
		}
		return nil, fail(http.StatusBadRequest, "reading the body: %v", err)
	}

	// A bearer token is checked before anything is read, so that an unauthenticated caller
	// learns nothing of the pipelines; a signature's headers, window and this process's
	// memory of used signatures likewise.
	switch {
	case r.Header.Get("Authorization") != "":
		if req.who, err = h.authorize(ctx, r.Header.Get("Authorization"), req.key); err != nil {
			return nil, err
		}
	case r.Header.Get(signature.HeaderSignature) == "" && r.Header.Get(signature.HeaderTimestamp) == "":
		return nil, fail(http.StatusUnauthorized, "a request is signed (%s and %s headers) or carries an Authorization: Bearer <token> header",
			signature.HeaderTimestamp, signature.HeaderSignature)
	default:
		s, err := signature.ParseHeaders(r.Header.Get(signature.HeaderTimestamp), r.Header.Get(signature.HeaderSignature))
		if err == nil {
			err = h.Verifier.Check(s)
		}
		if errors.Is(err, signature.ErrReplayed) {
			// The very request this process recorded is answered as it was recorded.
			return nil, h.repeated(s, r.Method, r.URL.EscapedPath(), req.body)
		}
		if err != nil {
			return nil, signatureError(err)
		}
		req.signed = &s
		req.who = Identity{Signed: true}
	}

	// A namespace or name no object can have names no pipeline.
	if len(validation.IsDNS1123Label(req.key.Namespace)) > 0 || len(validation.IsDNS1123Subdomain(req.key.Name)) > 0 {
		return nil, fail(http.StatusNotFound, "pipeline %s not found", req.key)
	}
	cached, ok := h.Pipelines.Pipeline(req.key.Namespace, req.key.Name)
	if !ok {
		return nil, fail(http.StatusNotFound, "pipeline %s not found", req.key)
	}
	env := environment(cached, req.env)
	if env == nil {
		return nil, fail(http.StatusNotFound, "pipeline %s has no environment %q", req.key, req.env)
	}
	if env.Approval == nil {
		return nil, fail(http.StatusConflict, "environment %q of pipeline %s does not ask for approval", req.env, req.key)
	}
	// The policy refuses a signature without a key or under a policy naming people before
	// the key is read, and a user it does not name before the pipeline is.
	if err := Permit(*env.Approval, req.env, req.who); err != nil {
		return nil, err
	}
	if req.signed != nil {
		req.secret = env.Approval.SecretRef.Name
		secret, err := h.Keys.Key(ctx, cached, req.secret)
		if err != nil {
			return nil, err
		}
		if err := h.Verifier.Accept(signature.Approval, secret, r.Method, r.URL.EscapedPath(), *req.signed, req.body); err != nil {
			if errors.Is(err, signature.ErrReplayed) {
				// Accepted meanwhile: the same request sent twice at once.
				return nil, h.repeated(*req.signed, r.Method, r.URL.EscapedPath(), req.body)
			}
			return nil, signatureError(err)
		}
		req.digest = requestDigest(*req.signed, r.Method, r.URL.EscapedPath(), req.body)
		req.who = SignedIdentity(req.secret)
	}
	return req, nil
}

// change computes what a request changes in an environment's status from the live pipeline:
// its approval record (nil: none) and its rejections. policy is the environment's, current its
// status (at least its name), previous the status of the environment before it (nil for the
// first).
type change func(policy v1alpha1.Approval, current, previous *v1alpha1.EnvironmentStatus) (*v1alpha1.ApprovalRecord, []v1alpha1.RejectionRecord, error)

// write reads the live pipeline, computes req's change and records it, with the used
// signature of a signed request: a server-side apply of the environment's approval record and
// rejections alone, conditioned on the resourceVersion read (two replicas cannot both record
// one signature, nor two approvers both be the one that met a policy), retried on a
// conflict. It returns the pipeline read and the approval record written.
func (h *Handler) write(ctx context.Context, req *request, now time.Time, c change) (*v1alpha1.Pipeline, *v1alpha1.ApprovalRecord, error) {
	var p v1alpha1.Pipeline
	var record *v1alpha1.ApprovalRecord
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		p = v1alpha1.Pipeline{}
		if err := h.Live.Get(ctx, req.key, &p); err != nil {
			if apierrors.IsNotFound(err) {
				return fail(http.StatusNotFound, "pipeline %s not found", req.key)
			}
			return err
		}
		// The pipeline may have changed since the cache's copy: the approval must still be
		// asked for, with the key that verified the signature.
		i := slices.IndexFunc(p.Spec.Environments, func(e v1alpha1.Environment) bool { return e.Name == req.env })
		if i < 0 {
			return fail(http.StatusNotFound, "pipeline %s has no environment %q", req.key, req.env)
		}
		live := p.Spec.Environments[i].Approval
		switch {
		case live == nil:
			return fail(http.StatusConflict, "environment %q of pipeline %s does not ask for approval", req.env, req.key)
		case req.signed != nil && live.SecretRef != nil && live.SecretRef.Name != req.secret:
			return fail(http.StatusConflict, "the approval key of environment %q of pipeline %s changed while the request was checked: sign it with the key of Secret %s",
				req.env, req.key, live.SecretRef.Name)
		}
		current := catalog.EnvironmentStatus(&p, req.env)
		if current == nil {
			current = &v1alpha1.EnvironmentStatus{Name: req.env}
		}
		var previous *v1alpha1.EnvironmentStatus
		if i > 0 {
			previous = catalog.EnvironmentStatus(&p, p.Spec.Environments[i-1].Name)
		}
		var used []v1alpha1.UsedSignature
		if current.Approval != nil {
			used = current.Approval.UsedSignatures
		}
		var digest string
		var expires time.Time
		if req.signed != nil {
			digest, expires = req.signed.Digest(), req.signed.Expires()
		}
		used, err := RecordSignature(used, digest, expires, now)
		if errors.Is(err, errReplayed) {
			// Recorded by another replica, or by this one before it restarted: the signature
			// verified, so this is that request again, answered with what it recorded.
			return Repeated(req.env, req.revision, req.who, current.Approval, current.Rejections, MinApprovers(*live))
		}
		if err != nil {
			return err
		}
		rec, rejections, err := c(*live, current, previous)
		if err != nil {
			return err
		}
		if rec == nil && len(used) > 0 {
			// A signed rejection: its signature is kept in a record of no revision.
			rec = &v1alpha1.ApprovalRecord{Time: metav1.NewTime(now.Truncate(time.Second))}
		}
		if rec != nil {
			rec.UsedSignatures = used
			if len(rec.Approvers) == 0 && rec.Approver == "" && len(used) == 0 {
				// Nothing left to record: no approval, no signature to refuse again.
				rec = nil
			}
		}
		record = rec
		// The route's whole part of the environment's status, every time: server-side apply
		// removes what its field manager applied before and leaves out now (a cleared
		// approval record), and the controller's part is left to it.
		item, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&v1alpha1.EnvironmentStatus{Name: req.env, Approval: rec, Rejections: rejections})
		if err != nil {
			return err
		}
		u := &unstructured.Unstructured{Object: map[string]any{"status": map[string]any{"environments": []any{item}}}}
		u.SetGroupVersionKind(v1alpha1.GroupVersion.WithKind("Pipeline"))
		u.SetNamespace(req.key.Namespace)
		u.SetName(req.key.Name)
		u.SetResourceVersion(p.ResourceVersion)
		return h.Client.Status().Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(FieldManager), client.ForceOwnership)
	})
	if err != nil {
		return nil, nil, err
	}
	return &p, record, nil
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
		return nil, errReplayed
	}
	if len(kept) >= v1alpha1.MaxUsedApprovalSignatures {
		oldest := slices.MinFunc(kept, func(a, b v1alpha1.UsedSignature) int { return a.Expires.Compare(b.Expires.Time) })
		return nil, fail(http.StatusTooManyRequests, "the environment accepted %d signed approvals within %s, as many as status.environments[].approval.usedSignatures keeps: try again after %s",
			len(kept), signature.Window, oldest.Expires.UTC().Format(time.RFC3339))
	}
	return append(kept, v1alpha1.UsedSignature{SHA256: digest, Expires: metav1.NewTime(expires.UTC().Truncate(time.Second).Add(time.Second))}), nil
}

// errReplayed is RecordSignature's refusal of a signature recorded already.
var errReplayed = signatureError(signature.ErrReplayed)

// remember keeps the answer to a repeat of req, a signed request just recorded at now, until
// its signature leaves the window; the answers whose window has passed are dropped.
func (h *Handler) remember(req *request, now time.Time, answer error) {
	if req.signed == nil {
		return
	}
	h.repeatsMu.Lock()
	defer h.repeatsMu.Unlock()
	if h.repeats == nil {
		h.repeats = map[string]repeat{}
	}
	for k, r := range h.repeats {
		if now.After(r.expires) {
			delete(h.repeats, k)
		}
	}
	h.repeats[req.signed.Digest()] = repeat{request: req.digest, answer: answer, expires: req.signed.Expires()}
}

// repeated answers a request whose signature s this process accepted before: as remembered
// when it is the very request recorded (same method, path, timestamp and body; nothing else
// has its signature without the key), else as a replay.
func (h *Handler) repeated(s signature.Signed, method, path string, body []byte) error {
	h.repeatsMu.Lock()
	r, ok := h.repeats[s.Digest()]
	h.repeatsMu.Unlock()
	if ok && r.request == requestDigest(s, method, path, body) {
		return r.answer
	}
	return signatureError(signature.ErrReplayed)
}

// requestDigest is the SHA-256 of what a signature covers: a request's method, path,
// timestamp and body.
func requestDigest(s signature.Signed, method, path string, body []byte) string {
	h := sha256.New()
	h.Write([]byte(signature.Approval.Message(method, path, s.Timestamp)))
	h.Write(body)
	return hex.EncodeToString(h.Sum(nil))
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
// the pipeline. It returns the user and their groups.
func (h *Handler) authorize(ctx context.Context, authorization string, key types.NamespacedName) (Identity, error) {
	token, err := kubeauth.BearerToken(authorization)
	if err != nil {
		return Identity{}, fail(http.StatusUnauthorized, "%v", err)
	}
	id, err := h.Reviewer.Authenticate(ctx, token)
	if err != nil {
		return Identity{}, fmt.Errorf("checking the bearer token with the API server: %w", err)
	}
	if !id.Authenticated {
		msg := "the bearer token is not valid"
		if id.Error != "" {
			msg += ": " + id.Error
		}
		return Identity{}, fail(http.StatusUnauthorized, "%s", msg)
	}
	d, err := h.Reviewer.Authorize(ctx, id.User, kubeauth.Access{Resource: &authorizationv1.ResourceAttributes{
		Namespace: key.Namespace, Verb: approveVerb, Group: v1alpha1.GroupVersion.Group,
		Resource: approveResource, Subresource: approveSubresource, Name: key.Name,
	}})
	if err != nil {
		return Identity{}, fmt.Errorf("checking %q's permissions with the API server: %w", id.User.Username, err)
	}
	if !d.Allowed {
		msg := fmt.Sprintf("user %q may not %s %s/%s of pipeline %s, which approving and rejecting need", id.User.Username, approveVerb, approveResource, approveSubresource, key)
		if d.Reason != "" {
			msg += " (" + d.Reason + ")"
		}
		return Identity{}, fail(http.StatusForbidden, "%s", msg)
	}
	return Identity{Name: id.User.Username, Groups: id.User.Groups}, nil
}

func environment(p *v1alpha1.Pipeline, name string) *v1alpha1.Environment {
	for i := range p.Spec.Environments {
		if p.Spec.Environments[i].Name == name {
			return &p.Spec.Environments[i]
		}
	}
	return nil
}
