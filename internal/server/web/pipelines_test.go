package web_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/server/catalog"
	"github.com/release-controller/release-controller/internal/server/web"
)

// webPipeline promotes the Deployment web through dev, staging (two targets, one on the
// cluster of the Secret leaf) and prod, which waits for the approval of revision.
func webPipeline(namespace, name, revision string) *v1alpha1.Pipeline {
	promoted := metav1.NewTime(at("2026-11-22T15:00:00Z"))
	since := metav1.NewTime(at("2026-11-22T15:30:00Z"))
	approval := &v1alpha1.Approval{SecretRef: &v1alpha1.SecretKeyReference{Name: "prod-key"}}
	return &v1alpha1.Pipeline{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Generation: 1},
		Spec: v1alpha1.PipelineSpec{
			AppRef: v1alpha1.AppReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", Container: "web"},
			Source: &v1alpha1.PipelineSource{ReleaseStream: "nightly"},
			Environments: []v1alpha1.Environment{
				{Name: "dev", Targets: []v1alpha1.Target{{Namespace: "web-dev"}}},
				{Name: "staging", Targets: []v1alpha1.Target{{Namespace: "web-staging"}, {Namespace: "web-staging", ClusterRef: "leaf"}}},
				{Name: "prod", Targets: []v1alpha1.Target{{Namespace: "web-prod", ClusterRef: "leaf"}}, Approval: approval},
			},
		},
		Status: v1alpha1.PipelineStatus{
			ObservedGeneration: 1,
			Conditions: []metav1.Condition{
				{Type: v1alpha1.ConditionPipelineReady, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonTargetsObserved, LastTransitionTime: promoted},
				{Type: v1alpha1.ConditionPromotionFailed, Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonPromotionSucceeded, LastTransitionTime: promoted},
			},
			Environments: []v1alpha1.EnvironmentStatus{
				{Name: "dev", Revision: revision, Ready: true, Targets: []v1alpha1.TargetStatus{{Namespace: "web-dev", Revision: revision, Ready: true}},
					LastPromotion: &v1alpha1.PromotionRecord{ID: "dev-" + revision, Revision: revision, Strategy: "patch", Time: promoted}},
				{Name: "staging", Revision: revision, Ready: true, Targets: []v1alpha1.TargetStatus{
					{Namespace: "web-staging", Revision: revision, Ready: true}, {Namespace: "web-staging", ClusterRef: "leaf", Revision: revision, Ready: true}},
					LastPromotion: &v1alpha1.PromotionRecord{ID: "staging-" + revision, Revision: revision, Strategy: "patch", Time: since}},
				{Name: "prod", Targets: []v1alpha1.TargetStatus{{Namespace: "web-prod", ClusterRef: "leaf", Revision: "1.0.0", Message: "0 of 1 replicas updated"}},
					WaitingApproval: &v1alpha1.WaitingApproval{Revision: revision, Since: since}},
			},
		},
	}
}

func httpGet(t *testing.T, method, url string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
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

func TestPipelinePages(t *testing.T) {
	cat := catalog.New()
	base := startPages(t, cat, web.PageOptions{})
	if code, body := httpGet(t, http.MethodGet, base+"/pipelines"); code != http.StatusOK || !strings.Contains(body, web.EmptyPipelines) {
		t.Fatalf("empty /pipelines: %d\n%s", code, body)
	}
	// A revision a shell would misread is quoted in the command; markup is escaped.
	cat.SetPipeline(webPipeline("apps", "web", "1.2.0 <b>$(x)'"))
	code, body := httpGet(t, http.MethodGet, base+"/pipelines/apps/web")
	if code != http.StatusOK {
		t.Fatalf("GET /pipelines/apps/web: %d\n%s", code, body)
	}
	if want := `release-controller pipeline approve --server ` + base + ` apps/web prod &#39;1.2.0 &lt;b&gt;$(x)&#39;\&#39;&#39;&#39;`; !strings.Contains(body, want) {
		t.Errorf("the page lacks the approve command %s:\n%s", want, body)
	}
	if strings.Contains(body, "<b>$") {
		t.Error("the revision is not escaped")
	}
	if got := web.ApproveCommand("https://rc.example.com", "apps", "web", "prod", "v1.2.0+build.1"); got != "release-controller pipeline approve --server https://rc.example.com apps/web prod v1.2.0+build.1" {
		t.Errorf("ApproveCommand = %q", got)
	}
	for path, want := range map[string]int{
		"/pipelines/apps/nope": http.StatusNotFound, "/pipelines/team/web": http.StatusNotFound,
		"/pages/events?view=pipeline&namespace=apps&name=nope": http.StatusNotFound,
	} {
		if code, _ := httpGet(t, http.MethodGet, base+path); code != want {
			t.Errorf("GET %s: %d, want %d", path, code, want)
		}
	}
	for _, method := range []string{http.MethodPost, http.MethodPut, http.MethodDelete} {
		for _, path := range []string{"/pipelines", "/pipelines/apps/web"} {
			if code, _ := httpGet(t, method, base+path); code != http.StatusMethodNotAllowed {
				t.Errorf("%s %s: %d, want 405", method, path, code)
			}
		}
	}
}
