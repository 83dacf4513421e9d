package verify

import (
	"fmt"
	"maps"
	"strconv"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	prowv1 "github.com/release-controller/release-controller/api/prow/v1"
	"github.com/release-controller/release-controller/api/v1alpha1"
)

// RunName is the deterministic name of a verification run's Job or ProwJob.
func RunName(tag, verification string, attempt int32) string {
	return ObjectName(tag, verification, strconv.Itoa(int(attempt)))
}

// Labels are the labels of every job the controller creates for a payload (a contract).
func Labels(p *v1alpha1.ReleasePayload, jobType string) map[string]string {
	return map[string]string{
		v1alpha1.LabelStream:  p.Spec.PayloadCoordinates.Stream,
		v1alpha1.LabelPayload: p.Name,
		v1alpha1.LabelJobType: jobType,
	}
}

// Env is the environment every verification run gets (a contract).
func Env(p *v1alpha1.ReleasePayload, l Launch) []corev1.EnvVar {
	env := []corev1.EnvVar{
		{Name: v1alpha1.EnvReleaseImageLatest, Value: p.Status.PayloadImage},
		{Name: v1alpha1.EnvReleaseTag, Value: p.Name},
		{Name: v1alpha1.EnvReleaseStream, Value: p.Spec.PayloadCoordinates.Stream},
	}
	if l.UpgradeFromImage != "" {
		env = append(env, corev1.EnvVar{Name: v1alpha1.EnvReleaseImageInitial, Value: l.UpgradeFromImage})
	}
	return env
}

func runMeta(p *v1alpha1.ReleasePayload, l Launch, namespace string, base metav1.ObjectMeta) metav1.ObjectMeta {
	meta := metav1.ObjectMeta{
		Namespace:   namespace,
		Name:        RunName(p.Name, l.Verification.Name, l.Attempt),
		Labels:      maps.Clone(base.Labels),
		Annotations: maps.Clone(base.Annotations),
	}
	if meta.Labels == nil {
		meta.Labels = map[string]string{}
	}
	if meta.Annotations == nil {
		meta.Annotations = map[string]string{}
	}
	maps.Copy(meta.Labels, Labels(p, v1alpha1.JobTypeVerification))
	meta.Labels[v1alpha1.LabelVerify] = l.Verification.Name
	meta.Annotations[v1alpha1.AnnotationAttempt] = strconv.Itoa(int(l.Attempt))
	if l.UpgradeFrom != "" {
		meta.Annotations[v1alpha1.AnnotationUpgradeFrom] = l.UpgradeFrom
	}
	if namespace == p.Namespace {
		// Deleting the payload deletes its runs (where a garbage collector runs).
		meta.OwnerReferences = []metav1.OwnerReference{OwnerReference(p)}
	} else {
		meta.Labels[v1alpha1.LabelPayloadNamespace] = p.Namespace
	}
	return meta
}

// OwnerReference points at the payload, without blocking its deletion.
func OwnerReference(p *v1alpha1.ReleasePayload) metav1.OwnerReference {
	return metav1.OwnerReference{
		APIVersion: v1alpha1.GroupVersion.String(),
		Kind:       "ReleasePayload",
		Name:       p.Name,
		UID:        p.UID,
	}
}

// withEnv sets the RELEASE_* variables in every container, replacing variables of the same
// name the template may have.
func withEnv(spec *corev1.PodSpec, env []corev1.EnvVar) {
	set := func(containers []corev1.Container) {
		for i := range containers {
			c := &containers[i]
			kept := c.Env[:0]
			for _, e := range c.Env {
				if !hasEnv(env, e.Name) {
					kept = append(kept, e)
				}
			}
			c.Env = append(kept, env...)
		}
	}
	set(spec.InitContainers)
	set(spec.Containers)
}

func hasEnv(env []corev1.EnvVar, name string) bool {
	for _, e := range env {
		if e.Name == name {
			return true
		}
	}
	return false
}

// NewJob builds the batch/v1 Job of a run, in the payload's namespace.
func NewJob(p *v1alpha1.ReleasePayload, l Launch) (*batchv1.Job, error) {
	if l.Verification.Job == nil {
		return nil, fmt.Errorf("verification %s has no job backend", l.Verification.Name)
	}
	template := l.Verification.Job.Template.DeepCopy()
	job := &batchv1.Job{
		ObjectMeta: runMeta(p, l, p.Namespace, template.ObjectMeta),
		Spec:       template.Spec,
	}
	if job.Spec.Template.Spec.RestartPolicy == "" {
		job.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyNever
	}
	withEnv(&job.Spec.Template.Spec, Env(p, l))
	return job, nil
}

// NewProwJob builds the ProwJob of a run, in the backend's namespace (the payload's by default).
func NewProwJob(p *v1alpha1.ReleasePayload, l Launch) (*prowv1.ProwJob, error) {
	backend := l.Verification.ProwJob
	if backend == nil {
		return nil, fmt.Errorf("verification %s has no prowJob backend", l.Verification.Name)
	}
	namespace := backend.Namespace
	if namespace == "" {
		namespace = p.Namespace
	}
	pj := &prowv1.ProwJob{
		ObjectMeta: runMeta(p, l, namespace, metav1.ObjectMeta{}),
		Spec:       *backend.Spec.DeepCopy(),
	}
	if pj.Spec.Type == "" {
		pj.Spec.Type = prowv1.PeriodicJob
	}
	if pj.Spec.Agent == "" {
		pj.Spec.Agent = prowv1.KubernetesAgent
	}
	if pj.Spec.PodSpec != nil {
		withEnv(pj.Spec.PodSpec, Env(p, l))
	}
	return pj, nil
}

// TriggeredStatus is the status Prow expects of a new ProwJob.
func TriggeredStatus(now metav1.Time) prowv1.ProwJobStatus {
	return prowv1.ProwJobStatus{State: prowv1.TriggeredState, StartTime: now}
}
