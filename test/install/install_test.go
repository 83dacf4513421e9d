//go:build !unit

package install

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/config/crd"
	"github.com/release-controller/release-controller/internal/manager"
	"github.com/release-controller/release-controller/internal/stream"
	"github.com/release-controller/release-controller/internal/testbinary"
)

// digest is the digest the test's kubelet "pulled" for the controller's image.
const digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

// TestKustomizeDefault builds config/default, checks what it holds and how it is wired,
// applies it twice, runs Pods of its templates under the restricted Pod Security Standard,
// and has the controller's account read its own Pod for the creation Jobs' image.
func TestKustomizeDefault(t *testing.T) {
	objs := kustomizeBuild(t, filepath.Join(root, "config", "default"))
	const ns = "release-controller-system"

	// Every CRD that make generate writes is installed.
	bases, err := filepath.Glob(filepath.Join(root, "config", "crd", "bases", "*.yaml"))
	if err != nil || len(bases) == 0 {
		t.Fatalf("no CRDs in config/crd/bases: %v", err)
	}
	for _, path := range bases {
		docs, err := decodeYAML(mustRead(t, path))
		if err != nil || len(docs) != 1 {
			t.Fatalf("%s: %v", path, err)
		}
		crd := find(t, objs, "CustomResourceDefinition", docs[0].GetName())
		if !reflect.DeepEqual(crd.Object["spec"], docs[0].Object["spec"]) {
			t.Errorf("CRD %s differs from %s", crd.GetName(), path)
		}
	}
	// And the admission policy holding the ReleasePayload spec's rules, with its binding.
	policies, err := crd.Policies()
	if err != nil || len(policies) == 0 {
		t.Fatalf("no admission policies in config/crd/policies: %v", err)
	}
	for _, want := range policies {
		if got := find(t, objs, want.GetKind(), want.GetName()); !reflect.DeepEqual(got.Object["spec"], want.Object["spec"]) {
			t.Errorf("%s %s differs from config/crd/policies", want.GetKind(), want.GetName())
		}
	}
	for _, u := range objs {
		if u.GetKind() != "CustomResourceDefinition" && !isClusterScoped(u) && u.GetNamespace() != ns {
			t.Errorf("%s is not in namespace %s", id(u), ns)
		}
	}
	if got := find(t, objs, "Namespace", ns).GetLabels()["pod-security.kubernetes.io/enforce"]; got != "restricted" {
		t.Errorf("namespace %s enforces Pod Security %q, want restricted", ns, got)
	}
	deploys := deployments(t, objs)
	for _, name := range []string{"release-controller-controller", "release-controller-api"} {
		d, ok := deploys[name]
		if !ok {
			t.Fatalf("no Deployment %s among %v", name, ids(objs))
		}
		if got := d.Spec.Template.Spec.Containers[0].Image; got != "release-controller:latest" {
			t.Errorf("Deployment %s runs %q, want the images: entry's release-controller:latest", name, got)
		}
	}
	controller := deploys["release-controller-controller"]
	checkControllerArgs(t, controller, "--leader-elect=true", "--build-service-account=release-controller-build", "--health-probe-bind-address=:9091")
	checkAPIArgs(t, deploys["release-controller-api"])
	checkWiring(t, objs)
	checkFlags(t, objs)

	applyTwice(t, objs)
	if err := crd.WaitForPolicies(context.Background(), admin); err != nil {
		t.Errorf("the installed ReleasePayload policy is not enforced: %v", err)
	}
	checkPodSecurity(t, objs)
	checkOwnImage(t, controller, "release-controller-api", "release-controller@"+digest)
}

// TestKustomizeImageOverlay is README's way of setting the image without editing
// config/default: an overlay of it with an images: entry.
func TestKustomizeImageOverlay(t *testing.T) {
	dir := t.TempDir()
	base, err := filepath.Rel(dir, filepath.Join(root, "config", "default"))
	if err != nil {
		t.Fatal(err)
	}
	overlay := fmt.Sprintf(`resources:
- %s
images:
- name: release-controller
  newName: registry.example.com/team/release-controller
  digest: %s
`, base, digest)
	if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(overlay), 0o600); err != nil {
		t.Fatal(err)
	}
	objs := kustomizeBuild(t, dir)
	deploys := deployments(t, objs)
	if len(deploys) != 2 {
		t.Fatalf("Deployments %v, want the controller's and the API server's", ids(objs))
	}
	for _, d := range deploys {
		if got, want := d.Spec.Template.Spec.Containers[0].Image, "registry.example.com/team/release-controller@"+digest; got != want {
			t.Errorf("Deployment %s runs %q, want %q", d.Name, got, want)
		}
	}
}

// TestKustomizeMonitoring builds config/monitoring (config/default with the ServiceMonitor
// component) and config/monitoring-secure (also with the metrics-auth component) and applies
// each on an API server that serves the Prometheus Operator's
// ServiceMonitor (a minimal CRD installed here).
func TestKustomizeMonitoring(t *testing.T) {
	installServiceMonitorCRD(t)
	for _, overlay := range []string{"monitoring", "monitoring-secure"} {
		t.Run(overlay, func(t *testing.T) {
			objs := kustomizeBuild(t, filepath.Join(root, "config", overlay))
			for _, name := range []string{"release-controller-controller", "release-controller-api"} {
				if got := find(t, objs, "ServiceMonitor", name).GetNamespace(); got != "release-controller-system" {
					t.Errorf("ServiceMonitor %s in namespace %q, want release-controller-system", name, got)
				}
			}
			checkWiring(t, objs)
			checkFlags(t, objs)
			applyTwice(t, objs)
		})
	}
}

// TestHelmChart renders the chart with its defaults and with other values, checks each
// rendering's wiring, applies it twice into a namespace enforcing the restricted Pod Security
// Standard, and runs Pods of its templates there.
func TestHelmChart(t *testing.T) {
	const repo = "registry.example.com/release-controller"
	installServiceMonitorCRD(t)
	for _, tc := range []struct {
		name       string
		release    string
		namespaces []string // created before the install (helm install does not create them)
		values     map[string]any
		check      func(t *testing.T, objs []*unstructured.Unstructured)
		// installed, when set, runs once the objects are applied.
		installed func(t *testing.T, objs []*unstructured.Unstructured)
	}{{
		name: "defaults", release: "rc", namespaces: []string{"rc-default"},
		values: map[string]any{"image": map[string]any{"repository": repo}},
		check: func(t *testing.T, objs []*unstructured.Unstructured) {
			controller := deployments(t, objs)["rc-release-controller-controller"]
			checkControllerArgs(t, controller, "--build-image="+repo+":latest", "--build-service-account=rc-release-controller-build",
				"--log-namespace=rc-default", "--log-ttl=720h", "--log-max-entries=3500")
			if slices.ContainsFunc(controller.Spec.Template.Spec.Containers[0].Args, func(a string) bool { return strings.HasPrefix(a, "--namespace") }) {
				t.Errorf("controller args %v: watching every namespace needs no --namespace", controller.Spec.Template.Spec.Containers[0].Args)
			}
			checkAPIArgs(t, deployments(t, objs)["rc-release-controller-api"])
			find(t, objs, "ServiceAccount", "rc-release-controller-build")
			for _, u := range objs {
				if k := u.GetKind(); k == "Ingress" || k == "ServiceMonitor" {
					t.Errorf("%s rendered without being asked for", id(u))
				}
			}
			if got := find(t, objs, "Service", "rc-release-controller-api").Object["spec"].(map[string]any)["type"]; got != "ClusterIP" {
				t.Errorf("API Service type %v, want ClusterIP", got)
			}
		},
		installed: func(t *testing.T, objs []*unstructured.Unstructured) {
			deploys := deployments(t, objs)
			// The chart passes --build-image; the default it replaces works with the chart's RBAC too.
			checkOwnImage(t, deploys["rc-release-controller-controller"], "rc-release-controller-api", repo+"@"+digest)
			runComponents(t, deploys["rc-release-controller-controller"], deploys["rc-release-controller-api"], repo+":latest")
		},
	}, {
		name: "namespaces, ingress, servicemonitor", release: "ops", namespaces: []string{"ops-system", "team-a", "team-c", "team-b", "release-log"},
		values: map[string]any{
			"image":             map[string]any{"repository": repo, "digest": digest, "pullPolicy": "Always"},
			"watchNamespaces":   []any{"team-a", "team-c"},
			"prowJobNamespaces": []any{"prow"},
			"build":             map[string]any{"image": repo + "-build:v2", "extraNamespaces": []any{"team-b"}},
			"releaseLog":        map[string]any{"namespace": "release-log", "ttl": "48h", "maxEntriesPerDay": 1000},
			"controller": map[string]any{"replicas": 2, "resources": map[string]any{
				"requests": map[string]any{"cpu": "50m", "memory": "64Mi"}, "limits": map[string]any{"memory": "512Mi"}}},
			"api": map[string]any{
				"service": map[string]any{"type": "NodePort", "nodePort": 30080},
				"ingress": map[string]any{"enabled": true, "className": "nginx", "host": "release.example.com",
					"tls": []any{map[string]any{"secretName": "release-tls", "hosts": []any{"release.example.com"}}}},
			},
			"serviceMonitor": map[string]any{"enabled": true, "interval": "30s", "labels": map[string]any{"release": "prometheus"}},
			"signing":        map[string]any{"store": "s3://release-signatures?region=eu-west-1", "keySecret": "signing-key", "sigstoreKeySecret": "cosign-key"},
			"webURL":         "https://release.example.com",
		},
		check: func(t *testing.T, objs []*unstructured.Unstructured) {
			deploys := deployments(t, objs)
			controller := deploys["ops-release-controller-controller"]
			checkControllerArgs(t, controller, "--namespace=team-a,team-c", "--prowjob-namespace=prow", "--build-image="+repo+"-build:v2", "--build-service-account=ops-release-controller-build",
				"--log-namespace=release-log", "--log-ttl=48h", "--log-max-entries=1000",
				"--signature-store=s3://release-signatures?region=eu-west-1", "--signing-key-secret=signing-key", "--sigstore-key-secret=cosign-key", "--web-url=https://release.example.com")
			if args := deploys["ops-release-controller-api"].Spec.Template.Spec.Containers[0].Args; !slices.Contains(args, "--signature-store=s3://release-signatures?region=eu-west-1") {
				t.Errorf("api args %v lack the signature store", args)
			}
			if *controller.Spec.Replicas != 2 {
				t.Errorf("controller replicas %d, want 2", *controller.Spec.Replicas)
			}
			if got := controller.Spec.Template.Spec.Containers[0].Resources.Limits.Memory().String(); got != "512Mi" {
				t.Errorf("controller memory limit %s, want 512Mi", got)
			}
			for _, d := range deploys {
				c := d.Spec.Template.Spec.Containers[0]
				if c.Image != repo+"@"+digest || c.ImagePullPolicy != corev1.PullAlways {
					t.Errorf("Deployment %s runs %s (%s), want %s@%s (Always)", d.Name, c.Image, c.ImagePullPolicy, repo, digest)
				}
			}
			for _, ns := range []string{"ops-system", "team-a", "team-c", "team-b"} {
				for _, kind := range []string{"ServiceAccount", "RoleBinding"} {
					if !slices.Contains(ids(objs), kind+" "+ns+"/ops-release-controller-build") {
						t.Errorf("no %s %s/ops-release-controller-build for the creation Jobs of %s", kind, ns, ns)
					}
				}
			}
			find(t, objs, "Ingress", "ops-release-controller-api")
			find(t, objs, "ServiceMonitor", "ops-release-controller-controller")
			find(t, objs, "ServiceMonitor", "ops-release-controller-api")
			if got := find(t, objs, "Service", "ops-release-controller-api").Object["spec"].(map[string]any)["type"]; got != "NodePort" {
				t.Errorf("API Service type %v, want NodePort", got)
			}
		},
		installed: func(t *testing.T, objs []*unstructured.Unstructured) {
			deploys := deployments(t, objs)
			runComponents(t, deploys["ops-release-controller-controller"], deploys["ops-release-controller-api"], repo+"-build:v2")
		},
	}, {
		name: "secure metrics, API over HTTPS", release: "sec", namespaces: []string{"sec-system", "monitoring"},
		values: secureMetricsValues(repo),
		check: func(t *testing.T, objs []*unstructured.Unstructured) {
			checkSecureMetricsObjects(t, objs, "sec-release-controller")
		},
		installed: func(t *testing.T, objs []*unstructured.Unstructured) {
			deploys := deployments(t, objs)
			runSecureMetrics(t, deploys["sec-release-controller-controller"], deploys["sec-release-controller-api"])
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			for _, ns := range tc.namespaces {
				createNamespace(t, ns, true)
			}
			objs, err := helmTemplate(tc.release, tc.namespaces[0], tc.values)
			if err != nil {
				t.Fatalf("helm template: %v", err)
			}
			tc.check(t, objs)
			checkWiring(t, objs)
			checkFlags(t, objs)
			applyTwice(t, objs)
			checkPodSecurity(t, objs)
			if tc.installed != nil {
				tc.installed(t, objs)
			}
			// The chart's namespaced objects are in the release's namespace (or a build one).
			for _, u := range objs {
				if !isClusterScoped(u) && !slices.Contains(tc.namespaces, u.GetNamespace()) {
					t.Errorf("%s outside the release's namespaces %v", id(u), tc.namespaces)
				}
			}
		})
	}
}

// TestHelmChartRefusesBadValues: values the chart cannot honour fail at render time with a
// message naming the value.
func TestHelmChartRefusesBadValues(t *testing.T) {
	for _, tc := range []struct {
		name    string
		values  map[string]any
		wantErr string
	}{
		{name: "no image repository", values: map[string]any{}, wantErr: "image.repository is required"},
		{name: "unknown service type", values: map[string]any{"image": map[string]any{"repository": "r"}, "api": map[string]any{"service": map[string]any{"type": "External"}}},
			wantErr: "type"},
		{name: "bad namespace name", values: map[string]any{"image": map[string]any{"repository": "r"}, "watchNamespaces": []any{"Team_A"}},
			wantErr: "watchNamespaces"},
		{name: "bad digest", values: map[string]any{"image": map[string]any{"repository": "r", "digest": "latest"}},
			wantErr: "digest"},
		{name: "Sigstore KMS key that is no URI", values: map[string]any{"image": map[string]any{"repository": "r"}, "signing": map[string]any{"sigstoreKMSKey": "my-key"}},
			wantErr: "sigstoreKMSKey"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := helmTemplate("rc", "rc", tc.values)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("helm template = %v, want an error containing %q", err, tc.wantErr)
			}
		})
	}
}

// TestHelmChartMatchesKustomize: with the release named release-controller in namespace
// release-controller-system, the chart installs the objects config/default does (but the
// Namespace, which helm install --create-namespace makes), with the same RBAC rules and the
// same pod hardening.
func TestHelmChartMatchesKustomize(t *testing.T) {
	t.Run("default", func(t *testing.T) {
		checkHelmMatchesKustomize(t, "default", map[string]any{"image": map[string]any{"repository": "release-controller"}})
	})
	t.Run("monitoring-secure", func(t *testing.T) {
		values := secureMetricsValues("release-controller")
		// The kustomize component makes its own certificate, serves the API server over
		// plain HTTP, and leaves binding the reader role to the installer.
		values["metrics"] = map[string]any{"secure": true}
		delete(values, "api")
		checkHelmMatchesKustomize(t, "monitoring-secure", values)
	})
}

// checkHelmMatchesKustomize compares the chart rendered with values to config/<overlay>: the
// same objects, roles, bindings, pods, ServiceMonitor endpoints and flags.
func checkHelmMatchesKustomize(t *testing.T, overlay string, values map[string]any) {
	const ns = "release-controller-system"
	kust := kustomizeBuild(t, filepath.Join(root, "config", overlay))
	helm, err := helmTemplate("release-controller", ns, values)
	if err != nil {
		t.Fatal(err)
	}
	var kustIDs []string
	for _, s := range ids(kust) {
		if s != "Namespace "+ns {
			kustIDs = append(kustIDs, s)
		}
	}
	if got := ids(helm); !slices.Equal(got, kustIDs) {
		t.Errorf("the chart installs\n  %v\nconfig/default\n  %v", got, kustIDs)
	}
	for _, k := range kust {
		switch k.GetKind() {
		case "ClusterRole", "Role":
			h := find(t, helm, k.GetKind(), k.GetName())
			if !reflect.DeepEqual(h.Object["rules"], k.Object["rules"]) {
				t.Errorf("%s: the chart's rules differ from config/rbac's:\n  %v\n  %v", id(k), h.Object["rules"], k.Object["rules"])
			}
		case "RoleBinding", "ClusterRoleBinding":
			h := find(t, helm, k.GetKind(), k.GetName())
			for _, field := range []string{"roleRef", "subjects"} {
				if !reflect.DeepEqual(h.Object[field], k.Object[field]) {
					t.Errorf("%s: %s differs:\n  chart %v\n  kustomize %v", id(k), field, h.Object[field], k.Object[field])
				}
			}
		case "ServiceMonitor":
			h := find(t, helm, k.GetKind(), k.GetName())
			hs, ks := h.Object["spec"].(map[string]any), k.Object["spec"].(map[string]any)
			if !reflect.DeepEqual(hs["endpoints"], ks["endpoints"]) {
				t.Errorf("%s: the endpoints differ:\n  chart %v\n  kustomize %v", id(k), hs["endpoints"], ks["endpoints"])
			}
		}
	}
	hd, kd := deployments(t, helm), deployments(t, kust)
	for name, k := range kd {
		h := hd[name]
		if h == nil {
			continue // reported above
		}
		hp, kp := h.Spec.Template.Spec, k.Spec.Template.Spec
		if !reflect.DeepEqual(hp.SecurityContext, kp.SecurityContext) || hp.ServiceAccountName != kp.ServiceAccountName ||
			!reflect.DeepEqual(hp.Volumes, kp.Volumes) {
			t.Errorf("Deployment %s: the pods differ:\n  chart %+v\n  kustomize %+v", name, hp, kp)
		}
		hc, kc := hp.Containers[0], kp.Containers[0]
		if hc.Name != kc.Name || !reflect.DeepEqual(hc.SecurityContext, kc.SecurityContext) || !reflect.DeepEqual(hc.Ports, kc.Ports) ||
			!reflect.DeepEqual(hc.LivenessProbe, kc.LivenessProbe) || !reflect.DeepEqual(hc.ReadinessProbe, kc.ReadinessProbe) ||
			!reflect.DeepEqual(hc.VolumeMounts, kc.VolumeMounts) || !reflect.DeepEqual(hc.Resources, kc.Resources) {
			t.Errorf("Deployment %s: the containers differ:\n  chart %+v\n  kustomize %+v", name, hc, kc)
		}
		for _, arg := range kc.Args {
			if strings.Contains(arg, "$(POD_NAMESPACE)") {
				continue // the chart writes the namespace itself
			}
			if !slices.Contains(hc.Args, arg) {
				t.Errorf("Deployment %s: the chart does not pass %s", name, arg)
			}
		}
	}
}

// checkControllerArgs checks the controller's command, its downward-API environment and args.
func checkControllerArgs(t testing.TB, d *appsv1.Deployment, want ...string) {
	t.Helper()
	if d == nil {
		t.Fatal("no controller Deployment")
	}
	c := d.Spec.Template.Spec.Containers[0]
	if c.Name != manager.ControllerContainer {
		t.Errorf("the controller's container is %q; the build image default looks for %q", c.Name, manager.ControllerContainer)
	}
	if len(c.Args) == 0 || c.Args[0] != "controller" {
		t.Errorf("controller args %v, want the controller command", c.Args)
	}
	for _, arg := range want {
		if !slices.Contains(c.Args, arg) {
			t.Errorf("controller args %v lack %s", c.Args, arg)
		}
	}
	env := map[string]string{}
	for _, e := range c.Env {
		if e.ValueFrom != nil && e.ValueFrom.FieldRef != nil {
			env[e.Name] = e.ValueFrom.FieldRef.FieldPath
		}
	}
	if env["POD_NAME"] != "metadata.name" || env["POD_NAMESPACE"] != "metadata.namespace" {
		t.Errorf("controller env %v: want POD_NAME and POD_NAMESPACE from the downward API", c.Env)
	}
}

// checkAPIArgs checks that the API server listens on every address of its pod.
func checkAPIArgs(t testing.TB, d *appsv1.Deployment) {
	t.Helper()
	if d == nil {
		t.Fatal("no API server Deployment")
	}
	c := d.Spec.Template.Spec.Containers[0]
	if len(c.Args) == 0 || c.Args[0] != "api" || !slices.Contains(c.Args, "--listen=:8080") {
		t.Errorf("API server args %v, want api --listen=:8080 (every address of the pod)", c.Args)
	}
}

// checkWiring checks that the objects fit together: every binding's role and service accounts
// are installed and every role is bound; every Deployment's service account is installed;
// every Service selects a Deployment's pods on a port they name; every ServiceMonitor and
// Ingress points at an installed Service's port; the creation Jobs' service account exists in
// the controller's namespace.
func checkWiring(t testing.TB, objs []*unstructured.Unstructured) {
	t.Helper()
	has := map[string]bool{}
	for _, u := range objs {
		has[id(u)] = true
	}
	bound := map[string]bool{}
	for _, u := range objs {
		if k := u.GetKind(); k != "RoleBinding" && k != "ClusterRoleBinding" {
			continue
		}
		ref := u.Object["roleRef"].(map[string]any)
		role := ref["kind"].(string) + " " + ref["name"].(string)
		if ref["kind"] == "Role" {
			role = "Role " + u.GetNamespace() + "/" + ref["name"].(string)
		}
		bound[role] = true
		if !has[role] {
			t.Errorf("%s binds %s, which is not installed", id(u), role)
		}
		if isMetricsReader(ref["name"].(string)) {
			continue // its subjects are Prometheus' accounts, installed by others
		}
		for _, s := range u.Object["subjects"].([]any) {
			s := s.(map[string]any)
			if sa := fmt.Sprintf("ServiceAccount %s/%s", s["namespace"], s["name"]); s["kind"] != "ServiceAccount" || !has[sa] {
				t.Errorf("%s binds %v, which is no installed service account", id(u), s)
			}
		}
	}
	for _, u := range objs {
		if k := u.GetKind(); (k == "Role" || k == "ClusterRole") && !bound[id(u)] && !isMetricsReader(u.GetName()) {
			t.Errorf("%s is bound to nobody", id(u))
		}
	}
	deploys := deployments(t, objs)
	for _, d := range deploys {
		if sa := "ServiceAccount " + d.Namespace + "/" + d.Spec.Template.Spec.ServiceAccountName; !has[sa] {
			t.Errorf("Deployment %s runs as %s, which is not installed", d.Name, sa)
		}
		for _, arg := range d.Spec.Template.Spec.Containers[0].Args {
			if name, ok := strings.CutPrefix(arg, "--build-service-account="); ok && !has["ServiceAccount "+d.Namespace+"/"+name] {
				t.Errorf("Deployment %s: the creation Jobs' account %s is not installed in %s", d.Name, name, d.Namespace)
			}
		}
	}
	services := map[string]*corev1.Service{}
	for _, u := range objs {
		if u.GetKind() != "Service" {
			continue
		}
		svc := &corev1.Service{}
		if err := fromUnstructured(u, svc); err != nil {
			t.Fatal(err)
		}
		services[svc.Namespace+"/"+svc.Name] = svc
		var target *appsv1.Deployment
		for _, d := range deploys {
			if d.Namespace == svc.Namespace && labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(d.Spec.Template.Labels)) {
				target = d
			}
		}
		if target == nil {
			t.Errorf("%s selects no Deployment's pods", id(u))
			continue
		}
		for _, p := range svc.Spec.Ports {
			if !slices.ContainsFunc(target.Spec.Template.Spec.Containers[0].Ports, func(cp corev1.ContainerPort) bool { return cp.Name == p.TargetPort.StrVal }) {
				t.Errorf("%s targets port %q, which Deployment %s does not name", id(u), p.TargetPort.String(), target.Name)
			}
		}
	}
	hasPort := func(svc *corev1.Service, port string) bool {
		return slices.ContainsFunc(svc.Spec.Ports, func(p corev1.ServicePort) bool { return p.Name == port })
	}
	for _, u := range objs {
		switch u.GetKind() {
		case "ServiceMonitor":
			sel, _, _ := unstructured.NestedStringMap(u.Object, "spec", "selector", "matchLabels")
			endpoints, _, _ := unstructured.NestedSlice(u.Object, "spec", "endpoints")
			matched := false
			for _, svc := range services {
				if svc.Namespace == u.GetNamespace() && labels.SelectorFromSet(sel).Matches(labels.Set(svc.Labels)) {
					matched = true
					for _, e := range endpoints {
						if port := e.(map[string]any)["port"].(string); !hasPort(svc, port) {
							t.Errorf("%s scrapes port %q, which Service %s does not have", id(u), port, svc.Name)
						}
					}
				}
			}
			if !matched {
				t.Errorf("%s selects no Service", id(u))
			}
		case "Ingress":
			rules, _, _ := unstructured.NestedSlice(u.Object, "spec", "rules")
			for _, r := range rules {
				paths, _, _ := unstructured.NestedSlice(r.(map[string]any), "http", "paths")
				for _, p := range paths {
					name, _, _ := unstructured.NestedString(p.(map[string]any), "backend", "service", "name")
					port, _, _ := unstructured.NestedString(p.(map[string]any), "backend", "service", "port", "name")
					if svc := services[u.GetNamespace()+"/"+name]; svc == nil || !hasPort(svc, port) {
						t.Errorf("%s routes to Service %s port %q, which is not installed", id(u), name, port)
					}
				}
			}
		}
	}
}

var (
	buildOnce   sync.Once
	binary      string
	errBuilding error
)

// releaseController builds the release-controller binary, once for all the tests.
func releaseController(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		binary = filepath.Join(tmp, "release-controller")
		errBuilding = testbinary.Build(binary)
	})
	if errBuilding != nil {
		t.Fatal(errBuilding)
	}
	return binary
}

// checkFlags runs the release-controller binary with each Deployment's args, and with a
// payload creation Job's command, plus --help: the binary refuses an unknown flag or a bad
// value, so the manifests pass only flags it has.
// isMetricsReader reports whether role is the ClusterRole granting /metrics, which the
// installer binds to Prometheus' service account (or nobody, until it scrapes).
func isMetricsReader(role string) bool {
	return strings.HasSuffix(role, "-metrics-reader")
}

func checkFlags(t testing.TB, objs []*unstructured.Unstructured) {
	t.Helper()
	bin := releaseController(t)
	run := func(what string, args []string) {
		out, err := exec.Command(bin, append(slices.Clone(args), "--help")...).CombinedOutput()
		if err != nil {
			t.Errorf("%s: release-controller %s: %v\n%s", what, strings.Join(args, " "), err, out)
		}
	}
	for name, d := range deployments(t, objs) {
		run("Deployment "+name, d.Spec.Template.Spec.Containers[0].Args)
	}
	payload := &v1alpha1.ReleasePayload{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "4.15.0-2026-11-22-093000"}}
	job := stream.NewCreationJob(payload, "release-controller", "release-controller-build")
	command := job.Spec.Template.Spec.Containers[0].Command
	if command[0] != "release-controller" {
		t.Fatalf("the creation Job runs %v, not the image's release-controller", command)
	}
	run("the creation Job", command[1:])
}

// checkPodSecurity creates a Pod from each Deployment's template, and from a payload creation
// Job's as the stream controller builds it, in a new namespace enforcing the restricted Pod
// Security Standard, and in the Deployment's own namespace; each must be admitted. A pod
// without the security context must be refused, so the check is known to bite.
func checkPodSecurity(t testing.TB, objs []*unstructured.Unstructured) {
	t.Helper()
	ctx := context.Background()
	ns := createNamespace(t, "", true)
	deploys := deployments(t, objs)
	if len(deploys) == 0 {
		t.Fatal("no Deployments")
	}
	names := make([]string, 0, len(deploys))
	for name := range deploys {
		names = append(names, name)
	}
	slices.Sort(names)

	// The control: the first template without its security contexts is refused.
	bare := deploys[names[0]].Spec.Template.DeepCopy()
	bare.Spec.SecurityContext = nil
	for i := range bare.Spec.Containers {
		bare.Spec.Containers[i].SecurityContext = nil
	}
	err := createPod(ctx, ns, "unhardened", *bare)
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "violates PodSecurity") {
		t.Fatalf("a pod without security context: %v, want it forbidden by PodSecurity restricted", err)
	}

	var image string
	for _, name := range names {
		d := deploys[name]
		image = d.Spec.Template.Spec.Containers[0].Image
		if err := createPod(ctx, ns, name, d.Spec.Template); err != nil {
			t.Errorf("a pod of Deployment %s in a restricted namespace: %v", name, err)
		}
	}

	// The creation Job of a payload, as the stream controller makes it.
	payload := &v1alpha1.ReleasePayload{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "4.15.0-0.nightly-2026-11-22-093000", UID: "uid"},
		Spec:       v1alpha1.ReleasePayloadSpec{PayloadCoordinates: v1alpha1.PayloadCoordinates{Stream: "4.15.0-0.nightly", Tag: "4.15.0-0.nightly-2026-11-22-093000"}},
	}
	job := stream.NewCreationJob(payload, image, "release-controller-build")
	if err := createPod(ctx, ns, "creation-job", job.Spec.Template); err != nil {
		t.Errorf("a pod of a payload creation Job in a restricted namespace: %v", err)
	}
}

// checkOwnImage plays the kubelet for a pod of the controller's Deployment in its namespace
// (its status names the image by digest) and has the controller's service account resolve the
// creation Jobs' image as `release-controller controller` does without --build-image; the API
// server's account, which may not read pods, fails clearly.
func checkOwnImage(t testing.TB, d *appsv1.Deployment, apiAccount, want string) {
	t.Helper()
	ctx := context.Background()
	pod := runningPod(t, d)

	// What the downward API gives the container.
	t.Setenv("POD_NAMESPACE", d.Namespace)
	t.Setenv("POD_NAME", pod.Name)
	got, err := manager.ResolveBuildImage(ctx, as(t, d.Namespace, d.Spec.Template.Spec.ServiceAccountName), "")
	if err != nil || got != want {
		t.Errorf("the controller's account resolves the build image to %q, %v; want %q", got, err, want)
	}
	if _, err := manager.ResolveBuildImage(ctx, as(t, d.Namespace, apiAccount), ""); err == nil || !apierrors.IsForbidden(err) {
		t.Errorf("the API server's account resolved the build image (%v); it may not read pods", err)
	}
}

// runningPod creates a Pod of the Deployment d in its namespace and writes the status a
// kubelet would once its containers run: the image pulled by digest.
func runningPod(t testing.TB, d *appsv1.Deployment) *corev1.Pod {
	t.Helper()
	ctx := context.Background()
	pod, err := createPodNamed(ctx, d.Namespace, d.Name+"-7d9f8b6c5d-", d.Spec.Template)
	if err != nil {
		t.Fatalf("creating a pod of %s: %v", d.Name, err)
	}
	for _, c := range pod.Spec.Containers {
		pod.Status.ContainerStatuses = append(pod.Status.ContainerStatuses, corev1.ContainerStatus{
			Name: c.Name, Image: c.Image, ImageID: "docker.io/library/release-controller@" + digest, Ready: true,
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.Now()}},
		})
	}
	pod.Status.Phase = corev1.PodRunning
	if err := admin.Status().Update(ctx, pod); err != nil {
		t.Fatalf("writing the status of pod %s: %v", pod.Name, err)
	}
	return pod
}

// as is a client acting as the service account namespace/name.
func as(t testing.TB, namespace, name string) client.Client {
	t.Helper()
	c := rest.CopyConfig(cfg)
	c.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:" + namespace + ":" + name}
	cl, err := client.New(c, client.Options{Scheme: admin.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

// createPod creates a Pod of template in namespace, named name or, when name ends with "-",
// name and a generated suffix, as a ReplicaSet names its pods. envtest runs no kubelet: the
// Pod is only admitted and stored.
func createPod(ctx context.Context, namespace, name string, template corev1.PodTemplateSpec) error {
	_, err := createPodNamed(ctx, namespace, name, template)
	return err
}

func createPodNamed(ctx context.Context, namespace, name string, template corev1.PodTemplateSpec) (*corev1.Pod, error) {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Labels: template.Labels, Annotations: template.Annotations},
		Spec:       *template.Spec.DeepCopy(),
	}
	if strings.HasSuffix(name, "-") {
		pod.GenerateName = name
	} else {
		pod.Name = name
	}
	return pod, admin.Create(ctx, pod)
}

// createNamespace creates a namespace (name "" for a generated one), enforcing the restricted
// Pod Security Standard when restricted; an existing one is fine.
func createNamespace(t testing.TB, name string, restricted bool) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if name == "" {
		ns.GenerateName = "restricted-"
	}
	if restricted {
		ns.Labels = map[string]string{"pod-security.kubernetes.io/enforce": "restricted", "pod-security.kubernetes.io/enforce-version": "latest"}
	}
	if err := admin.Create(context.Background(), ns); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("creating namespace %q: %v", name, err)
	}
	return ns.Name
}

// installServiceMonitorCRD installs a minimal monitoring.coreos.com/v1 ServiceMonitor CRD (the
// Prometheus Operator's is not on envtest's API server): enough to apply ServiceMonitors.
func installServiceMonitorCRD(t testing.TB) {
	t.Helper()
	preserve := true
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "servicemonitors.monitoring.coreos.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "monitoring.coreos.com",
			Names: apiextensionsv1.CustomResourceDefinitionNames{Kind: "ServiceMonitor", ListKind: "ServiceMonitorList", Plural: "servicemonitors", Singular: "servicemonitor"},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object",
					Properties: map[string]apiextensionsv1.JSONSchemaProps{
						"spec": {Type: "object", XPreserveUnknownFields: &preserve},
					},
				}},
			}},
		},
	}
	ctx := context.Background()
	if err := admin.Create(ctx, crd); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	u.SetKind("CustomResourceDefinition")
	u.SetName(crd.Name)
	if err := waitEstablished(ctx, []*unstructured.Unstructured{u}); err != nil {
		t.Fatal(err)
	}
}

func isClusterScoped(u *unstructured.Unstructured) bool {
	switch u.GetKind() {
	case "Namespace", "CustomResourceDefinition", "ClusterRole", "ClusterRoleBinding", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding":
		return true
	}
	return false
}

func mustRead(t testing.TB, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}
