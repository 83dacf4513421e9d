package payload

import (
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/devenv/jobstatus"
	"github.com/release-controller/release-controller/internal/jobcache"
)

// TestCreationJobOfRecord: CreationResult reads the same from a record's rebuilt creation job
// as from the Job.
func TestCreationJobOfRecord(t *testing.T) {
	now := metav1.NewTime(time.Date(2026, 11, 23, 9, 30, 0, 0, time.UTC))
	creation := func(name string, created time.Time) *batchv1.Job {
		return &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: "release", Name: name, CreationTimestamp: metav1.NewTime(created),
			Labels: map[string]string{v1alpha1.LabelPayload: "4.15.0", v1alpha1.LabelJobType: v1alpha1.JobTypeCreation}}}
	}
	running := creation("create-c", now.Add(2*time.Minute))
	succeeded := creation("create-b", now.Add(time.Minute))
	jobstatus.Succeeded(succeeded, now)
	failed := creation("create-a", now.Time)
	jobstatus.Failed(failed, now, 1, "", "push failed")
	for _, jobs := range [][]*batchv1.Job{{failed}, {succeeded}, {running}, {failed, succeeded}, {succeeded, running}} {
		var direct, rebuilt []batchv1.Job
		for _, j := range jobs {
			direct = append(direct, *j)
			rebuilt = append(rebuilt, jobcache.RecordOfJob(j).CreationJob())
		}
		if got, want := CreationResult(rebuilt), CreationResult(direct); got != want {
			t.Errorf("from records %+v, from jobs %+v", got, want)
		}
	}
	if _, ok := jobcache.RecordOfJob(succeeded).Run(); ok {
		t.Error("a creation job's record is a run")
	}
	if got := jobcache.RecordOfJob(failed).FinishedAt(); !got.Equal(now.Time) {
		t.Errorf("failed creation job finished at %s, want %s", got, now)
	}
}
