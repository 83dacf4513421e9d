package audit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"golang.org/x/time/rate"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/conditions"
	"github.com/release-controller/release-controller/internal/eventlog"
	"github.com/release-controller/release-controller/internal/registryclient"
	"github.com/release-controller/release-controller/internal/releaseimage"
	"github.com/release-controller/release-controller/internal/signing"
	"github.com/release-controller/release-controller/internal/signing/cosign"
	signstore "github.com/release-controller/release-controller/internal/signing/store"
	"github.com/release-controller/release-controller/internal/verdict"
	"github.com/release-controller/release-controller/internal/version"
)

// Defaults of the audit queue: at most DefaultBurst audits per DefaultInterval, as OpenShift's
// release controller does.
const (
	DefaultBurst    = 5
	DefaultInterval = 2 * time.Second
)

// DefaultKeyRetry is how soon a payload waiting for a usable signing key is looked at again.
const DefaultKeyRetry = time.Minute

// conflictRetry is how soon a payload whose status write met a newer version is retried.
const conflictRetry = 100 * time.Millisecond

// presenceWorkers bounds the concurrent registry requests checking a payload's components.
const presenceWorkers = 8

// Secret keys of the signing key Secret.
const (
	// SecretKeyPrivate holds the armored private key that signs new payloads.
	SecretKeyPrivate = "private.asc"
	// SecretKeyPassphrase, optional, decrypts it.
	SecretKeyPassphrase = "passphrase"
	// SecretKeyPublic, optional, holds more armored public keys to publish, such as
	// retired keys whose signatures are still in the store.
	SecretKeyPublic = "public.asc"
)

// Secret keys of the Sigstore key Secret (as `cosign generate-key-pair k8s://` writes them).
const (
	// SecretKeyCosign holds the PEM private key: PKCS#8, EC, RSA, ed25519, or cosign's
	// encrypted "ENCRYPTED SIGSTORE PRIVATE KEY".
	SecretKeyCosign = "cosign.key"
	// SecretKeyCosignPassword, optional, decrypts it.
	SecretKeyCosignPassword = "cosign.password"
)

// Options configure the audit and signing of accepted payloads.
type Options struct {
	// Store receives audit records and signatures; nil: records are not stored and nothing
	// is signed.
	Store *signstore.Store
	// KeySecret names the Secret holding the signing key; empty: nothing is signed.
	KeySecret types.NamespacedName
	// Burst audits at most per Interval (zero: DefaultBurst per DefaultInterval).
	Burst    int
	Interval time.Duration
	// KeyRetry is how soon a payload waiting for a usable key is retried (zero: DefaultKeyRetry).
	KeyRetry time.Duration

	// SigstoreKeySecret names the Secret holding the Sigstore key (SecretKeyCosign); with
	// SigstoreKMSKey empty too, no Sigstore signature or attestation is attached. The public
	// key is published beside the OpenPGP ones in Store, when there is one.
	SigstoreKeySecret types.NamespacedName
	// SigstoreKMSKey is the URI of a KMS key (cosign.LoadKMSSigner) that signs instead of the
	// Secret's.
	SigstoreKMSKey string
}

// Reconciler audits accepted payloads and signs the ones that pass.
type Reconciler struct {
	client.Client
	Options
	// APIReader reads the signing key Secret, which may lie outside the watched namespaces.
	APIReader client.Reader
	Registry  *registryclient.Client
	Clock     clock.Clock
	Events    events.EventRecorder

	limiter *rate.Limiter
	report  eventlog.Recorder

	// The parsed key of one version of the Secret: decrypting a key is slow.
	mu         sync.Mutex
	keyVersion string
	signingKey *signing.Key
	// The Sigstore signer of one version of its Secret (or of the KMS key), and whether its
	// public key is published in the store yet.
	sigstoreVersion   string
	sigstoreSigner    *cosign.Signer
	sigstorePublished bool
}

// The controller reads payloads from the cache and the signing key Secret directly; it
// patches the payloads' status.
// +kubebuilder:rbac:groups=release-controller.dev,resources=releasepayloads,verbs=list;watch
// +kubebuilder:rbac:groups=release-controller.dev,resources=releasepayloads/status,verbs=patch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get

// Reconcile takes the payload's next step (Decide), and writes its status once. An audit
// waits for the rate limit by coming back later, not in Reconcile: the queue goes on with the
// payloads that have nothing to audit. Every failure is reported in one place, the deferred
// function: as the False reason and message of the condition it is about (failureConditions),
// one Warning Event each, and the returned error, which brings the payload back with the
// controller's backoff.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (result ctrl.Result, err error) {
	var p v1alpha1.ReleasePayload
	if err := r.Get(ctx, req.NamespacedName, &p); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	step := Decide(&p, r.signers())
	if step.Done() {
		return ctrl.Result{}, nil
	}
	if step.Audit {
		if wait := admit(r.limiter, r.Clock.Now()); wait > 0 {
			return ctrl.Result{RequeueAfter: wait}, nil
		}
	}
	status := p.Status.DeepCopy()
	defer func() {
		now := metav1.NewTime(r.Clock.Now())
		for _, c := range failureConditions(err) {
			c.ObservedGeneration, c.LastTransitionTime = p.Generation, now
			conditions.Set(&status.Conditions, c)
		}
		conflict, writeErr := r.writeStatus(ctx, &p, status)
		if conflict {
			// The cache was behind: the step runs again shortly on the newer payload, and
			// reports what it finds then.
			result, err = ctrl.Result{RequeueAfter: conflictRetry}, nil
			return
		}
		if err = r.report.Finish(ctx, &p, errors.Join(err, writeErr)); err != nil {
			result = ctrl.Result{}
		}
	}()
	return r.take(ctx, &p, step, status)
}

// admit takes a token of the audits' rate limit at now, or, when none is left, gives the
// reservation back and returns how long to wait for one.
func admit(l *rate.Limiter, now time.Time) time.Duration {
	res := l.ReserveN(now, 1)
	if !res.OK() {
		return 0 // a limiter that never allows one: Options always give a burst
	}
	wait := res.DelayFrom(now)
	if wait > 0 {
		res.CancelAt(now)
	}
	return wait
}

// failureConditions are the conditions that say err's failures: a failed audit is
// PayloadAudited AuditError; a signature store that failed is PayloadSigned
// SignatureStoreError, and, when it refused the audit record, PayloadAudited AuditError too; a
// registry that failed the Sigstore signatures is PayloadSigstoreSigned RegistryError.
func failureConditions(err error) []metav1.Condition {
	var out []metav1.Condition
	for _, f := range eventlog.Failures(err) {
		cause := errors.New(f.Error())
		if f.Action == actionAudit {
			out = append(out, AuditErrorCondition(cause))
		}
		if f.Reason == v1alpha1.ReasonSignatureStoreError {
			out = append(out, StoreErrorCondition(cause))
		}
		if f.Reason == v1alpha1.ReasonRegistryError {
			out = append(out, RegistryErrorCondition(cause))
		}
	}
	return out
}

// The Events' actions.
const (
	actionAudit    = "Audit"
	actionSign     = "Sign"
	actionSigstore = "SigstoreSign"
)

// take runs step and sets the conditions of what it did in status; a failed step is returned
// (eventlog.Step), and Reconcile's deferred function says it. The OpenPGP and the Sigstore
// signatures are taken apart: one failing does not hold the other back.
func (r *Reconciler) take(ctx context.Context, p *v1alpha1.ReleasePayload, step Step, status *v1alpha1.ReleasePayloadStatus) (ctrl.Result, error) {
	set := func(c metav1.Condition) {
		c.ObservedGeneration = p.Generation
		c.LastTransitionTime = metav1.NewTime(r.Clock.Now())
		conditions.Set(&status.Conditions, c)
	}
	if step.AuditFailed {
		set(NotSignedAuditFailedCondition())
	}
	if step.SigstoreAuditFailed {
		set(SigstoreAuditFailedCondition())
	}
	if step.Audit {
		rec, err := r.audit(ctx, p)
		if err != nil {
			reason := v1alpha1.ReasonAuditError
			if step.Sign && errors.As(err, new(storeError)) {
				// The store the record goes to is where the signature goes too: the
				// signature says why it waits.
				reason = v1alpha1.ReasonSignatureStoreError
			}
			return ctrl.Result{}, eventlog.Step(reason, actionAudit, "auditing the payload", err)
		}
		set(AuditedCondition(rec))
		if !rec.Passed {
			r.report.Warningf(ctx, p, nil, v1alpha1.ReasonAuditFailed, actionAudit, "%s", AuditedCondition(rec).Message)
			set(NotSignedAuditFailedCondition())
			if step.SigstoreSign {
				set(SigstoreAuditFailedCondition())
			}
			return ctrl.Result{}, nil
		}
		r.report.Eventf(ctx, p, nil, v1alpha1.ReasonAuditPassed, actionAudit, "%s", AuditedCondition(rec).Message)
	}
	result, err := r.signOpenPGP(ctx, p, step, set)
	if step.SigstoreSign {
		sigstoreResult, sigstoreErr := r.signSigstore(ctx, p, set)
		err = errors.Join(err, sigstoreErr)
		if result.RequeueAfter == 0 || sigstoreResult.RequeueAfter > 0 && sigstoreResult.RequeueAfter < result.RequeueAfter {
			result = sigstoreResult
		}
	}
	return result, err
}

// signOpenPGP takes the OpenPGP part of step for the audited payload p: its signatures in the
// store, or the condition saying why there are none.
func (r *Reconciler) signOpenPGP(ctx context.Context, p *v1alpha1.ReleasePayload, step Step, set func(metav1.Condition)) (ctrl.Result, error) {
	if step.NoKey {
		set(NoKeyCondition("this controller has no signing key (--signing-key-secret) and signature store (--signature-store)"))
		return ctrl.Result{}, nil
	}
	if !step.Sign {
		return ctrl.Result{}, nil
	}
	key, why, err := r.key(ctx)
	if err != nil {
		return ctrl.Result{}, eventlog.Step(v1alpha1.ReasonSignatureStoreError, actionSign, "publishing the public keys", err)
	}
	if key == nil {
		set(NoKeyCondition(why))
		r.report.Warningf(ctx, p, nil, v1alpha1.ReasonNoSigningKey, actionSign, "not signed: %s", why)
		return ctrl.Result{RequeueAfter: r.KeyRetry}, nil
	}
	claims := Claims(p, r.Clock.Now())
	// Each platform's image first: the index's signature, which the condition records,
	// comes last, so a payload said to be signed has every signature.
	for _, pc := range platformClaims(p, claims) {
		if _, _, err := signstore.EnsureSigned(ctx, r.Store, key, pc); err != nil {
			return ctrl.Result{}, eventlog.Step(v1alpha1.ReasonSignatureStoreError, actionSign, "storing the signature of a platform's image", err)
		}
	}
	index, created, err := signstore.EnsureSigned(ctx, r.Store, key, claims)
	if err != nil {
		return ctrl.Result{}, eventlog.Step(v1alpha1.ReasonSignatureStoreError, actionSign, "storing the signature", err)
	}
	set(SignedCondition(key.ID(), index))
	if created {
		r.report.Eventf(ctx, p, nil, v1alpha1.ReasonSigned, actionSign, "signed %s by %s as signature-%d", p.Status.PayloadImage, key.ID(), index)
	}
	return ctrl.Result{}, nil
}

// storeError is the signature store's refusal of the audit record: the audit ran, but neither
// its record nor a signature can be kept until the store is back.
type storeError struct{ err error }

func (e storeError) Error() string { return "storing the audit record: " + e.err.Error() }
func (e storeError) Unwrap() error { return e.err }

// Claims are what the payload's signature says: its digest, under the reference
// <repository>:<tag>, which matches pulls by that tag and, with containers/image's default
// identity rule, pulls of the repository by digest.
func Claims(p *v1alpha1.ReleasePayload, now time.Time) signing.Claims {
	digest := ""
	if d, err := name.NewDigest(p.Status.PayloadImage); err == nil {
		digest = d.DigestStr()
	}
	return signing.Claims{
		DockerReference: p.Spec.PayloadCreationConfig.Repository + ":" + p.Name,
		ManifestDigest:  digest,
		Creator:         "release-controller " + version.Version,
		Timestamp:       now,
	}
}

// signers are the formats the controller signs in.
func (r *Reconciler) signers() Signers {
	return Signers{
		OpenPGP:  r.Store != nil && r.KeySecret.Name != "",
		Sigstore: r.SigstoreKeySecret.Name != "" || r.SigstoreKMSKey != "",
	}
}

// audit reads the payload back from the registry and evaluates it; it stores the record. An
// error means the audit could not run and is retried.
func (r *Reconciler) audit(ctx context.Context, p *v1alpha1.ReleasePayload) (Record, error) {
	obs, err := r.observe(ctx, p)
	if err != nil {
		return Record{}, err
	}
	rec := Evaluate(p, obs, r.Clock.Now(), "release-controller "+version.Version)
	if r.Store != nil {
		if d, err := name.NewDigest(p.Status.PayloadImage); err == nil {
			raw, err := json.MarshalIndent(rec, "", "  ")
			if err != nil {
				return Record{}, err
			}
			if err := r.Store.PutAudit(ctx, d.DigestStr(), raw); err != nil {
				return Record{}, storeError{err}
			}
		}
	}
	return rec, nil
}

// observe reads what the audit needs from the registry. Answers that say something about the
// image (not found, not a payload) go into the observation; failures to get an answer are
// returned.
func (r *Reconciler) observe(ctx context.Context, p *v1alpha1.ReleasePayload) (Observation, error) {
	var obs Observation
	recorded, ok := recordedImage(p)
	if !ok {
		return obs, nil // Evaluate says so
	}
	opts := r.Registry.Options(ctx)
	tag, err := name.NewTag(p.Spec.PayloadCreationConfig.Repository + ":" + p.Name)
	if err != nil {
		return obs, fmt.Errorf("the payload's tag: %w", err)
	}
	desc, err := remote.Head(tag, opts...)
	switch {
	case err == nil:
		obs.TagDigest = desc.Digest.String()
	case !notFound(err):
		return obs, fmt.Errorf("resolving %s: %w", tag, err)
	}
	if len(p.Spec.PayloadCreationConfig.Platforms) > 0 {
		return r.observePlatforms(ctx, p, recorded, obs)
	}
	img, err := remote.Image(recorded, opts...)
	if err == nil {
		obs.Info, err = releaseimage.Inspect(img, recorded.String(), recorded.Context())
	}
	if err != nil {
		if transient(err) {
			return obs, fmt.Errorf("reading %s: %w", recorded, err)
		}
		obs.Info, obs.InfoError = nil, err.Error()
		return obs, nil
	}
	obs.Missing, err = r.missing(ctx, obs.Info.References.Components)
	return obs, err
}

// recordedImage is the payload's image by digest, if it records one.
func recordedImage(p *v1alpha1.ReleasePayload) (name.Digest, bool) {
	d, err := name.NewDigest(p.Status.PayloadImage)
	return d, err == nil
}

// missing asks the registry for every component, a few at a time.
func (r *Reconciler) missing(ctx context.Context, components []releaseimage.ComponentReference) (map[string]string, error) {
	opts := r.Registry.Options(ctx)
	named := make([]namedImage, len(components))
	for i, c := range components {
		named[i] = namedImage{c.Name, c.Image}
	}
	_, missing, err := readEach(named, func(ref name.Digest) (struct{}, error) {
		_, err := remote.Head(ref, opts...)
		return struct{}{}, err
	})
	return missing, err
}

// namedImage is an image by digest, under the name a check reports it by.
type namedImage struct {
	name, image string
}

// readEach reads every image, presenceWorkers at a time: what read returned by name, the
// images that are not a pull spec by digest or that the registry does not have (with why),
// and the first other failure.
func readEach[T any](images []namedImage, read func(name.Digest) (T, error)) (map[string]T, map[string]string, error) {
	var (
		mu       sync.Mutex
		found    = map[string]T{}
		missing  = map[string]string{}
		firstErr error
		wg       sync.WaitGroup
		slots    = make(chan struct{}, presenceWorkers)
	)
	for _, im := range images {
		ref, err := name.NewDigest(im.image)
		if err != nil {
			missing[im.name] = "not a pull spec by digest"
			continue
		}
		wg.Go(func() {
			slots <- struct{}{}
			defer func() { <-slots }()
			v, err := read(ref)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				found[im.name] = v
			case notFound(err):
				missing[im.name] = "not found"
			case firstErr == nil:
				firstErr = fmt.Errorf("reading component %s: %w", im.name, err)
			}
		})
	}
	wg.Wait()
	return found, missing, firstErr
}

func notFound(err error) bool {
	var terr *transport.Error
	return errors.As(err, &terr) && terr.StatusCode == http.StatusNotFound
}

// transient reports whether err may go away by itself: the registry did not answer, or
// answered that it is overloaded or broken.
func transient(err error) bool {
	var terr *transport.Error
	if errors.As(err, &terr) {
		return terr.StatusCode == http.StatusTooManyRequests || terr.StatusCode >= http.StatusInternalServerError
	}
	var opErr *net.OpError
	var urlErr *url.Error
	return errors.As(err, &opErr) || errors.As(err, &urlErr) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)
}

// key returns the signing key, or nil and why there is none. A new key (or a new version of
// its Secret) has its public keys published to the store first, so that no signature is in
// the store before the key that verifies it; err is a failure to publish them.
func (r *Reconciler) key(ctx context.Context) (key *signing.Key, why string, err error) {
	var secret corev1.Secret
	if err := r.APIReader.Get(ctx, r.KeySecret, &secret); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Sprintf("the signing key Secret %s does not exist", r.KeySecret), nil
		}
		return nil, fmt.Sprintf("reading the signing key Secret %s: %v", r.KeySecret, err), nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.keyVersion == secret.ResourceVersion && r.signingKey != nil {
		return r.signingKey, "", nil
	}
	armored := secret.Data[SecretKeyPrivate]
	if len(armored) == 0 {
		return nil, fmt.Sprintf("the signing key Secret %s has no %s", r.KeySecret, SecretKeyPrivate), nil
	}
	key, err = signing.ParsePrivateKey(armored, secret.Data[SecretKeyPassphrase], r.Clock.Now())
	if err != nil {
		return nil, fmt.Sprintf("the signing key in Secret %s: %v", r.KeySecret, err), nil
	}
	published, err := PublicKeys(key, secret.Data[SecretKeyPublic])
	if err != nil {
		return nil, fmt.Sprintf("the public keys in Secret %s: %v", r.KeySecret, err), nil
	}
	if err := r.Store.PutPublicKeys(ctx, published); err != nil {
		return nil, "", err
	}
	r.keyVersion, r.signingKey = secret.ResourceVersion, key
	return key, "", nil
}

// PublicKeys are the armored public keys to publish: the signing key's, then extra ones (such
// as retired keys whose signatures are still in the store), which must parse.
func PublicKeys(key *signing.Key, extra []byte) ([]byte, error) {
	pub, err := key.ArmoredPublicKey()
	if err != nil {
		return nil, err
	}
	if len(extra) == 0 {
		return pub, nil
	}
	if _, err := signing.ParsePublicKeys(extra); err != nil {
		return nil, err
	}
	return append(append(pub, '\n'), extra...), nil
}

// writeStatus writes status when it changed, with an optimistic lock: the payload controller
// writes the same status. conflict reports a write that met a newer version of the payload.
func (r *Reconciler) writeStatus(ctx context.Context, p *v1alpha1.ReleasePayload, status *v1alpha1.ReleasePayloadStatus) (conflict bool, err error) {
	if equality.Semantic.DeepEqual(*status, p.Status) {
		return false, nil
	}
	const step = "writing the audit status"
	if foreign := v1alpha1.ForeignChanges(v1alpha1.WriterAudit, &p.Status, status); len(foreign) > 0 {
		return false, eventlog.Step(v1alpha1.ReasonReconcileFailed, "WriteStatus", step,
			fmt.Errorf("it changes fields the audit does not own: %v", foreign))
	}
	patch := client.MergeFromWithOptions(p.DeepCopy(), client.MergeFromWithOptimisticLock{})
	p.Status = *status
	switch err := r.Status().Patch(ctx, p, patch); {
	case apierrors.IsConflict(err):
		return true, nil
	case err != nil && !apierrors.IsNotFound(err):
		return false, eventlog.Step(v1alpha1.ReasonReconcileFailed, "WriteStatus", step, err)
	}
	return false, nil
}

// SetupWithManager registers the controller. It looks only at accepted payloads.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	r.setup(mgr)
	return ctrl.NewControllerManagedBy(mgr).
		Named("audit").
		// One worker audits in the order of acceptance; an audit over the rate limit comes
		// back when a token is there, without holding the worker.
		WithOptions(controller.Options{MaxConcurrentReconciles: 1}).
		For(&v1alpha1.ReleasePayload{}, builder.WithPredicates(accepted())).
		Complete(r)
}

// setup fills in the defaults, from mgr where they are the manager's.
func (r *Reconciler) setup(mgr ctrl.Manager) {
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	if r.Burst <= 0 || r.Interval <= 0 {
		r.Burst, r.Interval = DefaultBurst, DefaultInterval
	}
	if r.Registry == nil {
		r.Registry = registryclient.New()
	}
	if r.KeyRetry <= 0 {
		r.KeyRetry = DefaultKeyRetry
	}
	if r.APIReader == nil {
		r.APIReader = mgr.GetAPIReader()
	}
	if r.Events == nil {
		r.Events = mgr.GetEventRecorder(eventlog.Reporter)
	}
	r.report = eventlog.Recorder{Events: r.Events}
	r.limiter = rate.NewLimiter(rate.Every(r.Interval/time.Duration(r.Burst)), r.Burst)
}

// accepted passes events of accepted payloads only.
func accepted() predicate.Predicate {
	isAccepted := func(obj client.Object) bool {
		p, ok := obj.(*v1alpha1.ReleasePayload)
		return ok && verdict.Accepted(p)
	}
	return predicate.Funcs{
		CreateFunc:  func(e event.CreateEvent) bool { return isAccepted(e.Object) },
		UpdateFunc:  func(e event.UpdateEvent) bool { return isAccepted(e.ObjectNew) },
		DeleteFunc:  func(event.DeleteEvent) bool { return false },
		GenericFunc: func(e event.GenericEvent) bool { return isAccepted(e.Object) },
	}
}
