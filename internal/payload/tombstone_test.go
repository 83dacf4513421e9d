//go:build !unit

package payload_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/release-controller/release-controller/api/v1alpha1"
)

// TestTombstoneAnnotationSetsTheCondition annotates an accepted payload as a release engineer
// does: PayloadTombstoned turns True with the annotation's reason, keeps its transition time
// while the payload is reconciled again (a new reason, a run that ends), and goes once the
// annotation does.
func TestTombstoneAnnotationSetsTheCondition(t *testing.T) {
	ns := env.Namespace(t)
	accepted(t, ns, tag)

	annotate(t, ns, tag, ptr.To("breaks etcd on upgrade"))
	p := waitFor(t, ns, tag, func(g Gomega, p *v1alpha1.ReleasePayload) {
		c := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ConditionPayloadTombstoned)
		g.Expect(c).NotTo(BeNil(), "conditions: %+v", p.Status.Conditions)
		g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
		g.Expect(c.Reason).To(Equal(v1alpha1.ReasonTombstoned))
		g.Expect(c.Message).To(Equal("breaks etcd on upgrade"))
	})
	since := condition(p, v1alpha1.ConditionPayloadTombstoned).LastTransitionTime
	// The payload is otherwise as it was: still Accepted.
	phaseIs(v1alpha1.PhaseAccepted)(NewWithT(t), p)

	// Reconciled again (a new reason, then another run's job ending): the tombstone's
	// transition time is when it was first tombstoned. Condition times have a second's
	// precision: wait for the next second first, so a moved time would show.
	time.Sleep(time.Until(since.Add(time.Second)))
	annotate(t, ns, tag, ptr.To("breaks etcd and DNS on upgrade"))
	waitFor(t, ns, tag, func(g Gomega, p *v1alpha1.ReleasePayload) {
		c := condition(p, v1alpha1.ConditionPayloadTombstoned)
		g.Expect(c.Message).To(Equal("breaks etcd and DNS on upgrade"))
		g.Expect(c.LastTransitionTime.Equal(&since)).To(BeTrue(), "transition %s, first tombstoned %s", c.LastTransitionTime, since)
	})
	createRun(t, ns, tag, "e2e", 2)
	waitFor(t, ns, tag, func(g Gomega, p *v1alpha1.ReleasePayload) {
		g.Expect(verification(p, "e2e").Runs).To(HaveLen(2))
		c := condition(p, v1alpha1.ConditionPayloadTombstoned)
		g.Expect(c.LastTransitionTime.Equal(&since)).To(BeTrue(), "transition %s, first tombstoned %s", c.LastTransitionTime, since)
	})

	annotate(t, ns, tag, nil)
	waitFor(t, ns, tag, func(g Gomega, p *v1alpha1.ReleasePayload) {
		g.Expect(meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ConditionPayloadTombstoned)).To(BeNil())
	})
}

// annotate sets the payload's tombstone annotation to reason, or removes it (nil), with a
// merge patch as kubectl annotate does.
func annotate(t testing.TB, ns, name string, reason *string) {
	t.Helper()
	value := "null"
	if reason != nil {
		value = fmt.Sprintf("%q", *reason)
	}
	patch := fmt.Appendf(nil, `{"metadata":{"annotations":{%q:%s}}}`, v1alpha1.AnnotationTombstone, value)
	p := &v1alpha1.ReleasePayload{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	if err := env.Client.Patch(context.Background(), p, client.RawPatch(types.MergePatchType, patch)); err != nil {
		t.Fatalf("annotating payload %s: %v", name, err)
	}
}
