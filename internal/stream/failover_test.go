//go:build !unit

package stream_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/manager"
	"github.com/release-controller/release-controller/internal/testenv"
)

// TestFailoverKeepsImportTimes: a replica that becomes leader resumes the import schedule of
// the one before it (rebuilt from status.components[].lastChanged), neither resolving the components again
// at once nor losing what was found. Two managers with leader election run in turn against an
// API server of the test's own (the suite's manager, without leader election, would reconcile
// the stream too). The import interval is an hour, so any import by the second leader is an
// early one; the component's tag moves to a new image while no leader runs, so such an import
// would show as a new digest in the status and a second payload.
func TestFailoverKeepsImportTimes(t *testing.T) {
	fenv, err := testenv.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = fenv.Stop() })
	ctx := context.Background()
	ns := fenv.Namespace(t)
	opts := manager.Options{
		MetricsAddr: "0", ProbeAddr: "0",
		LeaderElection: true, LeaderElectionNamespace: ns,
		ImportInterval:               time.Hour,
		BuildImage:                   "release-controller:test",
		SkipControllerNameValidation: true,
	}
	first := pushImage(t, repo(ns, "api")+":latest", nil)
	s := &v1alpha1.ReleaseStream{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "nightly"},
		Spec: v1alpha1.ReleaseStreamSpec{TagPrefix: "4.15.0-0.nightly", PayloadRepository: repo(ns, "release"), MaxUnreadyReleases: 1,
			Components: []v1alpha1.ComponentSource{{Name: "api", Image: repo(ns, "api") + ":latest"}}},
	}
	if err := fenv.Client.Create(ctx, s); err != nil {
		t.Fatal(err)
	}
	get := func(g Gomega) *v1alpha1.ReleaseStream {
		var got v1alpha1.ReleaseStream
		g.Expect(fenv.Client.Get(ctx, client.ObjectKeyFromObject(s), &got)).To(Succeed())
		return &got
	}
	payloadNames := func(g Gomega) []string {
		var list v1alpha1.ReleasePayloadList
		g.Expect(fenv.Client.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
		var names []string
		for _, p := range list.Items {
			names = append(names, p.Name)
		}
		return names
	}

	stopFirst, err := fenv.StartControllers(opts)
	if err != nil {
		t.Fatal(err)
	}
	var imported v1alpha1.ComponentStatus
	var created []string
	// A pass that succeeded moves observedGeneration to the spec's generation, which tells a new
	// leader the spec's components were imported; a failed one (a step that failed under load)
	// leaves it, and the new leader would rightly import again.
	NewWithT(t).Eventually(func(g Gomega) {
		got := get(g)
		g.Expect(got.Status.ObservedGeneration).To(Equal(got.Generation))
		g.Expect(got.Status.Components).To(HaveLen(1))
		g.Expect(got.Status.Components[0].Image).To(Equal(first))
		g.Expect(got.Status.Components[0].LastChanged).NotTo(BeNil())
		g.Expect(payloadNames(g)).To(HaveLen(1))
	}).WithTimeout(waitTimeout).Should(Succeed())
	stopFirst()
	// What the first leader left is what the second finds.
	imported = get(NewWithT(t)).Status.Components[0]
	created = payloadNames(NewWithT(t))

	pushImage(t, repo(ns, "api")+":latest", nil) // an import now would find this one
	stopSecond, err := fenv.StartControllers(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stopSecond)
	// A reconcile asked of whoever leads: once it is handled, the second manager leads and has
	// run a pass (at least two: its first and this one).
	requested := get(NewWithT(t))
	patch := client.MergeFrom(requested.DeepCopy())
	metav1.SetMetaDataAnnotation(&requested.ObjectMeta, v1alpha1.AnnotationReconcileRequestedAt, "after-failover")
	if err := fenv.Client.Patch(ctx, requested, patch); err != nil {
		t.Fatal(err)
	}
	NewWithT(t).Eventually(func(g Gomega) {
		g.Expect(get(g).Status.LastHandledReconcileAt).To(Equal("after-failover"))
	}).WithTimeout(waitTimeout).Should(Succeed())

	after := get(NewWithT(t)).Status.Components
	g := NewWithT(t)
	g.Expect(after).To(HaveLen(1))
	g.Expect(after[0].Image).To(Equal(first), "the new leader resolved the component again before its interval")
	g.Expect(after[0].LastChanged.Equal(imported.LastChanged)).To(BeTrue(), "lastChanged moved from %s to %s", imported.LastChanged, after[0].LastChanged)
	g.Expect(payloadNames(g)).To(Equal(created), "the new leader created a payload")
}
