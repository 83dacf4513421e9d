//go:build !unit

package pipeline_test

import (
	"context"
	"slices"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/devenv/jobstatus"
	"github.com/release-controller/release-controller/internal/jobcontract"
	"github.com/release-controller/release-controller/internal/pipeline"
)

// smokeCheck is a blocking verification whose Job runs the smoke tests; on names the cluster
// (kubeconfig Secret) and namespace its Jobs run in, when not beside the pipeline.
func smokeCheck(cluster, namespace string) v1alpha1.Verification {
	v := v1alpha1.Verification{Name: "smoke", Type: v1alpha1.Blocking, Job: &v1alpha1.JobBackend{Template: batchv1.JobTemplateSpec{
		Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "smoke", Image: "registry.example.com/smoke:1", Args: []string{"--revision", "$(RELEASE_REVISION)"}}},
		}}},
	}}}
	if cluster != "" {
		v.Cluster = &v1alpha1.VerificationCluster{SecretRef: cluster, Namespace: namespace}
	}
	return v
}

// runJob waits for the Job of the first run of smoke of revision in env of the pipeline
// pns/web, on the cluster c reaches in namespace.
func runJob(t *testing.T, c client.Client, pns, env, revision, namespace string) *batchv1.Job {
	t.Helper()
	name := jobcontract.PipelineRun{PipelineNamespace: pns, Pipeline: "web", Environment: env, Revision: revision, Verification: "smoke", Attempt: 1}.Name()
	var job batchv1.Job
	NewWithT(t).Eventually(func() error {
		return c.Get(context.Background(), types.NamespacedName{Namespace: namespace, Name: name}, &job)
	}).WithTimeout(waitTimeout).WithPolling(100*time.Millisecond).Should(Succeed(), "the run of %s in %s", revision, env)
	return &job
}

// finishJob sets the Job's status as the Kubernetes job controller does when its pod ends.
func finishJob(t *testing.T, c client.Client, job *batchv1.Job, succeeded bool) {
	t.Helper()
	now := metav1.NewTime(time.Now().Truncate(time.Second))
	NewWithT(t).Eventually(func() error {
		if err := c.Get(context.Background(), client.ObjectKeyFromObject(job), job); err != nil {
			return err
		}
		if succeeded {
			jobstatus.Succeeded(job, now)
		} else {
			jobstatus.Failed(job, now, 1, "", "")
		}
		return c.Status().Update(context.Background(), job)
	}).WithTimeout(waitTimeout).Should(Succeed())
}

// waitLogEntry waits for the release log of namespace logNS to hold the entry id, once, of
// type typ and version.
func waitLogEntry(t *testing.T, logNS, id, typ, version, message string) {
	t.Helper()
	NewWithT(t).Eventually(func(g Gomega) {
		var logs v1alpha1.ReleaseLogList
		g.Expect(mgmt.Client.List(context.Background(), &logs, client.InNamespace(logNS))).To(Succeed())
		var found []v1alpha1.ReleaseLogEntry
		for _, l := range logs.Items {
			for _, e := range l.Spec.Entries {
				if e.ID == id {
					found = append(found, e)
				}
			}
		}
		g.Expect(found).To(HaveLen(1), "entry %s", id)
		g.Expect(found[0].Type).To(Equal(typ))
		g.Expect(found[0].Version).To(Equal(version))
		g.Expect(found[0].Message).To(ContainSubstring(message))
	}).WithTimeout(waitTimeout).Should(Succeed())
}

// reconciled asks for a reconcile of the pipeline (the requested-at annotation) and waits
// until its status says it was handled: what the status shows then was decided after it.
func reconciled(t *testing.T, key types.NamespacedName) *v1alpha1.Pipeline {
	t.Helper()
	at := time.Now().Format(time.RFC3339Nano)
	var p v1alpha1.Pipeline
	if err := mgmt.Client.Get(context.Background(), key, &p); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(p.DeepCopy())
	metav1.SetMetaDataAnnotation(&p.ObjectMeta, v1alpha1.AnnotationReconcileRequestedAt, at)
	if err := mgmt.Client.Patch(context.Background(), &p, patch); err != nil {
		t.Fatal(err)
	}
	return waitPipeline(t, key, "reconciled after "+at, func(p *v1alpha1.Pipeline) bool { return p.Status.LastHandledReconcileAt == at })
}

// TestVerificationRollsBack drives dev (management cluster) → staging (leaf cluster), each
// verified after rollout, staging's Jobs on the leaf: a revision passes dev and only then goes
// to staging; it fails there, staging is rolled back on the leaf to the revision that passed
// there, the failed one is marked unpromotable and never promoted again, both steps are
// Events and release log entries; a later revision goes through.
func TestVerificationRollsBack(t *testing.T) {
	ctx := context.Background()
	g := NewWithT(t)
	logNS := ns(t, mgmt.Client)
	startController(t, logNS)
	pns := ns(t, mgmt.Client)
	stagingNS := ns(t, leafClient)
	deploy(t, mgmt.Client, pns, "web", "1")
	deploy(t, leafClient, stagingNS, "web", "1")
	g.Expect(mgmt.Client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: pns, Name: "leaf"},
		Data: map[string][]byte{v1alpha1.SecretKeyKubeconfig: leafKubeconfig}})).To(Succeed())
	p := &v1alpha1.Pipeline{
		ObjectMeta: metav1.ObjectMeta{Namespace: pns, Name: "web"},
		Spec: v1alpha1.PipelineSpec{
			AppRef: v1alpha1.AppReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", Container: "web"},
			Environments: []v1alpha1.Environment{
				{Name: "dev", Targets: []v1alpha1.Target{{Namespace: pns}},
					Verification: &v1alpha1.EnvironmentVerification{Verifications: []v1alpha1.Verification{smokeCheck("", "")}, OnFailure: v1alpha1.OnFailureRollback}},
				{Name: "staging", Targets: []v1alpha1.Target{{Namespace: stagingNS, ClusterRef: "leaf"}},
					Verification: &v1alpha1.EnvironmentVerification{Verifications: []v1alpha1.Verification{smokeCheck("leaf", stagingNS)}, OnFailure: v1alpha1.OnFailureRollback}},
			},
		},
	}
	g.Expect(mgmt.Client.Create(ctx, p)).To(Succeed())
	key := client.ObjectKeyFromObject(p)

	// Both environments are ready at 1, never verified: each runs its smoke test, dev's beside
	// the pipeline (owned by it, as its account, with the run's environment), staging's on the
	// leaf.
	devRun := runJob(t, mgmt.Client, pns, "dev", "1", pns)
	env := map[string]string{}
	for _, e := range devRun.Spec.Template.Spec.Containers[0].Env {
		env[e.Name] = e.Value
	}
	g.Expect(env).To(Equal(map[string]string{"RELEASE_PIPELINE": "web", "RELEASE_PIPELINE_NAMESPACE": pns, "RELEASE_ENVIRONMENT": "dev",
		"RELEASE_REVISION": "1", "RELEASE_TARGETS": pns}))
	g.Expect(devRun.Spec.Template.Spec.ServiceAccountName).To(Equal("default"))
	g.Expect(devRun.OwnerReferences).To(HaveLen(1))
	g.Expect(devRun.Labels).To(HaveKeyWithValue(v1alpha1.LabelEnvironment, "dev"))
	finishJob(t, mgmt.Client, devRun, true)
	finishJob(t, leafClient, runJob(t, leafClient, pns, "staging", "1", stagingNS), true)
	got := waitPipeline(t, key, "1 verified in dev and staging", func(p *v1alpha1.Pipeline) bool {
		return envStatus(p, "dev").LastVerified == "1" && envStatus(p, "staging").LastVerified == "1"
	})
	g.Expect(meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionReconciling)).To(BeNil())
	// (Events of one reason on one object within minutes make one series that keeps the first
	// note: dev's, whose run ended first.)
	waitEventOf(t, key, corev1.EventTypeNormal, v1alpha1.EventVerificationPassed, "1 passed its verification in dev")
	waitLogEntry(t, logNS, string(got.UID)+"/dev/1/verification", pipeline.LogTypeVerification, "1", "passed its verification in dev (smoke)")

	// dev moves to 2: while its verification runs, staging does not take 2, and the pipeline
	// says it is verifying.
	setImage(t, mgmt.Client, pns, "web", "2")
	rollOut(t, mgmt.Client, pns, "web")
	devRun = runJob(t, mgmt.Client, pns, "dev", "2", pns)
	got = waitPipeline(t, key, "verifying 2 in dev", func(p *v1alpha1.Pipeline) bool {
		v := envStatus(p, "dev").Verification
		return v != nil && v.Revision == "2" && v.State == v1alpha1.JobPending && len(v.Verifications) == 1 && len(v.Verifications[0].Runs) == 1
	})
	g.Expect(meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionReconciling).Message).To(ContainSubstring("verifying 2 in dev"))
	g.Expect(envStatus(got, "staging").LastPromotion).To(BeNil(), "staging took 2 before dev verified it")

	// It passes: staging gets 2 on the leaf, and dev's run of 1 is collected.
	finishJob(t, mgmt.Client, devRun, true)
	waitImage(t, leafClient, stagingNS, "web", "2")
	g.Eventually(func() bool {
		return apierrors.IsNotFound(mgmt.Client.Get(ctx, client.ObjectKeyFromObject(runJob0(pns, "dev", "1")), &batchv1.Job{}))
	}).WithTimeout(waitTimeout).Should(BeTrue(), "dev's run of 1 is not collected")
	rollOut(t, leafClient, stagingNS, "web")

	// 2 fails its verification in staging: staging goes back to 1 on the leaf.
	finishJob(t, leafClient, runJob(t, leafClient, pns, "staging", "2", stagingNS), false)
	waitImage(t, leafClient, stagingNS, "web", "1")
	got = waitPipeline(t, key, "staging rolled back to 1", func(p *v1alpha1.Pipeline) bool {
		s := envStatus(p, "staging")
		return s.LastRollback != nil && s.LastPromotion != nil && s.LastPromotion.Revision == "1"
	})
	staging := envStatus(got, "staging")
	g.Expect(staging.LastRollback.From).To(Equal("2"))
	g.Expect(staging.LastRollback.To).To(Equal("1"))
	g.Expect(staging.LastPromotion.ID).To(Equal(pipeline.RollbackID(string(got.UID), "staging", "2", "1")))
	g.Expect(staging.Verification.Revision).To(Equal("2"))
	g.Expect(staging.Verification.State).To(Equal(v1alpha1.JobFailure))
	g.Expect(staging.Verification.CompletionTime).NotTo(BeNil())
	g.Expect(staging.Verification.Verifications[0].Runs[0].State).To(Equal(v1alpha1.JobFailure))
	g.Expect(staging.LastVerified).To(Equal("1"))
	g.Expect(got.Status.Unpromotable).To(HaveLen(1))
	g.Expect(got.Status.Unpromotable[0].Revision).To(Equal("2"))
	g.Expect(got.Status.Unpromotable[0].Environment).To(Equal("staging"))
	g.Expect(got.Status.Unpromotable[0].Reason).To(ContainSubstring("smoke"))
	waitEvent(t, key, v1alpha1.EventVerificationFailed, "2 failed its verification in staging: blocking verifications failed: smoke; rolling back to 1")
	waitEvent(t, key, v1alpha1.EventRolledBack, "rolled back from 2 to 1 in staging (patch): verification smoke failed")
	waitLogEntry(t, logNS, string(got.UID)+"/staging/2/verification", pipeline.LogTypeVerification, "2", "failed its verification in staging")
	waitLogEntry(t, logNS, pipeline.RollbackID(string(got.UID), "staging", "2", "1"), pipeline.LogTypeRollback, "1", "back from 2 to 1")

	// The rollback rolls out: 1 passed there before, so it is not verified again, and 2 (still
	// what dev is verified at) is never promoted to staging again.
	rollOut(t, leafClient, stagingNS, "web")
	waitPipeline(t, key, "staging ready at 1", func(p *v1alpha1.Pipeline) bool { return slices.Equal(revisions(p), []string{"2", "1"}) })
	got = reconciled(t, key)
	g.Expect(envStatus(got, "staging").LastPromotion.Revision).To(Equal("1"))
	g.Expect(envStatus(got, "staging").Verification.Revision).To(Equal("2"))
	waitImage(t, leafClient, stagingNS, "web", "1")
	g.Expect(meta.IsStatusConditionTrue(got.Status.Conditions, v1alpha1.ConditionPromotionHeld)).To(BeFalse(), "a rollback holds nothing")

	// A later revision goes through both.
	setImage(t, mgmt.Client, pns, "web", "3")
	rollOut(t, mgmt.Client, pns, "web")
	finishJob(t, mgmt.Client, runJob(t, mgmt.Client, pns, "dev", "3", pns), true)
	waitImage(t, leafClient, stagingNS, "web", "3")
	rollOut(t, leafClient, stagingNS, "web")
	finishJob(t, leafClient, runJob(t, leafClient, pns, "staging", "3", stagingNS), true)
	waitPipeline(t, key, "3 verified in staging", func(p *v1alpha1.Pipeline) bool { return envStatus(p, "staging").LastVerified == "3" })
	// Staging's failed run of 2 went with its verification.
	g.Eventually(func() bool {
		job := runJob0(pns, "staging", "2")
		job.Namespace = stagingNS
		return apierrors.IsNotFound(leafClient.Get(ctx, client.ObjectKeyFromObject(job), &batchv1.Job{}))
	}).WithTimeout(waitTimeout).Should(BeTrue(), "staging's run of 2 is not collected")
}

// runJob0 names the first run of smoke of revision in env of pns/web (its namespace unset).
func runJob0(pns, env, revision string) *batchv1.Job {
	name := jobcontract.PipelineRun{PipelineNamespace: pns, Pipeline: "web", Environment: env, Revision: revision, Verification: "smoke", Attempt: 1}.Name()
	return &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: pns}}
}

// TestVerificationHolds: a failure in an environment whose onFailure is hold stops every
// promotion of the pipeline (PromotionHeld, an Event) until a person moves that environment to
// another revision.
func TestVerificationHolds(t *testing.T) {
	ctx := context.Background()
	g := NewWithT(t)
	logNS := ns(t, mgmt.Client)
	startController(t, logNS)
	pns := ns(t, mgmt.Client)
	stagingNS, prodNS := ns(t, mgmt.Client), ns(t, mgmt.Client)
	for _, n := range []string{pns, stagingNS, prodNS} {
		deploy(t, mgmt.Client, n, "web", "1")
	}
	p := &v1alpha1.Pipeline{
		ObjectMeta: metav1.ObjectMeta{Namespace: pns, Name: "web"},
		Spec: v1alpha1.PipelineSpec{
			AppRef: v1alpha1.AppReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", Container: "web"},
			Environments: []v1alpha1.Environment{
				{Name: "dev", Targets: []v1alpha1.Target{{Namespace: pns}}},
				{Name: "staging", Targets: []v1alpha1.Target{{Namespace: stagingNS}},
					Verification: &v1alpha1.EnvironmentVerification{Verifications: []v1alpha1.Verification{smokeCheck("", "")}, OnFailure: v1alpha1.OnFailureHold}},
				{Name: "prod", Targets: []v1alpha1.Target{{Namespace: prodNS}}},
			},
		},
	}
	g.Expect(mgmt.Client.Create(ctx, p)).To(Succeed())
	key := client.ObjectKeyFromObject(p)
	finishJob(t, mgmt.Client, runJob(t, mgmt.Client, pns, "staging", "1", pns), true)
	waitPipeline(t, key, "1 verified in staging", func(p *v1alpha1.Pipeline) bool { return envStatus(p, "staging").LastVerified == "1" })

	// dev gets 2, staging takes it and its verification fails: the pipeline holds.
	setImage(t, mgmt.Client, pns, "web", "2")
	rollOut(t, mgmt.Client, pns, "web")
	waitImage(t, mgmt.Client, stagingNS, "web", "2")
	rollOut(t, mgmt.Client, stagingNS, "web")
	finishJob(t, mgmt.Client, runJob(t, mgmt.Client, pns, "staging", "2", pns), false)
	got := waitPipeline(t, key, "held", func(p *v1alpha1.Pipeline) bool {
		return meta.IsStatusConditionTrue(p.Status.Conditions, v1alpha1.ConditionPromotionHeld)
	})
	held := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionPromotionHeld)
	g.Expect(held.Reason).To(Equal(v1alpha1.ReasonVerificationFailed))
	g.Expect(held.Message).To(Equal("revision 2 failed verification smoke in environment staging (onFailure is hold): nothing is promoted until staging is at another revision (roll it forward or back)"))
	g.Expect(got.Status.Unpromotable).To(BeEmpty(), "hold marks nothing unpromotable")
	waitEvent(t, key, v1alpha1.EventPromotionHeld, "revision 2 failed verification smoke in environment staging")

	// dev moves on to 3: staging does not take it while held, nor is anything rolled back.
	setImage(t, mgmt.Client, pns, "web", "3")
	rollOut(t, mgmt.Client, pns, "web")
	got = reconciled(t, key)
	g.Expect(envStatus(got, "dev").Revision).To(Equal("3"))
	g.Expect(envStatus(got, "staging").LastPromotion.Revision).To(Equal("2"))
	waitImage(t, mgmt.Client, stagingNS, "web", "2")
	waitImage(t, mgmt.Client, prodNS, "web", "1")

	// A person rolls staging back to 1 (verified there before): the hold ends, and staging
	// takes dev's 3.
	setImage(t, mgmt.Client, stagingNS, "web", "1")
	waitImage(t, mgmt.Client, stagingNS, "web", "3")
	got = waitPipeline(t, key, "released", func(p *v1alpha1.Pipeline) bool {
		return meta.IsStatusConditionFalse(p.Status.Conditions, v1alpha1.ConditionPromotionHeld)
	})
	g.Expect(meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionPromotionHeld).Reason).To(Equal(v1alpha1.ReasonNotHeld))
	rollOut(t, mgmt.Client, stagingNS, "web")
	finishJob(t, mgmt.Client, runJob(t, mgmt.Client, pns, "staging", "3", pns), true)
	waitImage(t, mgmt.Client, prodNS, "web", "3")
}
