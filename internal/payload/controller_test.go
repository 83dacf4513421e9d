//go:build !unit

package payload_test

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	prowv1 "github.com/release-controller/release-controller/api/prow/v1"
	"github.com/release-controller/release-controller/api/v1alpha1"
)

func TestPayloadWithoutCreationJobIsPending(t *testing.T) {
	ns := env.Namespace(t)
	createPayload(t, newPayload(ns, tag, jobVerification("e2e")))
	p := waitFor(t, ns, tag, func(g Gomega, p *v1alpha1.ReleasePayload) {
		phaseIs(v1alpha1.PhasePending)(g, p)
		g.Expect(condition(p, v1alpha1.ConditionPayloadCreated).Reason).To(Equal(v1alpha1.ReasonCreationJobNotFound))
	})
	// Verification status is seeded from the payload's config before any job exists.
	if v := verification(p, "e2e"); v.State != v1alpha1.JobPending || v.Type != v1alpha1.Blocking {
		t.Errorf("e2e seeded as %+v", v)
	}
	if p.Status.ReleaseCreationJobResult.Status != v1alpha1.CreationJobUnknown {
		t.Errorf("creation result %+v", p.Status.ReleaseCreationJobResult)
	}
}

func TestCreatedPayloadIsReady(t *testing.T) {
	ns := env.Namespace(t)
	createPayload(t, newPayload(ns, tag, jobVerification("e2e")))
	job := createCreationJob(t, ns, tag)
	waitFor(t, ns, tag, func(g Gomega, p *v1alpha1.ReleasePayload) {
		g.Expect(p.Status.ReleaseCreationJobResult.Name).To(Equal(job.Name))
		g.Expect(condition(p, v1alpha1.ConditionPayloadCreated).Reason).To(Equal(v1alpha1.ReasonCreationJobPending))
	})
	finish(t, job, true)
	waitFor(t, ns, tag, func(g Gomega, p *v1alpha1.ReleasePayload) {
		phaseIs(v1alpha1.PhaseReady)(g, p)
		g.Expect(p.Status.ReleaseCreationJobResult.Status).To(Equal(v1alpha1.CreationJobSuccess))
		g.Expect(condition(p, v1alpha1.ConditionPayloadAccepted).Message).To(Equal("waiting for blocking jobs: e2e"))
	})
}

func TestCreationFailureFailsPayload(t *testing.T) {
	ns := env.Namespace(t)
	createPayload(t, newPayload(ns, tag, jobVerification("e2e")))
	finish(t, createCreationJob(t, ns, tag), false)
	waitFor(t, ns, tag, func(g Gomega, p *v1alpha1.ReleasePayload) {
		phaseIs(v1alpha1.PhaseFailed)(g, p)
		g.Expect(p.Status.ReleaseCreationJobResult.Status).To(Equal(v1alpha1.CreationJobFailed))
		g.Expect(condition(p, v1alpha1.ConditionPayloadFailed).Message).To(ContainSubstring("BackoffLimitExceeded"))
	})
}

func TestAllBlockingPassAccepts(t *testing.T) {
	ns := env.Namespace(t)
	informing := jobVerification("lint")
	informing.Type = v1alpha1.Informing
	createPayload(t, newPayload(ns, tag, jobVerification("e2e"), jobVerification("upgrade"), informing))
	created(t, ns, tag)
	e2e, upgrade := createRun(t, ns, tag, "e2e", 1), createRun(t, ns, tag, "upgrade", 1)
	createRun(t, ns, tag, "lint", 1)
	finish(t, e2e, true)
	waitFor(t, ns, tag, func(g Gomega, p *v1alpha1.ReleasePayload) {
		phaseIs(v1alpha1.PhaseReady)(g, p)
		g.Expect(verification(p, "e2e").State).To(Equal(v1alpha1.JobSuccess))
		g.Expect(condition(p, v1alpha1.ConditionPayloadAccepted).Message).To(Equal("waiting for blocking jobs: upgrade"))
		// kstatus: not Ready yet, and Reconciling says what it waits on.
		g.Expect(condition(p, v1alpha1.ConditionReady).Status).To(Equal(metav1.ConditionFalse))
		g.Expect(condition(p, v1alpha1.ConditionReconciling).Reason).To(Equal(v1alpha1.ReasonProgressing))
		g.Expect(condition(p, v1alpha1.ConditionReconciling).Message).To(ContainSubstring("waiting for blocking jobs: upgrade"))
	})
	finish(t, upgrade, true)
	p := waitFor(t, ns, tag, phaseIs(v1alpha1.PhaseAccepted))
	// What `kubectl wait --for=condition=Ready releasepayload/<tag>` waits for.
	if condition(p, v1alpha1.ConditionReady).Status != metav1.ConditionTrue || condition(p, v1alpha1.ConditionReconciling).Status != "" {
		t.Errorf("accepted, the conditions are %+v", p.Status.Conditions)
	}
	run := verification(p, "e2e").Runs[0]
	if run.Name != e2e.Name || run.Attempt != 1 || run.StartTime == nil || run.CompletionTime == nil || run.Kind != v1alpha1.RunKindJob {
		t.Errorf("e2e run recorded as %+v", run)
	}
	if v := verification(p, "lint"); v.State != v1alpha1.JobPending || len(v.Runs) != 1 {
		t.Errorf("informing job recorded as %+v", v)
	}
	// The status writes carry the status alone; the stored spec, job templates included, stays.
	for _, v := range p.Spec.PayloadVerificationConfig.Verifications {
		if v.Job == nil || len(v.Job.Template.Spec.Template.Spec.Containers) == 0 {
			t.Errorf("verification %s lost its job template: %+v", v.Name, v)
		}
	}
	if len(p.Spec.Components) == 0 || p.Spec.PayloadCoordinates.Tag != tag {
		t.Errorf("the spec changed: %+v", p.Spec)
	}
}

func TestBlockingFailureRejects(t *testing.T) {
	ns := env.Namespace(t)
	createPayload(t, newPayload(ns, tag, jobVerification("e2e"), jobVerification("upgrade")))
	created(t, ns, tag)
	createRun(t, ns, tag, "e2e", 1)
	finish(t, createRun(t, ns, tag, "upgrade", 1), false)
	waitFor(t, ns, tag, func(g Gomega, p *v1alpha1.ReleasePayload) {
		phaseIs(v1alpha1.PhaseRejected)(g, p)
		g.Expect(condition(p, v1alpha1.ConditionPayloadRejected).Message).To(Equal("blocking jobs failed: upgrade"))
		// A terminal verdict: not Ready, and Stalled (nothing more happens without an override).
		g.Expect(condition(p, v1alpha1.ConditionReady).Reason).To(Equal(v1alpha1.ReasonPayloadRejected))
		g.Expect(condition(p, v1alpha1.ConditionStalled).Status).To(Equal(metav1.ConditionTrue))
	})
}

func TestRetriedJobFailsThenPasses(t *testing.T) {
	ns := env.Namespace(t)
	e2e := jobVerification("e2e")
	e2e.MaxRetries = 2
	createPayload(t, newPayload(ns, tag, e2e))
	created(t, ns, tag)
	finish(t, createRun(t, ns, tag, "e2e", 1), false)
	waitFor(t, ns, tag, func(g Gomega, p *v1alpha1.ReleasePayload) {
		phaseIs(v1alpha1.PhaseReady)(g, p)
		g.Expect(verification(p, "e2e").Message).To(Equal("1 of 3 attempts failed; retry pending"))
	})
	finish(t, createRun(t, ns, tag, "e2e", 2), true)
	p := waitFor(t, ns, tag, phaseIs(v1alpha1.PhaseAccepted))
	v := verification(p, "e2e")
	if len(v.Runs) != 2 || v.Runs[0].State != v1alpha1.JobFailure || v.Runs[1].State != v1alpha1.JobSuccess || v.Message != "passed on attempt 2" {
		t.Errorf("e2e recorded as %+v", v)
	}
}

func TestAggregatedJob(t *testing.T) {
	for _, tt := range []struct {
		name   string
		passes []bool
		phase  v1alpha1.PayloadPhase
	}{
		{"above the ratio", []bool{true, false, true, true}, v1alpha1.PhaseAccepted},
		{"below the ratio", []bool{true, false, false, true}, v1alpha1.PhaseRejected},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ns := env.Namespace(t)
			agg := jobVerification("aggregated-e2e")
			agg.Aggregation = &v1alpha1.Aggregation{Runs: 4, PassRatio: 0.75}
			createPayload(t, newPayload(ns, tag, agg))
			created(t, ns, tag)
			for i, pass := range tt.passes {
				finish(t, createRun(t, ns, tag, "aggregated-e2e", i+1), pass)
			}
			// Below the ratio the verdict may come before the last run finishes (2 failures
			// already leave 3 of 4 out of reach); the runs finishing later are still recorded.
			waitFor(t, ns, tag, func(g Gomega, p *v1alpha1.ReleasePayload) {
				phaseIs(tt.phase)(g, p)
				g.Expect(verification(p, "aggregated-e2e").Runs).To(HaveLen(4))
			})
		})
	}
}

func TestOverride(t *testing.T) {
	for _, tt := range []struct {
		name     string
		override v1alpha1.PayloadOverrideType
		jobPass  bool
		phase    v1alpha1.PayloadPhase
	}{
		{"accept a rejected payload", v1alpha1.OverrideAccepted, false, v1alpha1.PhaseAccepted},
		{"reject an accepted payload", v1alpha1.OverrideRejected, true, v1alpha1.PhaseRejected},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ns := env.Namespace(t)
			createPayload(t, newPayload(ns, tag, jobVerification("e2e")))
			created(t, ns, tag)
			finish(t, createRun(t, ns, tag, "e2e", 1), tt.jobPass)
			before := v1alpha1.PhaseRejected
			if tt.jobPass {
				before = v1alpha1.PhaseAccepted
			}
			p := waitFor(t, ns, tag, phaseIs(before))

			patch := client.MergeFrom(p.DeepCopy())
			p.Spec.PayloadOverride = &v1alpha1.PayloadOverride{Override: tt.override, Reason: "release manager's call"}
			if err := env.Client.Patch(context.Background(), p, patch); err != nil {
				t.Fatalf("setting override: %v", err)
			}
			waitFor(t, ns, tag, func(g Gomega, p *v1alpha1.ReleasePayload) {
				phaseIs(tt.phase)(g, p)
				g.Expect(condition(p, v1alpha1.ConditionPayloadAccepted).Reason).To(Equal(v1alpha1.ReasonManualOverride))
				g.Expect(condition(p, v1alpha1.ConditionPayloadAccepted).Message).To(HaveSuffix("release manager's call"))
			})
		})
	}
}

func TestOverrideDoesNotBeatFailedCreation(t *testing.T) {
	ns := env.Namespace(t)
	p := newPayload(ns, tag, jobVerification("e2e"))
	p.Spec.PayloadOverride = &v1alpha1.PayloadOverride{Override: v1alpha1.OverrideAccepted, Reason: "ship it"}
	createPayload(t, p)
	finish(t, createCreationJob(t, ns, tag), false)
	waitFor(t, ns, tag, func(g Gomega, p *v1alpha1.ReleasePayload) {
		phaseIs(v1alpha1.PhaseFailed)(g, p)
		g.Expect(condition(p, v1alpha1.ConditionPayloadAccepted).Reason).To(Equal(v1alpha1.ReasonPayloadFailed))
	})
}

func TestDeletedRunBecomesUnknown(t *testing.T) {
	ns := env.Namespace(t)
	createPayload(t, newPayload(ns, tag, jobVerification("e2e"), jobVerification("upgrade")))
	created(t, ns, tag)
	run := createRun(t, ns, tag, "e2e", 1)
	passed := createRun(t, ns, tag, "upgrade", 1)
	finish(t, passed, true)
	waitFor(t, ns, tag, func(g Gomega, p *v1alpha1.ReleasePayload) {
		g.Expect(verification(p, "e2e").Runs).To(HaveLen(1))
		g.Expect(verification(p, "upgrade").State).To(Equal(v1alpha1.JobSuccess))
	})
	background := metav1.DeletePropagationBackground
	for _, job := range []client.Object{run, passed} {
		if err := env.Client.Delete(context.Background(), job, &client.DeleteOptions{PropagationPolicy: &background}); err != nil {
			t.Fatalf("deleting job: %v", err)
		}
	}
	// The run is Unknown; it used up no attempt, so the verification waits for another run.
	p := waitFor(t, ns, tag, func(g Gomega, p *v1alpha1.ReleasePayload) {
		phaseIs(v1alpha1.PhaseReady)(g, p)
		g.Expect(verification(p, "e2e").Runs[0].State).To(Equal(v1alpha1.JobUnknown))
		g.Expect(verification(p, "e2e").State).To(Equal(v1alpha1.JobPending))
		g.Expect(verification(p, "e2e").Message).To(Equal("0 of 1 attempts failed, 1 lost; retry pending"))
		g.Expect(condition(p, v1alpha1.ConditionPayloadAccepted).Message).To(Equal("waiting for blocking jobs: e2e"))
	})
	if r := verification(p, "e2e").Runs[0]; r.State != v1alpha1.JobUnknown || r.Message != "the Job was deleted before it finished" {
		t.Errorf("deleted run recorded as %+v", r)
	}
	// A finished run keeps its result when its object is garbage collected.
	if v := verification(p, "upgrade"); v.State != v1alpha1.JobSuccess || v.Runs[0].State != v1alpha1.JobSuccess {
		t.Errorf("collected finished run recorded as %+v", v)
	}
}

func TestProwJobRuns(t *testing.T) {
	ns := env.Namespace(t)
	e2e := v1alpha1.Verification{Name: "e2e-aws", MaxRetries: 1, ProwJob: &v1alpha1.ProwJobBackend{Spec: prowv1.ProwJobSpec{Job: "periodic-e2e-aws"}}}
	createPayload(t, newPayload(ns, tag, e2e))
	created(t, ns, tag)
	ctx := context.Background()
	setState := func(pj *prowv1.ProwJob, state prowv1.ProwJobState) {
		t.Helper()
		now := metav1.Now()
		pj.Status = prowv1.ProwJobStatus{State: state, StartTime: now, URL: "https://prow.example.com/view/" + pj.Name, Description: "Job " + string(state)}
		if state.IsTerminal() {
			pj.Status.CompletionTime = &now
		}
		if err := env.Client.Status().Update(ctx, pj); err != nil {
			t.Fatalf("updating prowjob: %v", err)
		}
	}
	first := createProwJob(t, ns, tag, "e2e-aws", 1)
	setState(first, prowv1.PendingState)
	setState(first, prowv1.ErrorState)
	waitFor(t, ns, tag, func(g Gomega, p *v1alpha1.ReleasePayload) {
		phaseIs(v1alpha1.PhaseReady)(g, p)
		g.Expect(verification(p, "e2e-aws").Runs).To(HaveLen(1))
		g.Expect(verification(p, "e2e-aws").Runs[0].State).To(Equal(v1alpha1.JobFailure))
	})
	setState(createProwJob(t, ns, tag, "e2e-aws", 2), prowv1.SuccessState)
	p := waitFor(t, ns, tag, phaseIs(v1alpha1.PhaseAccepted))
	if r := verification(p, "e2e-aws").Runs[1]; r.Kind != v1alpha1.RunKindProwJob || r.URL != "https://prow.example.com/view/e2e-aws-2" {
		t.Errorf("prowjob run recorded as %+v", r)
	}
}

func TestPayloadWithoutVerificationsIsAcceptedOnceCreated(t *testing.T) {
	ns := env.Namespace(t)
	createPayload(t, newPayload(ns, tag))
	waitFor(t, ns, tag, phaseIs(v1alpha1.PhasePending))
	created(t, ns, tag)
	waitFor(t, ns, tag, func(g Gomega, p *v1alpha1.ReleasePayload) {
		phaseIs(v1alpha1.PhaseAccepted)(g, p)
		g.Expect(condition(p, v1alpha1.ConditionPayloadAccepted).Reason).To(Equal(v1alpha1.ReasonVerificationsCompleted))
	})
}

// TestCreationFailureQuotesTheBuild checks a failed build's own words, which Kubernetes puts in
// the pod's termination message, reach PayloadFailed.
func TestCreationFailureQuotesTheBuild(t *testing.T) {
	ns := env.Namespace(t)
	createPayload(t, newPayload(ns, tag, jobVerification("e2e")))
	job := createCreationJob(t, ns, tag)
	labels := jobLabels(tag, v1alpha1.JobTypeCreation, "")
	labels[batchv1.JobNameLabel] = job.Name
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: job.Name + "-x7k2p", Labels: labels}, Spec: podJobSpec().Template.Spec}
	ctx := context.Background()
	if err := env.Client.Create(ctx, pod); err != nil {
		t.Fatalf("creating pod: %v", err)
	}
	pod.Status.Phase = corev1.PodFailed
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "test", Image: "registry.example.com/tests:latest", State: corev1.ContainerState{
		Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error", Message: "read 4/4 component images\nError: the components mix platforms (linux/amd64: api; linux/arm64: web)"},
	}}}
	if err := env.Client.Status().Update(ctx, pod); err != nil {
		t.Fatalf("updating pod status: %v", err)
	}
	finish(t, job, false)
	waitFor(t, ns, tag, func(g Gomega, p *v1alpha1.ReleasePayload) {
		phaseIs(v1alpha1.PhaseFailed)(g, p)
		g.Expect(condition(p, v1alpha1.ConditionPayloadFailed).Message).To(HaveSuffix(
			"; the build said: Error: the components mix platforms (linux/amd64: api; linux/arm64: web)"))
	})
}
