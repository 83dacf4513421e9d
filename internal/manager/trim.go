package manager

import (
	"unique"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	toolscache "k8s.io/client-go/tools/cache"

	prowv1 "github.com/release-controller/release-controller/api/prow/v1"
	"github.com/release-controller/release-controller/api/v1alpha1"
)

// The caches hold every payload and its jobs for as long as they live: thousands of objects
// whose pod templates, managed fields and last-applied annotations nobody here reads. The
// transforms below drop them before an object is stored, so memory grows with what the
// controllers use. Writes are merge patches of single fields (status, an annotation) or, for a
// payload's status, updates of the status subresource, which take the status alone and keep
// the rest of the stored object, so a trimmed cached copy never sends the dropped fields back
// as deletions. (The payload and stream
// controllers read their Jobs and ProwJobs from jobcache.Cache, which keeps a small record of
// each; the manager's caches of whole jobs are filled only for whoever reads them, the dev job
// runner.)

// lastApplied is kubectl apply's copy of the whole object, as large as the object itself.
const lastApplied = corev1.LastAppliedConfigAnnotation

// trimMeta drops the managed fields and kubectl's last-applied copy, and shares the strings
// that many objects repeat (namespace, label and annotation keys and values: a payload's tag
// is on each of its jobs) instead of keeping a copy per object.
func trimMeta(obj any) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return
	}
	m.SetManagedFields(nil)
	m.SetNamespace(intern(m.GetNamespace()))
	m.SetLabels(internMap(m.GetLabels()))
	annotations := m.GetAnnotations()
	delete(annotations, lastApplied)
	m.SetAnnotations(internMap(annotations))
}

// internMap returns m with its keys and values interned; nil stays nil.
func internMap(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	interned := make(map[string]string, len(m))
	for k, v := range m {
		interned[intern(k)] = intern(v)
	}
	return interned
}

// trimObject is the default transform: metadata only.
func trimObject(obj any) (any, error) {
	trimMeta(obj)
	return obj, nil
}

// trimJob keeps what the dev job runner reads of a Job: metadata, status,
// and the spec fields that say whether it runs (suspend, managedBy, limits); the pod template
// goes (the runner reads it from the API server before it starts a pod).
func trimJob(obj any) (any, error) {
	trimMeta(obj)
	if job, ok := obj.(*batchv1.Job); ok {
		job.Spec = batchv1.JobSpec{
			Suspend:               job.Spec.Suspend,
			ManagedBy:             job.Spec.ManagedBy,
			BackoffLimit:          job.Spec.BackoffLimit,
			ActiveDeadlineSeconds: job.Spec.ActiveDeadlineSeconds,
		}
	}
	return obj, nil
}

// trimProwJob drops a ProwJob's pod spec; its type, agent and job name stay.
func trimProwJob(obj any) (any, error) {
	trimMeta(obj)
	if pj, ok := obj.(*prowv1.ProwJob); ok {
		pj.Spec.PodSpec = nil
	}
	return obj, nil
}

// trimPod keeps a creation job's pod's metadata and container statuses, which say why a
// build failed; its spec and the rest of its status go.
func trimPod(obj any) (any, error) {
	trimMeta(obj)
	if pod, ok := obj.(*corev1.Pod); ok {
		pod.Spec = corev1.PodSpec{}
		pod.Status = corev1.PodStatus{Phase: pod.Status.Phase, ContainerStatuses: pod.Status.ContainerStatuses}
	}
	return obj, nil
}

// trimPayload drops the backends (job templates) of a payload's verifications: a payload is
// read on every job change, but its templates only when a run is launched, and the stream
// controller reads them from the API server then. Even an empty Job template is over a
// kilobyte, so the backends go whole: cached payloads have neither Job nor ProwJob set.
//
// What stays is compacted: every payload repeats the words of its stream's configuration and
// of its status (verification names, states, kinds, condition reasons and messages, component
// images), which are shared instead of kept once per payload, and the lists are stored at
// their length (the decoder leaves them up to twice as long).
func trimPayload(obj any) (any, error) {
	trimMeta(obj)
	if p, ok := obj.(*v1alpha1.ReleasePayload); ok {
		for i := range p.Spec.PayloadVerificationConfig.Verifications {
			v := &p.Spec.PayloadVerificationConfig.Verifications[i]
			v.Job, v.ProwJob = nil, nil
		}
		compactPayload(p)
	}
	return obj, nil
}

// compactPayload shares the repeated strings of a payload and trims its lists to their length.
// Names unique to the payload (its tag, its runs' names and URLs, its image) are left alone.
func compactPayload(p *v1alpha1.ReleasePayload) {
	spec := &p.Spec
	if spec.PayloadCoordinates.Tag == p.Name {
		spec.PayloadCoordinates.Tag = p.Name
	}
	spec.PayloadCoordinates.Stream = intern(spec.PayloadCoordinates.Stream)
	spec.Components = exact(spec.Components)
	for i := range spec.Components {
		c := &spec.Components[i]
		c.Name, c.Image, c.Source = intern(c.Name), intern(c.Image), intern(c.Source)
	}
	spec.PayloadCreationConfig.Repository = intern(spec.PayloadCreationConfig.Repository)
	spec.PayloadCreationConfig.MirrorRepository = intern(spec.PayloadCreationConfig.MirrorRepository)
	spec.PayloadVerificationConfig.Verifications = exact(spec.PayloadVerificationConfig.Verifications)
	if t := spec.PayloadVerificationConfig.TemplatesFrom; t != nil {
		t.ConfigMap, t.Digest = intern(t.ConfigMap), intern(t.Digest)
	}
	for i := range spec.PayloadVerificationConfig.Verifications {
		v := &spec.PayloadVerificationConfig.Verifications[i]
		v.Name, v.Type, v.UpgradeFrom = intern(v.Name), intern(v.Type), intern(v.UpgradeFrom)
	}

	status := &p.Status
	status.Phase = intern(status.Phase)
	status.Conditions = exact(status.Conditions)
	for i := range status.Conditions {
		c := &status.Conditions[i]
		c.Type, c.Status, c.Reason, c.Message = intern(c.Type), intern(c.Status), intern(c.Reason), intern(c.Message)
	}
	result := &status.ReleaseCreationJobResult
	result.Namespace, result.Status, result.Message = intern(result.Namespace), intern(result.Status), intern(result.Message)
	status.Verifications = exact(status.Verifications)
	for i := range status.Verifications {
		v := &status.Verifications[i]
		v.Name, v.Type, v.UpgradeFrom = intern(v.Name), intern(v.Type), intern(v.UpgradeFrom)
		v.State, v.Message = intern(v.State), intern(v.Message)
		v.Runs = exact(v.Runs)
		for j := range v.Runs {
			r := &v.Runs[j]
			r.Kind, r.Namespace, r.State = intern(r.Kind), intern(r.Namespace), intern(r.State)
			r.UpgradeFrom, r.Message = intern(r.UpgradeFrom), intern(r.Message)
		}
	}
}

// intern returns s, sharing its bytes with every other interned copy of it.
func intern[S ~string](s S) S {
	if s == "" {
		return s
	}
	return S(unique.Make(string(s)).Value())
}

// exact returns s stored at its length; nil stays nil.
func exact[T any](s []T) []T {
	if cap(s) == len(s) {
		return s
	}
	return append(make([]T, 0, len(s)), s...)
}

var (
	_ toolscache.TransformFunc = trimPayload
	_ toolscache.TransformFunc = trimObject
	_ toolscache.TransformFunc = trimJob
	_ toolscache.TransformFunc = trimProwJob
	_ toolscache.TransformFunc = trimPod
)
