package jobrunner

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	prowv1 "github.com/release-controller/release-controller/api/prow/v1"
)

// reconcileProwJob starts an unfinished ProwJob's process, or stops it when the ProwJob was
// deleted or ended by someone else (aborted).
func (r *Runner) reconcileProwJob(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	key := runKey{kind: KindProwJob, NamespacedName: req.NamespacedName}
	var pj prowv1.ProwJob
	if err := r.client.Get(ctx, req.NamespacedName, &pj); err != nil {
		if apierrors.IsNotFound(err) {
			r.stopRun(key, "", errDeleted)
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, err
	}
	cause := prowJobStopCause(&pj)
	if r.stopRun(key, pj.UID, cause) {
		// The run goes on, or ends now; its end reconciles the ProwJob again.
		return reconcile.Result{}, nil
	}
	if cause != nil || !runsHere(&pj) || r.root.Err() != nil {
		return reconcile.Result{}, nil //nolint:nilerr // a stopped, foreign or unwatched ProwJob is not a failure
	}
	if err := r.reader.Get(ctx, req.NamespacedName, &pj); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if prowJobStopCause(&pj) != nil {
		return reconcile.Result{}, nil //nolint:nilerr // stopped meanwhile: nothing to run
	}
	now := metav1.Now()
	url := r.logURL(KindProwJob, pj.Namespace, pj.Name)

	logPath := r.LogPath(pj.Namespace, pj.Name)
	p, err := r.processFor(prowPodNamespace(&pj), pj.Spec.PodSpec, prowEnv(&pj))
	if err != nil {
		// Prow's state for a job whose pod cannot be created.
		r.note(ctx, logPath, err.Error())
		return reconcile.Result{}, client.IgnoreNotFound(r.writeProwJob(ctx, &pj, func(pj *prowv1.ProwJob) {
			finishProwJob(pj, now, prowv1.ErrorState, err.Error(), url)
		}))
	}
	if err := r.writeProwJob(ctx, &pj, func(pj *prowv1.ProwJob) {
		pj.Status.State = prowv1.PendingState
		if pj.Status.StartTime.IsZero() {
			pj.Status.StartTime = now
		}
		if pj.Status.PendingTime == nil {
			pj.Status.PendingTime = &now
		}
		pj.Status.PodName = pj.Name
		pj.Status.Description = "Job triggered."
		if url != "" {
			pj.Status.URL = url
		}
	}); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	ref := &prowv1.ProwJob{ObjectMeta: metav1.ObjectMeta{Namespace: pj.Namespace, Name: pj.Name}}
	r.launch(ctx, key, pj.UID, r.prowJobEvents, ref, func(ctx context.Context) { r.runProwJob(ctx, &pj, p, url) })
	return reconcile.Result{}, nil
}

// runProwJob runs the ProwJob's pod once (Prow does not retry) and writes the result.
func (r *Runner) runProwJob(ctx context.Context, pj *prowv1.ProwJob, p process, url string) {
	err := acquire(ctx, r.slots)
	if err == nil {
		err = r.execute(ctx, r.LogPath(pj.Namespace, pj.Name), p)
		<-r.slots
	}
	state, description := prowv1.SuccessState, "Job succeeded."
	switch {
	case errors.Is(err, errShutdown), errors.Is(err, errDeleted), errors.Is(err, errFinished):
		// Left as it is, as for Jobs: an unfinished ProwJob runs again when the runner starts again.
		return
	case err != nil:
		state, description = prowv1.FailureState, fmt.Sprintf("Job failed: %v.", err)
	}
	now := metav1.Now()
	// The run's context has ended when the ProwJob was deleted; writes use the runner's.
	if werr := r.writeProwJob(r.root, pj, func(pj *prowv1.ProwJob) { finishProwJob(pj, now, state, description, url) }); werr != nil {
		if !apierrors.IsNotFound(werr) && r.root.Err() == nil {
			ctrl.LoggerFrom(ctx).Error(werr, "writing prowjob status", "prowjob", client.ObjectKeyFromObject(pj))
		}
	}
}

// writeProwJob applies change to the ProwJob's status and writes it, unless the ProwJob has
// ended or change left the status as it was.
func (r *Runner) writeProwJob(ctx context.Context, pj *prowv1.ProwJob, change func(*prowv1.ProwJob)) error {
	return r.writeStatus(ctx, pj, func() bool {
		if pj.Status.State.IsTerminal() {
			return false
		}
		before := pj.Status.DeepCopy()
		change(pj)
		return !equality.Semantic.DeepEqual(before, &pj.Status)
	})
}

func finishProwJob(pj *prowv1.ProwJob, now metav1.Time, state prowv1.ProwJobState, description, url string) {
	if pj.Status.StartTime.IsZero() {
		pj.Status.StartTime = now
	}
	pj.Status.State = state
	pj.Status.Description = description
	pj.Status.CompletionTime = &now
	if url != "" {
		pj.Status.URL = url
	}
}

// prowEnv is the environment Prow gives every job's pod that this runner can give too.
func prowEnv(pj *prowv1.ProwJob) []string {
	return []string{"JOB_NAME=" + pj.Spec.Job, "JOB_TYPE=" + string(pj.Spec.Type), "PROW_JOB_ID=" + pj.Name}
}

// prowJobStopCause says why the ProwJob must not run (nil when it must).
func prowJobStopCause(pj *prowv1.ProwJob) error {
	switch {
	case pj.DeletionTimestamp != nil:
		return errDeleted
	case pj.Status.State.IsTerminal():
		return errFinished
	}
	return nil
}

// runsHere reports whether Prow would run the ProwJob as a pod; other agents (Jenkins,
// Tekton) are left alone.
func runsHere(pj *prowv1.ProwJob) bool {
	return pj.Spec.Agent == "" || pj.Spec.Agent == prowv1.KubernetesAgent
}

// prowPodNamespace is where Prow would run the ProwJob's pod: spec.namespace, else the
// ProwJob's own namespace.
func prowPodNamespace(pj *prowv1.ProwJob) string {
	if pj.Spec.Namespace != "" {
		return pj.Spec.Namespace
	}
	return pj.Namespace
}
