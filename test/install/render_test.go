//go:build !unit

package install

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/Masterminds/semver/v3"
	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/common/util"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/engine"
	appsv1 "k8s.io/api/apps/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// fieldManager applies the manifests, as kubectl apply --server-side would as "kubectl".
const fieldManager = "release-controller-install-test"

// kustomizeBuild builds the kustomization in dir as `kubectl kustomize dir` does.
func kustomizeBuild(t testing.TB, dir string) []*unstructured.Unstructured {
	t.Helper()
	m, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		t.Fatalf("kustomize build %s: %v", dir, err)
	}
	var objs []*unstructured.Unstructured
	for _, r := range m.Resources() {
		data, err := r.AsYAML()
		if err != nil {
			t.Fatal(err)
		}
		docs, err := decodeYAML(data)
		if err != nil {
			t.Fatalf("kustomize build %s: %v", dir, err)
		}
		objs = append(objs, docs...)
	}
	return objs
}

// helmTemplate renders charts/release-controller as `helm template RELEASE charts/release-controller
// --namespace NAMESPACE --include-crds` does: the values checked against values.schema.json,
// the chart's kubeVersion against the API server's, every template rendered (strictly: a
// missing value is an error) but NOTES.txt, and the CRDs of crds/ first.
func helmTemplate(release, namespace string, values map[string]any) ([]*unstructured.Unstructured, error) {
	chrt, err := loader.Load(filepath.Join(root, "charts", "release-controller"))
	if err != nil {
		return nil, err
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	info, err := dc.ServerVersion()
	if err != nil {
		return nil, err
	}
	kubeVersion, err := common.ParseKubeVersion(info.GitVersion)
	if err != nil {
		return nil, err
	}
	if c := chrt.Metadata.KubeVersion; c != "" {
		constraint, err := semver.NewConstraint(c)
		if err != nil {
			return nil, fmt.Errorf("chart kubeVersion %q: %w", c, err)
		}
		if !constraint.Check(semver.MustParse(kubeVersion.String())) {
			return nil, fmt.Errorf("chart requires kubeVersion %s, the API server is %s", c, kubeVersion)
		}
	}
	caps := common.DefaultCapabilities.Copy()
	caps.KubeVersion = *kubeVersion
	vals, err := util.ToRenderValues(chrt, values, common.ReleaseOptions{Name: release, Namespace: namespace, Revision: 1, IsInstall: true}, caps)
	if err != nil {
		return nil, err
	}
	rendered, err := engine.Engine{Strict: true}.RenderWithContext(context.Background(), chrt, vals)
	if err != nil {
		return nil, err
	}
	var objs []*unstructured.Unstructured
	for _, crd := range chrt.CRDObjects() {
		docs, err := decodeYAML(crd.File.Data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", crd.Filename, err)
		}
		objs = append(objs, docs...)
	}
	names := make([]string, 0, len(rendered))
	for name := range rendered {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if strings.HasSuffix(name, "NOTES.txt") {
			continue
		}
		docs, err := decodeYAML([]byte(rendered[name]))
		if err != nil {
			return nil, fmt.Errorf("%s: %w\n%s", name, err, rendered[name])
		}
		objs = append(objs, docs...)
	}
	return objs, nil
}

// decodeYAML reads the objects of a YAML stream, skipping empty documents.
func decodeYAML(data []byte) ([]*unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var objs []*unstructured.Unstructured
	for {
		obj := map[string]any{}
		err := dec.Decode(&obj)
		if errors.Is(err, io.EOF) {
			return objs, nil
		}
		if err != nil {
			return nil, err
		}
		if len(obj) == 0 {
			continue
		}
		objs = append(objs, &unstructured.Unstructured{Object: obj})
	}
}

// id names an object for messages and comparisons: Kind namespace/name.
func id(u *unstructured.Unstructured) string {
	if u.GetNamespace() == "" {
		return u.GetKind() + " " + u.GetName()
	}
	return u.GetKind() + " " + u.GetNamespace() + "/" + u.GetName()
}

func ids(objs []*unstructured.Unstructured) []string {
	out := make([]string, len(objs))
	for i, u := range objs {
		out[i] = id(u)
	}
	slices.Sort(out)
	return out
}

// applyOrder puts Namespaces first and CRDs next, as their objects need them.
func applyOrder(objs []*unstructured.Unstructured) []*unstructured.Unstructured {
	rank := func(u *unstructured.Unstructured) int {
		switch u.GetKind() {
		case "Namespace":
			return 0
		case "CustomResourceDefinition":
			return 1
		}
		return 2
	}
	out := slices.Clone(objs)
	slices.SortStableFunc(out, func(a, b *unstructured.Unstructured) int { return rank(a) - rank(b) })
	return out
}

// apply server-side applies every object with strict field validation (as kubectl apply
// --server-side does), forcing ownership, and waits until the CRDs among them are served
// before applying anything else.
func apply(ctx context.Context, objs []*unstructured.Unstructured) error {
	c := client.WithFieldValidation(admin, metav1.FieldValidationStrict)
	ordered := applyOrder(objs)
	for i, u := range ordered {
		if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(u.DeepCopy()), client.FieldOwner(fieldManager), client.ForceOwnership); err != nil {
			return fmt.Errorf("applying %s: %w", id(u), err)
		}
		if u.GetKind() == "CustomResourceDefinition" && (i+1 == len(ordered) || ordered[i+1].GetKind() != "CustomResourceDefinition") {
			if err := waitEstablished(ctx, ordered[:i+1]); err != nil {
				return err
			}
		}
	}
	return nil
}

// waitEstablished waits until every CRD among objs is Established.
func waitEstablished(ctx context.Context, objs []*unstructured.Unstructured) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for _, u := range objs {
		if u.GetKind() != "CustomResourceDefinition" {
			continue
		}
		for {
			crd := &apiextensionsv1.CustomResourceDefinition{}
			if err := admin.Get(ctx, client.ObjectKey{Name: u.GetName()}, crd); err != nil {
				return err
			}
			if slices.ContainsFunc(crd.Status.Conditions, func(c apiextensionsv1.CustomResourceDefinitionCondition) bool {
				return c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue
			}) {
				break
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("CRD %s not established: %w", u.GetName(), ctx.Err())
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
	return nil
}

// resourceVersions reads the live resourceVersion of every object.
func resourceVersions(ctx context.Context, objs []*unstructured.Unstructured) (map[string]string, error) {
	out := make(map[string]string, len(objs))
	for _, u := range objs {
		live := &unstructured.Unstructured{}
		live.SetGroupVersionKind(u.GroupVersionKind())
		if err := admin.Get(ctx, client.ObjectKeyFromObject(u), live); err != nil {
			return nil, fmt.Errorf("reading %s: %w", id(u), err)
		}
		out[id(u)] = live.GetResourceVersion()
	}
	return out, nil
}

// applyTwice applies objs, then applies them again and checks that the second apply changed
// nothing: every object's resourceVersion stays as it was.
func applyTwice(t testing.TB, objs []*unstructured.Unstructured) {
	t.Helper()
	ctx := context.Background()
	if err := apply(ctx, objs); err != nil {
		t.Fatalf("first apply: %v", err)
	}
	before, err := resourceVersions(ctx, objs)
	if err != nil {
		t.Fatal(err)
	}
	if err := apply(ctx, objs); err != nil {
		t.Fatalf("second apply: %v", err)
	}
	after, err := resourceVersions(ctx, objs)
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range objs {
		if before[id(u)] != after[id(u)] {
			t.Errorf("the second apply changed %s (resourceVersion %s → %s): the manifests are not idempotent", id(u), before[id(u)], after[id(u)])
		}
	}
}

// deployments returns the Deployments among objs, typed.
func deployments(t testing.TB, objs []*unstructured.Unstructured) map[string]*appsv1.Deployment {
	t.Helper()
	out := map[string]*appsv1.Deployment{}
	for _, u := range objs {
		if u.GetKind() != "Deployment" {
			continue
		}
		d := &appsv1.Deployment{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, d); err != nil {
			t.Fatalf("%s: %v", id(u), err)
		}
		out[d.Name] = d
	}
	return out
}

// find returns the object of kind and name among objs, or fails the test.
func find(t testing.TB, objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	t.Helper()
	for _, u := range objs {
		if u.GetKind() == kind && u.GetName() == name {
			return u
		}
	}
	t.Fatalf("no %s %s among %v", kind, name, ids(objs))
	return nil
}

// fromUnstructured converts u into the typed obj.
func fromUnstructured(u *unstructured.Unstructured, obj any) error {
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, obj); err != nil {
		return fmt.Errorf("%s: %w", id(u), err)
	}
	return nil
}
