package pipeline

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/release-controller/release-controller/api/v1alpha1"
)

// App says how to read and promote a pipeline's app: where its revision is, when it is ready,
// and which field a promotion sets. Known kinds fill it from their kind alone (AppOf).
type App struct {
	GVK  schema.GroupVersionKind
	Name string
	// Container is a Deployment's container whose image carries the revision.
	Container string
	// RevisionPath and PromotionPath are dotted field paths; empty for a Deployment (its
	// revision is in the container's image).
	RevisionPath  []string
	PromotionPath []string
	kind          knownKind
}

type knownKind int

const (
	kindGeneric knownKind = iota
	kindDeployment
	kindHelmRelease
	kindKustomization
	kindApplication
)

// AppOf resolves an AppReference: a known kind's defaults, overridden by the paths it names.
func AppOf(ref v1alpha1.AppReference) (App, error) {
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return App{}, fmt.Errorf("appRef.apiVersion: %w", err)
	}
	a := App{GVK: gv.WithKind(ref.Kind), Name: ref.Name, Container: ref.Container}
	switch {
	case gv.Group == "apps" && ref.Kind == "Deployment":
		a.kind = kindDeployment
	case gv.Group == v1alpha1.FluxHelmReleaseGroup && ref.Kind == "HelmRelease":
		a.kind = kindHelmRelease
		a.PromotionPath = []string{"spec", "chart", "spec", "version"}
	case gv.Group == v1alpha1.FluxKustomizationGroup && ref.Kind == "Kustomization":
		a.kind = kindKustomization
		a.RevisionPath = []string{"status", "lastAppliedRevision"}
	case gv.Group == v1alpha1.ArgoCDGroup && ref.Kind == "Application":
		a.kind = kindApplication
		a.RevisionPath = []string{"status", "sync", "revision"}
		a.PromotionPath = []string{"spec", "source", "targetRevision"}
	}
	if ref.RevisionPath != "" {
		a.RevisionPath = strings.Split(ref.RevisionPath, ".")
	}
	if ref.PromotionPath != "" {
		a.PromotionPath = strings.Split(ref.PromotionPath, ".")
	}
	switch {
	case a.kind == kindDeployment && a.Container == "":
		return App{}, fmt.Errorf("a Deployment app names its container")
	case a.kind == kindGeneric && (len(a.RevisionPath) == 0 || len(a.PromotionPath) == 0):
		return App{}, fmt.Errorf("an app of kind %s names its revisionPath and promotionPath", a.GVK.Kind)
	}
	return a, nil
}

// Observation is what an app object says of itself.
type Observation struct {
	// Found is false when the object does not exist (or is not known yet).
	Found    bool
	Revision string
	Ready    bool
	// Message says why the app is not ready, when it is not.
	Message string
}

// Observe reads the revision and readiness of obj, nil meaning absent. It is pure.
func (a App) Observe(obj *unstructured.Unstructured) Observation {
	if obj == nil {
		return Observation{Message: fmt.Sprintf("%s %s not found", a.GVK.Kind, a.Name)}
	}
	o := Observation{Found: true}
	switch a.kind {
	case kindDeployment:
		o.Revision, o.Message = deploymentRevision(obj, a.Container)
		if o.Message == "" {
			o.Ready, o.Message = deploymentReady(obj)
		}
	case kindHelmRelease:
		if len(a.RevisionPath) > 0 {
			o.Revision = stringAt(obj, a.RevisionPath)
		} else {
			o.Revision = helmReleaseRevision(obj)
		}
		o.Ready, o.Message = readyCondition(obj, true)
	case kindKustomization:
		o.Revision = stringAt(obj, a.RevisionPath)
		o.Ready, o.Message = readyCondition(obj, true)
	case kindApplication:
		o.Revision = stringAt(obj, a.RevisionPath)
		o.Ready, o.Message = applicationReady(obj)
	default:
		o.Revision = stringAt(obj, a.RevisionPath)
		o.Ready, o.Message = readyCondition(obj, false)
	}
	if o.Revision == "" && o.Message == "" {
		o.Ready, o.Message = false, "no revision yet"
	}
	if o.Revision == "" {
		o.Ready = false
	}
	return o
}

// Changed reports whether an update from old to new matters to a pipeline: its revision or
// readiness moved. Everything else (status heartbeats, annotations) is ignored.
func (a App) Changed(oldObj, newObj *unstructured.Unstructured) bool {
	o, n := a.Observe(oldObj), a.Observe(newObj)
	return o.Revision != n.Revision || o.Ready != n.Ready || o.Found != n.Found
}

// PromotionObject is the apply configuration that sets revision in obj (the target's current
// object): apiVersion, kind, name, namespace and the one field. For a Deployment the field is
// the container's image with its tag (or digest) replaced, which is why obj is needed.
func (a App) PromotionObject(obj *unstructured.Unstructured, revision string) (*unstructured.Unstructured, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(a.GVK)
	u.SetNamespace(obj.GetNamespace())
	u.SetName(obj.GetName())
	if a.kind == kindDeployment {
		image, err := containerImage(obj, a.Container)
		if err != nil {
			return nil, err
		}
		container := map[string]any{"name": a.Container, "image": WithRevision(image, revision)}
		if err := unstructured.SetNestedSlice(u.Object, []any{container}, "spec", "template", "spec", "containers"); err != nil {
			return nil, err
		}
		return u, nil
	}
	if len(a.PromotionPath) == 0 {
		return nil, fmt.Errorf("%s has no field a promotion sets: name it in appRef.promotionPath", a.GVK.Kind)
	}
	if err := unstructured.SetNestedField(u.Object, revision, a.PromotionPath...); err != nil {
		return nil, err
	}
	return u, nil
}

func stringAt(obj *unstructured.Unstructured, path []string) string {
	v, found, err := unstructured.NestedFieldNoCopy(obj.Object, path...)
	if !found || err != nil || v == nil {
		return ""
	}
	switch v := v.(type) {
	case string:
		return v
	case int64, float64, bool:
		return fmt.Sprint(v)
	}
	return ""
}

// ImageRevision is the revision an image reference carries: its digest (sha256:…) when
// pinned, else its tag, else latest.
func ImageRevision(image string) string {
	if _, digest, ok := strings.Cut(image, "@"); ok {
		return digest
	}
	if i := strings.LastIndex(image, ":"); i > strings.LastIndex(image, "/") {
		return image[i+1:]
	}
	return "latest"
}

// WithRevision returns image with its tag or digest replaced by revision (a digest when it
// starts with sha256:).
func WithRevision(image, revision string) string {
	repo, _, _ := strings.Cut(image, "@")
	if i := strings.LastIndex(repo, ":"); i > strings.LastIndex(repo, "/") {
		repo = repo[:i]
	}
	if strings.HasPrefix(revision, "sha256:") {
		return repo + "@" + revision
	}
	return repo + ":" + revision
}

func containerImage(obj *unstructured.Unstructured, name string) (string, error) {
	containers, _, _ := unstructured.NestedSlice(obj.Object, "spec", "template", "spec", "containers")
	for _, c := range containers {
		m, ok := c.(map[string]any)
		if !ok || m["name"] != name {
			continue
		}
		if image, ok := m["image"].(string); ok && image != "" {
			return image, nil
		}
	}
	return "", fmt.Errorf("the Deployment has no container %q with an image", name)
}

func deploymentRevision(obj *unstructured.Unstructured, container string) (string, string) {
	image, err := containerImage(obj, container)
	if err != nil {
		return "", err.Error()
	}
	return ImageRevision(image), ""
}

// deploymentReady is kubectl rollout status's test: the controller saw the generation, every
// replica is updated and available, and no old replica is left.
func deploymentReady(obj *unstructured.Unstructured) (bool, string) {
	generation := obj.GetGeneration()
	observed, _, _ := unstructured.NestedInt64(obj.Object, "status", "observedGeneration")
	if observed < generation {
		return false, "waiting for the deployment's generation to be observed"
	}
	conditions, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conditions {
		if m, ok := c.(map[string]any); ok && m["type"] == "Progressing" && m["reason"] == "ProgressDeadlineExceeded" {
			return false, "the rollout exceeded its progress deadline"
		}
	}
	replicas, found, _ := unstructured.NestedInt64(obj.Object, "spec", "replicas")
	if !found {
		replicas = 1
	}
	updated, _, _ := unstructured.NestedInt64(obj.Object, "status", "updatedReplicas")
	current, _, _ := unstructured.NestedInt64(obj.Object, "status", "replicas")
	available, _, _ := unstructured.NestedInt64(obj.Object, "status", "availableReplicas")
	switch {
	case updated < replicas:
		return false, fmt.Sprintf("%d of %d replicas updated", updated, replicas)
	case current > updated:
		return false, fmt.Sprintf("%d old replicas pending termination", current-updated)
	case available < updated:
		return false, fmt.Sprintf("%d of %d updated replicas available", available, updated)
	}
	return true, ""
}

// helmReleaseRevision is the chart version of the release's newest history entry (Flux
// helm-controller v2), or lastAppliedRevision (v2beta1).
func helmReleaseRevision(obj *unstructured.Unstructured) string {
	history, _, _ := unstructured.NestedSlice(obj.Object, "status", "history")
	if len(history) > 0 {
		if m, ok := history[0].(map[string]any); ok {
			if v, ok := m["chartVersion"].(string); ok && v != "" {
				return v
			}
		}
	}
	return stringAt(obj, []string{"status", "lastAppliedRevision"})
}

// readyCondition reads a Ready condition (the Flux and Kubernetes convention): ready when
// True and, if it says, for the object's generation. Without a Ready condition the object is
// ready unless required.
func readyCondition(obj *unstructured.Unstructured, required bool) (bool, string) {
	conditions, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conditions {
		m, ok := c.(map[string]any)
		if !ok || m["type"] != "Ready" {
			continue
		}
		msg, _ := m["message"].(string)
		if m["status"] != "True" {
			if msg == "" {
				msg = "Ready is " + fmt.Sprint(m["status"])
			}
			return false, msg
		}
		if g, ok := m["observedGeneration"].(int64); ok && g < obj.GetGeneration() {
			return false, "waiting for the generation to be reconciled"
		}
		if g, ok, _ := unstructured.NestedInt64(obj.Object, "status", "observedGeneration"); ok && g < obj.GetGeneration() {
			return false, "waiting for the generation to be reconciled"
		}
		return true, ""
	}
	if required {
		return false, "no Ready condition yet"
	}
	return true, ""
}

// applicationReady: an Argo CD Application is ready when Synced and Healthy.
func applicationReady(obj *unstructured.Unstructured) (bool, string) {
	sync := stringAt(obj, []string{"status", "sync", "status"})
	health := stringAt(obj, []string{"status", "health", "status"})
	if sync != "Synced" || health != "Healthy" {
		return false, fmt.Sprintf("sync %s, health %s", orUnknown(sync), orUnknown(health))
	}
	return true, ""
}

func orUnknown(s string) string {
	if s == "" {
		return "Unknown"
	}
	return s
}
