//go:build !unit

package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/jobcontract"
	"github.com/release-controller/release-controller/internal/releaseimage"
)

// inspect is a verification that really reads the payload: every component must carry its
// revision.
const inspect = `release-controller payload info -o json "$RELEASE_IMAGE_LATEST" > "$SCRATCH/$RELEASE_TAG.json" &&
grep -q '"revision": "r1' "$SCRATCH/$RELEASE_TAG.json" && echo "inspected $RELEASE_TAG"`

func TestComponentChangeIsBuiltVerifiedAcceptedAndPublished(t *testing.T) {
	ns := env.Namespace(t)
	publish(t, ns, "api", "r1-api", "amd64")
	publish(t, ns, "web", "r1-web", "amd64")
	newStream(t, ns, func(s *v1alpha1.ReleaseStream) { s.Spec.Verification = []v1alpha1.Verification{script("e2e", inspect)} })

	p := waitNewest(t, ns, 1, phase(v1alpha1.PhaseAccepted))
	info, err := releaseimage.Info(context.Background(), p.Status.PayloadImage)
	if err != nil {
		t.Fatal(err)
	}
	if info.Metadata.Version != p.Name || len(info.References.Components) != 2 || info.References.Components[0].Revision != "r1-api" {
		t.Errorf("payload image holds %+v", info)
	}
	NewWithT(t).Eventually(func() string { return digestOf(t, repo(ns, "release")+":latest") }).WithTimeout(waitTimeout).Should(Equal(p.Status.PayloadImage))
	if log := logOf(t, ns, jobcontract.RunName(p.Name, "e2e", 1)); !strings.Contains(log, "inspected "+p.Name) {
		t.Errorf("verification log: %s", log)
	}

	// The acceptance is in the release log of its day.
	NewWithT(t).Eventually(func(g Gomega) {
		var logs v1alpha1.ReleaseLogList
		g.Expect(env.Client.List(context.Background(), &logs, client.InNamespace(logNamespace))).To(Succeed())
		var versions []string
		for _, l := range logs.Items {
			for _, e := range l.Spec.Entries {
				if e.Type == "release" {
					versions = append(versions, e.Version)
				}
			}
		}
		g.Expect(versions).To(ContainElement(p.Name))
	}).WithTimeout(waitTimeout).Should(Succeed())

	// A new component build becomes the next accepted release, and the floating tag follows.
	publish(t, ns, "web", "r1-web-2", "amd64")
	second := waitNewest(t, ns, 2, phase(v1alpha1.PhaseAccepted))
	NewWithT(t).Eventually(func() string { return digestOf(t, repo(ns, "release")+":latest") }).WithTimeout(waitTimeout).Should(Equal(second.Status.PayloadImage))
}

func TestFailingBlockingJobRejects(t *testing.T) {
	ns := env.Namespace(t)
	publish(t, ns, "api", "r1", "amd64")
	publish(t, ns, "web", "r1", "amd64")
	newStream(t, ns, func(s *v1alpha1.ReleaseStream) {
		s.Spec.Verification = []v1alpha1.Verification{script("e2e", inspect), script("unit", `echo "3 tests failed"; exit 1`)}
	})
	p := waitNewest(t, ns, 1, phase(v1alpha1.PhaseRejected))
	if c := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ConditionPayloadRejected); c.Message != "blocking jobs failed: unit" {
		t.Errorf("rejected because %q", c.Message)
	}
}

func TestFlakyJobWithRetriesIsAccepted(t *testing.T) {
	ns := env.Namespace(t)
	publish(t, ns, "api", "r1", "amd64")
	publish(t, ns, "web", "r1", "amd64")
	flaky := script("flaky", `marker="$SCRATCH/flaky-$RELEASE_TAG"; if [ -e "$marker" ]; then echo passed; else touch "$marker"; echo "flaked"; exit 1; fi`)
	flaky.MaxRetries = 2
	newStream(t, ns, func(s *v1alpha1.ReleaseStream) { s.Spec.Verification = []v1alpha1.Verification{flaky} })
	p := waitNewest(t, ns, 1, phase(v1alpha1.PhaseAccepted))
	v := p.Status.Verifications[0]
	if len(v.Runs) != 2 || v.Runs[0].State != v1alpha1.JobFailure || v.Runs[1].State != v1alpha1.JobSuccess {
		t.Errorf("flaky runs: %+v", v.Runs)
	}
}

func TestBrokenComponentFailsCreation(t *testing.T) {
	ns := env.Namespace(t)
	publish(t, ns, "api", "r1", "amd64")
	publish(t, ns, "web", "r1", "arm64") // built for the wrong platform
	newStream(t, ns, func(s *v1alpha1.ReleaseStream) { s.Spec.Verification = []v1alpha1.Verification{script("e2e", inspect)} })
	p := waitNewest(t, ns, 1, phase(v1alpha1.PhaseFailed))
	// The job runner puts the build's last words in the Job's message, and so in the payload's.
	if c := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ConditionPayloadFailed); c.Reason != v1alpha1.ReasonCreationJobFailed || !strings.Contains(c.Message, "the components mix platforms") {
		t.Errorf("PayloadFailed: %+v", c)
	}
	if log := logOf(t, ns, jobcontract.CreationJobName(p.Name)); !strings.Contains(log, "the components mix platforms") {
		t.Errorf("creation job log does not say why: %s", log)
	}
	NewWithT(t).Consistently(func(g Gomega) { g.Expect(jobsOf(g, ns, p.Name)).To(HaveLen(1)) }).WithTimeout(2 * time.Second).Should(Succeed())
}

func TestUpgradeJobReceivesThePreviousAcceptedPayload(t *testing.T) {
	ns := env.Namespace(t)
	publish(t, ns, "api", "r1", "amd64")
	publish(t, ns, "web", "r1", "amd64")
	upgrade := script("upgrade", `from=$(release-controller payload info "$RELEASE_IMAGE_INITIAL" | awk '/^Tag:/ {print $2}') && echo "upgrade from $from ($RELEASE_IMAGE_INITIAL) to $RELEASE_TAG"`)
	upgrade.UpgradeFrom = v1alpha1.UpgradeFromPrevious
	newStream(t, ns, func(s *v1alpha1.ReleaseStream) { s.Spec.Verification = []v1alpha1.Verification{upgrade} })
	first := waitNewest(t, ns, 1, phase(v1alpha1.PhaseAccepted))
	if first.Annotations[v1alpha1.AnnotationUpgradeSkipped] != "upgrade" {
		t.Errorf("first payload's upgrade not recorded as skipped: %v", first.Annotations)
	}

	publish(t, ns, "api", "r2", "amd64")
	second := waitNewest(t, ns, 2, phase(v1alpha1.PhaseAccepted))
	run := second.Status.Verifications[0].Runs[0]
	if run.UpgradeFrom != first.Name {
		t.Errorf("upgrade ran from %q, want %q", run.UpgradeFrom, first.Name)
	}
	log := logOf(t, ns, run.Name)
	if !strings.Contains(log, "upgrade from "+first.Name+" ("+first.Status.PayloadImage+") to "+second.Name) {
		t.Errorf("upgrade log: %s", log)
	}
}

func TestUnreadyLimitHolds(t *testing.T) {
	ns := env.Namespace(t)
	publish(t, ns, "api", "r1", "amd64")
	publish(t, ns, "web", "r1", "amd64")
	gate := `while [ ! -e "$SCRATCH/open-$RELEASE_STREAM-` + ns + `" ]; do sleep 0.2; done; echo released`
	newStream(t, ns, func(s *v1alpha1.ReleaseStream) { s.Spec.Verification = []v1alpha1.Verification{script("gate", gate)} })
	waitNewest(t, ns, 1, phase(v1alpha1.PhaseReady))
	publish(t, ns, "api", "r2", "amd64")
	NewWithT(t).Consistently(func(g Gomega) { g.Expect(payloads(g, ns)).To(HaveLen(1)) }).WithTimeout(3 * time.Second).Should(Succeed())
	open(t, "open-nightly-"+ns)
	waitNewest(t, ns, 2, phase(v1alpha1.PhaseAccepted))
}

func TestRetention(t *testing.T) {
	ns := env.Namespace(t)
	publish(t, ns, "api", "r1", "amd64")
	publish(t, ns, "web", "r1", "amd64")
	newStream(t, ns, func(s *v1alpha1.ReleaseStream) {
		s.Spec.Verification = []v1alpha1.Verification{script("e2e", "echo ok")}
		s.Spec.Retention = v1alpha1.Retention{KeepAccepted: 1, DeleteImages: true, CompletedJobTTL: &metav1.Duration{Duration: time.Second}}
	})
	first := waitNewest(t, ns, 1, phase(v1alpha1.PhaseAccepted))
	// Keep the first forever.
	patch := client.MergeFrom(first.DeepCopy())
	metav1.SetMetaDataAnnotation(&first.ObjectMeta, v1alpha1.AnnotationKeep, "the first release")
	if err := env.Client.Patch(context.Background(), &first, patch); err != nil {
		t.Fatal(err)
	}
	publish(t, ns, "api", "r2", "amd64")
	second := waitNewest(t, ns, 2, phase(v1alpha1.PhaseAccepted))
	publish(t, ns, "api", "r3", "amd64")
	// The second is collected once the third is accepted: two payloads remain.
	third := waitNewest(t, ns, 2, func(g Gomega, p *v1alpha1.ReleasePayload) {
		g.Expect(p.Name).NotTo(Equal(second.Name))
		g.Expect(p.Status.Phase).To(Equal(v1alpha1.PhaseAccepted))
	})
	g := NewWithT(t)
	g.Eventually(func(g Gomega) {
		var names []string
		for _, p := range payloads(g, ns) {
			names = append(names, p.Name)
		}
		g.Expect(names).To(ConsistOf(third.Name, first.Name))
	}).WithTimeout(waitTimeout).Should(Succeed())
	g.Expect(digestOf(t, repo(ns, "release")+":"+second.Name)).To(BeEmpty(), "the collected payload's image is deleted")
	g.Expect(digestOf(t, repo(ns, "release")+":"+first.Name)).NotTo(BeEmpty(), "the kept payload's image stays")
	// Finished jobs go after their TTL once recorded; the payloads keep their results.
	g.Eventually(func(g Gomega) { g.Expect(jobsOf(g, ns, third.Name)).To(BeEmpty()) }).WithTimeout(waitTimeout).Should(Succeed())
	// The verdict does not go with the jobs.
	g.Consistently(func(g Gomega) {
		g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(&third), &third)).To(Succeed())
		g.Expect(third.Status.Phase).To(Equal(v1alpha1.PhaseAccepted))
		g.Expect(third.Status.ReleaseCreationJobResult.Status).To(Equal(v1alpha1.CreationJobSuccess))
		g.Expect(third.Status.Verifications[0].Runs[0].State).To(Equal(v1alpha1.JobSuccess))
	}).WithTimeout(3 * time.Second).Should(Succeed())
}

// TestRestartConverges stops the controllers and the job runner while a payload is being
// verified, starts them again, and sees the same result with no job launched twice.
func TestRestartConverges(t *testing.T) {
	ns := env.Namespace(t)
	publish(t, ns, "api", "r1", "amd64")
	publish(t, ns, "web", "r1", "amd64")
	gate := `while [ ! -e "$SCRATCH/restart-` + ns + `" ]; do sleep 0.2; done; echo done`
	retried := script("retried", `marker="$SCRATCH/retried-`+ns+`"; if [ -e "$marker" ]; then echo passed; else touch "$marker"; exit 1; fi`)
	retried.MaxRetries = 1
	newStream(t, ns, func(s *v1alpha1.ReleaseStream) {
		s.Spec.Verification = []v1alpha1.Verification{script("gate", gate), script("e2e", inspect), retried}
	})
	waitNewest(t, ns, 1, func(g Gomega, p *v1alpha1.ReleasePayload) {
		g.Expect(p.Status.Phase).To(Equal(v1alpha1.PhaseReady))
		g.Expect(p.Status.Verifications).To(HaveLen(3))
		g.Expect(p.Status.Verifications[0].Runs).To(HaveLen(1))
	})
	stopControllers()
	var err error
	if stopControllers, err = startControllers(); err != nil {
		t.Fatal(err)
	}
	open(t, "restart-"+ns)
	p := waitNewest(t, ns, 1, phase(v1alpha1.PhaseAccepted))
	NewWithT(t).Consistently(func(g Gomega) {
		jobs := jobsOf(g, ns, p.Name)
		names := map[string]bool{}
		for _, j := range jobs {
			g.Expect(names).NotTo(HaveKey(j.Name))
			names[j.Name] = true
		}
		// One build, one gate, one e2e and two attempts of the retried job.
		g.Expect(jobs).To(HaveLen(5))
	}).WithTimeout(2 * time.Second).Should(Succeed())
}

// open creates a file the gate scripts wait for.
func open(t testing.TB, name string) {
	t.Helper()
	if err := writeFile(name); err != nil {
		t.Fatal(err)
	}
}

// TestAVerdictWrittenByHandIsCorrected: someone edits a payload's status to say Accepted while
// its blocking verification still runs. Nothing acts on it (no floating tag, no release-log
// entry); the payload controller writes back Ready with a VerdictCorrected Event; the real
// acceptance later is published and logged once.
func TestAVerdictWrittenByHandIsCorrected(t *testing.T) {
	ctx := context.Background()
	ns := env.Namespace(t)
	publish(t, ns, "api", "r1", "amd64")
	publish(t, ns, "web", "r1", "amd64")
	gate := `while [ ! -e "$SCRATCH/forged-` + ns + `" ]; do sleep 0.2; done; echo done`
	newStream(t, ns, func(s *v1alpha1.ReleaseStream) { s.Spec.Verification = []v1alpha1.Verification{script("gate", gate)} })
	p := waitNewest(t, ns, 1, func(g Gomega, p *v1alpha1.ReleasePayload) {
		g.Expect(p.Status.Phase).To(Equal(v1alpha1.PhaseReady))
		g.Expect(p.Status.PayloadImage).NotTo(BeEmpty())
		g.Expect(p.Status.Verifications).To(HaveLen(1))
		g.Expect(p.Status.Verifications[0].Runs).To(HaveLen(1))
	})

	NewWithT(t).Eventually(func() error {
		var current v1alpha1.ReleasePayload
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(&p), &current); err != nil {
			return err
		}
		current.Status.Phase = v1alpha1.PhaseAccepted
		meta.SetStatusCondition(&current.Status.Conditions, metav1.Condition{Type: v1alpha1.ConditionPayloadAccepted,
			Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonBlockingJobsSucceeded, Message: "trust me"})
		return env.Client.Status().Update(ctx, &current)
	}).WithTimeout(waitTimeout).Should(Succeed())

	NewWithT(t).Eventually(func(g Gomega) {
		var list eventsv1.EventList
		g.Expect(env.Client.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
		var notes []string
		for _, e := range list.Items {
			if e.Reason == v1alpha1.EventVerdictCorrected && e.Regarding.Name == p.Name {
				notes = append(notes, e.Note)
			}
		}
		g.Expect(notes).To(ContainElement(ContainSubstring("the status said Accepted")))
	}).WithTimeout(waitTimeout).WithPolling(200 * time.Millisecond).Should(Succeed())
	corrected := waitNewest(t, ns, 1, phase(v1alpha1.PhaseReady))
	if c := meta.FindStatusCondition(corrected.Status.Conditions, v1alpha1.ConditionPayloadAccepted); c == nil || c.Status != metav1.ConditionFalse {
		t.Errorf("PayloadAccepted after the correction: %+v", c)
	}
	if got := digestOf(t, repo(ns, "release")+":latest"); got != "" {
		t.Errorf("the forged verdict was published: latest is %s", got)
	}
	if n := releaseEntries(t, p.Name); n != 0 {
		t.Errorf("the forged verdict is in the release log %d times", n)
	}

	open(t, "forged-"+ns)
	accepted := waitNewest(t, ns, 1, phase(v1alpha1.PhaseAccepted))
	NewWithT(t).Eventually(func() string { return digestOf(t, repo(ns, "release")+":latest") }).WithTimeout(waitTimeout).Should(Equal(accepted.Status.PayloadImage))
	NewWithT(t).Eventually(func() int { return releaseEntries(t, p.Name) }).WithTimeout(waitTimeout).Should(Equal(1))
}

// releaseEntries counts the release-log entries of version.
func releaseEntries(t testing.TB, version string) int {
	t.Helper()
	var logs v1alpha1.ReleaseLogList
	if err := env.Client.List(context.Background(), &logs, client.InNamespace(logNamespace)); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, l := range logs.Items {
		for _, e := range l.Spec.Entries {
			if e.Version == version {
				n++
			}
		}
	}
	return n
}
