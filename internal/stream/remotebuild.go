package stream

// The creation Job of a payload whose stream names a creationCluster: created on that cluster
// beside a ConfigMap holding the build's whole input (buildinput.Input as JSON), which the Job
// mounts and builds from (`payload build --input`), so it needs no way back to this cluster.
// Found there through the cluster's job cache, and deleted there, ConfigMap with it.

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"path"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/buildinput"
	"github.com/release-controller/release-controller/internal/clusters"
	"github.com/release-controller/release-controller/internal/jobcontract"
)

// NewRemoteCreationJob is the creation Job of p on its creation cluster, in namespace there:
// NewCreationJob's Job, without an owner (the payload is not on that cluster: retention and
// abort delete it) or a service account (it reads nothing from the API server), building from
// the ConfigMap of the same name, mounted at buildinput.MountPath.
func NewRemoteCreationJob(p *v1alpha1.ReleasePayload, namespace, image string) *batchv1.Job {
	job := NewCreationJob(p, image, "")
	job.Namespace = namespace
	job.OwnerReferences = nil
	// In another namespace than the payload's, the labels name the payload's.
	labels := jobcontract.CreationJob(p).Labels(namespace)
	job.Labels, job.Spec.Template.Labels = labels, maps.Clone(labels)
	pod := &job.Spec.Template.Spec
	pod.AutomountServiceAccountToken = ptr.To(false)
	c := &pod.Containers[0]
	c.Command = []string{"release-controller", "payload", "build", "--input", path.Join(buildinput.MountPath, buildinput.ConfigMapKey)}
	c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "input", MountPath: buildinput.MountPath, ReadOnly: true})
	pod.Volumes = append(pod.Volumes, corev1.Volume{Name: "input", VolumeSource: corev1.VolumeSource{
		ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: job.Name}},
	}})
	return job
}

// NewBuildInputConfigMap is the ConfigMap holding in as JSON for the remote creation Job job,
// named and labelled as it is.
func NewBuildInputConfigMap(job *batchv1.Job, in buildinput.Input) (*corev1.ConfigMap, error) {
	data, err := json.MarshalIndent(in, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encoding the build input: %w", err)
	}
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: job.Namespace, Name: job.Name, Labels: maps.Clone(job.Labels)},
		Data:       map[string]string{buildinput.ConfigMapKey: string(data)},
	}, nil
}

// creationCluster is the view of p's creation cluster and its namespace there; ok is
// false for the controller's own cluster. A cluster that cannot be used now gives an error
// naming it.
func (s *streamSync) creationCluster(ctx context.Context, p *v1alpha1.ReleasePayload) (view clusters.View, namespace string, ok bool, err error) {
	key, namespace, remote := buildinput.ClusterOf(p)
	if !remote {
		return clusters.View{}, "", false, nil
	}
	view, known := s.clusters[key]
	if !known {
		// A payload created in this pass, after the clusters were declared.
		s.useClusters(ctx)
		view, known = s.clusters[key]
	}
	switch {
	case !known:
		return view, namespace, true, fmt.Errorf("creation cluster %s is not watched", key)
	case view.Problem != "":
		return view, namespace, true, fmt.Errorf("creation job: %s", view.Problem)
	}
	return view, namespace, true, nil
}

// buildRemote creates p's ConfigMap and creation Job on its creation cluster once that
// cluster's jobs are listed and show none (so that nothing is created twice); the ConfigMap
// first, so the Job's pod finds its input. An unreachable cluster is reported and retried;
// the payload controller names it in the payload's status.
func (s *streamSync) buildRemote(ctx context.Context, p *v1alpha1.ReleasePayload) {
	view, namespace, _, err := s.creationCluster(ctx, p)
	if err != nil {
		s.fail(p, v1alpha1.ReasonReconcileFailed, "Build", "creating the build job of "+p.Name, err)
		return
	}
	if !view.Synced() {
		return // the clusters manager brings the stream back once its jobs are listed
	}
	records, err := view.Jobs.ByPayload(ctx, p.Namespace, p.Name)
	if err != nil {
		s.fail(p, v1alpha1.ReasonReconcileFailed, "Build", "listing the jobs of "+p.Name+" on its creation cluster", err)
		return
	}
	if jobsOfRecords(records).creation > 0 {
		return
	}
	in, err := buildinput.Of(p, s.payloads)
	if err != nil {
		s.fail(p, v1alpha1.ReasonReconcileFailed, "Build", "computing the build input of "+p.Name, err)
		return
	}
	job := NewRemoteCreationJob(p, namespace, s.r.BuildImage)
	jobcontract.WithRegistryAuth(&job.Spec.Template.Spec, s.r.RegistryAuthSecret)
	cm, err := NewBuildInputConfigMap(job, in)
	if err != nil {
		s.fail(p, v1alpha1.ReasonReconcileFailed, "Build", "creating the build job of "+p.Name, err)
		return
	}
	key, _, _ := buildinput.ClusterOf(p)
	if err := view.Client.Create(ctx, cm); client.IgnoreAlreadyExists(err) != nil {
		s.fail(p, v1alpha1.ReasonReconcileFailed, "Build", "creating the build input of "+p.Name+" on cluster "+key.String(), err)
		return
	}
	switch err := view.Client.Create(ctx, job); {
	case apierrors.IsAlreadyExists(err):
	case err != nil:
		s.fail(p, v1alpha1.ReasonReconcileFailed, "Build", "creating the build job of "+p.Name+" on cluster "+key.String(), err)
	default:
		s.r.report.Eventf(ctx, p, nil, v1alpha1.EventBuildStarted, "Build", "created the creation job %s on cluster %s, namespace %s (image %s)", job.Name, key, namespace, s.r.BuildImage)
	}
}

// deleteRemoteBuild deletes p's creation Job and its ConfigMap on its creation cluster; done
// is false when p builds on the controller's cluster.
func (s *streamSync) deleteRemoteBuild(ctx context.Context, p *v1alpha1.ReleasePayload) (done bool, err error) {
	view, namespace, remote, err := s.creationCluster(ctx, p)
	if !remote {
		return false, nil
	}
	if err != nil {
		return true, err
	}
	return true, deleteBuildObjects(ctx, view.Client, namespace, jobcontract.CreationJobName(p.Name))
}

// deleteBuildObjects deletes with w a remote creation Job namespace/name and the ConfigMap of
// its input.
func deleteBuildObjects(ctx context.Context, w client.Writer, namespace, name string) error {
	background := metav1.DeletePropagationBackground
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	if err := w.Delete(ctx, job, &client.DeleteOptions{PropagationPolicy: &background}); client.IgnoreNotFound(err) != nil {
		return err
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	return client.IgnoreNotFound(w.Delete(ctx, cm))
}
