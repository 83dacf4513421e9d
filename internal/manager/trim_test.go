package manager

import (
	"encoding/json"
	"testing"
	"unsafe"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	prowv1 "github.com/release-controller/release-controller/api/prow/v1"
	"github.com/release-controller/release-controller/api/v1alpha1"
)

func fullMeta() metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Namespace: "ns", Name: "x", UID: "uid", ResourceVersion: "7",
		Labels:        map[string]string{v1alpha1.LabelPayload: "4.15.0", v1alpha1.LabelJobType: v1alpha1.JobTypeVerification},
		Annotations:   map[string]string{v1alpha1.AnnotationAttempt: "2", lastApplied: `{"huge":"copy"}`},
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply}},
	}
}

func keptMeta() metav1.ObjectMeta {
	m := fullMeta()
	m.ManagedFields = nil
	delete(m.Annotations, lastApplied)
	return m
}

func podSpec() *corev1.PodSpec {
	return &corev1.PodSpec{Containers: []corev1.Container{{Name: "test", Image: "tests:latest", Command: []string{"run", "--all"}}}}
}

func TestTrim(t *testing.T) {
	finished := batchv1.JobStatus{
		Conditions: []batchv1.JobCondition{{Type: batchv1.JobComplete, Status: corev1.ConditionTrue}},
		StartTime:  &metav1.Time{}, Succeeded: 1,
	}
	terminated := []corev1.ContainerStatus{{Name: "build", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Message: "the components mix platforms"}}}}
	tests := []struct {
		name      string
		transform toolscache.TransformFunc
		in, want  any
	}{
		{
			name:      "job: template dropped, run control and status kept",
			transform: trimJob,
			in: &batchv1.Job{ObjectMeta: fullMeta(), Spec: batchv1.JobSpec{
				Suspend: ptr.To(true), ManagedBy: ptr.To("kueue"), BackoffLimit: ptr.To[int32](2), ActiveDeadlineSeconds: ptr.To[int64](60),
				Parallelism: ptr.To[int32](1), Template: corev1.PodTemplateSpec{Spec: *podSpec()},
			}, Status: finished},
			want: &batchv1.Job{ObjectMeta: keptMeta(), Spec: batchv1.JobSpec{
				Suspend: ptr.To(true), ManagedBy: ptr.To("kueue"), BackoffLimit: ptr.To[int32](2), ActiveDeadlineSeconds: ptr.To[int64](60),
			}, Status: finished},
		},
		{
			name:      "prowjob: pod spec dropped, the rest kept",
			transform: trimProwJob,
			in:        &prowv1.ProwJob{ObjectMeta: fullMeta(), Spec: prowv1.ProwJobSpec{Type: prowv1.PeriodicJob, Agent: prowv1.KubernetesAgent, Job: "e2e", PodSpec: podSpec()}, Status: prowv1.ProwJobStatus{State: prowv1.SuccessState, URL: "https://prow/e2e"}},
			want:      &prowv1.ProwJob{ObjectMeta: keptMeta(), Spec: prowv1.ProwJobSpec{Type: prowv1.PeriodicJob, Agent: prowv1.KubernetesAgent, Job: "e2e"}, Status: prowv1.ProwJobStatus{State: prowv1.SuccessState, URL: "https://prow/e2e"}},
		},
		{
			name:      "pod: container statuses kept for the failure reason",
			transform: trimPod,
			in:        &corev1.Pod{ObjectMeta: fullMeta(), Spec: *podSpec(), Status: corev1.PodStatus{Phase: corev1.PodFailed, ContainerStatuses: terminated, HostIP: "10.0.0.1", Conditions: []corev1.PodCondition{{Type: corev1.PodReady}}}},
			want:      &corev1.Pod{ObjectMeta: keptMeta(), Status: corev1.PodStatus{Phase: corev1.PodFailed, ContainerStatuses: terminated}},
		},
		{
			name:      "any object: metadata trimmed, spec untouched",
			transform: trimObject,
			in:        &v1alpha1.ReleasePayload{ObjectMeta: fullMeta(), Spec: v1alpha1.ReleasePayloadSpec{PayloadCoordinates: v1alpha1.PayloadCoordinates{Stream: "nightly", Tag: "4.15.0"}}},
			want:      &v1alpha1.ReleasePayload{ObjectMeta: keptMeta(), Spec: v1alpha1.ReleasePayloadSpec{PayloadCoordinates: v1alpha1.PayloadCoordinates{Stream: "nightly", Tag: "4.15.0"}}},
		},
		{
			name:      "payload: backends dropped, what decides its status kept",
			transform: trimPayload,
			in: &v1alpha1.ReleasePayload{ObjectMeta: fullMeta(), Spec: v1alpha1.ReleasePayloadSpec{
				PayloadCoordinates: v1alpha1.PayloadCoordinates{Stream: "nightly", Tag: "4.15.0"},
				PayloadVerificationConfig: v1alpha1.PayloadVerificationConfig{Verifications: []v1alpha1.Verification{
					{Name: "e2e", MaxRetries: 2, Job: &v1alpha1.JobBackend{Template: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: *podSpec()}}}}},
					{Name: "prow", Type: v1alpha1.Informing, ProwJob: &v1alpha1.ProwJobBackend{Namespace: "ci", Spec: prowv1.ProwJobSpec{Job: "e2e", PodSpec: podSpec()}}},
				}},
			}},
			want: &v1alpha1.ReleasePayload{ObjectMeta: keptMeta(), Spec: v1alpha1.ReleasePayloadSpec{
				PayloadCoordinates: v1alpha1.PayloadCoordinates{Stream: "nightly", Tag: "4.15.0"},
				PayloadVerificationConfig: v1alpha1.PayloadVerificationConfig{Verifications: []v1alpha1.Verification{
					{Name: "e2e", MaxRetries: 2},
					{Name: "prow", Type: v1alpha1.Informing},
				}},
			}},
		},
		{
			name:      "a deleted object's tombstone passes unchanged",
			transform: trimJob,
			in:        toolscache.DeletedFinalStateUnknown{Key: "ns/x"},
			want:      toolscache.DeletedFinalStateUnknown{Key: "ns/x"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.transform(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestCompactPayload: compacting changes no value of a payload; the words payloads repeat are
// stored once and the lists at their length.
func TestCompactPayload(t *testing.T) {
	now := metav1.Now()
	newPayload := func(tag string) *v1alpha1.ReleasePayload {
		verifications := make([]v1alpha1.Verification, 0, 8)
		verifications = append(verifications, v1alpha1.Verification{Name: "e2e"}, v1alpha1.Verification{Name: "upgrade", UpgradeFrom: v1alpha1.UpgradeFromPrevious})
		statuses := make([]v1alpha1.VerificationStatus, 0, 4)
		statuses = append(statuses, v1alpha1.VerificationStatus{
			Name: "e2e", Type: v1alpha1.Blocking, State: v1alpha1.JobPending, Message: "running",
			Runs: []v1alpha1.JobRun{{Kind: v1alpha1.RunKindJob, Namespace: "ci", Name: tag + "-e2e", Attempt: 1, State: v1alpha1.JobPending, URL: "https://ci/" + tag, StartTime: &now}},
		})
		return &v1alpha1.ReleasePayload{
			ObjectMeta: metav1.ObjectMeta{Namespace: "release", Name: tag},
			Spec: v1alpha1.ReleasePayloadSpec{
				PayloadCoordinates:        v1alpha1.PayloadCoordinates{Stream: "nightly", Tag: tag},
				Components:                []v1alpha1.PinnedComponent{{Name: "api", Image: "registry/api@sha256:1", Source: "registry/api:latest"}},
				PayloadCreationConfig:     v1alpha1.PayloadCreationConfig{Repository: "registry/release"},
				PayloadVerificationConfig: v1alpha1.PayloadVerificationConfig{Verifications: verifications},
			},
			Status: v1alpha1.ReleasePayloadStatus{
				Phase:                    v1alpha1.PhaseReady,
				Conditions:               []metav1.Condition{{Type: v1alpha1.ConditionPayloadAccepted, Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonBlockingJobsPending, Message: "waiting for blocking jobs: e2e", LastTransitionTime: now}},
				ReleaseCreationJobResult: v1alpha1.ReleaseCreationJobResult{Namespace: "ci", Name: "create-" + tag, Status: v1alpha1.CreationJobSuccess, Message: "the payload image was built"},
				PayloadImage:             "registry/release@sha256:" + tag,
				Verifications:            statuses,
			},
		}
	}
	// Decoded copies: the strings of a and b are separate until compacted.
	clone := func(p *v1alpha1.ReleasePayload) *v1alpha1.ReleasePayload {
		data, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		var out v1alpha1.ReleasePayload
		if err := json.Unmarshal(data, &out); err != nil {
			t.Fatal(err)
		}
		out.Spec.PayloadVerificationConfig.Verifications = append(make([]v1alpha1.Verification, 0, 8), out.Spec.PayloadVerificationConfig.Verifications...)
		return &out
	}
	a, b := clone(newPayload("4.15.0-1")), clone(newPayload("4.15.0-2"))
	want := a.DeepCopy()
	if _, err := trimPayload(a); err != nil {
		t.Fatal(err)
	}
	if _, err := trimPayload(b); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, a); diff != "" {
		t.Errorf("compacting changed the payload (-want +got):\n%s", diff)
	}
	same := func(what string, x, y string) {
		t.Helper()
		if unsafe.StringData(x) != unsafe.StringData(y) {
			t.Errorf("%s %q is stored twice", what, x)
		}
	}
	same("stream", a.Spec.PayloadCoordinates.Stream, b.Spec.PayloadCoordinates.Stream)
	same("component image", a.Spec.Components[0].Image, b.Spec.Components[0].Image)
	same("verification name", a.Spec.PayloadVerificationConfig.Verifications[1].Name, b.Spec.PayloadVerificationConfig.Verifications[1].Name)
	same("condition message", a.Status.Conditions[0].Message, b.Status.Conditions[0].Message)
	same("creation message", a.Status.ReleaseCreationJobResult.Message, b.Status.ReleaseCreationJobResult.Message)
	same("verification message", a.Status.Verifications[0].Message, b.Status.Verifications[0].Message)
	same("run namespace", a.Status.Verifications[0].Runs[0].Namespace, b.Status.Verifications[0].Runs[0].Namespace)
	same("tag and name", a.Spec.PayloadCoordinates.Tag, a.Name)
	if v := a.Spec.PayloadVerificationConfig.Verifications; cap(v) != len(v) {
		t.Errorf("verifications stored with room for %d, hold %d", cap(v), len(v))
	}
}
