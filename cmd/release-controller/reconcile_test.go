//go:build !unit

package main

import (
	"context"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/manager"
)

// TestReconcileCommand runs `release-controller reconcile` against the controllers: it waits for
// the reconcile it asked for and says how it went, refuses a suspended stream, and fails on a
// stream that is not Ready.
func TestReconcileCommand(t *testing.T) {
	// Other tests of the package ran the controller command in this process: the controllers'
	// names are taken.
	stop, err := env.StartControllers(manager.Options{MetricsAddr: "0", ProbeAddr: "0",
		BuildImage: "registry.example.com/release-controller:test", SkipControllerNameValidation: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	reg := startRegistry(t)
	ns := env.Namespace(t)
	kubeconfig := writeKubeconfig(t)
	ctx := context.Background()
	newStream := func(name, image string, suspend bool) *v1alpha1.ReleaseStream {
		s := &v1alpha1.ReleaseStream{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: v1alpha1.ReleaseStreamSpec{
				TagPrefix:         "4.15.0-0." + name,
				PayloadRepository: reg.Addr() + "/release/" + name,
				Components:        []v1alpha1.ComponentSource{{Name: "api", Image: image}},
				Suspend:           suspend,
			},
		}
		if err := env.Client.Create(ctx, s); err != nil {
			t.Fatal(err)
		}
		return s
	}

	good := newStream("good", strings.Split(pushComponent(t, reg, "api", "abc"), "@")[0]+":latest", false)
	out, err := run(t, "reconcile", "stream", ns+"/good", "--kubeconfig", kubeconfig, "--timeout", "2m")
	if err != nil {
		t.Fatalf("reconcile of a working stream: %v\n%s", err, out)
	}
	if !strings.Contains(out, "► asking for a reconcile of stream "+ns+"/good") || !strings.Contains(out, "✔ stream "+ns+"/good reconciled: ") {
		t.Errorf("reconcile printed:\n%s", out)
	}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(good), good); err != nil {
		t.Fatal(err)
	}
	asked := good.Annotations[v1alpha1.AnnotationReconcileRequestedAt]
	if asked == "" || good.Status.LastHandledReconcileAt != asked {
		t.Errorf("annotation %q, status.lastHandledReconcileAt %q", asked, good.Status.LastHandledReconcileAt)
	}
	if _, err := time.Parse(time.RFC3339Nano, asked); err != nil {
		t.Errorf("the requested-at annotation is no time: %v", err)
	}

	// Its component cannot be read: the reconcile happens and says why the stream is not Ready.
	newStream("broken", "127.0.0.1:1/product/api:latest", false)
	out, err = run(t, "reconcile", "stream", "broken", "-n", ns, "--kubeconfig", kubeconfig, "--timeout", "2m")
	if err == nil || !strings.Contains(err.Error(), "not ready: "+v1alpha1.ReasonComponentsUnresolved) {
		t.Errorf("reconcile of a stream whose component cannot be read: %v\n%s", err, out)
	}

	newStream("suspended", "127.0.0.1:1/product/api:latest", true)
	if out, err := run(t, "reconcile", "stream", ns+"/suspended", "--kubeconfig", kubeconfig); err == nil || !strings.Contains(err.Error(), "is suspended") {
		t.Errorf("reconcile of a suspended stream: %v\n%s", err, out)
	}
	if out, err := run(t, "reconcile", "stream", ns+"/missing", "--kubeconfig", kubeconfig); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Errorf("reconcile of a missing stream: %v\n%s", err, out)
	}

	// A pipeline whose one target runs web at 1.0.0, rolled out.
	labels := map[string]string{"app": "web"}
	web := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "registry.example.com/web:1.0.0"}}}},
		},
	}
	if err := env.Client.Create(ctx, web); err != nil {
		t.Fatal(err)
	}
	web.Status = appsv1.DeploymentStatus{ObservedGeneration: web.Generation, Replicas: 1, UpdatedReplicas: 1, ReadyReplicas: 1, AvailableReplicas: 1}
	if err := env.Client.Status().Update(ctx, web); err != nil {
		t.Fatal(err)
	}
	pipeline := &v1alpha1.Pipeline{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
		Spec: v1alpha1.PipelineSpec{
			AppRef:       v1alpha1.AppReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", Container: "web"},
			Environments: []v1alpha1.Environment{{Name: "dev", Targets: []v1alpha1.Target{{Namespace: ns}}}},
		},
	}
	if err := env.Client.Create(ctx, pipeline); err != nil {
		t.Fatal(err)
	}
	out, err = run(t, "reconcile", "pipeline", ns+"/web", "--kubeconfig", kubeconfig, "--timeout", "2m")
	if err != nil || !strings.Contains(out, "✔ pipeline "+ns+"/web reconciled: "+v1alpha1.ReasonTargetsObserved) {
		t.Errorf("reconcile of a pipeline: %v\n%s", err, out)
	}
}
