package jobcache

import (
	"fmt"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	prowv1 "github.com/release-controller/release-controller/api/prow/v1"
	"github.com/release-controller/release-controller/api/v1alpha1"
)

// prowJobState is the state of a ProwJob in Prow's terms.
func prowJobState(s prowv1.ProwJobState) v1alpha1.JobState {
	switch s {
	case prowv1.SuccessState:
		return v1alpha1.JobSuccess
	case prowv1.FailureState, prowv1.AbortedState, prowv1.ErrorState:
		return v1alpha1.JobFailure
	}
	return v1alpha1.JobPending
}

// JobOutcome reads a Job's terminal condition, as the Kubernetes job controller sets it.
// Interim conditions (SuccessCriteriaMet, FailureTarget) still count as running: the job
// controller has not finished with the pods yet.
func JobOutcome(job *batchv1.Job) (state v1alpha1.JobState, message string, completed *metav1.Time) {
	for i := range job.Status.Conditions {
		c := &job.Status.Conditions[i]
		if c.Status != corev1.ConditionTrue {
			continue
		}
		switch c.Type {
		case batchv1.JobComplete:
			completed = job.Status.CompletionTime
			if completed == nil {
				completed = &c.LastTransitionTime
			}
			return v1alpha1.JobSuccess, conditionMessage(c), completed
		case batchv1.JobFailed:
			return v1alpha1.JobFailure, conditionMessage(c), &c.LastTransitionTime
		}
	}
	return v1alpha1.JobPending, "", nil
}

func conditionMessage(c *batchv1.JobCondition) string {
	switch {
	case c.Reason != "" && c.Message != "":
		return fmt.Sprintf("%s: %s", c.Reason, c.Message)
	case c.Message != "":
		return c.Message
	}
	return c.Reason
}
