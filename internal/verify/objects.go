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

// RunObject is where a run's object is created and what names it: its namespace and name,
// the job contract's labels and annotations (put on top of the template's), and its owner in
// that namespace (nil: none, as on another cluster, or in another namespace than its owner's).
// A payload's runs are jobcontract.VerificationRun's; a pipeline's, jobcontract.PipelineRun's.
type RunObject struct {
	Namespace, Name     string
	Labels, Annotations map[string]string
	Owner               *metav1.OwnerReference
}

// meta is the object metadata of a run of v as o: base's labels and annotations (a Job
// template's) with o's on top, and the platform label of a verification with one.
func (o RunObject) meta(v *v1alpha1.Verification, base metav1.ObjectMeta) metav1.ObjectMeta {
	meta := metav1.ObjectMeta{
		Namespace:   o.Namespace,
		Name:        o.Name,
		Labels:      maps.Clone(base.Labels),
		Annotations: maps.Clone(base.Annotations),
	}
	if meta.Labels == nil {
		meta.Labels = map[string]string{}
	}
	if meta.Annotations == nil {
		meta.Annotations = map[string]string{}
	}
	maps.Copy(meta.Labels, o.Labels)
	if platform := v.Platform(); platform != "" {
		meta.Labels[v1alpha1.LabelPlatform] = v1alpha1.PlatformLabel(platform)
	}
	maps.Copy(meta.Annotations, o.Annotations)
	if o.Owner != nil {
		meta.OwnerReferences = []metav1.OwnerReference{*o.Owner}
	}
	return meta
}

// payloadRun is the RunObject of a run of p in namespace; it is owned by p in p's namespace
// (deleting the payload deletes its runs, where a garbage collector runs).
func payloadRun(p *v1alpha1.ReleasePayload, l Launch, namespace string) RunObject {
	run := jobcontract.VerificationRun(p, l.Verification.Name, l.Attempt, l.UpgradeFrom)
	o := RunObject{Namespace: namespace, Name: run.Name(), Labels: run.Labels(namespace), Annotations: run.Annotations()}
	if namespace == p.Namespace {
		owner := jobcontract.OwnerReference(p)
		o.Owner = &owner
	}
	return o
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
	return BuildJob(&l.Verification, payloadRun(p, l, p.Namespace), p.Spec.PayloadVerificationConfig.ServiceAccount, Env(p, l))
}

// BuildJob builds the batch/v1 Job of a run of v as o from v's template: restarted never
// unless the template says otherwise, running as account, with env in every container
// (replacing the template's variables of the same names), on nodes of v's platform. A template
// the tenancy rules refuse for account (CheckTemplate) is a *Refusal. v is not changed.
func BuildJob(v *v1alpha1.Verification, o RunObject, account *v1alpha1.VerificationServiceAccount, env []corev1.EnvVar) (*batchv1.Job, error) {
	if v.Job == nil {
		return nil, fmt.Errorf("verification %s has no job backend", v.Name)
	}
	if err := CheckTemplate(v, account); err != nil {
		return nil, err
	}
	template := v.Job.Template.DeepCopy()
	job := &batchv1.Job{
		ObjectMeta: o.meta(v, template.ObjectMeta),
		Spec:       template.Spec,
	}
	if job.Spec.Template.Spec.RestartPolicy == "" {
		job.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyNever
	}
	asAccount(&job.Spec.Template.Spec, account)
	withEnv(&job.Spec.Template.Spec, env)
	onPlatform(&job.Spec.Template.Spec, v.Platform())
	return job, nil
}

// NewProwJob builds the ProwJob of a run, in the backend's namespace (the payload's by default).
func NewProwJob(p *v1alpha1.ReleasePayload, l Launch) (*prowv1.ProwJob, error) {
	if l.Verification.ProwJob == nil {
		return nil, fmt.Errorf("verification %s has no prowJob backend", l.Verification.Name)
	}
	return BuildProwJob(&l.Verification, payloadRun(p, l, ProwJobNamespace(p.Namespace, &l.Verification)), Env(p, l))
}

// ProwJobNamespace is where the ProwJobs of v are created: its backend's namespace, else home
// (its owner's).
func ProwJobNamespace(home string, v *v1alpha1.Verification) string {
	if v.ProwJob != nil && v.ProwJob.Namespace != "" {
		return v.ProwJob.Namespace
	}
	return home
}

// BuildProwJob builds the ProwJob of a run of v as o: the backend's spec, periodic on the
// Kubernetes agent unless it says otherwise, with env in its pod spec's containers and its pod
// on nodes of v's platform. v is not changed.
func BuildProwJob(v *v1alpha1.Verification, o RunObject, env []corev1.EnvVar) (*prowv1.ProwJob, error) {
	backend := v.ProwJob
	if backend == nil {
		return nil, fmt.Errorf("verification %s has no prowJob backend", v.Name)
	}
	pj := &prowv1.ProwJob{
		ObjectMeta: o.meta(v, metav1.ObjectMeta{}),
		Spec:       *backend.Spec.DeepCopy(),
	}
	if pj.Spec.Type == "" {
		pj.Spec.Type = prowv1.PeriodicJob
	}
	if pj.Spec.Agent == "" {
		pj.Spec.Agent = prowv1.KubernetesAgent
	}
	if pj.Spec.PodSpec != nil {
		withEnv(pj.Spec.PodSpec, env)
		onPlatform(pj.Spec.PodSpec, v.Platform())
	}
	return pj, nil
}

// TriggeredStatus is the status Prow expects of a new ProwJob.
func TriggeredStatus(now metav1.Time) prowv1.ProwJobStatus {
	return prowv1.ProwJobStatus{State: prowv1.TriggeredState, StartTime: now}
}
