package pipeline

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/release-controller/release-controller/api/v1alpha1"
)

func obj(apiVersion, kind string, generation int64, fields map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: fields}
	if u.Object == nil {
		u.Object = map[string]any{}
	}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	u.SetNamespace("ns")
	u.SetName("app")
	u.SetGeneration(generation)
	return u
}

func deployment(image string, generation, observed, replicas, updated, current, available int64) *unstructured.Unstructured {
	return obj("apps/v1", "Deployment", generation, map[string]any{
		"spec": map[string]any{"replicas": replicas, "template": map[string]any{"spec": map[string]any{"containers": []any{
			map[string]any{"name": "sidecar", "image": "proxy:9"},
			map[string]any{"name": "web", "image": image},
		}}}},
		"status": map[string]any{"observedGeneration": observed, "updatedReplicas": updated, "replicas": current, "availableReplicas": available},
	})
}

func ready(status string, generation int64) map[string]any {
	return map[string]any{"type": "Ready", "status": status, "observedGeneration": generation, "message": "msg " + status}
}

func TestObserve(t *testing.T) {
	dep := v1alpha1.AppReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "app", Container: "web"}
	hr := v1alpha1.AppReference{APIVersion: "helm.toolkit.fluxcd.io/v2", Kind: "HelmRelease", Name: "app"}
	ks := v1alpha1.AppReference{APIVersion: "kustomize.toolkit.fluxcd.io/v1", Kind: "Kustomization", Name: "app"}
	argo := v1alpha1.AppReference{APIVersion: "argoproj.io/v1alpha1", Kind: "Application", Name: "app"}
	custom := v1alpha1.AppReference{APIVersion: "example.com/v1", Kind: "Widget", Name: "app", RevisionPath: "status.version", PromotionPath: "spec.version"}
	tests := []struct {
		name  string
		ref   v1alpha1.AppReference
		obj   *unstructured.Unstructured
		rev   string
		ready bool
	}{
		{"absent", dep, nil, "", false},
		{"deployment rolled out", dep, deployment("registry.example.com:5000/web:1.2.3", 2, 2, 3, 3, 3, 3), "1.2.3", true},
		{"deployment by digest", dep, deployment("web@sha256:abc", 1, 1, 1, 1, 1, 1), "sha256:abc", true},
		{"deployment without tag", dep, deployment("registry.example.com:5000/web", 1, 1, 1, 1, 1, 1), "latest", true},
		{"deployment generation not observed", dep, deployment("web:2", 3, 2, 1, 1, 1, 1), "2", false},
		{"deployment updating", dep, deployment("web:2", 1, 1, 3, 1, 3, 3), "2", false},
		{"deployment old replicas left", dep, deployment("web:2", 1, 1, 3, 3, 4, 3), "2", false},
		{"deployment not available", dep, deployment("web:2", 1, 1, 3, 3, 3, 2), "2", false},
		{"deployment without the container", v1alpha1.AppReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "app", Container: "db"},
			deployment("web:2", 1, 1, 1, 1, 1, 1), "", false},
		{"helmrelease v2 history", hr, obj("helm.toolkit.fluxcd.io/v2", "HelmRelease", 4, map[string]any{"status": map[string]any{
			"history":    []any{map[string]any{"chartVersion": "6.0.1"}, map[string]any{"chartVersion": "6.0.0"}},
			"conditions": []any{ready("True", 4)}}}), "6.0.1", true},
		{"helmrelease v2beta1", hr, obj("helm.toolkit.fluxcd.io/v2beta1", "HelmRelease", 1, map[string]any{"status": map[string]any{
			"lastAppliedRevision": "6.0.0", "conditions": []any{ready("True", 1)}}}), "6.0.0", true},
		{"helmrelease failing", hr, obj("helm.toolkit.fluxcd.io/v2", "HelmRelease", 1, map[string]any{"status": map[string]any{
			"lastAppliedRevision": "6.0.0", "conditions": []any{ready("False", 1)}}}), "6.0.0", false},
		{"helmrelease stale generation", hr, obj("helm.toolkit.fluxcd.io/v2", "HelmRelease", 2, map[string]any{"status": map[string]any{
			"lastAppliedRevision": "6.0.0", "conditions": []any{ready("True", 1)}}}), "6.0.0", false},
		{"helmrelease without conditions", hr, obj("helm.toolkit.fluxcd.io/v2", "HelmRelease", 1, map[string]any{"status": map[string]any{
			"lastAppliedRevision": "6.0.0"}}), "6.0.0", false},
		{"kustomization", ks, obj("kustomize.toolkit.fluxcd.io/v1", "Kustomization", 1, map[string]any{"status": map[string]any{
			"lastAppliedRevision": "main@sha1:abc", "conditions": []any{ready("True", 1)}}}), "main@sha1:abc", true},
		{"argo synced healthy", argo, obj("argoproj.io/v1alpha1", "Application", 1, map[string]any{"status": map[string]any{
			"sync": map[string]any{"status": "Synced", "revision": "abc123"}, "health": map[string]any{"status": "Healthy"}}}), "abc123", true},
		{"argo progressing", argo, obj("argoproj.io/v1alpha1", "Application", 1, map[string]any{"status": map[string]any{
			"sync": map[string]any{"status": "Synced", "revision": "abc123"}, "health": map[string]any{"status": "Progressing"}}}), "abc123", false},
		{"custom without conditions", custom, obj("example.com/v1", "Widget", 1, map[string]any{"status": map[string]any{"version": "7"}}), "7", true},
		{"custom not ready", custom, obj("example.com/v1", "Widget", 1, map[string]any{"status": map[string]any{"version": "7",
			"conditions": []any{ready("False", 1)}}}), "7", false},
		{"custom without revision", custom, obj("example.com/v1", "Widget", 1, nil), "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := AppOf(tt.ref)
			if err != nil {
				t.Fatal(err)
			}
			o := a.Observe(tt.obj)
			if o.Revision != tt.rev || o.Ready != tt.ready {
				t.Errorf("Observe = %+v, want revision %q ready %v", o, tt.rev, tt.ready)
			}
			if !o.Ready && o.Message == "" {
				t.Errorf("not ready without a message: %+v", o)
			}
		})
	}
}

func TestChanged(t *testing.T) {
	a, _ := AppOf(v1alpha1.AppReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "app", Container: "web"})
	base := deployment("web:1", 1, 1, 1, 1, 1, 1)
	heartbeat := base.DeepCopy()
	heartbeat.SetAnnotations(map[string]string{"touched": "yes"})
	rolling := deployment("web:2", 2, 1, 1, 1, 1, 1)
	rolled := deployment("web:2", 2, 2, 1, 1, 1, 1)
	for _, tt := range []struct {
		name     string
		old, new *unstructured.Unstructured
		want     bool
	}{
		{"nothing that matters", base, heartbeat, false},
		{"new revision", base, rolling, true},
		{"became ready", rolling, rolled, true},
		{"created", nil, base, true},
		{"deleted", base, nil, true},
	} {
		if got := a.Changed(tt.old, tt.new); got != tt.want {
			t.Errorf("%s: Changed = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestPromotionObject(t *testing.T) {
	dep, _ := AppOf(v1alpha1.AppReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "app", Container: "web"})
	u, err := dep.PromotionObject(deployment("registry.example.com:5000/web:1", 1, 1, 1, 1, 1, 1), "2")
	if err != nil {
		t.Fatal(err)
	}
	containers, _, _ := unstructured.NestedSlice(u.Object, "spec", "template", "spec", "containers")
	if len(containers) != 1 || containers[0].(map[string]any)["image"] != "registry.example.com:5000/web:2" || containers[0].(map[string]any)["name"] != "web" {
		t.Errorf("deployment promotion: %v", u.Object)
	}
	if u.GetNamespace() != "ns" || u.GetName() != "app" || u.GetKind() != "Deployment" {
		t.Errorf("deployment promotion names %s %s/%s", u.GetKind(), u.GetNamespace(), u.GetName())
	}
	hr, _ := AppOf(v1alpha1.AppReference{APIVersion: "helm.toolkit.fluxcd.io/v2", Kind: "HelmRelease", Name: "app"})
	u, err = hr.PromotionObject(obj("helm.toolkit.fluxcd.io/v2", "HelmRelease", 1, nil), "6.1.0")
	if err != nil {
		t.Fatal(err)
	}
	if v, _, _ := unstructured.NestedString(u.Object, "spec", "chart", "spec", "version"); v != "6.1.0" {
		t.Errorf("helmrelease promotion: %v", u.Object)
	}
	ks, _ := AppOf(v1alpha1.AppReference{APIVersion: "kustomize.toolkit.fluxcd.io/v1", Kind: "Kustomization", Name: "app"})
	if _, err := ks.PromotionObject(obj("kustomize.toolkit.fluxcd.io/v1", "Kustomization", 1, nil), "x"); err == nil {
		t.Error("a Kustomization without promotionPath was promoted")
	}
}

func TestImageRevision(t *testing.T) {
	for image, want := range map[string]string{
		"web":                             "latest",
		"web:1":                           "1",
		"registry:5000/web":               "latest",
		"registry:5000/web:1.0":           "1.0",
		"registry:5000/web:1.0@sha256:ab": "sha256:ab",
	} {
		if got := ImageRevision(image); got != want {
			t.Errorf("ImageRevision(%q) = %q, want %q", image, got, want)
		}
	}
	for _, tt := range [][3]string{
		{"registry:5000/web:1.0", "2.0", "registry:5000/web:2.0"},
		{"registry:5000/web", "2.0", "registry:5000/web:2.0"},
		{"web:1@sha256:ab", "2", "web:2"},
		{"web:1", "sha256:cd", "web@sha256:cd"},
	} {
		if got := WithRevision(tt[0], tt[1]); got != tt[2] {
			t.Errorf("WithRevision(%q, %q) = %q, want %q", tt[0], tt[1], got, tt[2])
		}
	}
}
