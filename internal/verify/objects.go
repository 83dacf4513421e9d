package verify

import (
	"fmt"
	"maps"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	prowv1 "github.com/release-controller/release-controller/api/prow/v1"
	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/jobcontract"
)

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
	if platform := l.Verification.Platform(); platform != "" {
		env = append(env, corev1.EnvVar{Name: v1alpha1.EnvReleasePlatform, Value: platform})
	}
	return env
}

// onPlatform schedules a run of a verification with a platform on nodes of its OS and
// architecture (the well-known node labels), keeping the template's other selectors.
func onPlatform(spec *corev1.PodSpec, platform string) {
	if platform == "" {
		return
	}
	os, rest, _ := strings.Cut(platform, "/")
	arch, _, _ := strings.Cut(rest, "/")
	if spec.NodeSelector == nil {
		spec.NodeSelector = map[string]string{}
	}
	spec.NodeSelector[corev1.LabelOSStable] = os
	spec.NodeSelector[corev1.LabelArchStable] = arch
}

// runMeta is the object metadata of a run in namespace: the template's labels and
// annotations with the job contract's on top.
func runMeta(p *v1alpha1.ReleasePayload, l Launch, namespace string, base metav1.ObjectMeta) metav1.ObjectMeta {
	run := jobcontract.VerificationRun(p, l.Verification.Name, l.Attempt, l.UpgradeFrom)
	meta := metav1.ObjectMeta{
		Namespace:   namespace,
		Name:        run.Name(),
		Labels:      maps.Clone(base.Labels),
		Annotations: maps.Clone(base.Annotations),
	}
	if meta.Labels == nil {
		meta.Labels = map[string]string{}
	}
	if meta.Annotations == nil {
		meta.Annotations = map[string]string{}
	}
	maps.Copy(meta.Labels, run.Labels(namespace))
	if platform := l.Verification.Platform(); platform != "" {
		meta.Labels[v1alpha1.LabelPlatform] = v1alpha1.PlatformLabel(platform)
	}
	maps.Copy(meta.Annotations, run.Annotations())
	if namespace == p.Namespace {
		// Deleting the payload deletes its runs (where a garbage collector runs).
		meta.OwnerReferences = []metav1.OwnerReference{jobcontract.OwnerReference(p)}
	}
	return meta
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

// NewJob builds the batch/v1 Job of a run, in the payload's namespace, running as the
// payload's verification account. A template the tenancy rules refuse (CheckJobTemplate) is
// a *Refusal.
func NewJob(p *v1alpha1.ReleasePayload, l Launch) (*batchv1.Job, error) {
	if l.Verification.Job == nil {
		return nil, fmt.Errorf("verification %s has no job backend", l.Verification.Name)
	}
	if err := CheckJobTemplate(p, &l.Verification); err != nil {
		return nil, err
	}
	template := l.Verification.Job.Template.DeepCopy()
	job := &batchv1.Job{
		ObjectMeta: runMeta(p, l, p.Namespace, template.ObjectMeta),
		Spec:       template.Spec,
	}
	if job.Spec.Template.Spec.RestartPolicy == "" {
		job.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyNever
	}
	asAccount(&job.Spec.Template.Spec, p.Spec.PayloadVerificationConfig.ServiceAccount)
	withEnv(&job.Spec.Template.Spec, Env(p, l))
	onPlatform(&job.Spec.Template.Spec, l.Verification.Platform())
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
		onPlatform(pj.Spec.PodSpec, l.Verification.Platform())
	}
	return pj, nil
}

// TriggeredStatus is the status Prow expects of a new ProwJob.
func TriggeredStatus(now metav1.Time) prowv1.ProwJobStatus {
	return prowv1.ProwJobStatus{State: prowv1.TriggeredState, StartTime: now}
}
