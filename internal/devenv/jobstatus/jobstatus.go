// Package jobstatus writes batch/v1 Job status the way the Kubernetes job controller does, for
// the local job runner and for tests: the API server validates Job status transitions (a
// finished job needs a start time, Complete needs SuccessCriteriaMet, Failed needs FailureTarget).
package jobstatus

import (
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// Reasons the job controller uses.
const (
	ReasonCompletionsReached   = "CompletionsReached"
	ReasonBackoffLimitExceeded = "BackoffLimitExceeded"
)

// Running marks the job's pod as started and ready.
func Running(job *batchv1.Job, now metav1.Time) {
	if job.Status.StartTime == nil {
		job.Status.StartTime = &now
	}
	job.Status.Active = 1
	job.Status.Ready = ptr.To[int32](1)
	job.Status.Terminating = ptr.To[int32](0)
}

// Succeeded finishes the job successfully, after one succeeded pod.
func Succeeded(job *batchv1.Job, now metav1.Time) {
	start(job, now)
	job.Status.Succeeded++
	job.Status.CompletionTime = &now
	setCondition(job, batchv1.JobSuccessCriteriaMet, ReasonCompletionsReached, "Reached expected number of succeeded pods", now)
	setCondition(job, batchv1.JobComplete, ReasonCompletionsReached, "Reached expected number of succeeded pods", now)
}

// Failed finishes the job as failed after failedPods failed pods, with the given reason
// (ReasonBackoffLimitExceeded when empty) and message.
func Failed(job *batchv1.Job, now metav1.Time, failedPods int32, reason, message string) {
	start(job, now)
	if reason == "" {
		reason = ReasonBackoffLimitExceeded
	}
	if message == "" {
		message = "Job has reached the specified backoff limit"
	}
	job.Status.Failed += max(failedPods, 1)
	setCondition(job, batchv1.JobFailureTarget, reason, message, now)
	setCondition(job, batchv1.JobFailed, reason, message, now)
}

// start moves a job to finished pods: no active, ready or terminating ones.
func start(job *batchv1.Job, now metav1.Time) {
	if job.Status.StartTime == nil {
		job.Status.StartTime = &now
	}
	job.Status.Active = 0
	job.Status.Ready = ptr.To[int32](0)
	job.Status.Terminating = ptr.To[int32](0)
}

func setCondition(job *batchv1.Job, t batchv1.JobConditionType, reason, message string, now metav1.Time) {
	c := batchv1.JobCondition{
		Type: t, Status: corev1.ConditionTrue, Reason: reason, Message: message,
		LastProbeTime: now, LastTransitionTime: now,
	}
	for i := range job.Status.Conditions {
		if job.Status.Conditions[i].Type == t {
			job.Status.Conditions[i] = c
			return
		}
	}
	job.Status.Conditions = append(job.Status.Conditions, c)
}
