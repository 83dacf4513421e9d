package payload

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	prowv1 "github.com/release-controller/release-controller/api/prow/v1"
	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/conditions"
	"github.com/release-controller/release-controller/internal/devenv/jobstatus"
	"github.com/release-controller/release-controller/internal/jobcache"
	"github.com/release-controller/release-controller/internal/jobcontract"
	"github.com/release-controller/release-controller/internal/verdict"
)

func run(attempt int32, state v1alpha1.JobState) v1alpha1.JobRun {
	return v1alpha1.JobRun{Kind: v1alpha1.RunKindJob, Namespace: "ns", Name: fmt.Sprint("run-", attempt), Attempt: attempt, State: state}
}

func TestMergeRuns(t *testing.T) {
	recorded := []v1alpha1.VerificationStatus{{
		Name: "e2e",
		Runs: []v1alpha1.JobRun{
			{Kind: v1alpha1.RunKindJob, Namespace: "ns", Name: "e2e-1", Attempt: 1, State: v1alpha1.JobFailure, Message: "failed"},
			{Kind: v1alpha1.RunKindJob, Namespace: "ns", Name: "e2e-2", Attempt: 2, State: v1alpha1.JobPending},
		},
	}, {
		Name: "upgrade",
		Runs: []v1alpha1.JobRun{{Kind: v1alpha1.RunKindProwJob, Namespace: "ci", Name: "up-1", Attempt: 1, State: v1alpha1.JobPending}},
	}, {Name: "lint"}}
	observed := []ObservedRun{
		// The terminal run's object now says something else: it is left alone.
		{Verification: "e2e", Run: v1alpha1.JobRun{Kind: v1alpha1.RunKindJob, Namespace: "ns", Name: "e2e-1", Attempt: 1, State: v1alpha1.JobSuccess}},
		{Verification: "e2e", Run: v1alpha1.JobRun{Kind: v1alpha1.RunKindJob, Namespace: "ns", Name: "e2e-2", Attempt: 2, State: v1alpha1.JobSuccess, Message: "done"}},
		{Verification: "lint", Run: v1alpha1.JobRun{Kind: v1alpha1.RunKindJob, Namespace: "ns", Name: "lint-1", Attempt: 1, State: v1alpha1.JobPending}},
		{Verification: "unknown-verification", Run: v1alpha1.JobRun{Kind: v1alpha1.RunKindJob, Namespace: "ns", Name: "x", Attempt: 1}},
	}
	got := MergeRuns(recorded, observed)
	wantStates := map[string]v1alpha1.JobState{"e2e-1": v1alpha1.JobFailure, "e2e-2": v1alpha1.JobSuccess, "up-1": v1alpha1.JobUnknown, "lint-1": v1alpha1.JobPending}
	var count int
	for _, v := range got {
		for _, r := range v.Runs {
			count++
			if r.State != wantStates[r.Name] {
				t.Errorf("run %s: state %s, want %s", r.Name, r.State, wantStates[r.Name])
			}
		}
	}
	if count != len(wantStates) {
		t.Errorf("got %d runs, want %d: %+v", count, len(wantStates), got)
	}
	if msg := got[1].Runs[0].Message; msg != "the ProwJob was deleted before it finished" {
		t.Errorf("unknown run message = %q", msg)
	}
}

func TestSeedVerifications(t *testing.T) {
	config := []v1alpha1.Verification{{Name: "e2e"}, {Name: "lint", Type: v1alpha1.Informing}, {Name: "upgrade", UpgradeFrom: v1alpha1.UpgradeFromPrevious}}
	existing := []v1alpha1.VerificationStatus{{Name: "lint", Type: v1alpha1.Informing, State: v1alpha1.JobFailure, Runs: []v1alpha1.JobRun{run(1, v1alpha1.JobFailure)}}}
	got := SeedVerifications(config, existing)
	if len(got) != 3 || got[0].Name != "e2e" || got[1].Name != "lint" || got[2].Name != "upgrade" {
		t.Fatalf("seeded %+v", got)
	}
	if got[0].Type != v1alpha1.Blocking || got[0].State != v1alpha1.JobPending {
		t.Errorf("e2e seeded as %+v", got[0])
	}
	if len(got[1].Runs) != 1 || got[1].State != v1alpha1.JobFailure {
		t.Errorf("lint lost its runs: %+v", got[1])
	}
	if got[2].UpgradeFrom != v1alpha1.UpgradeFromPrevious || got[2].Type != v1alpha1.Blocking {
		t.Errorf("upgrade seeded as %+v", got[2])
	}
}

func TestObserve(t *testing.T) {
	now := metav1.NewTime(time.Date(2026, 11, 22, 9, 30, 0, 0, time.UTC))
	labels := map[string]string{v1alpha1.LabelPayload: "4.15.0-2026-11-22-093000", v1alpha1.LabelJobType: v1alpha1.JobTypeVerification, v1alpha1.LabelVerify: "e2e"}
	job := batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "e2e-2", Labels: labels,
		Annotations: map[string]string{v1alpha1.AnnotationAttempt: "2", v1alpha1.AnnotationUpgradeFrom: "4.14.0", v1alpha1.AnnotationURL: "http://logs/e2e-2"}}}

	o, ok := ObserveJob(&job)
	if !ok || o.Verification != "e2e" || o.Run.State != v1alpha1.JobPending || o.Run.Attempt != 2 || o.Run.UpgradeFrom != "4.14.0" || o.Run.URL != "http://logs/e2e-2" {
		t.Errorf("new job observed as %+v", o)
	}
	jobstatus.Running(&job, now)
	jobstatus.Failed(&job, now, 1, "", "")
	if o, _ := ObserveJob(&job); o.Run.State != v1alpha1.JobFailure || o.Run.Message != "BackoffLimitExceeded: Job has reached the specified backoff limit" || o.Run.CompletionTime == nil {
		t.Errorf("failed job observed as %+v", o.Run)
	}
	if jobcontract.PayloadKeyOf(&job) != "ns/4.15.0-2026-11-22-093000" {
		t.Errorf("payload key %q", jobcontract.PayloadKeyOf(&job))
	}
	job.Labels[v1alpha1.LabelPayloadNamespace] = "releases"
	if jobcontract.PayloadKeyOf(&job) != "releases/4.15.0-2026-11-22-093000" {
		t.Errorf("payload key with payload namespace %q", jobcontract.PayloadKeyOf(&job))
	}

	pj := prowv1.ProwJob{ObjectMeta: metav1.ObjectMeta{Namespace: "ci", Name: "pj", Labels: labels},
		Status: prowv1.ProwJobStatus{State: prowv1.AbortedState, URL: "http://prow/pj", Description: "aborted", StartTime: now, CompletionTime: &now}}
	if o, ok := ObserveProwJob(&pj); !ok || o.Run.State != v1alpha1.JobFailure || o.Run.URL != "http://prow/pj" || o.Run.Attempt != 1 || o.Run.Kind != v1alpha1.RunKindProwJob {
		t.Errorf("aborted prowjob observed as %+v", o.Run)
	}
	pj.Status.State = prowv1.TriggeredState
	if o, _ := ObserveProwJob(&pj); o.Run.State != v1alpha1.JobPending {
		t.Errorf("triggered prowjob observed as %s", o.Run.State)
	}
	creation := batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "c", Labels: map[string]string{v1alpha1.LabelJobType: v1alpha1.JobTypeCreation}}}
	if _, ok := ObserveJob(&creation); ok {
		t.Error("a creation job was observed as a verification run")
	}
}

func TestCreationResult(t *testing.T) {
	now := metav1.NewTime(time.Date(2026, 11, 22, 9, 30, 0, 0, time.UTC))
	old := batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "create-a", CreationTimestamp: now}}
	jobstatus.Failed(&old, now, 1, "", "push failed")
	newer := batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "create-b", CreationTimestamp: metav1.NewTime(now.Add(time.Minute))}}

	if r := CreationResult(nil); r.Status != v1alpha1.CreationJobUnknown || r.Name != "" {
		t.Errorf("no jobs: %+v", r)
	}
	if r := CreationResult([]batchv1.Job{old}); r.Status != v1alpha1.CreationJobFailed || r.Message != "BackoffLimitExceeded: push failed" {
		t.Errorf("failed job: %+v", r)
	}
	if r := CreationResult([]batchv1.Job{newer, old}); r.Status != v1alpha1.CreationJobUnknown || r.Name != "create-b" {
		t.Errorf("newest job running: %+v", r)
	}
	jobstatus.Succeeded(&newer, now)
	if r := CreationResult([]batchv1.Job{old, newer}); r.Status != v1alpha1.CreationJobSuccess || r.Message != "" {
		t.Errorf("newest job succeeded: %+v", r)
	}
}

func TestFailureReason(t *testing.T) {
	at := func(minutes int) metav1.Time {
		return metav1.NewTime(time.Date(2026, 11, 22, 9, minutes, 0, 0, time.UTC))
	}
	pod := func(name, job string, created metav1.Time, exit int32, message string) corev1.Pod {
		return corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: created, Labels: map[string]string{batchv1.JobNameLabel: job}},
			Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{
				State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: exit, Message: message}},
			}}},
		}
	}
	tests := []struct {
		name string
		pods []corev1.Pod
		want string
	}{
		{"no pods", nil, ""},
		{"last line of the newest failed pod", []corev1.Pod{
			pod("a", "build", at(1), 1, "reading components\nError: component api is missing"),
			pod("b", "build", at(2), 1, "reading components\nError: the components mix platforms\n"),
		}, "Error: the components mix platforms"},
		{"a pod of another job", []corev1.Pod{pod("a", "other", at(1), 1, "Error: elsewhere")}, ""},
		{"succeeded containers say nothing", []corev1.Pod{pod("a", "build", at(1), 0, "all good")}, ""},
		{"long lines are cut", []corev1.Pod{pod("a", "build", at(1), 1, strings.Repeat("x", 600))}, conditions.Truncate(strings.Repeat("x", 600), 512)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := FailureReason("build", tt.pods); got != tt.want {
				t.Errorf("FailureReason() = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestComputeStatusKeepsTheResultOfACollectedCreationJob: garbage collection deletes finished
// jobs; the payload's verdict must not go with them.
func TestComputeStatusKeepsTheResultOfACollectedCreationJob(t *testing.T) {
	now := metav1.NewTime(time.Date(2026, 11, 22, 9, 30, 0, 0, time.UTC))
	p := &v1alpha1.ReleasePayload{}
	p.Status = ComputeStatus(p, Observations{CreationJobs: []batchv1.Job{func() batchv1.Job {
		j := batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "build"}}
		jobstatus.Succeeded(&j, now)
		return j
	}()}}, now)
	if p.Status.Phase != v1alpha1.PhaseAccepted {
		t.Fatalf("phase %s before collection", p.Status.Phase)
	}
	after := ComputeStatus(p, Observations{}, now)
	if after.Phase != v1alpha1.PhaseAccepted || after.ReleaseCreationJobResult.Status != v1alpha1.CreationJobSuccess || after.ReleaseCreationJobResult.Name != "build" {
		t.Errorf("after the creation job was collected: phase %s, result %+v", after.Phase, after.ReleaseCreationJobResult)
	}
}

// TestComputeStatusShowsASkippedUpgrade: an upgrade verification the stream controller
// recorded as skipped (nothing to upgrade from) is Skipped, not a Success without runs, and
// does not hold the payload back; one that has runs is judged by them.
func TestComputeStatusShowsASkippedUpgrade(t *testing.T) {
	now := metav1.NewTime(time.Date(2026, 11, 22, 9, 30, 0, 0, time.UTC))
	build := batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "build"}}
	jobstatus.Succeeded(&build, now)
	p := &v1alpha1.ReleasePayload{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{v1alpha1.AnnotationUpgradeSkipped: "upgrade,upgrade-minor"}}}
	p.Spec.PayloadVerificationConfig.Verifications = []v1alpha1.Verification{
		{Name: "e2e"},
		{Name: "upgrade", UpgradeFrom: v1alpha1.UpgradeFromPrevious},
		{Name: "upgrade-minor", UpgradeFrom: v1alpha1.UpgradeFromPreviousMinor},
	}
	p.Status.Verifications = []v1alpha1.VerificationStatus{{Name: "upgrade-minor", Runs: []v1alpha1.JobRun{run(1, v1alpha1.JobFailure)}}}
	status := ComputeStatus(p, Observations{CreationJobs: []batchv1.Job{build}, Runs: []ObservedRun{{Verification: "e2e", Run: run(1, v1alpha1.JobSuccess)}}}, now)
	type got struct {
		name    string
		state   v1alpha1.JobState
		message string
	}
	var states []got
	for _, v := range status.Verifications {
		states = append(states, got{v.Name, v.State, v.Message})
	}
	want := []got{
		{"e2e", v1alpha1.JobSuccess, ""},
		{"upgrade", v1alpha1.JobSkipped, verdict.SkippedUpgradeMessage},
		{"upgrade-minor", v1alpha1.JobFailure, "failed 1 of 1 attempts"},
	}
	if fmt.Sprint(states) != fmt.Sprint(want) {
		t.Errorf("verifications\n got  %+v\n want %+v", states, want)
	}
	if status.Phase != v1alpha1.PhaseRejected {
		t.Errorf("phase %s, want Rejected (upgrade-minor failed)", status.Phase)
	}

	p.Status.Verifications = nil
	p.Annotations[v1alpha1.AnnotationUpgradeSkipped] = "upgrade"
	p.Spec.PayloadVerificationConfig.Verifications = p.Spec.PayloadVerificationConfig.Verifications[:2]
	status = ComputeStatus(p, Observations{CreationJobs: []batchv1.Job{build}, Runs: []ObservedRun{{Verification: "e2e", Run: run(1, v1alpha1.JobSuccess)}}}, now)
	accepted := meta.FindStatusCondition(status.Conditions, v1alpha1.ConditionPayloadAccepted)
	if status.Phase != v1alpha1.PhaseAccepted || accepted.Message != "1 of 2 blocking jobs succeeded; skipped: upgrade" {
		t.Errorf("phase %s, PayloadAccepted %q; want Accepted with the skipped upgrade named", status.Phase, accepted.Message)
	}
}

// TestComputeStatusBoundsMessages: a build's very long failure, and 64 blocking verifications
// with long names waiting, give condition messages within conditions.MaxMessageLength.
func TestComputeStatusBoundsMessages(t *testing.T) {
	now := metav1.NewTime(time.Date(2026, 11, 22, 9, 30, 0, 0, time.UTC))
	failed := batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "build"}}
	jobstatus.Failed(&failed, now, 1, "BackoffLimitExceeded", strings.Repeat("the registry refused the push; ", 5000))
	p := &v1alpha1.ReleasePayload{}
	status := ComputeStatus(p, Observations{CreationJobs: []batchv1.Job{failed}}, now)

	var verifications []v1alpha1.Verification
	for i := range 64 {
		verifications = append(verifications, v1alpha1.Verification{Name: fmt.Sprintf("e2e-%02d-%s", i, strings.Repeat("long-name-", 5))})
	}
	waiting := &v1alpha1.ReleasePayload{Spec: v1alpha1.ReleasePayloadSpec{PayloadVerificationConfig: v1alpha1.PayloadVerificationConfig{Verifications: verifications}}}
	built := batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "build"}}
	jobstatus.Succeeded(&built, now)
	pending := ComputeStatus(waiting, Observations{CreationJobs: []batchv1.Job{built}}, now)

	for name, s := range map[string]v1alpha1.ReleasePayloadStatus{"failed build": status, "64 waiting": pending} {
		for _, c := range s.Conditions {
			if len(c.Message) > conditions.MaxMessageLength {
				t.Errorf("%s: %s message is %d bytes", name, c.Type, len(c.Message))
			}
		}
	}
	if status.Phase != v1alpha1.PhaseFailed || !strings.HasSuffix(meta.FindStatusCondition(status.Conditions, v1alpha1.ConditionPayloadFailed).Message, "more bytes]") {
		t.Errorf("failed build: phase %s, conditions %v", status.Phase, status.Conditions)
	}
}

// TestComputeStatusKeepsToItsOwnFields: the payload controller's status leaves the fields of
// the other writers (the audit's and Jira's conditions, the stream's payloadImage) as they are,
// whatever its verdict does.
func TestComputeStatusKeepsToItsOwnFields(t *testing.T) {
	now := metav1.NewTime(time.Date(2026, 11, 22, 9, 30, 0, 0, time.UTC))
	build := batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "build"}}
	jobstatus.Succeeded(&build, now)
	p := &v1alpha1.ReleasePayload{}
	p.Spec.PayloadVerificationConfig.Verifications = []v1alpha1.Verification{{Name: "e2e"}}
	p.Status = ComputeStatus(p, Observations{CreationJobs: []batchv1.Job{build}, Runs: []ObservedRun{{Verification: "e2e", Run: run(1, v1alpha1.JobSuccess)}}}, now)
	p.Status.PayloadImage = "registry.example.com/r@sha256:" + strings.Repeat("a", 64)
	p.Status.Conditions = append(p.Status.Conditions,
		metav1.Condition{Type: v1alpha1.ConditionPayloadAudited, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonAuditPassed},
		metav1.Condition{Type: v1alpha1.ConditionPayloadSigned, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonSigned},
		metav1.Condition{Type: v1alpha1.ConditionPayloadIssuesVerified, Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonIssuesNotVerified})
	for _, override := range []*v1alpha1.PayloadOverride{nil, {Override: v1alpha1.OverrideRejected, Reason: "bad"}} {
		p.Spec.PayloadOverride = override
		after := ComputeStatus(p, Observations{CreationJobs: []batchv1.Job{build}, Runs: []ObservedRun{{Verification: "e2e", Run: run(1, v1alpha1.JobSuccess)}}}, now)
		if foreign := v1alpha1.ForeignChanges(v1alpha1.WriterPayload, &p.Status, &after); len(foreign) > 0 {
			t.Errorf("override %v: the payload controller changes %v", override, foreign)
		}
	}
}

// TestRefusedRunsAreFailedRuns: a run the API server refused is a failed run with its message,
// unless its object exists after all.
func TestRefusedRunsAreFailedRuns(t *testing.T) {
	p := &v1alpha1.ReleasePayload{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "1.0.0"}}
	at := metav1.NewTime(time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC))
	value, err := jobcontract.WithRefusedRun(p, "1.0.0-e2e-1", jobcontract.RefusedRun{Verification: "e2e", Attempt: 1, Kind: v1alpha1.RunKindJob, Message: "spec.template: invalid", At: at})
	if err != nil {
		t.Fatal(err)
	}
	p.Annotations = map[string]string{v1alpha1.AnnotationRefusedRuns: value}
	runs := RefusedRuns(p, nil)
	if len(runs) != 1 || runs[0].Verification != "e2e" || runs[0].Run.State != v1alpha1.JobFailure || runs[0].Run.Attempt != 1 ||
		!strings.Contains(runs[0].Run.Message, "spec.template: invalid") || runs[0].Run.CompletionTime == nil {
		t.Errorf("refused runs = %+v", runs)
	}
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "1.0.0-e2e-1"}}
	if runs := RefusedRuns(p, []*jobcache.Record{jobcache.RecordOfJob(job)}); len(runs) != 0 {
		t.Errorf("a refused run whose job exists is counted: %+v", runs)
	}
}

func TestSetTombstone(t *testing.T) {
	then := metav1.NewTime(time.Date(2026, 11, 22, 9, 30, 0, 0, time.UTC))
	now := metav1.NewTime(then.Add(time.Hour))
	tombstoned := metav1.Condition{Type: v1alpha1.ConditionPayloadTombstoned, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonTombstoned,
		Message: "breaks etcd on upgrade", ObservedGeneration: 1, LastTransitionTime: then}
	accepted := metav1.Condition{Type: v1alpha1.ConditionPayloadAccepted, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonPayloadAccepted, LastTransitionTime: then}
	long := strings.Repeat("the upgrade loses data; ", 1000)
	tests := []struct {
		name        string
		annotations map[string]string
		conds       []metav1.Condition
		// want is the tombstone condition after (nil: absent); the others must be unchanged.
		want *metav1.Condition
	}{
		{"no annotation, no condition", nil, []metav1.Condition{accepted}, nil},
		{"annotated: True since now", map[string]string{v1alpha1.AnnotationTombstone: "breaks etcd on upgrade"}, []metav1.Condition{accepted},
			&metav1.Condition{Type: v1alpha1.ConditionPayloadTombstoned, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonTombstoned,
				Message: "breaks etcd on upgrade", ObservedGeneration: 1, LastTransitionTime: now}},
		{"still annotated: the transition time is kept", map[string]string{v1alpha1.AnnotationTombstone: "breaks etcd on upgrade"},
			[]metav1.Condition{accepted, tombstoned}, &tombstoned},
		{"a new reason keeps the transition time", map[string]string{v1alpha1.AnnotationTombstone: "breaks etcd and DNS"},
			[]metav1.Condition{accepted, tombstoned}, &metav1.Condition{Type: v1alpha1.ConditionPayloadTombstoned, Status: metav1.ConditionTrue,
				Reason: v1alpha1.ReasonTombstoned, Message: "breaks etcd and DNS", ObservedGeneration: 1, LastTransitionTime: then}},
		{"an empty reason says so", map[string]string{v1alpha1.AnnotationTombstone: ""}, nil,
			&metav1.Condition{Type: v1alpha1.ConditionPayloadTombstoned, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonTombstoned,
				Message: noTombstoneReason, ObservedGeneration: 1, LastTransitionTime: now}},
		{"a long reason is bounded", map[string]string{v1alpha1.AnnotationTombstone: long}, nil,
			&metav1.Condition{Type: v1alpha1.ConditionPayloadTombstoned, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonTombstoned,
				Message: conditions.Truncate(long, conditions.MaxMessageLength), ObservedGeneration: 1, LastTransitionTime: now}},
		{"the annotation removed: the condition goes", nil, []metav1.Condition{accepted, tombstoned}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &v1alpha1.ReleasePayload{ObjectMeta: metav1.ObjectMeta{Name: "4.15.0", Generation: 1, Annotations: tt.annotations}}
			conds := slices.Clone(tt.conds)
			SetTombstone(&conds, p, now)
			got := meta.FindStatusCondition(conds, v1alpha1.ConditionPayloadTombstoned)
			switch {
			case tt.want == nil && got != nil:
				t.Errorf("PayloadTombstoned = %+v, want none", *got)
			case tt.want != nil && (got == nil || !equality.Semantic.DeepEqual(*got, *tt.want)):
				t.Errorf("PayloadTombstoned = %+v, want %+v", got, *tt.want)
			}
			if had := slices.Contains(tt.conds, accepted); had != slices.Contains(conds, accepted) {
				t.Errorf("PayloadAccepted changed: %+v", conds)
			}
		})
	}
}
