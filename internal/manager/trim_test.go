package manager

import (
	"testing"

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
