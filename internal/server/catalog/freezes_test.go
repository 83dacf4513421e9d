package catalog

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/release-controller/release-controller/api/v1alpha1"
)

// A change of a freeze is a change of the pipelines: their pages list the freezes.
func TestFreezesWakePipelines(t *testing.T) {
	cat := New()
	f := &v1alpha1.ReleaseFreeze{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "stop"}, Spec: v1alpha1.ReleaseFreezeSpec{Reason: "r"}}
	cf := &v1alpha1.ClusterReleaseFreeze{ObjectMeta: metav1.ObjectMeta{Name: "stop"}, Spec: v1alpha1.ReleaseFreezeSpec{Reason: "r"}}
	for _, change := range []func(){
		func() { cat.SetReleaseFreeze(f) },
		func() { cat.SetClusterReleaseFreeze(cf) },
		func() { cat.DeleteReleaseFreeze(f) },
		func() { cat.DeleteClusterReleaseFreeze(cf) },
	} {
		ch := cat.PipelinesChanged()
		change()
		select {
		case <-ch:
		default:
			t.Fatal("PipelinesChanged was not closed")
		}
	}
	if got := cat.Freezes(); len(got) != 0 {
		t.Errorf("after the deletes: %v", got)
	}
}
