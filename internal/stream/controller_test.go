//go:build !unit

package stream_test

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	prowv1 "github.com/release-controller/release-controller/api/prow/v1"
	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/jobcontract"
	"github.com/release-controller/release-controller/internal/stream"
	"github.com/release-controller/release-controller/internal/upgradegraph"
)

// TestReleaseFlow follows a stream from its first payload to an accepted, published release,
// then a component change to a second payload whose upgrade job starts from the first.
func TestReleaseFlow(t *testing.T) {
	ns := env.Namespace(t)
	api := pushImage(t, repo(ns, "api")+":latest", nil)
	web := pushImage(t, repo(ns, "web")+":latest", nil)
	upgrade := jobVerification("upgrade")
	upgrade.UpgradeFrom = v1alpha1.UpgradeFromPrevious
	s := newStream(t, ns, func(s *v1alpha1.ReleaseStream) {
		s.Spec.Verification = []v1alpha1.Verification{jobVerification("e2e"), upgrade}
		s.Spec.PublishTags = []string{"latest", "4.15"}
	}, "api", "web")

	first := waitPayloads(t, ns, 1)[0]
	g := NewWithT(t)
	g.Expect(first.Name).To(HavePrefix("4.15.0-0.nightly-"))
	g.Expect(first.Spec.Components).To(ConsistOf(
		v1alpha1.PinnedComponent{Name: "api", Image: api, Source: repo(ns, "api") + ":latest"},
		v1alpha1.PinnedComponent{Name: "web", Image: web, Source: repo(ns, "web") + ":latest"},
	))
	g.Expect(first.Spec.PayloadVerificationConfig.Verifications).To(HaveLen(2))
	creation := waitJob(t, ns, jobcontract.CreationJobName(first.Name))
	g.Expect(creation.Labels).To(Equal(map[string]string{
		v1alpha1.LabelStream: "nightly", v1alpha1.LabelPayload: first.Name, v1alpha1.LabelJobType: v1alpha1.JobTypeCreation,
	}))
	g.Expect(creation.Spec.Template.Spec.Containers[0].Command).To(Equal([]string{"release-controller", "payload", "build", "--payload", ns + "/" + first.Name}))
	waitStream(t, s, func(g Gomega, s *v1alpha1.ReleaseStream) {
		g.Expect(meta.IsStatusConditionTrue(s.Status.Conditions, v1alpha1.ConditionImported)).To(BeTrue())
		g.Expect(s.Status.LatestPayload).To(Equal(first.Name))
		g.Expect(s.Status.Components).To(HaveLen(2))
	})

	firstImage := build(t, &first)
	e2e := waitJob(t, ns, jobcontract.RunName(first.Name, "e2e", 1))
	g.Expect(envOf(e2e)).To(Equal(map[string]string{
		v1alpha1.EnvReleaseImageLatest: firstImage, v1alpha1.EnvReleaseTag: first.Name, v1alpha1.EnvReleaseStream: "nightly",
	}))
	g.Expect(e2e.Labels).To(HaveKeyWithValue(v1alpha1.LabelVerify, "e2e"))
	// The first payload has nothing to upgrade from: its upgrade verification is recorded as skipped.
	waitPayload(t, ns, first.Name, func(g Gomega, p *v1alpha1.ReleasePayload) {
		g.Expect(p.Annotations).To(HaveKeyWithValue(v1alpha1.AnnotationUpgradeSkipped, "upgrade"))
		g.Expect(p.Status.Verifications).To(ContainElement(And(
			HaveField("Name", "upgrade"), HaveField("State", v1alpha1.JobSkipped), HaveField("Runs", BeEmpty()),
			HaveField("Message", ContainSubstring("no earlier accepted payload")))))
	})
	finish(t, e2e, true)
	waitPayload(t, ns, first.Name, func(g Gomega, p *v1alpha1.ReleasePayload) {
		g.Expect(p.Status.Phase).To(Equal(v1alpha1.PhaseAccepted))
		g.Expect(meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ConditionPayloadAccepted).Message).To(Equal("1 of 2 blocking jobs succeeded; skipped: upgrade"))
	})
	waitStream(t, s, func(g Gomega, s *v1alpha1.ReleaseStream) {
		g.Expect(s.Status.LatestAccepted).To(Equal(first.Name))
		g.Expect(s.Status.PublishedImage).To(Equal(firstImage))
		g.Expect(s.Status.Payloads.Accepted).To(BeEquivalentTo(1))
	})
	g.Expect(digestOf(t, repo(ns, "release")+":latest")).To(Equal(firstImage))
	g.Expect(digestOf(t, repo(ns, "release")+":4.15")).To(Equal(firstImage))

	// A new build of a component makes a new payload; its upgrade starts from the first.
	newAPI := pushImage(t, repo(ns, "api")+":latest", map[string]string{"build": "2"})
	second := waitPayloads(t, ns, 2)[0]
	g.Expect(second.Spec.Components).To(ContainElement(v1alpha1.PinnedComponent{Name: "api", Image: newAPI, Source: repo(ns, "api") + ":latest"}))
	build(t, &second)
	upgradeJob := waitJob(t, ns, jobcontract.RunName(second.Name, "upgrade", 1))
	g.Expect(envOf(upgradeJob)).To(HaveKeyWithValue(v1alpha1.EnvReleaseImageInitial, firstImage))
	g.Expect(upgradeJob.Annotations).To(HaveKeyWithValue(v1alpha1.AnnotationUpgradeFrom, first.Name))
	finish(t, upgradeJob, false)
	finish(t, waitJob(t, ns, jobcontract.RunName(second.Name, "e2e", 1)), true)
	waitPayload(t, ns, second.Name, func(g Gomega, p *v1alpha1.ReleasePayload) {
		g.Expect(p.Status.Phase).To(Equal(v1alpha1.PhaseRejected))
	})
	// The upgrade result is in the stream's upgrade graph; the published tags did not move.
	NewWithT(t).Eventually(func(g Gomega) {
		cm := &corev1.ConfigMap{}
		g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: upgradegraph.ConfigMapName("nightly")}, cm)).To(Succeed())
		var graph upgradegraph.Graph
		g.Expect(json.Unmarshal([]byte(cm.Data[upgradegraph.Key]), &graph)).To(Succeed())
		g.Expect(graph.Edges).To(HaveLen(1))
		g.Expect(graph.Edges[0]).To(And(
			HaveField("From", first.Name), HaveField("To", second.Name), HaveField("State", v1alpha1.JobFailure)))
	}).WithTimeout(waitTimeout).Should(Succeed())
	g.Expect(digestOf(t, repo(ns, "release")+":latest")).To(Equal(firstImage))

	// Every transition is an Event on the stream or the payload.
	NewWithT(t).Eventually(func(g Gomega) {
		g.Expect(eventsOf(g, ns, "ReleaseStream", "nightly")).To(ContainElements(v1alpha1.EventPayloadCreated, v1alpha1.EventPublished))
		g.Expect(eventsOf(g, ns, "ReleasePayload", first.Name)).To(ContainElements(
			v1alpha1.EventBuildStarted, v1alpha1.EventBuildSucceeded, v1alpha1.EventVerificationStarted, v1alpha1.EventAccepted))
		g.Expect(eventsOf(g, ns, "ReleasePayload", second.Name)).To(ContainElements(
			v1alpha1.EventBuildStarted, v1alpha1.EventBuildSucceeded, v1alpha1.EventVerificationStarted,
			v1alpha1.EventVerificationFailed, v1alpha1.EventRejected))
	}).WithTimeout(waitTimeout).Should(Succeed())

	// The release flow's metrics, scraped from the registry the controllers count in.
	streamLabels := map[string]string{"namespace": ns, "stream": "nightly"}
	with := func(extra map[string]string) map[string]string {
		labels := map[string]string{"namespace": ns, "stream": "nightly"}
		for k, v := range extra {
			labels[k] = v
		}
		return labels
	}
	NewWithT(t).Eventually(func(g Gomega) {
		g.Expect(metricValue(t, "release_controller_payloads", with(map[string]string{"phase": "Accepted"}))).To(BeEquivalentTo(1))
		g.Expect(metricValue(t, "release_controller_payloads", with(map[string]string{"phase": "Rejected"}))).To(BeEquivalentTo(1))
		g.Expect(metricValue(t, "release_controller_payloads", streamLabels)).To(BeEquivalentTo(2))
	}).WithTimeout(waitTimeout).Should(Succeed())
	g.Expect(metricValue(t, "release_controller_payload_verdict_seconds", with(map[string]string{"phase": "Accepted"}))).To(BeEquivalentTo(1))
	g.Expect(metricValue(t, "release_controller_payload_verdict_seconds", with(map[string]string{"phase": "Rejected"}))).To(BeEquivalentTo(1))
	g.Expect(metricValue(t, "release_controller_verification_runs_total", with(map[string]string{"verification": "e2e", "result": "Success"}))).To(BeEquivalentTo(2))
	g.Expect(metricValue(t, "release_controller_verification_runs_total", with(map[string]string{"verification": "upgrade", "result": "Failure"}))).To(BeEquivalentTo(1))
	g.Expect(metricValue(t, "release_controller_verification_duration_seconds", with(map[string]string{"verification": "upgrade", "result": "Failure"}))).To(BeEquivalentTo(1))
	g.Expect(metricValue(t, "release_controller_import_errors_total", streamLabels)).To(BeZero())
	g.Expect(metricValue(t, "release_controller_stream_step_failures_total", streamLabels)).To(BeZero())
}

// TestRejectedPayloadSurvivesANewerAcceptance: retention keeps the newest rejected and failed
// payloads (keepRejected, 5 by default) although they are older than every accepted payload
// keepAccepted keeps, so their pages stay to be read; accepted payloads beyond keepAccepted go.
func TestRejectedPayloadSurvivesANewerAcceptance(t *testing.T) {
	ns := env.Namespace(t)
	pushImage(t, repo(ns, "api")+":latest", nil)
	s := newStream(t, ns, func(s *v1alpha1.ReleaseStream) {
		s.Spec.Verification = []v1alpha1.Verification{jobVerification("e2e")}
		s.Spec.Retention.KeepAccepted = 1
	}, "api")
	if got := s.Spec.Retention.KeepRejected; got == nil || *got != stream.DefaultKeepRejected {
		t.Errorf("keepRejected = %v, want the default %d", got, stream.DefaultKeepRejected)
	}
	// Each build of the component makes a payload; its e2e run passes or fails.
	verdict := func(n int, pass bool, phase v1alpha1.PayloadPhase) v1alpha1.ReleasePayload {
		t.Helper()
		if n > 1 {
			pushImage(t, repo(ns, "api")+":latest", map[string]string{"build": strconv.Itoa(n)})
		}
		p := waitPayloads(t, ns, n)[0] // nothing is collected before the third is accepted
		build(t, &p)
		finish(t, waitJob(t, ns, jobcontract.RunName(p.Name, "e2e", 1)), pass)
		return *waitPayload(t, ns, p.Name, func(g Gomega, p *v1alpha1.ReleasePayload) { g.Expect(p.Status.Phase).To(Equal(phase)) })
	}
	first := verdict(1, true, v1alpha1.PhaseAccepted)
	rejected := verdict(2, false, v1alpha1.PhaseRejected)
	third := verdict(3, true, v1alpha1.PhaseAccepted)
	g := NewWithT(t)
	// The first accepted payload is beyond keepAccepted and goes; the rejected one, older than
	// the only accepted payload kept, stays (before keepRejected it went in the same pass).
	g.Eventually(func() bool {
		return apierrors.IsNotFound(env.Client.Get(context.Background(), client.ObjectKeyFromObject(&first), &v1alpha1.ReleasePayload{}))
	}).WithTimeout(waitTimeout).Should(BeTrue())
	g.Consistently(func(g Gomega) {
		var names []string
		for _, p := range payloads(g, ns) {
			names = append(names, p.Name)
		}
		g.Expect(names).To(Equal([]string{third.Name, rejected.Name}))
	}).WithTimeout(2 * time.Second).Should(Succeed())
}

func TestUnresolvedComponentBlocksCreation(t *testing.T) {
	ns := env.Namespace(t)
	pushImage(t, repo(ns, "api")+":latest", nil)
	s := newStream(t, ns, nil, "api", "web")
	waitStream(t, s, func(g Gomega, s *v1alpha1.ReleaseStream) {
		c := meta.FindStatusCondition(s.Status.Conditions, v1alpha1.ConditionImported)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(c.Message).To(ContainSubstring("1 of 2 components did not resolve"))
		g.Expect(c.Message).To(ContainSubstring("web ("))
		g.Expect(s.Status.Components[1].Failures).To(BeNumerically(">=", 1))
	})
	if n := metricValue(t, "release_controller_import_errors_total", map[string]string{"namespace": ns, "stream": "nightly"}); n < 1 {
		t.Errorf("release_controller_import_errors_total = %v", n)
	}
	NewWithT(t).Consistently(func(g Gomega) { g.Expect(payloads(g, ns)).To(BeEmpty()) }).WithTimeout(time.Second).Should(Succeed())
	pushImage(t, repo(ns, "web")+":latest", nil)
	waitPayloads(t, ns, 1)
	waitStream(t, s, func(g Gomega, s *v1alpha1.ReleaseStream) {
		g.Expect(meta.IsStatusConditionTrue(s.Status.Conditions, v1alpha1.ConditionImported)).To(BeTrue())
	})
}

func TestMaxUnreadyReleases(t *testing.T) {
	ns := env.Namespace(t)
	pushImage(t, repo(ns, "api")+":latest", nil)
	s := newStream(t, ns, func(s *v1alpha1.ReleaseStream) {
		s.Spec.Verification = []v1alpha1.Verification{jobVerification("e2e")}
	}, "api")
	first := waitPayloads(t, ns, 1)[0]
	build(t, &first)
	pushImage(t, repo(ns, "api")+":latest", map[string]string{"build": "2"})
	waitStream(t, s, func(g Gomega, s *v1alpha1.ReleaseStream) {
		c := meta.FindStatusCondition(s.Status.Conditions, v1alpha1.ConditionReady)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Reason).To(Equal(v1alpha1.ReasonTooManyUnready))
		g.Expect(c.Message).To(ContainSubstring(first.Name))
	})
	NewWithT(t).Consistently(func(g Gomega) { g.Expect(payloads(g, ns)).To(HaveLen(1)) }).WithTimeout(time.Second).Should(Succeed())
	finish(t, waitJob(t, ns, jobcontract.RunName(first.Name, "e2e", 1)), false)
	waitPayloads(t, ns, 2)
}

func TestMinCreationInterval(t *testing.T) {
	ns := env.Namespace(t)
	pushImage(t, repo(ns, "api")+":latest", nil)
	interval := 3 * time.Second
	s := newStream(t, ns, func(s *v1alpha1.ReleaseStream) {
		s.Spec.MaxUnreadyReleases = 5
		s.Spec.MinCreationInterval = &metav1.Duration{Duration: interval}
	}, "api")
	first := waitPayloads(t, ns, 1)[0]
	pushImage(t, repo(ns, "api")+":latest", map[string]string{"build": "2"})
	second := waitPayloads(t, ns, 2)[0]
	if gap := second.CreationTimestamp.Sub(first.CreationTimestamp.Time); gap < interval-time.Second {
		// Creation timestamps have one-second resolution.
		t.Errorf("second payload created %s after the first; the interval is %s", gap, interval)
	}
	waitStream(t, s, func(g Gomega, s *v1alpha1.ReleaseStream) { g.Expect(s.Status.LatestPayload).To(Equal(second.Name)) })
}

func TestSupersededPendingPayloadIsAborted(t *testing.T) {
	ns := env.Namespace(t)
	pushImage(t, repo(ns, "api")+":latest", nil)
	newStream(t, ns, func(s *v1alpha1.ReleaseStream) { s.Spec.MaxUnreadyReleases = 3 }, "api")
	first := waitPayloads(t, ns, 1)[0]
	waitJob(t, ns, jobcontract.CreationJobName(first.Name))
	pushImage(t, repo(ns, "api")+":latest", map[string]string{"build": "2"})
	waitPayloads(t, ns, 2)
	aborted := waitPayload(t, ns, first.Name, func(g Gomega, p *v1alpha1.ReleasePayload) {
		g.Expect(p.Status.Phase).To(Equal(v1alpha1.PhaseFailed))
	})
	failed := meta.FindStatusCondition(aborted.Status.Conditions, v1alpha1.ConditionPayloadFailed)
	if failed.Reason != v1alpha1.ReasonAborted || !strings.Contains(failed.Message, "superseded by") {
		t.Errorf("PayloadFailed = %+v", failed)
	}
	NewWithT(t).Eventually(func() bool {
		err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: jobcontract.CreationJobName(first.Name)}, &batchv1.Job{})
		return apierrors.IsNotFound(err)
	}).Should(BeTrue())
}

func TestRetriedVerification(t *testing.T) {
	ns := env.Namespace(t)
	pushImage(t, repo(ns, "api")+":latest", nil)
	e2e := jobVerification("e2e")
	e2e.MaxRetries = 1
	newStream(t, ns, func(s *v1alpha1.ReleaseStream) { s.Spec.Verification = []v1alpha1.Verification{e2e} }, "api")
	p := waitPayloads(t, ns, 1)[0]
	build(t, &p)
	finish(t, waitJob(t, ns, jobcontract.RunName(p.Name, "e2e", 1)), false)
	retry := waitJob(t, ns, jobcontract.RunName(p.Name, "e2e", 2))
	if retry.Annotations[v1alpha1.AnnotationAttempt] != "2" {
		t.Errorf("retry annotations %v", retry.Annotations)
	}
	finish(t, retry, true)
	waitPayload(t, ns, p.Name, func(g Gomega, p *v1alpha1.ReleasePayload) {
		g.Expect(p.Status.Phase).To(Equal(v1alpha1.PhaseAccepted))
	})
	NewWithT(t).Eventually(func(g Gomega) {
		g.Expect(eventsOf(g, ns, "ReleasePayload", p.Name)).To(ContainElements(
			v1alpha1.EventVerificationStarted, v1alpha1.EventVerificationFailed, v1alpha1.EventVerificationRetried, v1alpha1.EventAccepted))
	}).WithTimeout(waitTimeout).Should(Succeed())
}

func TestProwJobVerification(t *testing.T) {
	ns := env.Namespace(t)
	pushImage(t, repo(ns, "api")+":latest", nil)
	pjv := v1alpha1.Verification{Name: "e2e-aws", ProwJob: &v1alpha1.ProwJobBackend{Spec: prowv1.ProwJobSpec{Job: "periodic-e2e-aws",
		PodSpec: &corev1.PodSpec{Containers: []corev1.Container{{Name: "test", Image: "tests", Command: []string{"true"}}}}}}}
	newStream(t, ns, func(s *v1alpha1.ReleaseStream) { s.Spec.Verification = []v1alpha1.Verification{pjv} }, "api")
	p := waitPayloads(t, ns, 1)[0]
	image := build(t, &p)
	pj := &prowv1.ProwJob{}
	NewWithT(t).Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: jobcontract.RunName(p.Name, "e2e-aws", 1)}, pj)).To(Succeed())
		g.Expect(pj.Status.State).To(Equal(prowv1.TriggeredState))
	}).WithTimeout(waitTimeout).Should(Succeed())
	if pj.Spec.Type != prowv1.PeriodicJob || pj.Spec.PodSpec.Containers[0].Env[0].Value != image {
		t.Errorf("prowjob spec %+v", pj.Spec)
	}
	pj.Status.State, pj.Status.CompletionTime = prowv1.SuccessState, &metav1.Time{Time: time.Now()}
	if err := env.Client.Status().Update(context.Background(), pj); err != nil {
		t.Fatal(err)
	}
	waitPayload(t, ns, p.Name, func(g Gomega, p *v1alpha1.ReleasePayload) {
		g.Expect(p.Status.Phase).To(Equal(v1alpha1.PhaseAccepted))
	})
}

func TestMirror(t *testing.T) {
	ns := env.Namespace(t)
	api := pushImage(t, repo(ns, "api")+":latest", nil)
	newStream(t, ns, func(s *v1alpha1.ReleaseStream) { s.Spec.MirrorRepository = repo(ns, "mirror") }, "api")
	p := waitPayloads(t, ns, 1)[0]
	digest := api[strings.Index(api, "@"):]
	want := v1alpha1.PinnedComponent{Name: "api", Image: repo(ns, "mirror") + digest, Source: repo(ns, "api") + ":latest"}
	if len(p.Spec.Components) != 1 || p.Spec.Components[0] != want {
		t.Errorf("components %+v, want %+v", p.Spec.Components, want)
	}
	if got := digestOf(t, repo(ns, "mirror")+":"+p.Name+"-api"); got != want.Image {
		t.Errorf("mirror tag points at %q, want %q", got, want.Image)
	}
}

// TestUpgradeFromAnotherStream: an upgrade verification with from.stream starts from that
// stream's accepted payload. While the stream does not exist, the payload waits and the
// stream's Ready says why; it is never skipped, nor started from this stream. Once the stream
// exists, the payload is planned again (the source stream's changes enqueue its dependents):
// with no accepted payload there yet, the upgrade is skipped; the next payload, after one was
// accepted, upgrades from it.
func TestUpgradeFromAnotherStream(t *testing.T) {
	ns := env.Namespace(t)
	pushImage(t, repo(ns, "api")+":latest", nil)
	upgrade := jobVerification("upgrade-minor")
	upgrade.UpgradeFrom = v1alpha1.UpgradeFromPrevious
	upgrade.From = &v1alpha1.UpgradeSourceStream{Stream: "stable"}
	nightly := newStream(t, ns, func(s *v1alpha1.ReleaseStream) {
		s.Spec.Verification = []v1alpha1.Verification{upgrade}
	}, "api")
	p := waitPayloads(t, ns, 1)[0]
	build(t, &p)
	waitStream(t, nightly, func(g Gomega, s *v1alpha1.ReleaseStream) {
		ready := meta.FindStatusCondition(s.Status.Conditions, v1alpha1.ConditionReady)
		g.Expect(ready).NotTo(BeNil())
		g.Expect(ready.Reason).To(Equal(v1alpha1.ReasonUpgradeSourceMissing))
		g.Expect(ready.Message).To(ContainSubstring("starts from stream stable, which does not exist"))
		// A stall: not retried until the stream or the one it names changes.
		stalled := meta.FindStatusCondition(s.Status.Conditions, v1alpha1.ConditionStalled)
		g.Expect(stalled).NotTo(BeNil())
		g.Expect(stalled.Reason).To(Equal(v1alpha1.ReasonUpgradeSourceMissing))
		g.Expect(meta.FindStatusCondition(s.Status.Conditions, v1alpha1.ConditionReconciling)).To(BeNil())
	})
	got := waitPayload(t, ns, p.Name, func(g Gomega, p *v1alpha1.ReleasePayload) {
		g.Expect(p.Status.Phase).To(Equal(v1alpha1.PhaseReady))
	})
	NewWithT(t).Expect(got.Annotations).NotTo(HaveKey(v1alpha1.AnnotationUpgradeSkipped))

	// The stream appears, with no accepted payload yet: the dependent stream is told at once
	// (not at its next retry), and the waiting upgrade is skipped, as one with no earlier
	// accepted release in its own stream is.
	newStream(t, ns, func(s *v1alpha1.ReleaseStream) {
		s.Name, s.Spec.TagPrefix, s.Spec.PayloadRepository = "stable", "4.14.0", repo(ns, "stable")
	}, "api")
	var stable v1alpha1.ReleasePayload
	NewWithT(t).Eventually(func(g Gomega) {
		for _, q := range payloads(g, ns) {
			if q.Spec.PayloadCoordinates.Stream == "stable" {
				stable = q
				return
			}
		}
		g.Expect(false).To(BeTrue(), "no payload of stable yet")
	}).WithTimeout(waitTimeout).Should(Succeed())
	waitPayload(t, ns, p.Name, func(g Gomega, p *v1alpha1.ReleasePayload) {
		g.Expect(p.Annotations).To(HaveKeyWithValue(v1alpha1.AnnotationUpgradeSkipped, "upgrade-minor"))
		g.Expect(p.Status.Phase).To(Equal(v1alpha1.PhaseAccepted))
	})
	waitStream(t, nightly, func(g Gomega, s *v1alpha1.ReleaseStream) {
		ready := meta.FindStatusCondition(s.Status.Conditions, v1alpha1.ConditionReady)
		g.Expect(ready).NotTo(BeNil())
		g.Expect(ready.Status).To(Equal(metav1.ConditionTrue))
	})

	// Once the stable stream has an accepted payload, the next nightly upgrades from it.
	stableImage := build(t, &stable)
	waitPayload(t, ns, stable.Name, func(g Gomega, p *v1alpha1.ReleasePayload) {
		g.Expect(p.Status.Phase).To(Equal(v1alpha1.PhaseAccepted))
	})
	pushImage(t, repo(ns, "api")+":latest", map[string]string{"build": "2"})
	var next v1alpha1.ReleasePayload
	NewWithT(t).Eventually(func(g Gomega) {
		for _, q := range payloads(g, ns) {
			if q.Spec.PayloadCoordinates.Stream == "nightly" && q.Name != p.Name {
				next = q
				return
			}
		}
		g.Expect(false).To(BeTrue(), "no second nightly payload yet")
	}).WithTimeout(waitTimeout).Should(Succeed())
	nextImage := build(t, &next)
	run := waitJob(t, ns, jobcontract.RunName(next.Name, "upgrade-minor", 1))
	NewWithT(t).Expect(envOf(run)).To(Equal(map[string]string{
		v1alpha1.EnvReleaseImageLatest: nextImage, v1alpha1.EnvReleaseTag: next.Name, v1alpha1.EnvReleaseStream: "nightly",
		v1alpha1.EnvReleaseImageInitial: stableImage,
	}))
}

// TestRefusedVerificationFailsItsRuns: a verification whose Job the API server refuses (an
// invalid template) fails each run with the API server's message, counted against its retries,
// and the payload reaches a verdict instead of waiting forever.
func TestRefusedVerificationFailsItsRuns(t *testing.T) {
	ns := env.Namespace(t)
	pushImage(t, repo(ns, "api")+":latest", nil)
	bad := jobVerification("e2e")
	bad.MaxRetries = 1
	bad.Job.Template.Spec.Template.Spec.Containers[0].Name = "Not_A_DNS_Label"
	newStream(t, ns, func(s *v1alpha1.ReleaseStream) {
		s.Spec.Verification = []v1alpha1.Verification{bad}
	}, "api")
	p := waitPayloads(t, ns, 1)[0]
	build(t, &p)
	got := waitPayload(t, ns, p.Name, func(g Gomega, p *v1alpha1.ReleasePayload) {
		g.Expect(p.Status.Phase).To(Equal(v1alpha1.PhaseRejected))
	})
	g := NewWithT(t)
	g.Expect(got.Status.Verifications).To(HaveLen(1))
	v := got.Status.Verifications[0]
	g.Expect(v.State).To(Equal(v1alpha1.JobFailure))
	g.Expect(v.Runs).To(HaveLen(2))
	for i, r := range v.Runs {
		g.Expect(r.Attempt).To(BeEquivalentTo(i + 1))
		g.Expect(r.State).To(Equal(v1alpha1.JobFailure))
		g.Expect(r.Message).To(And(ContainSubstring("the API server refused"), ContainSubstring("Not_A_DNS_Label")))
	}
	var jobs batchv1.JobList
	g.Expect(env.Client.List(context.Background(), &jobs, client.InNamespace(ns), client.MatchingLabels{v1alpha1.LabelJobType: v1alpha1.JobTypeVerification})).To(Succeed())
	g.Expect(jobs.Items).To(BeEmpty())
	g.Eventually(func(g Gomega) {
		g.Expect(eventsOf(g, ns, "ReleasePayload", p.Name)).To(ContainElements(v1alpha1.EventVerificationFailed, v1alpha1.EventRejected))
	}).WithTimeout(waitTimeout).Should(Succeed())
}
