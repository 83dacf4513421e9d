package jobcache

import (
	"testing"
	"time"
	"unsafe"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"

	prowv1 "github.com/release-controller/release-controller/api/prow/v1"
	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/devenv/jobstatus"
	"github.com/release-controller/release-controller/internal/jobcontract"
)

func verificationJob(name string) *batchv1.Job {
	return &batchv1.Job{ObjectMeta: metav1.ObjectMeta{
		Namespace: "ci", Name: name, ResourceVersion: "7",
		CreationTimestamp: metav1.NewTime(time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC)),
		Labels: map[string]string{
			v1alpha1.LabelPayload: "4.15.0", v1alpha1.LabelPayloadNamespace: "release", v1alpha1.LabelStream: "nightly",
			v1alpha1.LabelJobType: v1alpha1.JobTypeVerification, v1alpha1.LabelVerify: "upgrade",
		},
		Annotations: map[string]string{v1alpha1.AnnotationAttempt: "2", v1alpha1.AnnotationUpgradeFrom: "4.14.0", v1alpha1.AnnotationURL: "https://ci/upgrade-2"},
	}}
}

// TestRecordOfJob: a record keeps what the controllers read of a Job and gives the same run
// as the Job itself did.
func TestRecordOfJob(t *testing.T) {
	now := metav1.NewTime(time.Date(2026, 11, 23, 9, 30, 0, 0, time.UTC))
	job := verificationJob("upgrade-2")
	jobstatus.Failed(job, now, 1, "", "")
	r := RecordOfJob(job)
	want := &Record{
		Kind: v1alpha1.RunKindJob, Namespace: "ci", Name: "upgrade-2", ResourceVersion: "7",
		PayloadKey: "release/4.15.0", StreamKey: "release/nightly",
		JobType: v1alpha1.JobTypeVerification, Verification: "upgrade",
		Attempt: 2, UpgradeFrom: "4.14.0", URL: "https://ci/upgrade-2",
		State: v1alpha1.JobFailure, Message: "BackoffLimitExceeded: Job has reached the specified backoff limit",
		Created: job.CreationTimestamp.UnixNano(), Started: now.UnixNano(), Completed: now.UnixNano(),
	}
	if diff := cmp.Diff(want, r); diff != "" {
		t.Errorf("record (-want +got):\n%s", diff)
	}
	run, ok := r.Run()
	if !ok {
		t.Fatal("a verification job's record is not a run")
	}
	wantRun := v1alpha1.JobRun{
		Kind: v1alpha1.RunKindJob, Namespace: "ci", Name: "upgrade-2", Attempt: 2, State: v1alpha1.JobFailure,
		UpgradeFrom: "4.14.0", URL: "https://ci/upgrade-2", Message: want.Message, StartTime: &now, CompletionTime: &now,
	}
	if r.Verification != "upgrade" || !equality.Semantic.DeepEqual(run, wantRun) {
		t.Errorf("run %+v, want %+v", run, wantRun)
	}
	if !r.FinishedAt().Equal(now.Time) {
		t.Errorf("finished at %s, want %s", r.FinishedAt(), now)
	}

	running := RecordOfJob(verificationJob("upgrade-3"))
	if running.State != v1alpha1.JobPending || !running.FinishedAt().IsZero() {
		t.Errorf("a job without status: state %s, finished at %s", running.State, running.FinishedAt())
	}
	if run, _ := running.Run(); run.StartTime != nil || run.CompletionTime != nil {
		t.Errorf("a job that has not started has times: %+v", run)
	}
}

// TestRecordOfPipelineRun: the run of a pipeline's verification is indexed by its pipeline,
// not by a payload, and gives its run as a payload's does.
func TestRecordOfPipelineRun(t *testing.T) {
	now := metav1.NewTime(time.Date(2026, 11, 23, 9, 30, 0, 0, time.UTC))
	contract := jobcontract.PipelineRun{PipelineNamespace: "team-a", Pipeline: "web", Environment: "dev", Revision: "1.0.3", Verification: "smoke", Attempt: 2}
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: contract.Name(), Labels: contract.Labels(), Annotations: contract.Annotations()}}
	jobstatus.Succeeded(job, now)
	r := RecordOfJob(job)
	if r.PipelineKey != "team-a/web" || r.Environment != "dev" || r.Revision != "1.0.3" || r.PayloadKey != "" || r.StreamKey != "" {
		t.Errorf("record %+v", r)
	}
	run, ok := r.Run()
	if !ok || r.Verification != "smoke" || run.Attempt != 2 || run.State != v1alpha1.JobSuccess || run.Name != contract.Name() {
		t.Errorf("run %+v (%v) of %+v", run, ok, r)
	}
	if keys, err := recordKey(r, func(r *Record) string { return r.PayloadKey }); err != nil || len(keys) != 0 {
		t.Errorf("a pipeline run is indexed by payload: %q, %v", keys, err)
	}
	if RecordOfJob(verificationJob("upgrade-2")).PipelineKey != "" {
		t.Error("a payload's run has a pipeline key")
	}
}

func TestRecordOfProwJob(t *testing.T) {
	now := metav1.NewTime(time.Date(2026, 11, 23, 9, 30, 0, 0, time.UTC))
	pj := &prowv1.ProwJob{
		ObjectMeta: verificationJob("upgrade-2").ObjectMeta,
		Status:     prowv1.ProwJobStatus{State: prowv1.SuccessState, Description: "Job succeeded.", URL: "https://prow/upgrade-2", StartTime: now, CompletionTime: &now},
	}
	r := RecordOfProwJob(pj)
	if r.Kind != v1alpha1.RunKindProwJob || r.State != v1alpha1.JobSuccess || r.URL != "https://prow/upgrade-2" || r.Message != "Job succeeded." || r.StreamKey != "release/nightly" {
		t.Errorf("record %+v", r)
	}
	if !r.FinishedAt().Equal(now.Time) {
		t.Errorf("finished at %s, want %s", r.FinishedAt(), now)
	}
	pj.Status = prowv1.ProwJobStatus{State: prowv1.PendingState}
	if run, ok := RecordOfProwJob(pj).Run(); !ok || run.State != v1alpha1.JobPending || run.StartTime != nil || run.URL != "https://ci/upgrade-2" {
		t.Errorf("a pending prowjob's run %+v", run)
	}
}

// TestRecordInTheInformer: client-go keys and versions records, and the transform passes
// records through unchanged.
func TestRecordInTheInformer(t *testing.T) {
	r := RecordOfJob(verificationJob("upgrade-2"))
	m, err := meta.Accessor(r)
	if err != nil {
		t.Fatal(err)
	}
	if m.GetNamespace() != "ci" || m.GetName() != "upgrade-2" || m.GetResourceVersion() != "7" {
		t.Errorf("accessor reads %s/%s@%s", m.GetNamespace(), m.GetName(), m.GetResourceVersion())
	}
	if key, err := toolscache.MetaNamespaceKeyFunc(r); err != nil || key != "ci/upgrade-2" {
		t.Errorf("key %q, %v", key, err)
	}
	if again, err := toRecord(r); err != nil || again != r {
		t.Errorf("a record transformed again: %v, %v", again, err)
	}
	if _, err := toRecord(&batchv1.JobList{}); err == nil {
		t.Error("an unexpected object is transformed")
	}
}

// TestRecordSameAs: a change only of the resource version (a Job's pod counts, say) is no
// change to a record; any field the controllers read is.
func TestRecordSameAs(t *testing.T) {
	job := verificationJob("upgrade-2")
	a := RecordOfJob(job)
	job.ResourceVersion = "8"
	job.Status.Active = 1
	b := RecordOfJob(job)
	if !a.sameAs(b) {
		t.Errorf("records differing in resource version only differ:\n%+v\n%+v", a, b)
	}
	now := metav1.NewTime(time.Date(2026, 11, 23, 9, 30, 0, 0, time.UTC))
	jobstatus.Running(job, now)
	if c := RecordOfJob(job); a.sameAs(c) {
		t.Error("a started job's record is the same as before")
	}
	jobstatus.Succeeded(job, now)
	if c := RecordOfJob(job); a.sameAs(c) {
		t.Error("a finished job's record is the same as before")
	}
}

// TestRecordStringsShared: repeated strings of records are stored once.
func TestRecordStringsShared(t *testing.T) {
	a, b := RecordOfJob(verificationJob("upgrade-2")), RecordOfJob(verificationJob("upgrade-3"))
	if unsafeData(a.PayloadKey) != unsafeData(b.PayloadKey) || unsafeData(a.StreamKey) != unsafeData(b.StreamKey) || unsafeData(a.Verification) != unsafeData(b.Verification) {
		t.Error("the payload key, stream key and verification of two jobs of a payload are separate copies")
	}
}

func unsafeData(s string) *byte { return unsafe.StringData(s) }
