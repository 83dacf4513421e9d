//go:build !unit

package stream_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/conditions"
	"github.com/release-controller/release-controller/internal/jobcontract"
	"github.com/release-controller/release-controller/internal/upgradegraph"
)

// TestHandMadeUpgradeGraph: a ConfigMap named like the stream's upgrade graph that the stream
// does not own is left alone; the stream says so in a condition and an Event, and retries with
// a growing backoff instead of every second. Once the ConfigMap is gone, the graph is recorded.
func TestHandMadeUpgradeGraph(t *testing.T) {
	ns := env.Namespace(t)
	ctx := context.Background()
	handMade := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: upgradegraph.ConfigMapName("nightly")},
		Data:       map[string]string{"notes": "mine"},
	}
	if err := env.Client.Create(ctx, handMade); err != nil {
		t.Fatal(err)
	}
	pushImage(t, repo(ns, "api")+":latest", nil)
	upgrade := jobVerification("upgrade")
	upgrade.UpgradeFrom = v1alpha1.UpgradeFromPrevious
	s := newStream(t, ns, func(s *v1alpha1.ReleaseStream) { s.Spec.Verification = []v1alpha1.Verification{upgrade} }, "api")

	// The first payload has nothing to upgrade from: accepted once built, nothing to record.
	first := waitPayloads(t, ns, 1)[0]
	build(t, &first)
	waitPayload(t, ns, first.Name, func(g Gomega, p *v1alpha1.ReleasePayload) { g.Expect(p.Status.Phase).To(Equal(v1alpha1.PhaseAccepted)) })
	// The second upgrades from the first: its result is to be recorded.
	pushImage(t, repo(ns, "api")+":latest", map[string]string{"build": "2"})
	second := waitPayloads(t, ns, 2)[0]
	build(t, &second)
	finish(t, waitJob(t, ns, jobcontract.RunName(second.Name, "upgrade", 1)), true)
	waitPayload(t, ns, second.Name, func(g Gomega, p *v1alpha1.ReleasePayload) { g.Expect(p.Status.Phase).To(Equal(v1alpha1.PhaseAccepted)) })

	waitStream(t, s, func(g Gomega, s *v1alpha1.ReleaseStream) {
		graph := meta.FindStatusCondition(s.Status.Conditions, v1alpha1.ConditionUpgradeGraphRecorded)
		g.Expect(graph).NotTo(BeNil())
		g.Expect(graph.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(graph.Reason).To(Equal(v1alpha1.ReasonUpgradeGraphNotOwned))
		g.Expect(graph.Message).To(ContainSubstring("exists without the label " + v1alpha1.LabelStream + "=nightly"))
		ready := meta.FindStatusCondition(s.Status.Conditions, v1alpha1.ConditionReady)
		g.Expect(ready.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(ready.Reason).To(Equal(v1alpha1.ReasonUpgradeGraphNotOwned))
	})
	NewWithT(t).Eventually(func(g Gomega) {
		g.Expect(eventsOf(g, ns, "ReleaseStream", "nightly")).To(ContainElement(v1alpha1.ReasonUpgradeGraphNotOwned))
	}).WithTimeout(waitTimeout).Should(Succeed())

	// Backoff: 100 ms after the first failure, doubling. Once five failures are counted
	// (about 1.5 s in), six seconds bring at most two or three more; the import interval
	// (500 ms here) or a one-second retry would bring a dozen.
	failures := func() float64 {
		return metricValue(t, "release_controller_stream_step_failures_total", map[string]string{"namespace": ns, "reason": v1alpha1.ReasonUpgradeGraphNotOwned})
	}
	NewWithT(t).Eventually(failures).WithTimeout(waitTimeout).Should(BeNumerically(">=", 5))
	before := failures()
	time.Sleep(6 * time.Second)
	if more := failures() - before; more > 3 {
		t.Errorf("%v more failed passes in 6 s after the fifth: the stream does not back off", more)
	}
	kept := &corev1.ConfigMap{}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(handMade), kept); err != nil || kept.Data["notes"] != "mine" || len(kept.Data) != 1 {
		t.Errorf("the hand-made ConfigMap was changed: %v, %v", kept.Data, err)
	}

	// Without it, the next retry records the graph.
	if err := env.Client.Delete(ctx, handMade); err != nil {
		t.Fatal(err)
	}
	waitStream(t, s, func(g Gomega, s *v1alpha1.ReleaseStream) {
		g.Expect(meta.IsStatusConditionTrue(s.Status.Conditions, v1alpha1.ConditionUpgradeGraphRecorded)).To(BeTrue())
		g.Expect(meta.IsStatusConditionTrue(s.Status.Conditions, v1alpha1.ConditionReady)).To(BeTrue())
		g.Expect(s.Status.ObservedGeneration).To(Equal(s.Generation))
	})
	graph := &corev1.ConfigMap{}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(handMade), graph); err != nil || graph.Labels[v1alpha1.LabelStream] != "nightly" || graph.Data[upgradegraph.Key] == "" {
		t.Errorf("upgrade graph %v %v: %v", graph.Labels, graph.Data, err)
	}
}

// TestThousandFailingComponents: a stream whose 1,000 components all fail to resolve gets a
// status the API server accepts (condition messages bounded; unbounded, the Imported message
// alone would pass the CRD's 32 KiB and freeze the status).
func TestThousandFailingComponents(t *testing.T) {
	ns := env.Namespace(t)
	names := make([]string, 1000)
	for i := range names {
		names[i] = fmt.Sprintf("component-%04d", i) // never pushed: each resolution fails
	}
	s := newStream(t, ns, nil, names...)
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), s) })
	waitStream(t, s, func(g Gomega, s *v1alpha1.ReleaseStream) {
		g.Expect(s.Status.Components).To(HaveLen(1000))
		for _, c := range s.Status.Components {
			g.Expect(c.Error).NotTo(BeEmpty(), "component %s", c.Name)
			g.Expect(len(c.Error)).To(BeNumerically("<=", conditions.MaxErrorLength))
		}
		imported := meta.FindStatusCondition(s.Status.Conditions, v1alpha1.ConditionImported)
		g.Expect(imported).NotTo(BeNil())
		g.Expect(imported.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(imported.Message).To(HavePrefix("1000 of 1000 components did not resolve"))
		g.Expect(imported.Message).To(HaveSuffix("more bytes]"))
		g.Expect(len(imported.Message)).To(BeNumerically("<=", conditions.MaxMessageLength))
		ready := meta.FindStatusCondition(s.Status.Conditions, v1alpha1.ConditionReady)
		g.Expect(ready).NotTo(BeNil())
		g.Expect(ready.Reason).To(Equal(v1alpha1.ReasonComponentsUnresolved))
	})
	NewWithT(t).Eventually(func(g Gomega) {
		g.Expect(eventsOf(g, ns, "ReleaseStream", "nightly")).To(ContainElement(v1alpha1.EventImportFailed))
	}).WithTimeout(waitTimeout).Should(Succeed())
}
