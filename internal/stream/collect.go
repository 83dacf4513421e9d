package stream

// Step 8 of a pass: retention deletes old payloads, their jobs and optionally their images.

import (
	"context"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	prowv1 "github.com/release-controller/release-controller/api/prow/v1"
	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/jobcache"
	"github.com/release-controller/release-controller/internal/jobcontract"
	"github.com/release-controller/release-controller/internal/registryclient"
)

// collect deletes what the retention rules no longer keep: payloads (and their images, when
// asked), finished jobs after their TTL, and jobs whose payload is gone.
func (s *streamSync) collect(ctx context.Context) {
	collected := map[string]bool{}
	for _, p := range Collect(s.stream.Spec.Retention, s.payloads, s.now) {
		if s.stream.Spec.Retention.DeleteImages {
			if err := s.r.Registry.Delete(ctx, p.Spec.PayloadCreationConfig.Repository+":"+p.Name); err != nil && !registryclient.IsNotFound(err) {
				s.fail(s.stream, v1alpha1.ReasonReconcileFailed, "Collect", "deleting the image of "+p.Name, err)
				continue
			}
		}
		if err := s.r.Delete(ctx, p); client.IgnoreNotFound(err) != nil {
			s.fail(s.stream, v1alpha1.ReasonReconcileFailed, "Collect", "deleting payload "+p.Name, err)
			continue
		}
		collected[p.Name] = true
		s.r.report.Eventf(ctx, s.stream, nil, v1alpha1.EventPayloadCollected, "Collect", "deleted payload %s (%s): the retention rules no longer keep it", p.Name, p.Status.Phase)
	}
	remaining := s.payloads[:0:0]
	for _, p := range s.payloads {
		if !collected[p.Name] {
			remaining = append(remaining, p)
		}
	}
	s.payloads = remaining
	s.collectTemplates(ctx)

	s.collectJobs(ctx, s.r.Jobs, s.r.Client, "")
	// And the jobs of the clusters the verifications and creation jobs run on, while they can
	// be read.
	for key, view := range s.clusters {
		if view.Synced() {
			s.collectJobs(ctx, view.Jobs, view.Client, " on cluster "+key.String())
		}
	}
}

// collectJobs deletes with w the stream's jobs in cache that the retention rules no longer
// keep; where names the cluster in messages ("": the controller's).
func (s *streamSync) collectJobs(ctx context.Context, cache *jobcache.Cache, w client.Writer, where string) {
	records, err := cache.ByStream(ctx, s.stream.Namespace, s.stream.Name)
	if err != nil {
		s.fail(s.stream, v1alpha1.ReasonReconcileFailed, "Collect", "listing jobs"+where, err)
		return
	}
	jobs := jobsOfRecords(records)
	existing := map[string]*v1alpha1.ReleasePayload{}
	for i := range s.payloads {
		existing[jobcontract.PayloadKey(s.payloads[i].Namespace, s.payloads[i].Name)] = &s.payloads[i]
	}
	for i := range jobs.infos {
		j := &jobs.infos[i]
		j.Recorded = recorded(existing[j.PayloadKey], j)
	}
	var ttl *time.Duration
	if s.stream.Spec.Retention.CompletedJobTTL != nil {
		ttl = &s.stream.Spec.Retention.CompletedJobTTL.Duration
	}
	// The index keys jobs by their payload's namespace (ProwJobs elsewhere carry it in a
	// label), so every job listed belongs to a payload of this stream.
	toDelete, next := JobsToCollect(jobs.infos, func(key string) bool { return existing[key] != nil }, ttl, s.now)
	s.requeue(next)
	background := metav1.DeletePropagationBackground
	for _, j := range toDelete {
		if j.Creation && where != "" {
			// A creation Job on a creation cluster: its input ConfigMap goes with it.
			if err := deleteBuildObjects(ctx, w, j.Namespace, j.Name); err != nil {
				s.fail(s.stream, v1alpha1.ReasonReconcileFailed, "Collect", "deleting job "+j.Name+where, err)
			}
			continue
		}
		var obj client.Object = &batchv1.Job{}
		if j.Kind == "ProwJob" {
			obj = &prowv1.ProwJob{}
		}
		obj.SetNamespace(j.Namespace)
		obj.SetName(j.Name)
		if err := w.Delete(ctx, obj, &client.DeleteOptions{PropagationPolicy: &background}); client.IgnoreNotFound(err) != nil {
			s.fail(s.stream, v1alpha1.ReasonReconcileFailed, "Collect", "deleting job "+j.Name+where, err)
		}
	}
}

// recorded reports whether the payload's status holds the finished job's result.
func recorded(p *v1alpha1.ReleasePayload, j *JobInfo) bool {
	if p == nil {
		return false
	}
	if p.Status.ReleaseCreationJobResult.Name == j.Name {
		return p.Status.ReleaseCreationJobResult.Status != v1alpha1.CreationJobUnknown
	}
	for _, v := range p.Status.Verifications {
		for _, r := range v.Runs {
			if r.Name == j.Name && r.Namespace == j.Namespace {
				return r.State.IsTerminal()
			}
		}
	}
	return false
}
