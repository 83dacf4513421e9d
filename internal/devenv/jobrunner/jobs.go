package jobrunner

import (
	"context"
	"errors"
	"io"
	"os"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/devenv/jobstatus"
)

// ReasonNotRunnableLocally is the failure reason of a Job whose pod cannot run as a local
// process (no command, or env the runner cannot resolve); the message says which.
const ReasonNotRunnableLocally = "NotRunnableLocally"

// defaultBackoffLimit is Kubernetes' default for spec.backoffLimit.
const defaultBackoffLimit = 6

// reconcileJob starts an unfinished Job's process, or stops it when the Job was deleted,
// suspended or finished by someone else.
func (r *Runner) reconcileJob(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	key := runKey{kind: KindJob, NamespacedName: req.NamespacedName}
	var job batchv1.Job
	if err := r.client.Get(ctx, req.NamespacedName, &job); err != nil {
		if apierrors.IsNotFound(err) {
			r.stopRun(key, "", errDeleted)
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, err
	}
	cause := jobStopCause(&job)
	if r.stopRun(key, job.UID, cause) {
		// The run goes on, or ends now; its end reconciles the Job again.
		return reconcile.Result{}, nil
	}
	if (cause != nil && !errors.Is(cause, errSuspended)) || !managedHere(&job) || r.root.Err() != nil {
		return reconcile.Result{}, nil //nolint:nilerr // a stopped, foreign or unwatched Job is not a failure
	}
	if err := r.reader.Get(ctx, req.NamespacedName, &job); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	now := metav1.Now()
	switch cause := jobStopCause(&job); {
	case cause == nil:
	case errors.Is(cause, errSuspended):
		return reconcile.Result{}, client.IgnoreNotFound(r.writeJob(ctx, &job, func(j *batchv1.Job) { suspendJob(j, now, 0) }))
	default:
		return reconcile.Result{}, nil
	}

	logPath := r.LogPath(job.Namespace, job.Name)
	p, err := r.processFor(job.Namespace, &job.Spec.Template.Spec, nil)
	if err != nil {
		r.note(ctx, logPath, err.Error())
		return reconcile.Result{}, client.IgnoreNotFound(r.writeJob(ctx, &job, func(j *batchv1.Job) {
			jobstatus.Failed(j, now, 1, ReasonNotRunnableLocally, err.Error())
		}))
	}
	if err := r.writeJob(ctx, &job, func(j *batchv1.Job) { startJob(j, now) }); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	ref := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: job.Namespace, Name: job.Name}}
	r.launch(ctx, key, job.UID, r.jobEvents, ref, func(ctx context.Context) { r.runJob(ctx, &job, p) })
	return reconcile.Result{}, nil
}

// runJob runs the Job's pod until it succeeds, fails more often than spec.backoffLimit allows,
// runs past spec.activeDeadlineSeconds, or is stopped.
func (r *Runner) runJob(ctx context.Context, job *batchv1.Job, p process) {
	// The deadline counts from status.startTime, which survives restarts of the runner.
	if d := job.Spec.ActiveDeadlineSeconds; d != nil && job.Status.StartTime != nil {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadlineCause(ctx, job.Status.StartTime.Add(time.Duration(*d)*time.Second), errDeadline)
		defer cancel()
	}
	slots := r.slots
	if job.Labels[v1alpha1.LabelJobType] == v1alpha1.JobTypeCreation {
		slots = r.buildSlots
	}
	err := acquire(ctx, slots)
	if err == nil {
		defer func() { <-slots }()
	}
	for {
		if err == nil {
			err = r.execute(ctx, r.LogPath(job.Namespace, job.Name), p)
		}
		again, werr := r.recordJobRun(job, err)
		if werr != nil {
			if !apierrors.IsNotFound(werr) && r.root.Err() == nil {
				ctrl.LoggerFrom(ctx).Error(werr, "writing job status", "job", client.ObjectKeyFromObject(job))
			}
			return
		}
		if !again {
			return
		}
		err = nil
	}
}

// recordJobRun writes how a run of the Job's pod ended (err from execute) and reports
// whether the pod runs again.
func (r *Runner) recordJobRun(job *batchv1.Job, err error) (again bool, _ error) {
	// Status writes use the runner's context: the run's own ends with a deadline or deletion.
	ctx := r.root
	now := metav1.Now()
	switch {
	case errors.Is(err, errShutdown), errors.Is(err, errDeleted), errors.Is(err, errFinished):
		// Left as it is: a deleted Job has no status, a finished one is not ours to change,
		// and an unfinished one runs again when the runner starts again.
		return false, nil
	case errors.Is(err, errSuspended):
		return false, r.writeJob(ctx, job, func(j *batchv1.Job) { suspendJob(j, now, 1) })
	case errors.Is(err, errDeadline):
		return false, r.writeJob(ctx, job, func(j *batchv1.Job) {
			jobstatus.Failed(j, now, 1, batchv1.JobReasonDeadlineExceeded, "Job was active longer than specified deadline")
		})
	case err == nil:
		return false, r.writeJob(ctx, job, func(j *batchv1.Job) { jobstatus.Succeeded(j, now) })
	}
	// Kubernetes would leave the reason to the pod's termination message; with no pods here,
	// the Job's own message carries the process's last words so `kubectl get` shows them.
	message := "Job has reached the specified backoff limit"
	if last := lastOutputLine(r.LogPath(job.Namespace, job.Name)); last != "" {
		message += "; the last run said: " + last
	}
	werr := r.writeJob(ctx, job, func(j *batchv1.Job) {
		if j.Status.Failed+1 > ptr.Deref(j.Spec.BackoffLimit, defaultBackoffLimit) {
			jobstatus.Failed(j, now, 1, batchv1.JobReasonBackoffLimitExceeded, message)
			return
		}
		// The failed pod is replaced by a new one: the job stays active.
		j.Status.Failed++
	})
	return werr == nil && !jobFinished(job), werr
}

// writeJob applies change to job's status and writes it, unless the job is finished or change
// left the status as it was.
func (r *Runner) writeJob(ctx context.Context, job *batchv1.Job, change func(*batchv1.Job)) error {
	return r.writeStatus(ctx, job, func() bool {
		if jobFinished(job) {
			return false
		}
		before := job.Status.DeepCopy()
		change(job)
		return !equality.Semantic.DeepEqual(before, &job.Status)
	})
}

// startJob records the Job's pod as started; a resumed Job gets a new startTime, as the job
// controller gives it, so activeDeadlineSeconds counts from the resumption.
func startJob(job *batchv1.Job, now metav1.Time) {
	if setJobCondition(job, batchv1.JobSuspended, corev1.ConditionFalse, "JobResumed", "Job resumed", now) {
		job.Status.StartTime = &now
	}
	jobstatus.Running(job, now)
}

// suspendJob records a suspension as the job controller does: its pods are deleted (a killed
// process counts as a failed pod, like a deleted pod), Suspended is set, and startTime cleared.
func suspendJob(job *batchv1.Job, now metav1.Time, killed int32) {
	job.Status.Failed += killed
	if !ptr.Deref(job.Spec.Suspend, false) {
		// Resumed meanwhile: the next reconcile starts the pod again.
		return
	}
	job.Status.Active = 0
	job.Status.Ready = ptr.To[int32](0)
	job.Status.Terminating = ptr.To[int32](0)
	if setJobCondition(job, batchv1.JobSuspended, corev1.ConditionTrue, "JobSuspended", "Job suspended", now) {
		job.Status.StartTime = nil
	}
}

// setJobCondition sets a condition unless it is already so; a False condition is not added
// where there was none. It reports whether the conditions changed.
func setJobCondition(job *batchv1.Job, t batchv1.JobConditionType, status corev1.ConditionStatus, reason, message string, now metav1.Time) bool {
	c := batchv1.JobCondition{Type: t, Status: status, Reason: reason, Message: message, LastProbeTime: now, LastTransitionTime: now}
	for i := range job.Status.Conditions {
		cur := &job.Status.Conditions[i]
		if cur.Type != t {
			continue
		}
		if cur.Status == status && cur.Reason == reason && cur.Message == message {
			return false
		}
		*cur = c
		return true
	}
	if status == corev1.ConditionFalse {
		return false
	}
	job.Status.Conditions = append(job.Status.Conditions, c)
	return true
}

// jobStopCause says why the Job must not run (nil when it must).
func jobStopCause(job *batchv1.Job) error {
	switch {
	case job.DeletionTimestamp != nil:
		return errDeleted
	case jobFinished(job):
		return errFinished
	case ptr.Deref(job.Spec.Suspend, false):
		return errSuspended
	}
	return nil
}

func jobFinished(job *batchv1.Job) bool {
	for _, c := range job.Status.Conditions {
		if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

// managedHere reports whether the Kubernetes job controller would manage the Job: one whose
// spec.managedBy names another controller is left to that controller.
func managedHere(job *batchv1.Job) bool {
	return job.Spec.ManagedBy == nil || *job.Spec.ManagedBy == batchv1.JobControllerName
}

// lastOutputLine returns the last line a process wrote to the log at path, skipping the
// runner's own notes; "" when there is none.
func lastOutputLine(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	const tail = 4096
	if info, err := f.Stat(); err == nil && info.Size() > tail {
		if _, err := f.Seek(-tail, io.SeekEnd); err != nil {
			return ""
		}
	}
	data, err := io.ReadAll(f)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		line := strings.TrimSpace(lines[i])
		if line != "" && !strings.HasPrefix(line, runnerNotePrefix) {
			const maxLen = 512
			if len(line) > maxLen {
				line = line[:maxLen] + "…"
			}
			return line
		}
	}
	return ""
}
