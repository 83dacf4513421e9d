package pipeline

// Carrying out verification after rollout (verification.go decides): the runs of each
// environment's verification are read from job records (the controller's cluster's, and those
// of the clusters verifications name), the due runs are created with the stream's launcher
// (verify.BuildJob, verify.BuildProwJob) as the pipeline's account, the runs of revisions no
// longer verified are deleted, and each verification's outcome is written to the release log
// before the status records it. All that is known of a verification is in
// status.environments[].verification and in its runs' labels: a restarted controller finds
// both again.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	prowv1 "github.com/release-controller/release-controller/api/prow/v1"
	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/clusters"
	"github.com/release-controller/release-controller/internal/eventlog"
	"github.com/release-controller/release-controller/internal/jobcache"
	"github.com/release-controller/release-controller/internal/jobcontract"
	"github.com/release-controller/release-controller/internal/releaselog"
	"github.com/release-controller/release-controller/internal/verify"
)

// ClusterUser is the kind under which the pipeline controller uses the remote clusters its
// environments' verifications name (clusters.Jobs).
const ClusterUser = "pipeline"

// The release log's entry types of verification after rollout: an environment's verification
// passed or failed, and an environment was rolled back.
const (
	LogTypeVerification = "verification"
	LogTypeRollback     = "rollback"
)

// VerifyOptions are what verification after rollout runs with.
type VerifyOptions struct {
	// Jobs holds the records of the controller's jobs on its own cluster (the payload and
	// stream controllers' cache); nil: the pipeline controller keeps one of its own runs.
	Jobs *jobcache.Cache
	// Clusters runs the jobs on the clusters verifications name (shared with the payload and
	// stream controllers); nil: the pipeline controller keeps its own.
	Clusters *clusters.Jobs
	// Backoff spaces the retries of a failed run; zero: verify.DefaultBackoff.
	Backoff verify.Backoff
	// WatchProwJobs: the cluster serves ProwJobs and Jobs caches them (else a prowJob
	// verification fails saying so). ProwJobNamespaces are the namespaces other than a
	// pipeline's where its ProwJobs may be created (--prowjob-namespace).
	WatchProwJobs     bool
	ProwJobNamespaces []string
}

// The pipeline controller creates, reads and deletes its verification runs: Jobs (as the
// pipeline's service account when it has one, so that the account's RBAC decides: it needs
// create and delete on jobs) and ProwJobs in Prow's namespace.
// +kubebuilder:rbac:groups=batch,resources=jobs,verbs=list;watch;create;delete
// +kubebuilder:rbac:groups=prow.k8s.io,resources=prowjobs,verbs=list;watch;create;delete
// +kubebuilder:rbac:groups=prow.k8s.io,resources=prowjobs/status,verbs=update

// setupVerification fills in the job caches verification reads when none were given: a job
// cache of pipeline runs only on the controller's cluster, and a remote clusters manager.
func (r *Reconciler) setupVerification(mgr ctrl.Manager) error {
	o := &r.Verify
	if o.Backoff.Base == 0 {
		o.Backoff = verify.DefaultBackoff
	}
	selector := labels.NewSelector()
	req, err := labels.NewRequirement(v1alpha1.LabelPipeline, selection.Exists, nil)
	if err != nil {
		return err
	}
	selector = selector.Add(*req)
	if o.Jobs == nil {
		if o.Jobs, err = jobcache.New(mgr, jobcache.Options{Selector: selector}); err != nil {
			return err
		}
		if err := mgr.Add(o.Jobs); err != nil {
			return err
		}
	}
	if o.Clusters == nil {
		o.Clusters = clusters.NewJobs(mgr.GetClient(), mgr.GetAPIReader(), selector)
		o.Clusters.InsecureKubeconfigExec = r.InsecureKubeconfigExec
		if err := mgr.Add(o.Clusters); err != nil {
			return err
		}
	}
	return nil
}

// verificationSources bring a pipeline whose verification runs changed, on the controller's
// cluster and on the others (and those whose verification cluster came back, went away or was
// first listed).
func (r *Reconciler) verificationSources() (source.Source, source.Source) {
	changed := func(rec *jobcache.Record, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		if rec.PipelineKey == "" {
			return
		}
		namespace, name, _ := strings.Cut(rec.PipelineKey, "/")
		q.Add(reconcile.Request{NamespacedName: types.NamespacedName{Namespace: namespace, Name: name}})
	}
	return r.Verify.Jobs.Source(changed), r.Verify.Clusters.Source(ClusterUser, changed)
}

// forgetVerification releases the verification clusters of a deleted pipeline.
func (r *Reconciler) forgetVerification(ctx context.Context, key types.NamespacedName) error {
	_, err := r.Verify.Clusters.Use(ctx, ClusterUser, key, nil)
	return err
}

// verificationClusterRefs are the kubeconfig Secrets p's verifications name (indexed with the
// targets', so that a change of one brings the pipeline).
func verificationClusterRefs(p *v1alpha1.Pipeline) []string {
	var refs []string
	for _, e := range p.Spec.Environments {
		if e.Verification == nil {
			continue
		}
		for _, v := range e.Verification.Verifications {
			if v.Cluster != nil && v.Cluster.SecretRef != "" && !slices.Contains(refs, v.Cluster.SecretRef) {
				refs = append(refs, v.Cluster.SecretRef)
			}
		}
	}
	return refs
}

// verifies reports whether p verifies an environment, or did and has runs or a verification
// to tidy up.
func verifies(p *v1alpha1.Pipeline) bool {
	return slices.ContainsFunc(p.Spec.Environments, func(e v1alpha1.Environment) bool { return e.Verification != nil }) ||
		slices.ContainsFunc(p.Status.Environments, func(e v1alpha1.EnvironmentStatus) bool { return e.Verification != nil })
}

// verifyEnvironments advances every environment's verification from what obs saw of its
// targets, launching the runs due and deleting those of revisions no longer verified, and
// puts the outcome into p.Status (verification, lastVerified, unpromotable), from which Plan
// then decides the promotions. It returns how soon a retry is due, and the steps' failures; an
// environment whose step failed keeps its previous status.
func (r *Reconciler) verifyEnvironments(ctx context.Context, p *v1alpha1.Pipeline, obs observation, tenant string, now time.Time) (time.Duration, error) {
	key := client.ObjectKeyFromObject(p)
	if !verifies(p) {
		return 0, r.forgetVerification(ctx, key)
	}
	want := map[clusters.Key][]string{}
	for _, e := range p.Spec.Environments {
		if e.Verification == nil {
			continue
		}
		for i := range e.Verification.Verifications {
			v := &e.Verification.Verifications[i]
			if k, remote := verify.ClusterKeyOf(p.Namespace, v); remote && !slices.Contains(want[k], verify.RunNamespace(p.Namespace, v)) {
				want[k] = append(want[k], verify.RunNamespace(p.Namespace, v))
			}
		}
	}
	views, err := r.Verify.Clusters.Use(ctx, ClusterUser, key, want)
	if err != nil {
		return 0, eventlog.Step(v1alpha1.ReasonReconcileFailed, "Verify", "watching the verification clusters", err)
	}
	local, err := r.Verify.Jobs.ByPipeline(ctx, p.Namespace, p.Name)
	if err != nil {
		return 0, eventlog.Step(v1alpha1.ReasonReconcileFailed, "Verify", "reading the verification runs", err)
	}
	records := make([]runRecord, 0, len(local))
	for _, rec := range local {
		records = append(records, runRecord{Record: rec})
	}
	// A cluster whose jobs are not listed yet (or that cannot be read): nothing is known of the
	// runs there, and nothing is launched there.
	unknownCluster := map[clusters.Key]string{}
	for k, view := range views {
		if !view.Synced() {
			unknownCluster[k] = view.Problem
			continue
		}
		rs, err := view.Jobs.ByPipeline(ctx, p.Namespace, p.Name)
		if err != nil {
			return 0, eventlog.Step(v1alpha1.ReasonReconcileFailed, "Verify", "reading the verification runs on cluster "+k.String(), err)
		}
		for _, rec := range rs {
			records = append(records, runRecord{Record: rec, cluster: k})
		}
	}

	var retry time.Duration
	var errs []error
	for i, env := range p.Spec.Environments {
		var targets []TargetObservation
		if i < len(obs.targets) {
			targets = obs.targets[i]
		}
		observed := v1alpha1.EnvironmentStatus{Name: env.Name}
		observeTargets(&observed, env.Targets, targets)
		prev := environmentStatus(&p.Status, env.Name)
		unknown := map[string]bool{}
		var runs []ObservedRun
		if env.Verification != nil {
			for j := range env.Verification.Verifications {
				v := &env.Verification.Verifications[j]
				if k, remote := verify.ClusterKeyOf(p.Namespace, v); remote {
					if problem, down := unknownCluster[k]; down {
						unknown[v.Name] = true
						if problem != "" {
							errs = append(errs, eventlog.Step(v1alpha1.ReasonReconcileFailed, "Verify",
								fmt.Sprintf("reading the runs of verification %s of %s on cluster %s", v.Name, env.Name, k), errors.New(problem)))
						}
					}
				}
			}
			runs = observedRuns(records, env.Name)
		}
		step := StepVerification(env, prev, observed, runs, unknown, now, r.Verify.Backoff)
		if p.Spec.Suspend {
			step.Launches = nil // the runs that go on are still recorded; none starts
		}
		if len(step.Launches) > 0 {
			refused, err := r.launch(ctx, p, env, step, views, tenant, now)
			errs = append(errs, err)
			if len(refused) > 0 {
				// The runs never created failed: judge the verification again with them.
				again := prevWith(prev, env.Name, step)
				addRuns(again.Verification, refused)
				step = StepVerification(env, again, observed, runs, unknown, now, r.Verify.Backoff)
				step.Launches = nil
			}
		}
		if step.RequeueAfter > 0 && (retry == 0 || step.RequeueAfter < retry) {
			retry = step.RequeueAfter
		}
		if step.Completed {
			if err := r.logVerification(ctx, p, env, prev, step, now); err != nil {
				// Recorded once logged: the next reconcile decides it again.
				errs = append(errs, eventlog.Step(v1alpha1.ReasonReconcileFailed, "Verify",
					fmt.Sprintf("logging the verification of %s in %s", step.Verification.Revision, env.Name), err))
				continue
			}
		}
		applyStep(&p.Status, env.Name, step)
	}
	errs = append(errs, r.collectRuns(ctx, p, records, views, tenant))
	return retry, errors.Join(errs...)
}

// applyStep puts an environment's verification step into status, which gains an entry for
// the environment when it had none (Plan fills in the rest).
func applyStep(status *v1alpha1.PipelineStatus, env string, step VerificationStep) {
	s := environmentStatus(status, env)
	if s == nil {
		status.Environments = append(status.Environments, v1alpha1.EnvironmentStatus{Name: env})
		s = &status.Environments[len(status.Environments)-1]
	}
	s.Verification, s.LastVerified = step.Verification, step.LastVerified
	if step.Unpromotable != nil {
		status.Unpromotable = MarkUnpromotable(status.Unpromotable, *step.Unpromotable)
	}
}

// prevWith is prev (nil: an environment without a status yet) with step's verification.
func prevWith(prev *v1alpha1.EnvironmentStatus, env string, step VerificationStep) *v1alpha1.EnvironmentStatus {
	s := &v1alpha1.EnvironmentStatus{Name: env}
	if prev != nil {
		s = prev.DeepCopy()
	}
	s.Verification, s.LastVerified = step.Verification.DeepCopy(), step.LastVerified
	return s
}

// addRuns records runs (by verification) in v.
func addRuns(v *v1alpha1.EnvironmentVerificationStatus, runs []ObservedRun) {
	for _, r := range runs {
		i := slices.IndexFunc(v.Verifications, func(s v1alpha1.VerificationStatus) bool { return s.Name == r.Verification })
		if i < 0 {
			v.Verifications = append(v.Verifications, v1alpha1.VerificationStatus{Name: r.Verification})
			i = len(v.Verifications) - 1
		}
		v.Verifications[i].Runs = append(v.Verifications[i].Runs, r.Run)
	}
}

// runRecord is the record of a run, and the cluster it is on (zero: the controller's).
type runRecord struct {
	*jobcache.Record
	cluster clusters.Key
}

// observedRuns are the runs records hold of environment env.
func observedRuns(records []runRecord, env string) []ObservedRun {
	var runs []ObservedRun
	for _, rec := range records {
		if rec.Environment != env {
			continue
		}
		if run, ok := rec.Run(); ok {
			runs = append(runs, ObservedRun{Revision: rec.Revision, Verification: rec.Verification, Run: run})
		}
	}
	return runs
}

// RunEnv is the environment of every container of a run of verification v of environment env
// of p at revision (a contract: v1alpha1.EnvPipeline and the others), and the run's platform
// when v has one. It is pure.
func RunEnv(p *v1alpha1.Pipeline, env v1alpha1.Environment, revision string, v *v1alpha1.Verification) []corev1.EnvVar {
	targets := make([]string, len(env.Targets))
	for i, t := range env.Targets {
		targets[i] = targetName(v1alpha1.TargetStatus{Namespace: t.Namespace, ClusterRef: t.ClusterRef})
	}
	vars := []corev1.EnvVar{
		{Name: v1alpha1.EnvPipeline, Value: p.Name},
		{Name: v1alpha1.EnvPipelineNamespace, Value: p.Namespace},
		{Name: v1alpha1.EnvEnvironment, Value: env.Name},
		{Name: v1alpha1.EnvRevision, Value: revision},
		{Name: v1alpha1.EnvTargets, Value: strings.Join(targets, ",")},
	}
	if platform := v.Platform(); platform != "" {
		vars = append(vars, corev1.EnvVar{Name: v1alpha1.EnvReleasePlatform, Value: platform})
	}
	return vars
}

// VerificationAccount is the account the pods of p's verification runs run as: the
// pipeline's service account (spec.serviceAccountName, else defaultAccount, else the
// namespace's default), without its API token (a run that needs credentials mounts them
// itself). A Job template may name no other (verify.CheckPodSpec). It is pure.
func VerificationAccount(p *v1alpha1.Pipeline, defaultAccount string) *v1alpha1.VerificationServiceAccount {
	name := cmpOr(p.Spec.ServiceAccountName, defaultAccount, v1alpha1.DefaultVerificationServiceAccount)
	return &v1alpha1.VerificationServiceAccount{Name: name}
}

func cmpOr(values ...string) string {
	for _, v := range values {
		if v != "" {
			return v
		}
	}
	return ""
}

// RunObject is the object of run attempt of verification v of environment env of p at
// revision, created in namespace: the contract's name, labels and annotations, and owned by
// p in p's own namespace (deleting the pipeline deletes its runs there).
func RunObject(p *v1alpha1.Pipeline, env, revision string, v *v1alpha1.Verification, attempt int32, namespace string) verify.RunObject {
	run := jobcontract.PipelineRun{PipelineNamespace: p.Namespace, Pipeline: p.Name, Environment: env, Revision: revision, Verification: v.Name, Attempt: attempt}
	o := verify.RunObject{Namespace: namespace, Name: run.Name(), Labels: run.Labels(), Annotations: run.Annotations()}
	if namespace == p.Namespace {
		owner := jobcontract.OwnerReferenceToPipeline(p)
		o.Owner = &owner
	}
	return o
}

// launch creates the runs step launches, each reported with an Event once created; it
// returns the runs that were refused (the tenancy rules, a template the API server refuses,
// a ProwJob that cannot be watched), as failed runs, and the failures of the others.
func (r *Reconciler) launch(ctx context.Context, p *v1alpha1.Pipeline, env v1alpha1.Environment, step VerificationStep, views map[clusters.Key]clusters.View, tenant string, now time.Time) ([]ObservedRun, error) {
	rev := step.Verification.Revision
	var refused []ObservedRun
	var errs []error
	for _, l := range step.Launches {
		v := &l.Verification
		o, obj, writer, err := r.runObject(ctx, p, env, rev, l, views, tenant)
		if err == nil {
			err = writer.Create(ctx, obj)
			if err == nil && v.ProwJob != nil {
				// The status subresource drops status on create; Prow expects new jobs triggered.
				pj := obj.(*prowv1.ProwJob)
				pj.Status = verify.TriggeredStatus(metav1.NewTime(now))
				err = writer.Status().Update(ctx, pj)
			}
		}
		var refusal *verify.Refusal
		switch {
		case err == nil:
			r.reportLaunch(ctx, p, env.Name, rev, l, o.Name)
		case apierrors.IsAlreadyExists(err):
		case errors.As(err, &refusal), errors.Is(err, errNotRunnable), apierrors.IsInvalid(err), apierrors.IsBadRequest(err):
			// Trying again gives the same answer: the run failed, with the reason, and counts
			// against the retries.
			kind := v1alpha1.RunKindJob
			if v.ProwJob != nil {
				kind = v1alpha1.RunKindProwJob
			}
			at := metav1.NewTime(now)
			refused = append(refused, ObservedRun{Revision: rev, Verification: v.Name, Run: v1alpha1.JobRun{
				Kind: kind, Namespace: o.Namespace, Name: o.Name, Attempt: l.Attempt, State: v1alpha1.JobFailure,
				Message: truncate("the run was not created: "+err.Error(), 512), StartTime: &at, CompletionTime: &at,
			}})
			r.report.Warningf(ctx, p, nil, v1alpha1.EventVerificationFailed, "Verify", "%s %s of %s in %s was not created: %v", kind, o.Name, rev, env.Name, err)
		default:
			errs = append(errs, eventlog.Step(v1alpha1.ReasonReconcileFailed, "Verify", fmt.Sprintf("launching %s of %s in %s", o.Name, rev, env.Name), err))
		}
	}
	return refused, errors.Join(errs...)
}

// errNotRunnable: a run that can never be created as configured (a ProwJob where none are
// served or watched, a cluster for a ProwJob).
var errNotRunnable = errors.New("not runnable")

// runObject builds the object of launch l of environment env's verification at rev, and the
// client that creates it: on the cluster the verification names (its kubeconfig's identity,
// once the pipeline's account was seen allowed to read that Secret), else as the pipeline's
// account in its namespace; a ProwJob as the controller, in its namespace or one
// --prowjob-namespace allows.
func (r *Reconciler) runObject(ctx context.Context, p *v1alpha1.Pipeline, env v1alpha1.Environment, rev string, l verify.Launch, views map[clusters.Key]clusters.View, tenant string) (verify.RunObject, client.Object, client.Client, error) {
	v := &l.Verification
	vars := RunEnv(p, env, rev, v)
	if v.ProwJob != nil {
		o := RunObject(p, env.Name, rev, v, l.Attempt, verify.ProwJobNamespace(p.Namespace, v))
		if !r.Verify.WatchProwJobs || !r.Verify.Jobs.Watches(v1alpha1.RunKindProwJob, o.Namespace) {
			return o, nil, nil, fmt.Errorf("%w: verification %s creates ProwJobs in namespace %s, which this controller does not watch (it watches ProwJobs where prow.k8s.io/v1 is served, in the namespaces it watches and those of --prowjob-namespace)", errNotRunnable, v.Name, o.Namespace)
		}
		if err := verify.CheckProwJobNamespaceOf("pipeline", p.Namespace, v, r.Verify.ProwJobNamespaces); err != nil {
			return o, nil, nil, err
		}
		pj, err := verify.BuildProwJob(v, o, vars)
		return o, pj, r.Client, err
	}
	account := VerificationAccount(p, r.DefaultServiceAccount)
	if k, remote := verify.ClusterKeyOf(p.Namespace, v); remote {
		o := RunObject(p, env.Name, rev, v, l.Attempt, verify.RunNamespace(p.Namespace, v))
		o.Owner = nil // the pipeline is not on that cluster
		view := views[k]
		if view.Client == nil {
			return o, nil, nil, fmt.Errorf("cluster %s of verification %s: %s", k, v.Name, view.Problem)
		}
		if tenant != "" {
			if err := r.Clusters.tenants.mayRead(ctx, tenant, k); err != nil {
				return o, nil, nil, err
			}
		}
		job, err := verify.BuildJob(v, o, account, vars)
		return o, job, view.Client, err
	}
	o := RunObject(p, env.Name, rev, v, l.Attempt, p.Namespace)
	job, err := verify.BuildJob(v, o, account, vars)
	if err != nil {
		return o, nil, nil, err
	}
	w, err := r.localWriter(tenant)
	return o, job, w, err
}

// localWriter writes the pipeline's runs on the controller's cluster: as its account (tenant),
// else with the controller's own rights.
func (r *Reconciler) localWriter(tenant string) (client.Client, error) {
	if tenant == "" {
		return r.Client, nil
	}
	return r.Clusters.tenants.get(tenant)
}

// reportLaunch reports a launched run: its verification started, or was retried.
func (r *Reconciler) reportLaunch(ctx context.Context, p *v1alpha1.Pipeline, env, rev string, l verify.Launch, name string) {
	switch v := l.Verification; {
	case v.Aggregation != nil:
		r.report.Eventf(ctx, p, nil, v1alpha1.EventVerificationStarted, "Verify",
			"started %s: run %d of %d of the aggregated verification %s of %s in %s", name, l.Attempt, v.Aggregation.Runs, v.Name, rev, env)
	case l.Attempt == 1:
		r.report.Eventf(ctx, p, nil, v1alpha1.EventVerificationStarted, "Verify", "started %s: verification %s of %s in %s", name, v.Name, rev, env)
	default:
		r.report.Eventf(ctx, p, nil, v1alpha1.EventVerificationRetried, "Verify",
			"retrying verification %s of %s in %s: started %s, attempt %d of %d", v.Name, rev, env, name, l.Attempt, v.MaxRetries+1)
	}
}

// collectRuns deletes the runs of p that no environment's verification holds any more (of an
// earlier revision, of an environment removed or no longer verified), with the client that
// created them.
func (r *Reconciler) collectRuns(ctx context.Context, p *v1alpha1.Pipeline, records []runRecord, views map[clusters.Key]clusters.View, tenant string) error {
	current := map[string]string{}
	for _, e := range p.Spec.Environments {
		if s := environmentStatus(&p.Status, e.Name); e.Verification != nil && s != nil && s.Verification != nil {
			current[e.Name] = s.Verification.Revision
		}
	}
	background := metav1.DeletePropagationBackground
	var errs []error
	for _, rec := range records {
		if rev, ok := current[rec.Environment]; ok && rev == rec.Revision {
			continue
		}
		var obj client.Object = &batchv1.Job{}
		if rec.Kind == v1alpha1.RunKindProwJob {
			obj = &prowv1.ProwJob{}
		}
		obj.SetNamespace(rec.Namespace)
		obj.SetName(rec.Name)
		w, err := r.collector(rec, views, tenant, p.Namespace)
		if err == nil {
			err = client.IgnoreNotFound(w.Delete(ctx, obj, &client.DeleteOptions{PropagationPolicy: &background}))
		}
		if err != nil {
			errs = append(errs, eventlog.Step(v1alpha1.ReasonReconcileFailed, "Verify", "deleting the verification run "+rec.Name, err))
		}
	}
	return errors.Join(errs...)
}

// collector is the client that deletes the run of rec, the one that created it: its
// cluster's, else the pipeline's account's for a Job of its namespace, else the controller's.
func (r *Reconciler) collector(rec runRecord, views map[clusters.Key]clusters.View, tenant, home string) (client.Client, error) {
	if !rec.cluster.IsLocal() {
		if c := views[rec.cluster].Client; c != nil {
			return c, nil
		}
		return nil, fmt.Errorf("cluster %s: %s", rec.cluster, views[rec.cluster].Problem)
	}
	if rec.Kind == v1alpha1.RunKindProwJob || rec.Namespace != home {
		return r.Client, nil
	}
	return r.localWriter(tenant)
}

// logVerification writes the outcome of step, an environment's verification that ended, to
// the release log (once: its id is the pipeline's, environment's and revision's).
func (r *Reconciler) logVerification(ctx context.Context, p *v1alpha1.Pipeline, env v1alpha1.Environment, prev *v1alpha1.EnvironmentStatus, step VerificationStep, now time.Time) error {
	if r.Log == nil {
		return nil
	}
	v := step.Verification
	msg := fmt.Sprintf("pipeline %s/%s: %s %s passed its verification in %s (%s)", p.Namespace, p.Name, p.Spec.AppRef.Kind, v.Revision, env.Name, verificationNames(v))
	if v.State == v1alpha1.JobFailure {
		lastVerified := ""
		if prev != nil {
			lastVerified = prev.LastVerified
		}
		msg = fmt.Sprintf("pipeline %s/%s: %s %s failed its verification in %s: %s; %s", p.Namespace, p.Name, p.Spec.AppRef.Kind, v.Revision, env.Name,
			step.Message, FailureConsequence(env, lastVerified, v.Revision))
	}
	return r.addLogEntry(ctx, releaselog.Entry{
		ID: PromotionID(string(p.UID), env.Name, v.Revision) + "/verification", Type: LogTypeVerification, Version: v.Revision,
		Origin: releaselog.ControllerOrigin, Author: releaselog.ControllerOrigin, Date: now, Message: msg,
	})
}

// verificationNames lists v's verifications.
func verificationNames(v *v1alpha1.EnvironmentVerificationStatus) string {
	names := make([]string, len(v.Verifications))
	for i, s := range v.Verifications {
		names[i] = s.Name
	}
	return strings.Join(names, ", ")
}

// addLogEntry adds a controller's entry to the release log; a day that is full or expired
// takes no more, which is not a failure (the Event and the status still say it).
func (r *Reconciler) addLogEntry(ctx context.Context, e releaselog.Entry) error {
	if _, err := r.Log.AddControllerEntry(ctx, e); err != nil && !errors.Is(err, releaselog.ErrDayFull) && !errors.Is(err, releaselog.ErrDateExpired) {
		return err
	}
	return nil
}

// reportRollback reports a rollback carried out (a, into environment env, with strategy,
// under id): a Warning Event and a release log entry, each saying from which revision to
// which and which verifications failed.
func (r *Reconciler) reportRollback(ctx context.Context, p *v1alpha1.Pipeline, env string, a Action, strategy, detail, id string, now time.Time) error {
	r.report.Warningf(ctx, p, nil, v1alpha1.EventRolledBack, "Promote", "rolled back from %s to %s in %s (%s): verification %s failed", a.RollbackFrom, a.Revision, env, strategy, a.Failed)
	if r.Log == nil {
		return nil
	}
	msg := fmt.Sprintf("pipeline %s/%s rolled %s %s back from %s to %s (%s): verification %s failed; %s is never promoted further%s",
		p.Namespace, p.Name, p.Spec.AppRef.Kind, env, a.RollbackFrom, a.Revision, strategy, a.Failed, a.RollbackFrom, detail)
	if err := r.addLogEntry(ctx, releaselog.Entry{
		ID: id, Type: LogTypeRollback, Version: a.Revision, Origin: releaselog.ControllerOrigin,
		Author: releaselog.ControllerOrigin, Date: now, Message: msg,
	}); err != nil {
		// The rollback happened; the next attempt finds it done or does it again under the
		// same id.
		return fmt.Errorf("logging the rollback: %w", err)
	}
	return nil
}

// reportVerifications reports, once a status write recorded them, the verifications that
// ended (Normal VerificationPassed, Warning VerificationFailed saying what follows) and a hold
// that began (Warning PromotionHeld).
func (r *Reconciler) reportVerifications(ctx context.Context, p *v1alpha1.Pipeline, before, after *v1alpha1.PipelineStatus) {
	for _, o := range EndedVerifications(p.Spec.Environments, before, after) {
		if o.State == v1alpha1.JobSuccess {
			r.report.Eventf(ctx, p, nil, v1alpha1.EventVerificationPassed, "Verify", "%s passed its verification in %s: %s", o.Revision, o.Env, o.Message)
			continue
		}
		r.report.Warningf(ctx, p, nil, v1alpha1.EventVerificationFailed, "Verify", "%s failed its verification in %s: %s; %s", o.Revision, o.Env, o.Message, o.Consequence)
	}
	was, now := meta.FindStatusCondition(before.Conditions, v1alpha1.ConditionPromotionHeld), meta.FindStatusCondition(after.Conditions, v1alpha1.ConditionPromotionHeld)
	if now != nil && now.Status == metav1.ConditionTrue && (was == nil || was.Status != metav1.ConditionTrue || was.Message != now.Message) {
		r.report.Warningf(ctx, p, nil, v1alpha1.EventPromotionHeld, "Promote", "%s", now.Message)
	}
}
