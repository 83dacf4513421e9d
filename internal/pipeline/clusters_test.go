//go:build !unit

package pipeline_test

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/release-controller/release-controller/api/v1alpha1"
)

// TestAMissingAppIsReportedOnceTheCacheSyncs: a pipeline whose apps do not exist gets no
// event from its informer, so only the informer's first sync can call it back: its targets
// must come to say the app is not found, not wait for the cache for ever.
func TestAMissingAppIsReportedOnceTheCacheSyncs(t *testing.T) {
	namespace := ns(t, mgmt.Client)
	startController(t, ns(t, mgmt.Client))
	p := &v1alpha1.Pipeline{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "absent"},
		Spec: v1alpha1.PipelineSpec{
			AppRef: v1alpha1.AppReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "absent", Container: "web"},
			Environments: []v1alpha1.Environment{
				{Name: "dev", Targets: []v1alpha1.Target{{Namespace: namespace}}},
				{Name: "staging", Targets: []v1alpha1.Target{{Namespace: namespace + "-staging"}}},
			},
		},
	}
	if err := mgmt.Client.Create(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	// Other tests count the clusters their controller watches: leave no pipeline behind.
	t.Cleanup(func() { _ = mgmt.Client.Delete(context.Background(), p) })
	waitPipeline(t, types.NamespacedName{Namespace: namespace, Name: p.Name}, "every target says its Deployment is not found",
		func(p *v1alpha1.Pipeline) bool {
			if len(p.Status.Environments) != 2 {
				return false
			}
			for _, e := range p.Status.Environments {
				if len(e.Targets) != 1 || e.Targets[0].Message != "Deployment absent not found" {
					return false
				}
			}
			return true
		})
}
