package stream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	prowv1 "github.com/release-controller/release-controller/api/prow/v1"
	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/conditions"
	"github.com/release-controller/release-controller/internal/eventlog"
	"github.com/release-controller/release-controller/internal/jobcache"
	"github.com/release-controller/release-controller/internal/jobcontract"
	"github.com/release-controller/release-controller/internal/registryclient"
	"github.com/release-controller/release-controller/internal/verify"
	"github.com/release-controller/release-controller/internal/version"
)

// IndexStream indexes payloads by their stream's name.
const IndexStream = "spec.payloadCoordinates.stream"

// DefaultImportInterval is how often components followed by tag are resolved again.
const DefaultImportInterval = time.Minute

// DefaultBuildImage runs the creation jobs: the controller's own image, by its version.
var DefaultBuildImage = "release-controller:" + version.Version

// Failure backoff: a pass with a failed step returns the failures as its error, and
// controller-runtime's rate limiter retries the stream after FailureBackoffBase, doubling with
// every failure in a row up to FailureBackoffMax (a success resets it). The cap stays close to
// the import interval, so a stream with a lasting problem (a hand-made upgrade-graph
// ConfigMap, a registry that refuses a push) still imports and creates payloads every few
// minutes.
const (
	FailureBackoffBase = 100 * time.Millisecond
	FailureBackoffMax  = 5 * time.Minute
)

// Reconciler runs the release flow of every ReleaseStream.
type Reconciler struct {
	client.Client
	// APIReader reads payloads with their job templates, which the cache leaves out; nil
	// reads them through Client.
	APIReader client.Reader
	// Jobs holds the payloads' Jobs and ProwJobs, indexed by payload and by stream.
	Jobs     *jobcache.Cache
	Registry *registryclient.Client
	Clock    clock.PassiveClock
	// ImportInterval is how often components followed by tag are resolved again.
	ImportInterval time.Duration
	// RetryBackoff spaces the retries of failed verification runs.
	RetryBackoff verify.Backoff
	// BuildImage runs the creation job's `release-controller payload build`.
	BuildImage string
	// BuildServiceAccount is the creation job's service account (it reads payloads).
	BuildServiceAccount string
	// RegistryAuthSecret names the kubernetes.io/dockerconfigjson Secret, in each payload's
	// namespace, that the creation and verification Jobs pull and push with (see
	// jobcontract.WithRegistryAuth); empty: none.
	RegistryAuthSecret string
	// WatchProwJobs is set when the cluster serves ProwJobs.
	WatchProwJobs bool
	// Events records the Events of streams and payloads; nil: the manager's recorder.
	Events events.EventRecorder

	imports importTimes
	report  eventlog.Recorder
}

// Streams, payloads and the upgrade graphs' ConfigMaps are read from the manager's cache (list,
// watch); a payload is read once from the API server (get) for its job templates, which the
// cache leaves out. Payloads are created, annotated (patch) and collected; statuses are
// patched, but a new ProwJob's, which is updated as Prow expects. Jobs and ProwJobs are created
// and collected (their reads are the job cache's, see internal/jobcache).
// +kubebuilder:rbac:groups=release-controller.dev,resources=releasestreams,verbs=list;watch
// +kubebuilder:rbac:groups=release-controller.dev,resources=releasestreams/status,verbs=patch
// +kubebuilder:rbac:groups=release-controller.dev,resources=releasepayloads,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=release-controller.dev,resources=releasepayloads/status,verbs=patch
// +kubebuilder:rbac:groups=batch,resources=jobs,verbs=create;delete
// +kubebuilder:rbac:groups=prow.k8s.io,resources=prowjobs,verbs=create;delete
// +kubebuilder:rbac:groups=prow.k8s.io,resources=prowjobs/status,verbs=update
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=list;watch;create;update

// Reconcile runs the stream's steps in order — import, abort, create, build, record images,
// verify, record upgrades, publish, collect — and writes the stream's status once at the end,
// whatever happened (status.go computes it from what the pass found). A step that fails is
// reported (a Warning Event and an error log line, see eventlog) and the other steps still
// run; the failures are then returned, so controller-runtime retries with backoff and counts
// them in its error metrics.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (result ctrl.Result, err error) {
	var stream v1alpha1.ReleaseStream
	if err := r.Get(ctx, req.NamespacedName, &stream); err != nil {
		if apierrors.IsNotFound(err) {
			r.imports.forget(req.NamespacedName)
			forgetStream(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	s := &streamSync{r: r, stream: &stream, now: r.Clock.Now()}
	defer func() {
		if writeErr := s.writeStatus(ctx); writeErr != nil {
			err = errors.Join(err, writeErr)
		}
		err = errors.Join(err, s.failed())
		if err != nil {
			result = ctrl.Result{} // the rate limiter decides when to retry
			return
		}
		result = ctrl.Result{RequeueAfter: s.requeueAfter}
	}()
	s.run(ctx)
	return ctrl.Result{}, nil
}

// streamSync is one reconcile of one stream.
type streamSync struct {
	r            *Reconciler
	stream       *v1alpha1.ReleaseStream
	now          time.Time
	payloads     []v1alpha1.ReleasePayload // newest first
	listed       bool
	requeueAfter time.Duration
	pass         pass
}

func (s *streamSync) requeue(d time.Duration) {
	if d > 0 && (s.requeueAfter == 0 || d < s.requeueAfter) {
		s.requeueAfter = d
	}
}

// fail records a failed step of the pass and reports it on obj (the stream, or the payload
// the step was about): the other steps still run, and the stream is not Ready.
func (s *streamSync) fail(ctx context.Context, obj client.Object, reason, action, step string, err error) {
	s.pass.Failures = append(s.pass.Failures, stepFailure{Step: step, Reason: reason, Err: err})
	stepFailures.WithLabelValues(s.stream.Namespace, s.stream.Name, reason).Inc()
	s.r.report.Fail(ctx, obj, reason, action, step, err)
}

// failed is the pass's failures as one error; nil when none.
func (s *streamSync) failed() error {
	errs := make([]error, 0, len(s.pass.Failures))
	for _, f := range s.pass.Failures {
		errs = append(errs, fmt.Errorf("stream %s/%s: %s: %w", s.stream.Namespace, s.stream.Name, f.Step, f.Err))
	}
	return errors.Join(errs...)
}

func (s *streamSync) run(ctx context.Context) {
	pinned, resolved := s.importComponents(ctx)
	if err := s.listPayloads(ctx); err != nil {
		s.fail(ctx, s.stream, v1alpha1.ReasonReconcileFailed, "List", "listing payloads", err)
		return
	}
	s.abortSuperseded(ctx)
	if resolved {
		s.createPayload(ctx, pinned)
	}
	accepted := acceptedSources(s.payloads)
	for i := range s.payloads {
		p := &s.payloads[i]
		if p.Annotations[v1alpha1.AnnotationAborted] != "" {
			continue
		}
		s.build(ctx, p)
		s.recordImage(ctx, p)
		s.verify(ctx, p, accepted)
	}
	s.recordUpgrades(ctx)
	s.publish(ctx)
	s.collect(ctx)
}

// importComponents resolves the components followed by tag, when their interval or backoff has
// passed, and returns every component pinned by digest; resolved is false while any is not.
// Components that begin to fail (or fail differently) are reported in one Warning Event.
func (s *streamSync) importComponents(ctx context.Context) (pinned []v1alpha1.PinnedComponent, resolved bool) {
	interval := s.r.ImportInterval
	previous := map[string]v1alpha1.ComponentStatus{}
	for _, c := range s.stream.Status.Components {
		previous[c.Name] = c
	}
	key := types.NamespacedName{Namespace: s.stream.Namespace, Name: s.stream.Name}
	// A changed spec resolves every component again. The generation last imported is kept in
	// memory (as the import times are), not taken from observedGeneration, which a failed pass
	// does not move.
	specChanged := s.r.imports.generation(key) != s.stream.Generation
	statuses := make([]v1alpha1.ComponentStatus, 0, len(s.stream.Spec.Components))
	var newErrors []string
	resolved = true
	for _, c := range s.stream.Spec.Components {
		st := previous[c.Name]
		st.Name = c.Name
		due, wait := ImportDue(st, s.r.imports.get(key, c.Name), specChanged, s.now, interval)
		if due {
			digestRef, err := s.r.Registry.Resolve(ctx, c.Image)
			s.r.imports.set(key, c.Name, s.now)
			if err != nil {
				importErrors.WithLabelValues(s.stream.Namespace, s.stream.Name).Inc()
				err = errors.New(conditions.Truncate(err.Error(), conditions.MaxErrorLength))
			}
			before := st.Error
			st = ImportResult(st, digestRef, err, s.now)
			wait = interval
			if err != nil {
				wait = ImportBackoff(st.Failures)
				if st.Error != before {
					newErrors = append(newErrors, fmt.Sprintf("%s (%s)", c.Name, st.Error))
				}
			}
		}
		s.requeue(wait)
		if st.Error != "" || st.Image == "" {
			resolved = false
		} else {
			pinned = append(pinned, v1alpha1.PinnedComponent{Name: c.Name, Image: st.Image, Source: c.Image})
		}
		statuses = append(statuses, st)
	}
	s.r.imports.setGeneration(key, s.stream.Generation)
	s.pass.Components = statuses
	if len(newErrors) > 0 {
		s.r.report.Warningf(ctx, s.stream, nil, v1alpha1.EventImportFailed, "Import",
			"%d of %d components did not resolve; retrying with backoff: %s", len(newErrors), len(statuses), strings.Join(newErrors, "; "))
	}
	return pinned, resolved
}

func (s *streamSync) listPayloads(ctx context.Context) error {
	var list v1alpha1.ReleasePayloadList
	if err := s.r.List(ctx, &list, client.InNamespace(s.stream.Namespace), client.MatchingFields{IndexStream: s.stream.Name}); err != nil {
		return err
	}
	s.payloads = list.Items
	s.listed = true
	NewestFirst(s.payloads)
	return nil
}

// abortSuperseded marks pending payloads older than the newest as aborted and stops their
// builds. The payload controller then fails them (and reports it).
func (s *streamSync) abortSuperseded(ctx context.Context) {
	for _, p := range ToAbort(s.payloads) {
		reason := fmt.Sprintf("superseded by %s before its image was built", s.payloads[0].Name)
		patch := client.MergeFrom(p.DeepCopy())
		metav1.SetMetaDataAnnotation(&p.ObjectMeta, v1alpha1.AnnotationAborted, reason)
		if err := s.r.Patch(ctx, p, patch); err != nil {
			s.fail(ctx, p, v1alpha1.ReasonReconcileFailed, "Abort", "aborting "+p.Name, err)
			continue
		}
		background := metav1.DeletePropagationBackground
		job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: jobcontract.CreationJobName(p.Name)}}
		if err := s.r.Delete(ctx, job, &client.DeleteOptions{PropagationPolicy: &background}); client.IgnoreNotFound(err) != nil {
			s.fail(ctx, p, v1alpha1.ReasonReconcileFailed, "Abort", "stopping the build of "+p.Name, err)
		}
	}
}

func (s *streamSync) createPayload(ctx context.Context, pinned []v1alpha1.PinnedComponent) {
	hash := ComponentsHash(pinned)
	s.pass.ComponentsHash = hash
	decision := DecideCreate(&s.stream.Spec, hash, s.payloads, s.now)
	s.pass.Decision = &decision
	s.requeue(decision.RequeueAfter)
	if !decision.Create {
		return
	}
	tag := ReleaseTag(s.stream.Spec.TagPrefix, s.now)
	if s.stream.Spec.MirrorRepository != "" {
		mirrored, err := s.mirror(ctx, tag, pinned)
		if err != nil {
			s.fail(ctx, s.stream, v1alpha1.ReasonMirrorFailed, "Mirror", "mirroring the components of "+tag, err)
			return
		}
		pinned = mirrored
	}
	p := NewPayload(s.stream, tag, hash, pinned)
	if err := s.r.Create(ctx, p); err != nil {
		if apierrors.IsAlreadyExists(err) {
			s.requeue(time.Second) // created in this very second already: the next tag comes with the next second
			return
		}
		s.fail(ctx, s.stream, v1alpha1.ReasonReconcileFailed, "Create", "creating payload "+tag, err)
		return
	}
	s.pass.Created = tag
	s.r.report.Eventf(ctx, s.stream, p, v1alpha1.EventPayloadCreated, "Create", "created payload %s of %d components", tag, len(pinned))
	s.payloads = append([]v1alpha1.ReleasePayload{*p}, s.payloads...)
}

// mirror copies every component to the mirror repository and returns them pinned there.
func (s *streamSync) mirror(ctx context.Context, tag string, pinned []v1alpha1.PinnedComponent) ([]v1alpha1.PinnedComponent, error) {
	mirrored := make([]v1alpha1.PinnedComponent, 0, len(pinned))
	for _, c := range pinned {
		dst := fmt.Sprintf("%s:%s-%s", s.stream.Spec.MirrorRepository, tag, c.Name)
		ref, err := s.r.Registry.Copy(ctx, c.Image, dst)
		if err != nil {
			return nil, fmt.Errorf("mirroring component %s: %w", c.Name, err)
		}
		mirrored = append(mirrored, v1alpha1.PinnedComponent{Name: c.Name, Image: ref, Source: c.Source})
	}
	return mirrored, nil
}

// build creates the payload's creation job when it has none and its image is not built.
func (s *streamSync) build(ctx context.Context, p *v1alpha1.ReleasePayload) {
	result := p.Status.ReleaseCreationJobResult
	if result.Name != "" || result.Status == v1alpha1.CreationJobSuccess || result.Status == v1alpha1.CreationJobFailed {
		return
	}
	jobs, err := s.jobsOf(ctx, p)
	if err != nil {
		s.fail(ctx, p, v1alpha1.ReasonReconcileFailed, "Build", "listing the jobs of "+p.Name, err)
		return
	}
	if jobs.creation > 0 {
		return
	}
	job := NewCreationJob(p, s.r.BuildImage, s.r.BuildServiceAccount)
	jobcontract.WithRegistryAuth(&job.Spec.Template.Spec, s.r.RegistryAuthSecret)
	switch err := s.r.Create(ctx, job); {
	case apierrors.IsAlreadyExists(err):
	case err != nil:
		s.fail(ctx, p, v1alpha1.ReasonReconcileFailed, "Build", "creating the build job of "+p.Name, err)
	default:
		s.r.report.Eventf(ctx, p, job, v1alpha1.EventBuildStarted, "Build", "created the creation job %s (image %s)", job.Name, s.r.BuildImage)
	}
}

// recordImage records the digest of a built payload's image in its status.
//
// This is the one write of a payload's status outside the payload controller: the payload
// controller reads only the cache and the jobs, while the digest comes from the registry, which
// the stream controller talks to already. It sets status.payloadImage once, after the creation
// job succeeded, with an optimistic lock; the payload controller's ComputeStatus carries the
// field over untouched, and its own writes are optimistically locked too, so neither loses
// the other's.
func (s *streamSync) recordImage(ctx context.Context, p *v1alpha1.ReleasePayload) {
	if p.Status.ReleaseCreationJobResult.Status != v1alpha1.CreationJobSuccess || p.Status.PayloadImage != "" {
		return
	}
	ref, err := s.r.Registry.Resolve(ctx, p.Spec.PayloadCreationConfig.Repository+":"+p.Name)
	if err != nil {
		s.fail(ctx, p, v1alpha1.ReasonReconcileFailed, "RecordImage", "resolving the image of "+p.Name, err)
		return
	}
	patch := client.MergeFromWithOptions(p.DeepCopy(), client.MergeFromWithOptimisticLock{})
	p.Status.PayloadImage = ref
	if err := s.r.Status().Patch(ctx, p, patch); err != nil {
		if apierrors.IsConflict(err) {
			s.requeue(time.Second) // the cache is behind the payload controller's write
			return
		}
		s.fail(ctx, p, v1alpha1.ReasonReconcileFailed, "RecordImage", "recording the image of "+p.Name, err)
	}
}

// verify launches the payload's due verification runs.
func (s *streamSync) verify(ctx context.Context, p *v1alpha1.ReleasePayload, accepted []verify.UpgradeSource) {
	backoff := s.r.RetryBackoff
	if backoff.Base == 0 {
		backoff = verify.DefaultBackoff
	}
	plan := verify.PlanRuns(p, s.now, backoff, accepted)
	s.requeue(plan.RequeueAfter)
	if len(plan.Skipped) > 0 {
		skipped := p.SkippedUpgrades()
		for _, name := range plan.Skipped {
			skipped[name] = true
		}
		patch := client.MergeFrom(p.DeepCopy())
		metav1.SetMetaDataAnnotation(&p.ObjectMeta, v1alpha1.AnnotationUpgradeSkipped, joinSet(skipped))
		if err := s.r.Patch(ctx, p, patch); err != nil {
			s.fail(ctx, p, v1alpha1.ReasonReconcileFailed, "Verify", "recording skipped upgrades of "+p.Name, err)
		}
	}
	if len(plan.Launches) == 0 {
		return
	}
	jobs, err := s.jobsOf(ctx, p)
	if err != nil {
		s.fail(ctx, p, v1alpha1.ReasonReconcileFailed, "Verify", "listing the jobs of "+p.Name, err)
		return
	}
	// Runs launched already that the payload controller has not recorded yet are left out.
	launches := slices.DeleteFunc(plan.Launches, func(l verify.Launch) bool {
		return jobs.names[jobcontract.RunName(p.Name, l.Verification.Name, l.Attempt)]
	})
	if len(launches) == 0 {
		return
	}
	templates, err := s.verificationTemplates(ctx, p)
	if err != nil {
		s.fail(ctx, p, v1alpha1.ReasonReconcileFailed, "Verify", "reading the verifications of "+p.Name, err)
		return
	}
	for _, l := range launches {
		l.Verification = templates[l.Verification.Name]
		name := jobcontract.RunName(p.Name, l.Verification.Name, l.Attempt)
		created, err := s.launch(ctx, p, l)
		switch {
		case err != nil:
			s.fail(ctx, p, v1alpha1.ReasonReconcileFailed, "Verify", fmt.Sprintf("launching %s of %s", name, p.Name), err)
		case created:
			s.reportLaunch(ctx, p, l, name)
		}
	}
}

// reportLaunch reports a launched run: its verification started, or was retried.
func (s *streamSync) reportLaunch(ctx context.Context, p *v1alpha1.ReleasePayload, l verify.Launch, name string) {
	from := ""
	if l.UpgradeFrom != "" {
		from = ", upgrading from " + l.UpgradeFrom
	}
	switch v := l.Verification; {
	case v.Aggregation != nil:
		s.r.report.Eventf(ctx, p, nil, v1alpha1.EventVerificationStarted, "Verify",
			"started %s: run %d of %d of the aggregated verification %s%s", name, l.Attempt, v.Aggregation.Runs, v.Name, from)
	case l.Attempt == 1:
		s.r.report.Eventf(ctx, p, nil, v1alpha1.EventVerificationStarted, "Verify", "started %s: verification %s%s", name, v.Name, from)
	default:
		s.r.report.Eventf(ctx, p, nil, v1alpha1.EventVerificationRetried, "Verify",
			"retrying verification %s: started %s, attempt %d of %d%s", v.Name, name, l.Attempt, v.MaxRetries+1, from)
	}
}

// verificationTemplates reads the payload's verifications with their job templates from the
// API server (the cache leaves the templates out), by name.
func (s *streamSync) verificationTemplates(ctx context.Context, p *v1alpha1.ReleasePayload) (map[string]v1alpha1.Verification, error) {
	reader := s.r.APIReader
	if reader == nil {
		reader = s.r.Client
	}
	var full v1alpha1.ReleasePayload
	if err := reader.Get(ctx, client.ObjectKeyFromObject(p), &full); err != nil {
		return nil, err
	}
	byName := make(map[string]v1alpha1.Verification, len(full.Spec.PayloadVerificationConfig.Verifications))
	for _, v := range full.Spec.PayloadVerificationConfig.Verifications {
		byName[v.Name] = v
	}
	return byName, nil
}

// launch creates the run's Job or ProwJob; created is false when it existed already.
func (s *streamSync) launch(ctx context.Context, p *v1alpha1.ReleasePayload, l verify.Launch) (created bool, err error) {
	if l.Verification.ProwJob != nil {
		if !s.r.WatchProwJobs {
			return false, fmt.Errorf("verification %s uses a ProwJob, but this cluster does not serve prow.k8s.io/v1 ProwJobs", l.Verification.Name)
		}
		pj, err := verify.NewProwJob(p, l)
		if err != nil {
			return false, err
		}
		if !s.r.Jobs.Watches(v1alpha1.RunKindProwJob, pj.Namespace) {
			// Created there, it would never be seen again: its payload would wait forever.
			return false, fmt.Errorf("verification %s creates ProwJobs in namespace %s, which this controller does not watch: add it to --prowjob-namespace", l.Verification.Name, pj.Namespace)
		}
		if err := s.r.Create(ctx, pj); err != nil {
			return false, client.IgnoreAlreadyExists(err)
		}
		if pj.Status.State == "" {
			// The status subresource drops status on create; Prow expects new jobs triggered.
			pj.Status = verify.TriggeredStatus(metav1.NewTime(s.now))
			return true, s.r.Status().Update(ctx, pj)
		}
		return true, nil
	}
	job, err := verify.NewJob(p, l)
	if err != nil {
		return false, err
	}
	jobcontract.WithRegistryAuth(&job.Spec.Template.Spec, s.r.RegistryAuthSecret)
	if err := s.r.Create(ctx, job); err != nil {
		return false, client.IgnoreAlreadyExists(err)
	}
	return true, nil
}

// payloadJobs are the jobs of one payload or stream, from the job cache.
type payloadJobs struct {
	creation int
	names    map[string]bool
	infos    []JobInfo
}

func (s *streamSync) jobsOf(ctx context.Context, p *v1alpha1.ReleasePayload) (payloadJobs, error) {
	records, err := s.r.Jobs.ByPayload(ctx, p.Namespace, p.Name)
	return jobsOfRecords(records), err
}

func jobsOfRecords(records []*jobcache.Record) payloadJobs {
	jobs := payloadJobs{names: make(map[string]bool, len(records)), infos: make([]JobInfo, 0, len(records))}
	for _, r := range records {
		jobs.names[r.Name] = true
		if r.Kind == v1alpha1.RunKindJob && r.JobType == v1alpha1.JobTypeCreation {
			jobs.creation++
		}
		jobs.infos = append(jobs.infos, JobInfo{Kind: string(r.Kind), Namespace: r.Namespace, Name: r.Name, PayloadKey: r.PayloadKey, FinishedAt: r.FinishedAt()})
	}
	return jobs
}

// recordUpgrades keeps every finished upgrade run in the stream's upgrade graph, a ConfigMap
// the stream owns (labelled release-controller.dev/stream=<stream>). A ConfigMap of that name
// that is not the stream's is left alone: the UpgradeGraphRecorded condition says so and the
// pass fails, so it is retried with backoff, not in a loop.
func (s *streamSync) recordUpgrades(ctx context.Context) {
	key := types.NamespacedName{Namespace: s.stream.Namespace, Name: UpgradeGraphName(s.stream.Name)}
	failed := func(reason, message string, err error) {
		s.pass.UpgradeGraph = &graphOutcome{Reason: reason, Message: message}
		failReason := reason
		if reason == v1alpha1.ReasonUpgradeGraphWriteFailed {
			failReason = v1alpha1.ReasonReconcileFailed
		}
		s.fail(ctx, s.stream, failReason, "RecordUpgrades", "recording upgrade results in ConfigMap "+key.Name, err)
	}
	notOwned := func(why string) {
		err := fmt.Errorf("ConfigMap %s %s; the controller leaves it alone: delete or rename it to record upgrade results", key.Name, why)
		failed(v1alpha1.ReasonUpgradeGraphNotOwned, err.Error(), err)
	}
	// The cache holds only ConfigMaps labelled with a stream: a hand-made one is not found here
	// and is told apart by the create that fails.
	cm := &corev1.ConfigMap{}
	var graph UpgradeGraph
	exists := true
	switch err := s.r.Get(ctx, key, cm); {
	case apierrors.IsNotFound(err):
		exists = false
	case err != nil:
		failed(v1alpha1.ReasonUpgradeGraphWriteFailed, "reading the upgrade graph failed: "+err.Error(), err)
		return
	case cm.Labels[v1alpha1.LabelStream] != s.stream.Name:
		notOwned(fmt.Sprintf("belongs to stream %q (label %s)", cm.Labels[v1alpha1.LabelStream], v1alpha1.LabelStream))
		return
	default:
		if data := cm.Data[UpgradeGraphKey]; data != "" {
			if err := json.Unmarshal([]byte(data), &graph); err != nil {
				failed(v1alpha1.ReasonUpgradeGraphUnreadable, fmt.Sprintf("key %s of ConfigMap %s is not an upgrade graph: %v", UpgradeGraphKey, key.Name, err), err)
				return
			}
		}
	}
	upToDate := &graphOutcome{Reason: v1alpha1.ReasonUpgradeGraphUpToDate, Message: "upgrade results are recorded in ConfigMap " + key.Name}
	updated, changed := RecordUpgrades(graph, s.payloads)
	if !changed {
		if exists {
			s.pass.UpgradeGraph = upToDate
		}
		return
	}
	data, err := json.Marshal(updated)
	if err != nil {
		failed(v1alpha1.ReasonUpgradeGraphWriteFailed, "encoding the upgrade graph failed: "+err.Error(), err)
		return
	}
	if !exists {
		cm = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name,
			Labels: map[string]string{v1alpha1.LabelStream: s.stream.Name}}}
		cm.Data = map[string]string{UpgradeGraphKey: string(data)}
		err = s.r.Create(ctx, cm)
		if apierrors.IsAlreadyExists(err) {
			notOwned(fmt.Sprintf("exists without the label %s=%s", v1alpha1.LabelStream, s.stream.Name))
			return
		}
	} else {
		if cm.Data == nil {
			cm.Data = map[string]string{}
		}
		cm.Data[UpgradeGraphKey] = string(data)
		err = s.r.Update(ctx, cm)
		if apierrors.IsConflict(err) {
			s.requeue(time.Second) // the cache is behind: the next pass reads the graph again
			return
		}
	}
	if err != nil {
		failed(v1alpha1.ReasonUpgradeGraphWriteFailed, "writing the upgrade graph failed: "+err.Error(), err)
		return
	}
	s.pass.UpgradeGraph = upToDate
}

// publish points the stream's publish tags at the newest accepted payload.
func (s *streamSync) publish(ctx context.Context) {
	newest := NewestAccepted(s.payloads)
	if newest == nil || len(s.stream.Spec.PublishTags) == 0 {
		return
	}
	if s.stream.Status.PublishedImage == newest.Status.PayloadImage {
		s.pass.Published = newest.Status.PayloadImage
		return
	}
	for _, tag := range s.stream.Spec.PublishTags {
		if err := s.r.Registry.Tag(ctx, newest.Status.PayloadImage, tag); err != nil {
			s.fail(ctx, s.stream, v1alpha1.ReasonPublishFailed, "Publish", fmt.Sprintf("publishing %s as %s", newest.Name, tag), err)
			return
		}
	}
	s.pass.Published = newest.Status.PayloadImage
	s.r.report.Eventf(ctx, s.stream, newest, v1alpha1.EventPublished, "Publish", "moved the tags %s to payload %s (%s)",
		strings.Join(s.stream.Spec.PublishTags, ", "), newest.Name, newest.Status.PayloadImage)
}

// collect deletes what the retention rules no longer keep: payloads (and their images, when
// asked), finished jobs after their TTL, and jobs whose payload is gone.
func (s *streamSync) collect(ctx context.Context) {
	collected := map[string]bool{}
	for _, p := range Collect(s.stream.Spec.Retention, s.payloads, s.now) {
		if s.stream.Spec.Retention.DeleteImages {
			if err := s.r.Registry.Delete(ctx, p.Spec.PayloadCreationConfig.Repository+":"+p.Name); err != nil && !registryclient.IsNotFound(err) {
				s.fail(ctx, s.stream, v1alpha1.ReasonReconcileFailed, "Collect", "deleting the image of "+p.Name, err)
				continue
			}
		}
		if err := s.r.Delete(ctx, p); client.IgnoreNotFound(err) != nil {
			s.fail(ctx, s.stream, v1alpha1.ReasonReconcileFailed, "Collect", "deleting payload "+p.Name, err)
			continue
		}
		collected[p.Name] = true
		s.r.report.Eventf(ctx, s.stream, nil, v1alpha1.EventPayloadCollected, "Collect", "deleted payload %s (%s): the retention rules no longer keep it", p.Name, p.Status.Phase)
	}
	remaining := s.payloads[:0:0]
	for _, p := range s.payloads {
		if !collected[p.Name] {
			remaining = append(remaining, p)
		}
	}
	s.payloads = remaining

	records, err := s.r.Jobs.ByStream(ctx, s.stream.Namespace, s.stream.Name)
	if err != nil {
		s.fail(ctx, s.stream, v1alpha1.ReasonReconcileFailed, "Collect", "listing jobs", err)
		return
	}
	jobs := jobsOfRecords(records)
	existing := map[string]*v1alpha1.ReleasePayload{}
	for i := range s.payloads {
		existing[jobcontract.PayloadKey(s.payloads[i].Namespace, s.payloads[i].Name)] = &s.payloads[i]
	}
	for i := range jobs.infos {
		j := &jobs.infos[i]
		j.Recorded = recorded(existing[j.PayloadKey], j)
	}
	var ttl *time.Duration
	if s.stream.Spec.Retention.CompletedJobTTL != nil {
		ttl = &s.stream.Spec.Retention.CompletedJobTTL.Duration
	}
	// The index keys jobs by their payload's namespace (ProwJobs elsewhere carry it in a
	// label), so every job listed belongs to a payload of this stream.
	toDelete, next := JobsToCollect(jobs.infos, func(key string) bool { return existing[key] != nil }, ttl, s.now)
	s.requeue(next)
	background := metav1.DeletePropagationBackground
	for _, j := range toDelete {
		var obj client.Object = &batchv1.Job{}
		if j.Kind == "ProwJob" {
			obj = &prowv1.ProwJob{}
		}
		obj.SetNamespace(j.Namespace)
		obj.SetName(j.Name)
		if err := s.r.Delete(ctx, obj, &client.DeleteOptions{PropagationPolicy: &background}); client.IgnoreNotFound(err) != nil {
			s.fail(ctx, s.stream, v1alpha1.ReasonReconcileFailed, "Collect", "deleting job "+j.Name, err)
		}
	}
}

// recorded reports whether the payload's status holds the finished job's result.
func recorded(p *v1alpha1.ReleasePayload, j *JobInfo) bool {
	if p == nil {
		return false
	}
	if p.Status.ReleaseCreationJobResult.Name == j.Name {
		return p.Status.ReleaseCreationJobResult.Status != v1alpha1.CreationJobUnknown
	}
	for _, v := range p.Status.Verifications {
		for _, r := range v.Runs {
			if r.Name == j.Name && r.Namespace == j.Namespace {
				return r.State.IsTerminal()
			}
		}
	}
	return false
}

// writeStatus writes the status ComputeStatus makes of the pass, if it changed, and updates
// the stream's metrics.
func (s *streamSync) writeStatus(ctx context.Context) error {
	if s.pass.Listed = s.listed; s.listed {
		s.pass.Payloads = s.payloads
		observePayloads(s.stream, s.payloads)
	}
	status := ComputeStatus(s.stream, s.pass, s.now)
	if equality.Semantic.DeepEqual(status, s.stream.Status) {
		return nil
	}
	patch := client.MergeFrom(s.stream.DeepCopy())
	s.stream.Status = status
	if err := s.r.Status().Patch(ctx, s.stream, patch); client.IgnoreNotFound(err) != nil {
		s.r.report.Fail(ctx, s.stream, v1alpha1.ReasonReconcileFailed, "WriteStatus", "writing the status", err)
		return fmt.Errorf("writing status of stream %s/%s: %w", s.stream.Namespace, s.stream.Name, err)
	}
	return nil
}

func acceptedSources(payloads []v1alpha1.ReleasePayload) []verify.UpgradeSource {
	var sources []verify.UpgradeSource
	for i := range payloads {
		if payloads[i].Status.Phase == v1alpha1.PhaseAccepted && payloads[i].Status.PayloadImage != "" {
			sources = append(sources, verify.UpgradeSource{Tag: payloads[i].Name, Image: payloads[i].Status.PayloadImage})
		}
	}
	return sources
}

// NewRateLimiter is the stream controller's rate limiter: per stream, FailureBackoffBase after
// a failed pass, doubling up to FailureBackoffMax. (controller-runtime's default goes up to
// 1,000 s, which would hold a stream's imports back for a quarter of an hour.)
func NewRateLimiter() workqueue.TypedRateLimiter[reconcile.Request] {
	return workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](FailureBackoffBase, FailureBackoffMax)
}

// SetupWithManager registers the controller and the payload-by-stream index; r.Jobs must
// have been added to mgr.
func (r *Reconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager) error {
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	if r.ImportInterval == 0 {
		r.ImportInterval = DefaultImportInterval
	}
	if r.BuildImage == "" {
		r.BuildImage = DefaultBuildImage
	}
	if r.Registry == nil {
		r.Registry = registryclient.New()
	}
	if r.Events == nil {
		r.Events = mgr.GetEventRecorder(eventlog.Reporter)
	}
	r.report = eventlog.Recorder{Events: r.Events}
	if err := mgr.GetFieldIndexer().IndexField(ctx, &v1alpha1.ReleasePayload{}, IndexStream, func(obj client.Object) []string {
		return []string{obj.(*v1alpha1.ReleasePayload).Spec.PayloadCoordinates.Stream}
	}); err != nil {
		return fmt.Errorf("indexing payloads by stream: %w", err)
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("releasestream").
		For(&v1alpha1.ReleaseStream{}).
		Watches(&v1alpha1.ReleasePayload{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, obj client.Object) []reconcile.Request {
			p := obj.(*v1alpha1.ReleasePayload)
			return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: p.Namespace, Name: p.Spec.PayloadCoordinates.Stream}}}
		})).
		WithOptions(controller.Options{MaxConcurrentReconciles: 4, RateLimiter: NewRateLimiter()}).
		Complete(r)
}
