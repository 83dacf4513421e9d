package stream

// Step 5 of a pass: launch the verification runs that are due.

import (
	"context"
	"errors"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/clusters"
	"github.com/release-controller/release-controller/internal/jobcache"
	"github.com/release-controller/release-controller/internal/jobcontract"
	"github.com/release-controller/release-controller/internal/verdict"
	"github.com/release-controller/release-controller/internal/verify"
)

// verify launches the payload's due verification runs.
func (s *streamSync) verify(ctx context.Context, p *v1alpha1.ReleasePayload, accepted verify.Accepted) {
	backoff := s.r.RetryBackoff
	if backoff.Base == 0 {
		backoff = verify.DefaultBackoff
	}
	plan := verify.PlanRuns(p, s.now, backoff, accepted)
	s.requeue(plan.RequeueAfter)
	if len(plan.Skipped) > 0 {
		skipped := p.SkippedUpgrades()
		for _, name := range plan.Skipped {
			skipped[name] = true
		}
		patch := client.MergeFrom(p.DeepCopy())
		metav1.SetMetaDataAnnotation(&p.ObjectMeta, v1alpha1.AnnotationUpgradeSkipped, joinSet(skipped))
		if err := s.r.Patch(ctx, p, patch); err != nil {
			s.fail(p, v1alpha1.ReasonReconcileFailed, "Verify", "recording skipped upgrades of "+p.Name, err)
		}
	}
	if len(plan.Launches) == 0 {
		return
	}
	jobs, err := s.jobsOf(ctx, p)
	if err != nil {
		s.fail(p, v1alpha1.ReasonReconcileFailed, "Verify", "listing the jobs of "+p.Name, err)
		return
	}
	remote, synced, err := s.remoteRecords(ctx, p)
	if err != nil {
		s.fail(p, v1alpha1.ReasonReconcileFailed, "Verify", "listing the jobs of "+p.Name+" on its verification clusters", err)
		return
	}
	for _, r := range remote {
		jobs.names[r.Name] = true
	}
	// Runs launched already that the payload controller has not recorded yet are left out,
	// and so are runs the API server refused (recorded, and counted as failed runs), and runs
	// on a cluster whose jobs are not known now (not listed yet, or unreachable: see
	// launchable).
	refused := jobcontract.RefusedRuns(p)
	launches := slices.DeleteFunc(plan.Launches, func(l verify.Launch) bool {
		name := jobcontract.RunName(p.Name, l.Verification.Name, l.Attempt)
		_, wasRefused := refused[name]
		return jobs.names[name] || wasRefused || !s.launchable(ctx, p, &l.Verification, synced)
	})
	if len(launches) == 0 {
		return
	}
	templates, readErr := s.readTemplates(ctx, p)
	if readErr != nil && !isUnusable(readErr) {
		s.fail(p, v1alpha1.ReasonReconcileFailed, "Verify", "reading the verifications of "+p.Name, readErr)
		return
	}
	for _, l := range launches {
		name := jobcontract.RunName(p.Name, l.Verification.Name, l.Attempt)
		if readErr != nil {
			// Gone or changed: no later read brings the templates back, so each run fails
			// with the reason, against its retries, and the payload reaches a verdict.
			s.recordRefusal(ctx, p, l, name, jobcontract.CauseTemplatesUnusable, readErr)
			continue
		}
		l.Verification = templates[l.Verification.Name]
		created, err := s.launch(ctx, p, l)
		var refusal *verify.Refusal
		switch {
		case errors.As(err, &refusal):
			// The tenancy rules refuse the template or the ProwJob's namespace: nothing was
			// created, and the run failed naming the fields and rules.
			s.recordRefusal(ctx, p, l, name, jobcontract.CauseForbidden, err)
		case apierrors.IsInvalid(err) || apierrors.IsBadRequest(err):
			// The template itself is wrong: trying again gives the same answer. The run
			// failed, with the API server's message, and counts against the retries.
			s.recordRefusal(ctx, p, l, name, jobcontract.CauseRefused, err)
		case err != nil:
			s.fail(p, v1alpha1.ReasonReconcileFailed, "Verify", fmt.Sprintf("launching %s of %s", name, p.Name), err)
		case created:
			s.reportLaunch(ctx, p, l, name)
		}
	}
}

// recordRefusal records that run name of p could not be created, for cause (see
// jobcontract.RefusedRun), and reports it: a Warning Event on the payload.
func (s *streamSync) recordRefusal(ctx context.Context, p *v1alpha1.ReleasePayload, l verify.Launch, name, cause string, refusal error) {
	kind := v1alpha1.RunKindJob
	if l.Verification.ProwJob != nil {
		kind = v1alpha1.RunKindProwJob
	}
	value, err := jobcontract.WithRefusedRun(p, name, jobcontract.RefusedRun{
		Verification: l.Verification.Name, Attempt: l.Attempt, Kind: kind, Message: refusal.Error(), At: metav1.NewTime(s.now), Cause: cause,
	})
	if err == nil {
		patch := client.MergeFrom(p.DeepCopy())
		metav1.SetMetaDataAnnotation(&p.ObjectMeta, v1alpha1.AnnotationRefusedRuns, value)
		err = s.r.Patch(ctx, p, patch)
	}
	if err != nil {
		s.fail(p, v1alpha1.ReasonReconcileFailed, "Verify", "recording the refused run "+name+" of "+p.Name, err)
		return
	}
	switch cause {
	case jobcontract.CauseTemplatesUnusable:
		s.r.report.Warningf(ctx, p, nil, v1alpha1.EventVerificationFailed, "Verify", "%s was not created: %v", name, refusal)
		return
	case jobcontract.CauseForbidden:
		s.r.report.Warningf(ctx, p, nil, v1alpha1.EventVerificationFailed, "Verify", "%s %s was not created: %v", kind, name, refusal)
		return
	}
	s.r.report.Warningf(ctx, p, nil, v1alpha1.EventVerificationFailed, "Verify", "the API server refused %s %s: %v", kind, name, refusal)
}

// reportLaunch reports a launched run: its verification started, or was retried.
func (s *streamSync) reportLaunch(ctx context.Context, p *v1alpha1.ReleasePayload, l verify.Launch, name string) {
	from := ""
	if l.UpgradeFrom != "" {
		from = ", upgrading from " + l.UpgradeFrom
	}
	switch v := l.Verification; {
	case v.Aggregation != nil:
		s.r.report.Eventf(ctx, p, nil, v1alpha1.EventVerificationStarted, "Verify",
			"started %s: run %d of %d of the aggregated verification %s%s", name, l.Attempt, v.Aggregation.Runs, v.Name, from)
	case l.Attempt == 1:
		s.r.report.Eventf(ctx, p, nil, v1alpha1.EventVerificationStarted, "Verify", "started %s: verification %s%s", name, v.Name, from)
	default:
		s.r.report.Eventf(ctx, p, nil, v1alpha1.EventVerificationRetried, "Verify",
			"retrying verification %s: started %s, attempt %d of %d%s", v.Name, name, l.Attempt, v.MaxRetries+1, from)
	}
}

// launchable reports whether a run of v may be launched now: on the controller's cluster
// always, on a remote one once its jobs are listed (synced), so that a run there is never
// created twice. A cluster that cannot be used is reported.
func (s *streamSync) launchable(ctx context.Context, p *v1alpha1.ReleasePayload, v *v1alpha1.Verification, synced map[clusters.Key]bool) bool {
	key, remote := verify.ClusterOf(p, v)
	if !remote || synced[key] {
		return true
	}
	if _, _, err := s.clusterView(p, v); err != nil {
		s.fail(p, v1alpha1.ReasonReconcileFailed, "Verify", "launching verification "+v.Name+" of "+p.Name, err)
	}
	return false
}

// launch creates the run's Job or ProwJob; created is false when it existed already.
func (s *streamSync) launch(ctx context.Context, p *v1alpha1.ReleasePayload, l verify.Launch) (created bool, err error) {
	build, w := verify.NewJob, client.Writer(s.r.Client)
	if view, remote, err := s.clusterView(p, &l.Verification); remote {
		if err != nil {
			return false, err
		}
		if l.Verification.Job == nil {
			return false, fmt.Errorf("verification %s names a cluster, which only job backends may", l.Verification.Name)
		}
		// On another cluster: created there, in its namespace, found there by the
		// cluster's job cache.
		build, w = verify.NewClusterJob, view.Client
	}
	if l.Verification.ProwJob != nil {
		if !s.r.WatchProwJobs {
			return false, fmt.Errorf("verification %s uses a ProwJob, but this cluster does not serve prow.k8s.io/v1 ProwJobs", l.Verification.Name)
		}
		if err := verify.CheckProwJobNamespace(p, &l.Verification, s.r.ProwJobNamespaces); err != nil {
			return false, err
		}
		pj, err := verify.NewProwJob(p, l)
		if err != nil {
			return false, err
		}
		if !s.r.Jobs.Watches(v1alpha1.RunKindProwJob, pj.Namespace) {
			// Created there, it would never be seen again: its payload would wait forever.
			return false, fmt.Errorf("verification %s creates ProwJobs in namespace %s, which this controller does not watch: add it to --prowjob-namespace", l.Verification.Name, pj.Namespace)
		}
		if err := s.r.Create(ctx, pj); err != nil {
			return false, client.IgnoreAlreadyExists(err)
		}
		if pj.Status.State == "" {
			// The status subresource drops status on create; Prow expects new jobs triggered.
			pj.Status = verify.TriggeredStatus(metav1.NewTime(s.now))
			return true, s.r.Status().Update(ctx, pj)
		}
		return true, nil
	}
	job, err := build(p, l)
	if err != nil {
		return false, err
	}
	jobcontract.WithRegistryAuth(&job.Spec.Template.Spec, s.r.RegistryAuthSecret)
	if err := w.Create(ctx, job); err != nil {
		return false, client.IgnoreAlreadyExists(err)
	}
	return true, nil
}

// payloadJobs are the jobs of one payload or stream, from the job cache.
type payloadJobs struct {
	creation int
	names    map[string]bool
	infos    []JobInfo
}

func (s *streamSync) jobsOf(ctx context.Context, p *v1alpha1.ReleasePayload) (payloadJobs, error) {
	records, err := s.r.Jobs.ByPayload(ctx, p.Namespace, p.Name)
	return jobsOfRecords(records), err
}

func jobsOfRecords(records []*jobcache.Record) payloadJobs {
	jobs := payloadJobs{names: make(map[string]bool, len(records)), infos: make([]JobInfo, 0, len(records))}
	for _, r := range records {
		jobs.names[r.Name] = true
		if r.Kind == v1alpha1.RunKindJob && r.JobType == v1alpha1.JobTypeCreation {
			jobs.creation++
		}
		jobs.infos = append(jobs.infos, JobInfo{Kind: string(r.Kind), Namespace: r.Namespace, Name: r.Name, PayloadKey: r.PayloadKey, FinishedAt: r.FinishedAt(),
			Creation: r.Kind == v1alpha1.RunKindJob && r.JobType == v1alpha1.JobTypeCreation})
	}
	return jobs
}

// acceptedByStream gathers the accepted payloads upgrades can start from: this stream's, and
// those of every other stream its payloads' verifications name (from.stream). Streams named
// that do not exist are returned in missing.
func (s *streamSync) acceptedByStream(ctx context.Context) (verify.Accepted, map[string]bool) {
	accepted := verify.Accepted{s.stream.Name: acceptedSources(s.payloads)}
	missing := map[string]bool{}
	for i := range s.payloads {
		for _, v := range s.payloads[i].Spec.PayloadVerificationConfig.Verifications {
			name := verify.SourceStream(s.stream.Name, v)
			if _, done := accepted[name]; done || missing[name] {
				continue
			}
			var other v1alpha1.ReleaseStream
			if err := s.r.Get(ctx, client.ObjectKey{Namespace: s.stream.Namespace, Name: name}, &other); err != nil {
				if apierrors.IsNotFound(err) {
					missing[name] = true
				} else {
					s.fail(s.stream, v1alpha1.ReasonReconcileFailed, "Verify", "reading the upgrade source stream "+name, err)
				}
				continue
			}
			var list v1alpha1.ReleasePayloadList
			if err := s.r.List(ctx, &list, client.InNamespace(s.stream.Namespace), client.MatchingFields{IndexStream: name}); err != nil {
				s.fail(s.stream, v1alpha1.ReasonReconcileFailed, "Verify", "listing the payloads of the upgrade source stream "+name, err)
				continue
			}
			accepted[name] = acceptedSources(list.Items)
		}
	}
	return accepted, missing
}

// namesMissingStream reports the first stream of missing that a verification of p starts from.
func namesMissingStream(p *v1alpha1.ReleasePayload, missing map[string]bool) (string, bool) {
	for _, v := range p.Spec.PayloadVerificationConfig.Verifications {
		if v.From != nil && missing[v.From.Stream] {
			return v.From.Stream, true
		}
	}
	return "", false
}

func acceptedSources(payloads []v1alpha1.ReleasePayload) []verify.UpgradeSource {
	var sources []verify.UpgradeSource
	for i := range payloads {
		if payloads[i].Status.PayloadImage != "" && verdict.Accepted(&payloads[i]) {
			sources = append(sources, verify.UpgradeSource{Tag: payloads[i].Name, Image: payloads[i].Status.PayloadImage})
		}
	}
	return sources
}
