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
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	prowv1 "github.com/release-controller/release-controller/api/prow/v1"
	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/payload"
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

// Reconciler runs the release flow of every ReleaseStream.
type Reconciler struct {
	client.Client
	// APIReader reads payloads with their job templates, which the cache leaves out; nil
	// reads them through Client.
	APIReader client.Reader
	// Jobs holds the payloads' Jobs and ProwJobs, indexed by payload and by stream.
	Jobs     *payload.JobCache
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
	// WatchProwJobs is set when the cluster serves ProwJobs.
	WatchProwJobs bool

	imports importTimes
}

// +kubebuilder:rbac:groups=release-controller.dev,resources=releasestreams,verbs=get;list;watch
// +kubebuilder:rbac:groups=release-controller.dev,resources=releasestreams/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=release-controller.dev,resources=releasepayloads,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=release-controller.dev,resources=releasepayloads/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=batch,resources=jobs,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups=prow.k8s.io,resources=prowjobs,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups=prow.k8s.io,resources=prowjobs/status,verbs=get;update;patch
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;watch;create;update;patch

// Reconcile runs the stream's steps in order — import, abort, create, build, record images,
// verify, record upgrades, publish, collect — and writes the stream's status once at the end.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (result ctrl.Result, err error) {
	var stream v1alpha1.ReleaseStream
	if err := r.Get(ctx, req.NamespacedName, &stream); err != nil {
		if apierrors.IsNotFound(err) {
			r.imports.forget(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	now := r.Clock.Now()
	s := &streamSync{r: r, stream: &stream, status: stream.Status.DeepCopy(), now: now}
	defer func() {
		if patchErr := s.writeStatus(ctx); patchErr != nil {
			err = errors.Join(err, patchErr)
		}
		result = ctrl.Result{RequeueAfter: s.requeueAfter}
	}()
	return ctrl.Result{}, s.run(ctx)
}

// streamSync is one reconcile of one stream.
type streamSync struct {
	r            *Reconciler
	stream       *v1alpha1.ReleaseStream
	status       *v1alpha1.ReleaseStreamStatus
	now          time.Time
	payloads     []v1alpha1.ReleasePayload // newest first
	requeueAfter time.Duration
	ready        metav1.Condition
	failures     []string
}

func (s *streamSync) requeue(d time.Duration) {
	if d > 0 && (s.requeueAfter == 0 || d < s.requeueAfter) {
		s.requeueAfter = d
	}
}

// fail records a failed step; the other steps still run, the stream is not Ready.
func (s *streamSync) fail(step string, err error) {
	s.failures = append(s.failures, fmt.Sprintf("%s: %v", step, err))
}

func (s *streamSync) run(ctx context.Context) error {
	pinned, resolved := s.importComponents(ctx)
	if err := s.listPayloads(ctx); err != nil {
		return err
	}
	s.abortSuperseded(ctx)
	if resolved {
		s.createPayload(ctx, pinned)
	} else {
		s.ready = metav1.Condition{Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonComponentsUnresolved, Message: "no payload is created until every component resolves"}
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
	return nil
}

// importComponents resolves the components followed by tag, when their interval or backoff has
// passed, and returns every component pinned by digest; resolved is false while any is not.
func (s *streamSync) importComponents(ctx context.Context) (pinned []v1alpha1.PinnedComponent, resolved bool) {
	interval := s.r.ImportInterval
	previous := map[string]v1alpha1.ComponentStatus{}
	for _, c := range s.status.Components {
		previous[c.Name] = c
	}
	specChanged := s.status.ObservedGeneration != s.stream.Generation
	statuses := make([]v1alpha1.ComponentStatus, 0, len(s.stream.Spec.Components))
	var unresolved []string
	key := types.NamespacedName{Namespace: s.stream.Namespace, Name: s.stream.Name}
	for _, c := range s.stream.Spec.Components {
		st := previous[c.Name]
		st.Name = c.Name
		due, wait := ImportDue(st, s.r.imports.get(key, c.Name), specChanged, s.now, interval)
		if due {
			digestRef, err := s.r.Registry.Resolve(ctx, c.Image)
			s.r.imports.set(key, c.Name, s.now)
			st = ImportResult(st, digestRef, err, s.now)
			wait = interval
			if err != nil {
				wait = ImportBackoff(st.Failures)
			}
		}
		s.requeue(wait)
		if st.Error != "" || st.Image == "" {
			unresolved = append(unresolved, fmt.Sprintf("%s (%s)", c.Name, st.Error))
		} else {
			pinned = append(pinned, v1alpha1.PinnedComponent{Name: c.Name, Image: st.Image, Source: c.Image})
		}
		statuses = append(statuses, st)
	}
	s.status.Components = statuses
	imported := metav1.Condition{Type: v1alpha1.ConditionImported, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonComponentsResolved,
		Message: fmt.Sprintf("all %d components resolved", len(statuses))}
	if len(unresolved) > 0 {
		imported.Status, imported.Reason = metav1.ConditionFalse, v1alpha1.ReasonComponentsUnresolved
		imported.Message = fmt.Sprintf("%d of %d components did not resolve; retrying with backoff: %s", len(unresolved), len(statuses), strings.Join(unresolved, "; "))
	}
	s.setCondition(imported)
	return pinned, len(unresolved) == 0
}

func (s *streamSync) listPayloads(ctx context.Context) error {
	var list v1alpha1.ReleasePayloadList
	if err := s.r.List(ctx, &list, client.InNamespace(s.stream.Namespace), client.MatchingFields{IndexStream: s.stream.Name}); err != nil {
		return fmt.Errorf("listing payloads of stream %s: %w", s.stream.Name, err)
	}
	s.payloads = list.Items
	NewestFirst(s.payloads)
	return nil
}

// abortSuperseded marks pending payloads older than the newest as aborted and stops their builds.
func (s *streamSync) abortSuperseded(ctx context.Context) {
	for _, p := range ToAbort(s.payloads) {
		reason := fmt.Sprintf("superseded by %s before its image was built", s.payloads[0].Name)
		patch := client.MergeFrom(p.DeepCopy())
		metav1.SetMetaDataAnnotation(&p.ObjectMeta, v1alpha1.AnnotationAborted, reason)
		if err := s.r.Patch(ctx, p, patch); err != nil {
			s.fail("aborting "+p.Name, err)
			continue
		}
		background := metav1.DeletePropagationBackground
		job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: CreationJobName(p.Name)}}
		if err := s.r.Delete(ctx, job, &client.DeleteOptions{PropagationPolicy: &background}); client.IgnoreNotFound(err) != nil {
			s.fail("stopping the build of "+p.Name, err)
		}
	}
}

func (s *streamSync) createPayload(ctx context.Context, pinned []v1alpha1.PinnedComponent) {
	hash := ComponentsHash(pinned)
	s.status.ComponentsHash = hash
	decision := DecideCreate(&s.stream.Spec, hash, s.payloads, s.now)
	s.requeue(decision.RequeueAfter)
	s.ready = metav1.Condition{Status: metav1.ConditionTrue, Reason: decision.Reason, Message: decision.Message}
	if !decision.Create {
		return
	}
	tag := ReleaseTag(s.stream.Spec.TagPrefix, s.now)
	if s.stream.Spec.MirrorRepository != "" {
		mirrored, err := s.mirror(ctx, tag, pinned)
		if err != nil {
			s.ready = metav1.Condition{Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonMirrorFailed, Message: err.Error()}
			s.requeue(ImportBackoff(1))
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
		s.fail("creating payload "+tag, err)
		return
	}
	s.ready.Message = fmt.Sprintf("created payload %s", tag)
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
	if jobs, err := s.jobsOf(ctx, p); err != nil || jobs.creation > 0 {
		return
	}
	job := NewCreationJob(p, s.r.BuildImage, s.r.BuildServiceAccount)
	if err := s.r.Create(ctx, job); client.IgnoreAlreadyExists(err) != nil {
		s.fail("creating the build job of "+p.Name, err)
	}
}

// recordImage records the digest of a built payload's image in its status.
func (s *streamSync) recordImage(ctx context.Context, p *v1alpha1.ReleasePayload) {
	if p.Status.ReleaseCreationJobResult.Status != v1alpha1.CreationJobSuccess || p.Status.PayloadImage != "" {
		return
	}
	ref, err := s.r.Registry.Resolve(ctx, p.Spec.PayloadCreationConfig.Repository+":"+p.Name)
	if err != nil {
		s.fail("resolving the image of "+p.Name, err)
		s.requeue(ImportBackoff(1))
		return
	}
	patch := client.MergeFromWithOptions(p.DeepCopy(), client.MergeFromWithOptimisticLock{})
	p.Status.PayloadImage = ref
	if err := s.r.Status().Patch(ctx, p, patch); err != nil {
		if !apierrors.IsConflict(err) {
			s.fail("recording the image of "+p.Name, err)
		}
		s.requeue(time.Second)
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
			s.fail("recording skipped upgrades of "+p.Name, err)
		}
	}
	if len(plan.Launches) == 0 {
		return
	}
	jobs, err := s.jobsOf(ctx, p)
	if err != nil {
		s.fail("listing the jobs of "+p.Name, err)
		return
	}
	// Runs launched already that the payload controller has not recorded yet are left out.
	launches := slices.DeleteFunc(plan.Launches, func(l verify.Launch) bool {
		return jobs.names[verify.RunName(p.Name, l.Verification.Name, l.Attempt)]
	})
	if len(launches) == 0 {
		return
	}
	templates, err := s.verificationTemplates(ctx, p)
	if err != nil {
		s.fail("reading the verifications of "+p.Name, err)
		return
	}
	for _, l := range launches {
		l.Verification = templates[l.Verification.Name]
		name := verify.RunName(p.Name, l.Verification.Name, l.Attempt)
		if err := s.launch(ctx, p, l); err != nil {
			s.fail(fmt.Sprintf("launching %s of %s", name, p.Name), err)
		}
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

func (s *streamSync) launch(ctx context.Context, p *v1alpha1.ReleasePayload, l verify.Launch) error {
	if l.Verification.ProwJob != nil {
		if !s.r.WatchProwJobs {
			return fmt.Errorf("verification %s uses a ProwJob, but this cluster does not serve prow.k8s.io/v1 ProwJobs", l.Verification.Name)
		}
		pj, err := verify.NewProwJob(p, l)
		if err != nil {
			return err
		}
		if err := s.r.Create(ctx, pj); err != nil {
			return client.IgnoreAlreadyExists(err)
		}
		if pj.Status.State == "" {
			// The status subresource drops status on create; Prow expects new jobs triggered.
			pj.Status = verify.TriggeredStatus(metav1.NewTime(s.now))
			return s.r.Status().Update(ctx, pj)
		}
		return nil
	}
	job, err := verify.NewJob(p, l)
	if err != nil {
		return err
	}
	return client.IgnoreAlreadyExists(s.r.Create(ctx, job))
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

func jobsOfRecords(records []*payload.JobRecord) payloadJobs {
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

// recordUpgrades keeps every finished upgrade run in the stream's upgrade graph.
func (s *streamSync) recordUpgrades(ctx context.Context) {
	cm := &corev1.ConfigMap{}
	key := types.NamespacedName{Namespace: s.stream.Namespace, Name: UpgradeGraphName(s.stream.Name)}
	var graph UpgradeGraph
	exists := true
	if err := s.r.Get(ctx, key, cm); apierrors.IsNotFound(err) {
		exists = false
	} else if err != nil {
		s.fail("reading the upgrade graph", err)
		return
	} else if err := json.Unmarshal([]byte(cm.Data[UpgradeGraphKey]), &graph); err != nil && cm.Data[UpgradeGraphKey] != "" {
		s.fail("reading the upgrade graph", err)
		return
	}
	updated, changed := RecordUpgrades(graph, s.payloads)
	if !changed {
		return
	}
	data, err := json.Marshal(updated)
	if err != nil {
		s.fail("writing the upgrade graph", err)
		return
	}
	if !exists {
		cm = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name,
			Labels: map[string]string{v1alpha1.LabelStream: s.stream.Name}}}
		cm.Data = map[string]string{UpgradeGraphKey: string(data)}
		err = s.r.Create(ctx, cm)
	} else {
		cm.Data = map[string]string{UpgradeGraphKey: string(data)}
		err = s.r.Update(ctx, cm)
	}
	if err != nil {
		s.fail("writing the upgrade graph", err)
		s.requeue(time.Second)
	}
}

// publish points the stream's publish tags at the newest accepted payload.
func (s *streamSync) publish(ctx context.Context) {
	newest := NewestAccepted(s.payloads)
	if newest == nil {
		return
	}
	s.status.LatestAccepted = newest.Name
	if len(s.stream.Spec.PublishTags) == 0 || s.status.PublishedImage == newest.Status.PayloadImage {
		return
	}
	for _, tag := range s.stream.Spec.PublishTags {
		if err := s.r.Registry.Tag(ctx, newest.Status.PayloadImage, tag); err != nil {
			s.fail("publishing "+newest.Name, err)
			s.requeue(ImportBackoff(1))
			return
		}
	}
	s.status.PublishedImage = newest.Status.PayloadImage
}

// collect deletes what the retention rules no longer keep: payloads (and their images, when
// asked), finished jobs after their TTL, and jobs whose payload is gone.
func (s *streamSync) collect(ctx context.Context) {
	collected := map[string]bool{}
	for _, p := range Collect(s.stream.Spec.Retention, s.payloads, s.now) {
		if s.stream.Spec.Retention.DeleteImages {
			if err := s.r.Registry.Delete(ctx, p.Spec.PayloadCreationConfig.Repository+":"+p.Name); err != nil && !registryclient.IsNotFound(err) {
				s.fail("deleting the image of "+p.Name, err)
				continue
			}
		}
		if err := s.r.Delete(ctx, p); client.IgnoreNotFound(err) != nil {
			s.fail("deleting payload "+p.Name, err)
			continue
		}
		collected[p.Name] = true
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
		s.fail("listing jobs", err)
		return
	}
	jobs := jobsOfRecords(records)
	existing := map[string]*v1alpha1.ReleasePayload{}
	for i := range s.payloads {
		existing[payload.PayloadKey(s.payloads[i].Namespace, s.payloads[i].Name)] = &s.payloads[i]
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
			s.fail("deleting job "+j.Name, err)
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

func (s *streamSync) setCondition(c metav1.Condition) {
	c.ObservedGeneration = s.stream.Generation
	c.LastTransitionTime = metav1.NewTime(s.now)
	meta.SetStatusCondition(&s.status.Conditions, c)
}

// writeStatus writes the stream's status if it changed.
func (s *streamSync) writeStatus(ctx context.Context) error {
	s.status.ObservedGeneration = s.stream.Generation
	if len(s.payloads) > 0 {
		s.status.LatestPayload = s.payloads[0].Name
	}
	s.status.Payloads = Counts(s.payloads)
	ready := s.ready
	ready.Type = v1alpha1.ConditionReady
	if len(s.failures) > 0 {
		ready.Status, ready.Reason, ready.Message = metav1.ConditionFalse, v1alpha1.ReasonReconcileFailed, strings.Join(s.failures, "; ")
		s.requeue(ImportBackoff(1))
	}
	if ready.Reason != "" {
		s.setCondition(ready)
	}
	if equality.Semantic.DeepEqual(*s.status, s.stream.Status) {
		return nil
	}
	patch := client.MergeFrom(s.stream.DeepCopy())
	s.stream.Status = *s.status
	if err := s.r.Status().Patch(ctx, s.stream, patch); client.IgnoreNotFound(err) != nil {
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
		WithOptions(controller.Options{MaxConcurrentReconciles: 4}).
		Complete(r)
}
