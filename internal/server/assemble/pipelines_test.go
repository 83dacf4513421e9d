//go:build !unit

package assemble_test

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/server/assemble"
	"github.com/release-controller/release-controller/internal/server/web"
)

// The pipeline pages of the api's server read the Pipelines the manager's informers cache:
// created in the API server, they are listed and shown, a status change reaches an open
// page over its event stream, an unknown pipeline is 404 and other methods 405.
func TestPipelinePagesFromTheCache(t *testing.T) {
	g := NewWithT(t)
	addr := startServer(t, assemble.Options{})
	base := "http://" + addr
	ns := env.Namespace(t)
	ctx := context.Background()

	pl := &v1alpha1.Pipeline{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
		Spec: v1alpha1.PipelineSpec{
			AppRef: v1alpha1.AppReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", Container: "web"},
			Environments: []v1alpha1.Environment{
				{Name: "dev", Targets: []v1alpha1.Target{{Namespace: "web-dev"}}},
				{Name: "prod", Targets: []v1alpha1.Target{{Namespace: "web-prod", ClusterRef: "leaf"}},
					Approval: &v1alpha1.Approval{SecretRef: &v1alpha1.SecretKeyReference{Name: "prod-key"}}},
			},
		},
	}
	g.Expect(env.Client.Create(ctx, pl)).To(Succeed())
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), pl) })
	now := metav1.NewTime(time.Now().Truncate(time.Second))
	pl.Status = v1alpha1.PipelineStatus{
		ObservedGeneration: pl.Generation,
		Conditions: []metav1.Condition{{Type: v1alpha1.ConditionPipelineReady, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonTargetsObserved,
			Message: "every target is observed", LastTransitionTime: now}},
		Environments: []v1alpha1.EnvironmentStatus{
			{Name: "dev", Revision: "1.2.0", Ready: true, Targets: []v1alpha1.TargetStatus{{Namespace: "web-dev", Revision: "1.2.0", Ready: true}},
				LastPromotion: &v1alpha1.PromotionRecord{ID: "p-dev-1.2.0", Revision: "1.2.0", Strategy: v1alpha1.StrategyPatch, Time: now}},
			{Name: "prod", Revision: "1.1.0", Ready: true, Targets: []v1alpha1.TargetStatus{{Namespace: "web-prod", ClusterRef: "leaf", Revision: "1.1.0", Ready: true}},
				WaitingApproval: &v1alpha1.WaitingApproval{Revision: "1.2.0", Since: now}},
		},
	}
	g.Expect(env.Client.Status().Update(ctx, pl)).To(Succeed())

	get := func(method, path string) (int, string) {
		req, err := http.NewRequest(method, base+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	command := web.ApproveCommand(base, ns, "web", "prod", "1.2.0")
	g.Eventually(func(g Gomega) {
		code, body := get(http.MethodGet, "/pipelines/"+ns+"/web")
		g.Expect(code).To(Equal(http.StatusOK))
		g.Expect(body).To(ContainSubstring(command))
	}).WithTimeout(20 * time.Second).Should(Succeed())
	code, body := get(http.MethodGet, "/pipelines/"+ns+"/web")
	g.Expect(code).To(Equal(http.StatusOK))
	for _, want := range []string{"web-dev", "web-prod", "leaf", web.LocalCluster, "1.1.0", "p-dev-1.2.0", "TargetsObserved", "every target is observed", "Waiting for approval"} {
		g.Expect(body).To(ContainSubstring(want))
	}
	g.Expect(strings.Index(body, `data-env="dev"`)).To(BeNumerically("<", strings.Index(body, `data-env="prod"`)), "dev comes before prod")

	code, body = get(http.MethodGet, "/pipelines")
	g.Expect(code).To(Equal(http.StatusOK))
	g.Expect(body).To(ContainSubstring(`href="/pipelines/` + ns + `/web"`))
	g.Expect(body).To(ContainSubstring(`<a href="/pipelines">Pipelines</a>`))

	// The same pipeline as JSON, from the same cache.
	code, body = get(http.MethodGet, "/api/v1/namespaces/"+ns+"/pipelines/web")
	g.Expect(code).To(Equal(http.StatusOK))
	g.Expect(body).To(ContainSubstring(`"rejectCommand": "release-controller pipeline reject ` + ns + `/web prod 1.2.0 --reason REASON"`))
	g.Expect(body).To(ContainSubstring(`"clusterRef": "leaf"`))

	code, body = get(http.MethodGet, "/pipelines/"+ns+"/nope")
	g.Expect(code).To(Equal(http.StatusNotFound))
	g.Expect(body).To(ContainSubstring("There is no pipeline “nope”"))
	for _, path := range []string{"/pipelines", "/pipelines/" + ns + "/web"} {
		code, _ = get(http.MethodPost, path)
		g.Expect(code).To(Equal(http.StatusMethodNotAllowed), "POST %s", path)
	}
	code, _ = get(http.MethodGet, "/pages/events?view=pipeline&namespace="+ns+"&name=nope")
	g.Expect(code).To(Equal(http.StatusNotFound))

	// Live: the page's event stream sends the state at once, then again when prod is
	// promoted, without the approval.
	ectx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ectx, http.MethodGet, base+"/pages/events?view=pipeline&namespace="+ns+"&name=web", nil)
	resp, err := http.DefaultClient.Do(req)
	g.Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	g.Expect(resp.StatusCode).To(Equal(http.StatusOK))
	events := bufio.NewReader(resp.Body)
	next := func() string {
		for {
			line, err := events.ReadString('\n')
			if err != nil {
				t.Fatalf("reading events: %v", err)
			}
			if data, ok := strings.CutPrefix(line, "data: "); ok {
				return data
			}
		}
	}
	g.Expect(next()).To(ContainSubstring("approve-1"))

	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(pl), pl)).To(Succeed())
	pl.Status.Environments[1].Revision = "1.2.0"
	pl.Status.Environments[1].Targets[0].Revision = "1.2.0"
	pl.Status.Environments[1].WaitingApproval = nil
	pl.Status.Environments[1].LastPromotion = &v1alpha1.PromotionRecord{ID: "p-prod-1.2.0", Revision: "1.2.0", Strategy: v1alpha1.StrategyPatch, Time: now, Approver: "alice"}
	g.Expect(env.Client.Status().Update(ctx, pl)).To(Succeed())
	update := next()
	g.Expect(update).To(ContainSubstring("p-prod-1.2.0"))
	g.Expect(update).To(ContainSubstring("alice"))
	g.Expect(update).NotTo(ContainSubstring("approve-1"))
}
