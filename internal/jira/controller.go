// Package jira moves the Jira issues fixed by an accepted payload to a target status, with a
// comment linking the payload, once per issue and payload: the decision of what to do with one
// issue (plan, a pure function), its execution over a payload's issues (verifyIssues), and the
// ReleasePayload controller that runs it for streams whose spec.jira is set (Reconciler). The
// REST client and its wire types are jiraclient; jiratest is a local Jira server for the tests.
package jira

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/changelog"
	"github.com/release-controller/release-controller/internal/conditions"
	"github.com/release-controller/release-controller/internal/eventlog"
	"github.com/release-controller/release-controller/internal/jira/jiraclient"
	"github.com/release-controller/release-controller/internal/jobcontract"
	"github.com/release-controller/release-controller/internal/secreturl"
	"github.com/release-controller/release-controller/internal/verdict"
)

// Secret keys of a stream's spec.jira.tokenSecret.
const (
	// SecretKeyToken holds a personal access token, or with SecretKeyEmail a Jira Cloud API token.
	SecretKeyToken = "token"
	// SecretKeyEmail, optional, is the Jira Cloud account the API token belongs to.
	SecretKeyEmail = "email"
)

// defaultTargetStatus is the status issues are moved to when the stream names none.
const defaultTargetStatus = "VERIFIED"

// indexAcceptedByStream indexes the accepted payloads by their stream's name; payloads that
// are not accepted are not in it. It is smaller than the stream controller's index of every
// payload, and answers the one question asked here: which accepted payload came before.
const indexAcceptedByStream = "jira.release-controller.dev/accepted-by-stream"

// Defaults of the controller's retries of a payload whose issues could not all be verified
// for a reason that may go away (Jira unavailable, a changelog not computed, a missing Secret).
const (
	defaultRetryBase = 10 * time.Second
	defaultRetryMax  = 10 * time.Minute
	// defaultWorkers is how many payloads are handled at once; the Jira rate limit is shared.
	defaultWorkers = 2
	// DefaultMaxAge: payloads accepted more than a day before are left alone.
	DefaultMaxAge = 24 * time.Hour
)

// conflictRetry is how soon a payload whose status write met a newer version is handled
// again; the issues are not touched twice (plan reads Jira's state first).
const conflictRetry = 100 * time.Millisecond

// conflictRewrites is how many times a pass writes what it found onto a newer payload before
// it leaves the payload to the next pass.
const conflictRewrites = 3

// PayloadPageURL returns a PayloadURL linking to the payload's page on the server at base
// (e.g. https://release.example.com): /namespaces/{namespace}/releasestream/{stream}/release/{tag}.
func PayloadPageURL(base string) func(*v1alpha1.ReleasePayload) string {
	base = strings.TrimSuffix(base, "/")
	return func(p *v1alpha1.ReleasePayload) string {
		return base + "/namespaces/" + url.PathEscape(p.Namespace) + "/releasestream/" +
			url.PathEscape(p.Spec.PayloadCoordinates.Stream) + "/release/" + url.PathEscape(p.Name)
	}
}

// Reconciler moves the Jira issues fixed by each accepted payload of a stream with spec.jira
// to the stream's target status, with a comment linking the payload, and records the outcome
// in the payload's PayloadIssuesVerified condition.
type Reconciler struct {
	client.Client
	// APIReader reads the token Secrets: the manager caches only Secrets' metadata, so that
	// no Secret's data is kept in memory; nil: the manager's.
	APIReader client.Reader
	// ChangeLogs computes the changelog from the previous accepted payload; its commits name
	// the issues.
	ChangeLogs changelog.PayloadChangeLogs
	// PayloadURL is the link put in the comments (see PayloadPageURL): a comment holding it is
	// how an issue is known to be done for the payload. Nil: payloads of streams with Jira
	// get JiraMisconfigured, saying the controller has no web URL.
	PayloadURL func(*v1alpha1.ReleasePayload) string
	// MaxAge skips payloads accepted longer ago than this (zero: DefaultMaxAge), so that
	// configuring Jira on a stream does not comment on the issues of its whole history.
	MaxAge time.Duration
	// ClientOptions configure the Jira clients (rate limit, retries).
	ClientOptions []jiraclient.Option
	// RetryBase and RetryMax space the retries of payloads that failed for a reason that may
	// go away, doubling per failure; zero: defaultRetryBase and defaultRetryMax.
	RetryBase, RetryMax time.Duration
	// Workers is how many payloads are handled at once; zero: defaultWorkers.
	Workers int
	Clock   clock.PassiveClock
	// Events records the payloads' Events; nil: the manager's recorder.
	Events events.EventRecorder

	report  eventlog.Recorder
	clients *jiraclient.Pool
}

// The controller reads payloads and streams from the manager's cache, watches the metadata of
// Secrets and reads the streams' token Secrets directly, and patches the payloads' status.
// +kubebuilder:rbac:groups=release-controller.dev,resources=releasepayloads;releasestreams,verbs=list;watch
// +kubebuilder:rbac:groups=release-controller.dev,resources=releasepayloads/status,verbs=patch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile verifies the issues of an accepted payload whose PayloadIssuesVerified is not
// True yet, and writes the condition once. Every failure is reported in one place, the
// deferred function: as the condition's False reason and message, one Warning Event each and
// the returned error, which brings the payload back with the controller's backoff (not when
// every failure needs someone to change something in Jira: a terminal error).
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (result ctrl.Result, err error) {
	var p v1alpha1.ReleasePayload
	if err := r.Get(ctx, req.NamespacedName, &p); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !pending(&p) || acceptedBefore(&p, r.Clock.Now().Add(-r.MaxAge)) {
		return ctrl.Result{}, nil
	}
	var cond *metav1.Condition // what the pass found; nil: nothing to write
	defer func() {
		var writeErr error
		if cond != nil {
			var conflict bool
			conflict, writeErr = r.writeCondition(ctx, &p, *cond)
			for rewrites := 0; conflict && rewrites < conflictRewrites; rewrites++ {
				// Another writer (the payload controller's Ready, say) wrote the payload after
				// the cache's version. This pass may have moved issues already: what it found is
				// written onto the newer payload, read from the API server, rather than judged
				// again, which would find them VERIFIED and forget that this pass moved them.
				if getErr := r.APIReader.Get(ctx, req.NamespacedName, &p); getErr != nil {
					conflict, writeErr = false, eventlog.Step(v1alpha1.ReasonReconcileFailed, "WriteStatus", "reading the payload again", client.IgnoreNotFound(getErr))
					break
				}
				conflict, writeErr = r.writeCondition(ctx, &p, *cond)
			}
			if conflict {
				// The cache was behind: the pass runs again shortly on the newer payload,
				// and reports what it finds then (Plan reads Jira's state first).
				result, err = ctrl.Result{RequeueAfter: conflictRetry}, nil
				return
			}
		}
		err = r.report.Finish(ctx, &p, errors.Join(err, writeErr))
	}()
	var s v1alpha1.ReleaseStream
	if err := r.Get(ctx, types.NamespacedName{Namespace: p.Namespace, Name: p.Spec.PayloadCoordinates.Stream}, &s); err != nil {
		return ctrl.Result{}, eventlog.Step(v1alpha1.ReasonReconcileFailed, "VerifyIssues", "reading the stream", client.IgnoreNotFound(err))
	}
	if s.Spec.Jira == nil {
		return ctrl.Result{}, nil
	}
	c, err := decide(r.observe(ctx, &p, &s))
	cond = &c
	return ctrl.Result{}, err
}

// writeCondition sets cond as the payload's PayloadIssuesVerified and writes the status when
// that changed it; conflict reports a write that met a newer version of the payload.
func (r *Reconciler) writeCondition(ctx context.Context, p *v1alpha1.ReleasePayload, cond metav1.Condition) (conflict bool, err error) {
	cond.Type = v1alpha1.ConditionPayloadIssuesVerified
	cond.ObservedGeneration = p.Generation
	cond.LastTransitionTime = metav1.NewTime(r.Clock.Now())
	old := p.DeepCopy()
	if !conditions.Set(&p.Status.Conditions, cond) {
		return false, nil
	}
	const step = "writing the Jira verification status"
	if foreign := v1alpha1.ForeignChanges(v1alpha1.WriterJira, &old.Status, &p.Status); len(foreign) > 0 {
		return false, eventlog.Step(v1alpha1.ReasonReconcileFailed, "WriteStatus", step,
			fmt.Errorf("it changes fields the Jira controller does not own: %v", foreign))
	}
	// The optimistic lock keeps a write based on a stale cache from dropping another
	// controller's condition (the merge patch replaces the whole list).
	patch := client.MergeFromWithOptions(old, client.MergeFromWithOptimisticLock{})
	if err := r.Status().Patch(ctx, p, patch); err != nil {
		switch {
		case apierrors.IsNotFound(err):
			return false, nil
		case apierrors.IsConflict(err):
			return true, nil
		}
		return false, eventlog.Step(v1alpha1.ReasonReconcileFailed, "WriteStatus", step, err)
	}
	if cond.Status == metav1.ConditionTrue {
		r.report.Eventf(ctx, p, nil, cond.Reason, "VerifyIssues", "%s", cond.Message)
	}
	return false, nil
}

// acceptedBefore reports whether the payload was accepted before t.
func acceptedBefore(p *v1alpha1.ReleasePayload, t time.Time) bool {
	c := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ConditionPayloadAccepted)
	return c != nil && c.LastTransitionTime.Time.Before(t)
}

// pending reports whether the payload is accepted and its issues are not verified yet.
func pending(p *v1alpha1.ReleasePayload) bool {
	return verdict.Accepted(p) && !meta.IsStatusConditionTrue(p.Status.Conditions, v1alpha1.ConditionPayloadIssuesVerified)
}

// observe carries out the verification and returns what it found; decide makes the
// condition and the failures of it.
func (r *Reconciler) observe(ctx context.Context, p *v1alpha1.ReleasePayload, s *v1alpha1.ReleaseStream) verification {
	cfg := s.Spec.Jira
	v := verification{Stream: s.Name, Projects: cfg.Projects, Target: cfg.TargetStatus}
	if v.Target == "" {
		v.Target = defaultTargetStatus
	}
	prev, err := r.previousAccepted(ctx, p)
	if err != nil {
		v.PreviousErr = err
		return v
	}
	if prev == nil {
		return v
	}
	v.Previous = prev.Name
	cl, err := r.ChangeLogs.ChangeLog(ctx, prev, p)
	if err != nil {
		v.ChangeLogErr = err
		return v
	}
	var all []string
	all, v.Broken = issueKeys(cl)
	// With Broken components, the issues found are verified anyway; the payload comes back
	// for the rest.
	v.Keys = filterKeys(all, cfg.Projects)
	if len(v.Keys) == 0 {
		return v
	}
	auth, err := r.auth(ctx, s)
	if err == nil && r.PayloadURL == nil {
		err = fmt.Errorf("the controller has no --web-url to link the payload's page from the issues")
	}
	var jc *jiraclient.Client
	if err == nil {
		jc, err = r.clients.Client(s.Spec.Jira.URL, auth)
	}
	if err != nil {
		v.ClientErr = err
		return v
	}
	v.Result = verifyIssues(ctx, jc, v.Keys, v.Target, p.Name, r.PayloadURL(p))
	return v
}

// verification is what verifying the issues of an accepted payload found.
type verification struct {
	Stream   string
	Projects []string
	// Target is the status the issues are moved to.
	Target string
	// PreviousErr: the previous accepted payload could not be found.
	PreviousErr error
	// Previous is the previous accepted payload; "" when there is none (or PreviousErr).
	Previous string
	// ChangeLogErr: the changelog from Previous could not be computed.
	ChangeLogErr error
	// Keys are the changelog's issues of Projects; Broken the components whose commits could
	// not be read ("name: error").
	Keys, Broken []string
	// ClientErr: Jira could not be reached (credentials, --web-url).
	ClientErr error
	// Result is what became of each of Keys in Jira.
	Result issueResults
}

func (v verification) incomplete() error {
	if len(v.Broken) == 0 {
		return nil
	}
	return fmt.Errorf("the changelog from %s is incomplete: %s", v.Previous, strings.Join(v.Broken, "; "))
}

// decide is the PayloadIssuesVerified condition (status, reason and message) of what a
// verification found, and its failures (eventlog.Failure, joined; nil: none): each is a Warning
// Event, and the payload comes back later unless every failure is Stalled (an issue failure
// that needs someone to change something in Jira). It is pure; each reason is documented in
// api/v1alpha1/conditions.go.
func decide(v verification) (metav1.Condition, error) {
	switch {
	case v.PreviousErr != nil:
		err := eventlog.Step(v1alpha1.ReasonChangeLogUnavailable, "VerifyIssues", "finding the previous accepted payload", v.PreviousErr)
		return condition(false, v1alpha1.ReasonChangeLogUnavailable, "%v", err), err
	case v.Previous == "":
		return condition(true, v1alpha1.ReasonNoIssues, "the first accepted payload of stream %s: there is no earlier accepted payload to compute a changelog from", v.Stream), nil
	case v.ChangeLogErr != nil:
		err := eventlog.Step(v1alpha1.ReasonChangeLogUnavailable, "VerifyIssues", "computing the changelog from "+v.Previous, v.ChangeLogErr)
		return condition(false, v1alpha1.ReasonChangeLogUnavailable, "%v", err), err
	}
	incomplete := v.incomplete()
	incompleteErr := eventlog.Step(v1alpha1.ReasonChangeLogUnavailable, "VerifyIssues", "computing the changelog", incomplete)
	if len(v.Keys) == 0 {
		if incomplete != nil {
			return condition(false, v1alpha1.ReasonChangeLogUnavailable, "%v", incomplete), incompleteErr
		}
		return condition(true, v1alpha1.ReasonNoIssues, "no issues of %s in the changelog from %s", strings.Join(v.Projects, ", "), v.Previous), nil
	}
	if v.ClientErr != nil {
		return condition(false, v1alpha1.ReasonJiraMisconfigured, "%d issues not verified: %v", len(v.Keys), v.ClientErr),
			eventlog.Step(v1alpha1.ReasonJiraMisconfigured, "VerifyIssues", "reaching Jira", v.ClientErr)
	}
	summary := summarize(v.Result, v.Target)
	failures := v.Result.Failures()
	switch {
	case len(failures) > 0:
		if incomplete != nil {
			summary += "; " + incomplete.Error()
		}
		reason := v1alpha1.ReasonIssuesNotVerified
		if !slices.ContainsFunc(failures, func(o outcome) bool { return !jiraclient.IsUnauthorized(o.Err) }) {
			reason = v1alpha1.ReasonJiraMisconfigured // Jira refused the credentials
		}
		return condition(false, reason, "%s", summary), errors.Join(issueFailures(failures, v.Target), incompleteErr)
	case incomplete != nil:
		return condition(false, v1alpha1.ReasonChangeLogUnavailable, "%v; %s", incomplete, summary), incompleteErr
	}
	return condition(true, v1alpha1.ReasonIssuesVerified, "%s", summary), nil
}

// issueFailures are the failures of the issues not moved to target, maxIssueEvents at most and
// then one for the rest. A failure that may go away (see jiraclient.IsTransient) brings the
// payload back; the others are Stalled: they need someone to change something in Jira.
func issueFailures(failures []outcome, target string) error {
	var errs []error
	for i, f := range failures {
		if i == maxIssueEvents {
			rest := failures[i:]
			errs = append(errs, &eventlog.Failure{Reason: v1alpha1.ReasonIssuesNotVerified, Action: "VerifyIssues",
				Stalled: !slices.ContainsFunc(rest, outcome.Transient), Err: fmt.Errorf("%d more issues not moved to %s", len(rest), target)})
			break
		}
		errs = append(errs, &eventlog.Failure{Reason: v1alpha1.ReasonIssuesNotVerified, Action: "VerifyIssues",
			Step: f.Key + " not moved to " + target, Stalled: !f.Transient(), Err: f.Err})
	}
	return errors.Join(errs...)
}

// maxIssueEvents bounds the failures (Events) of one reconcile's failed issues.
const maxIssueEvents = 10

func condition(ok bool, reason, format string, args ...any) metav1.Condition {
	status := metav1.ConditionFalse
	if ok {
		status = metav1.ConditionTrue
	}
	return metav1.Condition{Status: status, Reason: reason, Message: fmt.Sprintf(format, args...)}
}

// summarize says what became of the issues: "moved 3 issues to VERIFIED, A-3", then
// those already there, then the failures with their reasons.
func summarize(res issueResults, target string) string {
	var parts []string
	if keys := res.Keys(outcomeVerified); len(keys) > 0 {
		parts = append(parts, fmt.Sprintf("moved %s to %s: %s", plural(len(keys), "issue"), target, strings.Join(keys, ", ")))
	}
	if keys := res.Keys(outcomeAlready); len(keys) > 0 {
		parts = append(parts, fmt.Sprintf("%s already %s: %s", plural(len(keys), "issue"), target, strings.Join(keys, ", ")))
	}
	if failures := res.Failures(); len(failures) > 0 {
		var why []string
		for _, f := range failures {
			why = append(why, fmt.Sprintf("%s: %v", f.Key, f.Err))
		}
		parts = append(parts, fmt.Sprintf("%s not moved to %s: %s", plural(len(failures), "issue"), target, strings.Join(why, "; ")))
	}
	return strings.Join(parts, "; ")
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// issueKeys returns the issue keys of every commit of the changelog's new, updated and rebuilt
// images, and the components whose commits could not be read ("name: error").
func issueKeys(cl *changelog.ChangeLog) (keys, broken []string) {
	for _, ics := range [][]changelog.ImageChange{cl.NewImages, cl.UpdatedImages, cl.RebuiltImages} {
		for _, ic := range ics {
			if ic.Error != "" {
				broken = append(broken, ic.Name+": "+ic.Error)
			}
			for _, c := range ic.Commits {
				keys = append(keys, c.Issues...)
			}
		}
	}
	return keys, broken
}

// previousAccepted is the accepted payload of the same stream with the highest version
// below p's, nil when there is none.
func (r *Reconciler) previousAccepted(ctx context.Context, p *v1alpha1.ReleasePayload) (*v1alpha1.ReleasePayload, error) {
	var list v1alpha1.ReleasePayloadList
	if err := r.List(ctx, &list, client.InNamespace(p.Namespace), client.MatchingFields{indexAcceptedByStream: p.Spec.PayloadCoordinates.Stream}); err != nil {
		return nil, fmt.Errorf("listing the accepted payloads of stream %s: %w", p.Spec.PayloadCoordinates.Stream, err)
	}
	byTag := map[string]*v1alpha1.ReleasePayload{}
	tags := []string{p.Name}
	for i := range list.Items {
		if q := &list.Items[i]; q.Name != p.Name {
			byTag[q.Name] = q
			tags = append(tags, q.Name)
		}
	}
	releases := jobcontract.Releases(tags) // newest first
	i := slices.IndexFunc(releases, func(rel jobcontract.Release) bool { return rel.Tag == p.Name })
	if i < 0 {
		return nil, fmt.Errorf("the tag %s is not a semantic version", p.Name)
	}
	for _, rel := range releases[i+1:] {
		if rel.Version.Equal(releases[i].Version) {
			continue // the same version under another spelling is no earlier release
		}
		return byTag[rel.Tag], nil
	}
	return nil, nil
}

// auth reads the credentials from the stream's token Secret, refusing them when the Secret
// does not allow spec.jira.url (see secreturl.Check).
func (r *Reconciler) auth(ctx context.Context, s *v1alpha1.ReleaseStream) (jiraclient.Auth, error) {
	name := s.Spec.Jira.TokenSecret
	var secret corev1.Secret
	if err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: s.Namespace, Name: name}, &secret); err != nil {
		if apierrors.IsNotFound(err) {
			return jiraclient.Auth{}, fmt.Errorf("the token Secret %s does not exist", name)
		}
		return jiraclient.Auth{}, fmt.Errorf("reading the token Secret %s: %w", name, err)
	}
	token := strings.TrimSpace(string(secret.Data[SecretKeyToken]))
	if token == "" {
		return jiraclient.Auth{}, fmt.Errorf("the token Secret %s has no key %q", name, SecretKeyToken)
	}
	// The URL is the stream author's; the Secret says where it may go. Nothing is sent
	// when it may not go there.
	if err := secreturl.Check(secret.Annotations, s.Spec.Jira.URL); err != nil {
		return jiraclient.Auth{}, fmt.Errorf("the token Secret %s is not sent to spec.jira.url: %w", name, err)
	}
	if email := strings.TrimSpace(string(secret.Data[SecretKeyEmail])); email != "" {
		return jiraclient.BasicAuth(email, token), nil
	}
	return jiraclient.BearerAuth(token), nil
}

// indexAccepted registers indexAcceptedByStream with the manager's cache.
func indexAccepted(ctx context.Context, indexer client.FieldIndexer) error {
	if err := indexer.IndexField(ctx, &v1alpha1.ReleasePayload{}, indexAcceptedByStream, func(obj client.Object) []string {
		p := obj.(*v1alpha1.ReleasePayload)
		if verdict.Accepted(p) {
			return []string{p.Spec.PayloadCoordinates.Stream}
		}
		return nil
	}); err != nil {
		return fmt.Errorf("indexing accepted payloads by stream: %w", err)
	}
	return nil
}

// setup fills in the defaults, from mgr where they are the manager's, and registers the index.
func (r *Reconciler) setup(ctx context.Context, mgr ctrl.Manager) error {
	if r.ChangeLogs == nil {
		return fmt.Errorf("the jira controller needs changelogs")
	}
	if r.Client == nil {
		r.Client = mgr.GetClient()
	}
	if r.APIReader == nil {
		r.APIReader = mgr.GetAPIReader()
	}
	if r.MaxAge <= 0 {
		r.MaxAge = DefaultMaxAge
	}
	r.clients = jiraclient.NewPool(r.ClientOptions...)
	if r.RetryBase <= 0 {
		r.RetryBase = defaultRetryBase
	}
	if r.RetryMax <= 0 {
		r.RetryMax = defaultRetryMax
	}
	if r.Workers <= 0 {
		r.Workers = defaultWorkers
	}
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	if r.Events == nil {
		r.Events = mgr.GetEventRecorder(eventlog.Reporter)
	}
	r.report = eventlog.Recorder{Events: r.Events}
	return indexAccepted(ctx, mgr.GetFieldIndexer())
}

// SetupWithManager registers the controller, named "jira", and its index
// (indexAcceptedByStream); a nil Client is the manager's.
func (r *Reconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager) error {
	if err := r.setup(ctx, mgr); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("jira").
		For(&v1alpha1.ReleasePayload{}, builder.WithPredicates(newlyPending{})).
		Watches(&v1alpha1.ReleaseStream{}, handler.EnqueueRequestsFromMapFunc(r.streamPayloads),
			builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		WatchesMetadata(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(r.secretPayloads)).
		WithOptions(controller.Options{
			MaxConcurrentReconciles: r.Workers,
			RateLimiter:             workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](r.RetryBase, r.RetryMax),
		}).
		Complete(r)
}

// streamPayloads are the pending payloads of a stream with spec.jira: a change of the stream
// (Jira added, another URL, project or Secret) may let them through.
func (r *Reconciler) streamPayloads(ctx context.Context, obj client.Object) []reconcile.Request {
	s, ok := obj.(*v1alpha1.ReleaseStream)
	if !ok || s.Spec.Jira == nil {
		return nil
	}
	return r.pendingOf(ctx, s)
}

// secretPayloads are the pending payloads of the streams whose token Secret obj is.
func (r *Reconciler) secretPayloads(ctx context.Context, obj client.Object) []reconcile.Request {
	var streams v1alpha1.ReleaseStreamList
	if err := r.List(ctx, &streams, client.InNamespace(obj.GetNamespace())); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "listing streams for a Secret", "secret", obj.GetNamespace()+"/"+obj.GetName())
		return nil
	}
	var reqs []reconcile.Request
	for i := range streams.Items {
		if s := &streams.Items[i]; s.Spec.Jira != nil && s.Spec.Jira.TokenSecret == obj.GetName() {
			reqs = append(reqs, r.pendingOf(ctx, s)...)
		}
	}
	return reqs
}

func (r *Reconciler) pendingOf(ctx context.Context, s *v1alpha1.ReleaseStream) []reconcile.Request {
	var list v1alpha1.ReleasePayloadList
	if err := r.List(ctx, &list, client.InNamespace(s.Namespace), client.MatchingFields{indexAcceptedByStream: s.Name}); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "listing the accepted payloads of a stream", "stream", s.Namespace+"/"+s.Name)
		return nil
	}
	var reqs []reconcile.Request
	for i := range list.Items {
		if pending(&list.Items[i]) {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
		}
	}
	return reqs
}

// newlyPending lets through payloads that are pending when first seen (a start, a new
// payload) and updates that make a payload pending, or change what its changelog is
// computed from; the controller's own status writes do not bring the payload back.
type newlyPending struct{}

func (newlyPending) Create(e event.CreateEvent) bool { return isPending(e.Object) }
func (newlyPending) Delete(event.DeleteEvent) bool   { return false }
func (newlyPending) Generic(e event.GenericEvent) bool {
	return isPending(e.Object)
}
func (newlyPending) Update(e event.UpdateEvent) bool {
	if !isPending(e.ObjectNew) {
		return false
	}
	o, okOld := e.ObjectOld.(*v1alpha1.ReleasePayload)
	n, okNew := e.ObjectNew.(*v1alpha1.ReleasePayload)
	return !okOld || !okNew || !pending(o) || o.Status.PayloadImage != n.Status.PayloadImage || o.Generation != n.Generation
}

func isPending(obj client.Object) bool {
	p, ok := obj.(*v1alpha1.ReleasePayload)
	return ok && pending(p)
}
