//go:build !unit

package pipeline_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/release-controller/release-controller/api/v1alpha1"
)

// twoEnvs creates a pipeline dev → staging of Deployment web, both on the management cluster,
// each at revision 1.
func twoEnvs(t *testing.T) (key types.NamespacedName, devNS, stagingNS string) {
	t.Helper()
	devNS, stagingNS = ns(t, mgmt.Client), ns(t, mgmt.Client)
	deploy(t, mgmt.Client, devNS, "web", "1")
	deploy(t, mgmt.Client, stagingNS, "web", "1")
	p := &v1alpha1.Pipeline{
		ObjectMeta: metav1.ObjectMeta{Namespace: devNS, Name: "web"},
		Spec: v1alpha1.PipelineSpec{
			AppRef: v1alpha1.AppReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", Container: "web"},
			Environments: []v1alpha1.Environment{
				{Name: "dev", Targets: []v1alpha1.Target{{Namespace: devNS}}},
				{Name: "staging", Targets: []v1alpha1.Target{{Namespace: stagingNS}}},
			},
		},
	}
	if err := mgmt.Client.Create(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	return client.ObjectKeyFromObject(p), devNS, stagingNS
}

// edit changes the pipeline with change, retried on conflicts.
func edit(t *testing.T, key types.NamespacedName, change func(*v1alpha1.Pipeline)) {
	t.Helper()
	NewWithT(t).Eventually(func() error {
		var p v1alpha1.Pipeline
		if err := mgmt.Client.Get(context.Background(), key, &p); err != nil {
			return err
		}
		change(&p)
		return mgmt.Client.Update(context.Background(), &p)
	}).WithTimeout(waitTimeout).Should(Succeed())
}

// requestReconcile sets the reconcile-requested-at annotation to value and waits until the
// status says it was handled.
func requestReconcile(t *testing.T, key types.NamespacedName, value string) *v1alpha1.Pipeline {
	t.Helper()
	edit(t, key, func(p *v1alpha1.Pipeline) {
		if p.Annotations == nil {
			p.Annotations = map[string]string{}
		}
		p.Annotations[v1alpha1.AnnotationReconcileRequestedAt] = value
	})
	return waitPipeline(t, key, "reconcile request "+value+" handled", func(p *v1alpha1.Pipeline) bool {
		return p.Status.LastHandledReconcileAt == value
	})
}

func conditionReason(p *v1alpha1.Pipeline, typ string) string {
	if c := meta.FindStatusCondition(p.Status.Conditions, typ); c != nil {
		return string(c.Status) + "/" + c.Reason
	}
	return ""
}

// TestSuspend: while spec.suspend is set nothing is promoted, the status still shows what the
// targets run, PromotionFailed says Suspended, and a reconcile request is answered; cleared,
// what is due is promoted.
func TestSuspend(t *testing.T) {
	g := NewWithT(t)
	startController(t, ns(t, mgmt.Client))
	key, devNS, stagingNS := twoEnvs(t)
	waitPipeline(t, key, "all at 1", func(p *v1alpha1.Pipeline) bool { return slices.Equal(revisions(p), []string{"1", "1"}) })

	edit(t, key, func(p *v1alpha1.Pipeline) { p.Spec.Suspend = true })
	waitPipeline(t, key, "suspended", func(p *v1alpha1.Pipeline) bool {
		return conditionReason(p, v1alpha1.ConditionPromotionFailed) == "False/Suspended"
	})
	setImage(t, mgmt.Client, devNS, "web", "2")
	rollOut(t, mgmt.Client, devNS, "web")
	// The reconcile that shows dev ready at 2 is the one that would have promoted staging.
	got := waitPipeline(t, key, "dev observed at 2", func(p *v1alpha1.Pipeline) bool { return slices.Equal(revisions(p), []string{"2", "1"}) })
	g.Expect(envStatus(got, "staging").LastPromotion).To(BeNil())
	got = requestReconcile(t, key, "while-suspended")
	g.Expect(envStatus(got, "staging").LastPromotion).To(BeNil())
	g.Expect(conditionReason(got, v1alpha1.ConditionReconciling)).To(BeEmpty())
	waitImage(t, mgmt.Client, stagingNS, "web", "1")

	edit(t, key, func(p *v1alpha1.Pipeline) { p.Spec.Suspend = false })
	waitImage(t, mgmt.Client, stagingNS, "web", "2")
	got = waitPipeline(t, key, "staging promoted, rolling out", func(p *v1alpha1.Pipeline) bool {
		lp := envStatus(p, "staging").LastPromotion
		return lp != nil && lp.Revision == "2" && conditionReason(p, v1alpha1.ConditionReconciling) == "True/Progressing"
	})
	g.Expect(conditionReason(got, v1alpha1.ConditionPromotionFailed)).To(Equal("False/PromotionSucceeded"))
	rollOut(t, mgmt.Client, stagingNS, "web")
	waitPipeline(t, key, "rolled out", func(p *v1alpha1.Pipeline) bool {
		return slices.Equal(revisions(p), []string{"2", "2"}) && conditionReason(p, v1alpha1.ConditionReconciling) == ""
	})
}

// TestFailover: a leader promotes staging and goes away while the rollout is under way; a new
// leader against the same API server neither patches the target again nor logs the promotion
// again, keeps the record, and carries the rollout on to its end. What it needs is in the
// status (environments[].lastPromotion); nothing is rebuilt from the old leader's memory.
func TestFailover(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	logNS := ns(t, mgmt.Client)
	_, stopFirst := startStoppable(t, logNS)
	key, devNS, stagingNS := twoEnvs(t)
	waitPipeline(t, key, "all at 1", func(p *v1alpha1.Pipeline) bool { return slices.Equal(revisions(p), []string{"1", "1"}) })

	setImage(t, mgmt.Client, devNS, "web", "2")
	rollOut(t, mgmt.Client, devNS, "web")
	staged := waitImage(t, mgmt.Client, stagingNS, "web", "2")
	first := waitPipeline(t, key, "staging promoted, rolling out", func(p *v1alpha1.Pipeline) bool {
		lp := envStatus(p, "staging").LastPromotion
		return lp != nil && lp.Revision == "2" && conditionReason(p, v1alpha1.ConditionReconciling) == "True/Progressing"
	})
	stopFirst()

	startController(t, logNS)
	// The new leader answers a request, and once its informer has synced it sees the
	// rollout where the old one left it.
	requestReconcile(t, key, "after-failover")
	second := waitPipeline(t, key, "the new leader sees the rollout", func(p *v1alpha1.Pipeline) bool {
		return slices.Equal(revisions(p), []string{"2", "2(not ready)"}) && conditionReason(p, v1alpha1.ConditionReconciling) == "True/Progressing"
	})
	now := waitImage(t, mgmt.Client, stagingNS, "web", "2")
	g.Expect(now.ResourceVersion).To(Equal(staged.ResourceVersion), "the target was written again")
	g.Expect(envStatus(second, "staging").LastPromotion).To(Equal(envStatus(first, "staging").LastPromotion))

	rollOut(t, mgmt.Client, stagingNS, "web")
	done := waitPipeline(t, key, "rolled out", func(p *v1alpha1.Pipeline) bool {
		return slices.Equal(revisions(p), []string{"2", "2"}) && conditionReason(p, v1alpha1.ConditionReconciling) == ""
	})
	g.Expect(envStatus(done, "staging").LastPromotion).To(Equal(envStatus(first, "staging").LastPromotion))
	var logs v1alpha1.ReleaseLogList
	g.Expect(mgmt.Client.List(ctx, &logs, client.InNamespace(logNS))).To(Succeed())
	var promotions []string
	for _, l := range logs.Items {
		for _, e := range l.Spec.Entries {
			if strings.HasPrefix(e.ID, string(done.UID)+"/") {
				promotions = append(promotions, e.ID)
			}
		}
	}
	g.Expect(promotions).To(Equal([]string{string(done.UID) + "/staging/2"}))
}
