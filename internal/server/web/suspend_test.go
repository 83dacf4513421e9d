package web_test

import (
	"net/http"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/server/catalog"
	"github.com/release-controller/release-controller/internal/server/web"
)

// A suspended or stalled stream or pipeline says so on its page; Reconciling is progress, not
// a warning.
func TestSuspendedAndStalledOnPages(t *testing.T) {
	cat := catalog.New()
	stream := newReleaseStream("demo", "paused", "4.17.0-0.paused", 1)
	stream.Spec.Suspend = true
	stream.Status.Conditions = []metav1.Condition{
		cond(v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonUpToDate, "the newest payload has the current components", "2026-11-22T15:00:00Z"),
		cond(v1alpha1.ConditionReconciling, metav1.ConditionTrue, v1alpha1.ReasonProgressing, "building 4.17.0-0.paused-1", "2026-11-22T15:00:00Z"),
	}
	cat.SetStream(stream)
	stalled := newReleaseStream("demo", "stuck", "4.17.0-0.stuck", 1)
	stalled.Status.Conditions = []metav1.Condition{
		cond(v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonVerificationNameClash, "e2e twice", "2026-11-22T15:00:00Z"),
		cond(v1alpha1.ConditionStalled, metav1.ConditionTrue, v1alpha1.ReasonVerificationNameClash, "e2e twice", "2026-11-22T15:00:00Z"),
	}
	cat.SetStream(stalled)
	suspendedPipeline := webPipeline("apps", "web", "1.2.0")
	suspendedPipeline.Spec.Suspend = true
	cat.SetPipeline(suspendedPipeline)
	stalledPipeline := webPipeline("apps", "api", "1.2.0")
	stalledPipeline.Status.Conditions = append(stalledPipeline.Status.Conditions,
		metav1.Condition{Type: v1alpha1.ConditionStalled, Status: metav1.ConditionTrue, Reason: "InvalidApp", Message: "appRef.kind CronJob is not promoted"})
	cat.SetPipeline(stalledPipeline)
	base := startPages(t, cat, web.PageOptions{})

	_, body := httpGet(t, http.MethodGet, base+"/namespaces/demo/releasestream/paused")
	if !strings.Contains(body, web.SuspendedStream) {
		t.Errorf("the suspended stream's page does not say so:\n%s", body)
	}
	if strings.Contains(body, "Reconciling: ") {
		t.Error("the stream's page shows Reconciling as a warning")
	}
	_, body = httpGet(t, http.MethodGet, base+"/namespaces/demo/releasestream/stuck")
	if !strings.Contains(body, "Stalled: VerificationNameClash — e2e twice") {
		t.Errorf("the stalled stream's page does not say so:\n%s", body)
	}
	_, body = httpGet(t, http.MethodGet, base+"/pipelines")
	for _, want := range []string{
		`title="spec.suspend is set: nothing is promoted until it is false">Suspended</span>`,
		`title="appRef.kind CronJob is not promoted">Stalled</span>`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/pipelines lacks %s:\n%s", want, body)
		}
	}
}
