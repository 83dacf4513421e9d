package payload

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	prowv1 "github.com/release-controller/release-controller/api/prow/v1"
	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/conditions"
	"github.com/release-controller/release-controller/internal/jobcache"
	"github.com/release-controller/release-controller/internal/jobcontract"
)

// Observations are the objects a payload's status is computed from, read from the cache.
type Observations struct {
	// CreationJobs are the batch/v1 Jobs labelled as the payload's creation job; the
	// controller rebuilds from the job cache what CreationResult reads of them
	// (jobcache.Record.CreationJob).
	CreationJobs []batchv1.Job
	// CreationPods are the pods of those jobs, which say why a build failed.
	CreationPods []corev1.Pod
	// Runs are the verification runs found for the payload, one per Job or ProwJob.
	Runs []ObservedRun
	// Clusters are the remote clusters of the verifications that name one, by verification.
	Clusters map[string]ClusterState
}

// ObservedRun is one verification run as its object shows it now.
type ObservedRun struct {
	// Verification is the value of the run's release-controller.dev/verify label.
	Verification string
	Run          v1alpha1.JobRun
}

// ObserveJob turns a verification Job into a run; ok is false for jobs that are not verification runs.
func ObserveJob(job *batchv1.Job) (ObservedRun, bool) {
	return observedRun(jobcache.RecordOfJob(job))
}

// ObserveProwJob turns a verification ProwJob into a run; ok is false for other ProwJobs.
func ObserveProwJob(pj *prowv1.ProwJob) (ObservedRun, bool) {
	return observedRun(jobcache.RecordOfProwJob(pj))
}

// observedRun is the verification run a job record shows; ok is false for other jobs.
func observedRun(rec *jobcache.Record) (ObservedRun, bool) {
	run, ok := rec.Run()
	if !ok {
		return ObservedRun{}, false
	}
	return ObservedRun{Verification: rec.Verification, Run: run}, true
}

// RefusedRuns are the runs of p whose object the API server refused (jobcontract.RefusedRun),
// as failed runs, but for a run whose object exists after all (records: p's jobs).
func RefusedRuns(p *v1alpha1.ReleasePayload, records []*jobcache.Record) []ObservedRun {
	refused := jobcontract.RefusedRuns(p)
	if len(refused) == 0 {
		return nil
	}
	exists := make(map[string]bool, len(records))
	for _, r := range records {
		exists[r.Name] = true
	}
	var runs []ObservedRun
	for _, name := range slices.Sorted(maps.Keys(refused)) {
		if exists[name] {
			continue
		}
		r := refused[name]
		at := r.At
		runs = append(runs, ObservedRun{Verification: r.Verification, Run: v1alpha1.JobRun{
			Kind: r.Kind, Namespace: p.Namespace, Name: name, Attempt: r.Attempt, State: v1alpha1.JobFailure,
			Message: r.RunMessage(), StartTime: &at, CompletionTime: &at,
		}})
	}
	return runs
}

// CreationResult reads the outcome of the newest creation job; with none, the result is Unknown.
func CreationResult(jobs []batchv1.Job) v1alpha1.ReleaseCreationJobResult {
	if len(jobs) == 0 {
		return v1alpha1.ReleaseCreationJobResult{
			Status:  v1alpha1.CreationJobUnknown,
			Message: "no creation job found",
		}
	}
	newest := &jobs[0]
	for i := range jobs[1:] {
		j := &jobs[i+1]
		if newest.CreationTimestamp.Before(&j.CreationTimestamp) ||
			(newest.CreationTimestamp.Equal(&j.CreationTimestamp) && j.Name > newest.Name) {
			newest = j
		}
	}
	result := v1alpha1.ReleaseCreationJobResult{Namespace: newest.Namespace, Name: newest.Name}
	state, message, _ := jobcache.JobOutcome(newest)
	switch state {
	case v1alpha1.JobSuccess:
		// No message, here and in PayloadCreated: the status and reason say it, and a Job's
		// own ("Reached expected number of succeeded pods") would cost every status write.
		result.Status = v1alpha1.CreationJobSuccess
	case v1alpha1.JobFailure:
		result.Status = v1alpha1.CreationJobFailed
		result.Message = message
		if result.Message == "" {
			result.Message = "the creation job failed"
		}
	default:
		result.Status = v1alpha1.CreationJobUnknown
		result.Message = fmt.Sprintf("creation job %s is running", newest.Name)
	}
	return result
}

// maxReasonLength bounds the build's own words carried into a condition message.
const maxReasonLength = 512

// FailureReason is what the pods of the creation job jobName said when they failed: the last
// line of the termination message of the newest failed container (Kubernetes fills it from the
// log's tail for containers with FallbackToLogsOnError, as creation jobs have); "" when none said.
func FailureReason(jobName string, pods []corev1.Pod) string {
	var newest *corev1.Pod
	var reason string
	for i := range pods {
		p := &pods[i]
		if p.Labels[batchv1.JobNameLabel] != jobName && p.Labels["job-name"] != jobName {
			continue
		}
		if newest != nil && p.CreationTimestamp.Before(&newest.CreationTimestamp) {
			continue
		}
		for _, c := range p.Status.ContainerStatuses {
			if t := c.State.Terminated; t != nil && t.ExitCode != 0 {
				if line := lastLine(t.Message); line != "" {
					newest, reason = p, line
				}
			}
		}
	}
	return reason
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	line := strings.TrimSpace(lines[len(lines)-1])
	return conditions.Truncate(line, maxReasonLength)
}
