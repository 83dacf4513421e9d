//go:build !unit

package cluster

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/jobcontract"
	"github.com/release-controller/release-controller/internal/localcluster"
	"github.com/release-controller/release-controller/internal/manager"
	"github.com/release-controller/release-controller/internal/pipeline"
	"github.com/release-controller/release-controller/internal/releaselog"
)

// rollbackNamespace holds the rollback test's app, its pipeline and its verification Jobs.
const rollbackNamespace = "team-rollback"

// TestRollbackOnARealNode: a pipeline verifies a real Deployment after each rollout with a Job
// that gets the app through its Service, and rolls it back when that fails. Revision v1 of the
// app answers 200 and passes; v2 runs (its pod is ready) but answers 503, so the verification
// Job of v2 fails in a pod, and the pipeline patches the Deployment back to v1: the Deployment
// controller replaces the pod, and the pod that runs is v1's image again. The pipeline
// controller runs in the test, against the cluster, with the CRDs of config/crd/bases; the
// Deployment, Job, scheduler and kubelet are the cluster's.
func TestRollbackOnARealNode(t *testing.T) {
	ctx := t.Context()
	reg := newRegistryClient(t)
	installCRDs(t, ctx)
	createNamespace(t, ctx, rollbackNamespace)
	createRegistrySecret(t, ctx, rollbackNamespace, registrySecret)
	t.Cleanup(func() {
		dump(t, rollbackNamespace)
		cleanup, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if out, err := kubectl(cleanup, "delete", "namespace", rollbackNamespace, "--ignore-not-found", "--wait=true", "--timeout=90s"); err != nil {
			t.Errorf("deleting namespace %s: %v\n%s", rollbackNamespace, err, out)
		}
	})

	// The app's two revisions and the verification's image: one static program.
	smoke := filepath.Join(tmp, "smoke")
	build := exec.Command("go", "build", "-o", smoke, "./test/cluster/testdata/smoke")
	build.Dir, build.Env = root, append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build smoke: %v\n%s", err, out)
	}
	repo := localcluster.RegistryHost() + "/" + rollbackNamespace
	good := reg.push(t, rollbackNamespace+"/web:v1", smokeImage(t, smoke, "serve", "-status", "200"))
	reg.push(t, rollbackNamespace+"/web:v2", smokeImage(t, smoke, "serve", "-status", "503"))
	checker := reg.push(t, rollbackNamespace+"/smoke:1", smokeImage(t, smoke))

	// The pipeline's account (the namespace's default) may read and patch the app and create
	// and delete its verification Jobs, as docs/pipelines.md says.
	for _, args := range [][]string{
		{"create", "role", "pipeline", "--verb=get,patch", "--resource=deployments.apps"},
		{"create", "role", "verification", "--verb=create,delete", "--resource=jobs.batch"},
		{"create", "rolebinding", "pipeline", "--role=pipeline", "--serviceaccount=" + rollbackNamespace + ":default"},
		{"create", "rolebinding", "verification", "--role=verification", "--serviceaccount=" + rollbackNamespace + ":default"},
	} {
		if out, err := kubectl(ctx, append([]string{"-n", rollbackNamespace}, args...)...); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
	}
	// The app at v1, behind a Service the verification gets it through.
	labels := map[string]string{"app": "web"}
	mustCreate(t, ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: rollbackNamespace, Name: "web"},
		Spec:       corev1.ServiceSpec{Selector: labels, Ports: []corev1.ServicePort{{Port: 8080, TargetPort: intstr.FromInt32(8080)}}},
	})
	mustCreate(t, ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: rollbackNamespace, Name: "web"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					ImagePullSecrets:              []corev1.LocalObjectReference{{Name: registrySecret}},
					TerminationGracePeriodSeconds: ptr.To[int64](1),
					Containers: []corev1.Container{{Name: "app", Image: repo + "/web:v1", SecurityContext: restricted(),
						Ports: []corev1.ContainerPort{{ContainerPort: 8080}}}},
				},
			},
		},
	})
	eventually(t, 3*time.Minute, "the app available at v1", func() (bool, string) {
		return deploymentAvailable(ctx, rollbackNamespace, "web")
	})

	startPipelineController(t, ctx)
	check := v1alpha1.Verification{Name: "smoke", Type: v1alpha1.Blocking, Job: &v1alpha1.JobBackend{Template: batchv1.JobTemplateSpec{
		Spec: batchv1.JobSpec{
			BackoffLimit: ptr.To[int32](0),
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				RestartPolicy:    corev1.RestartPolicyNever,
				ImagePullSecrets: []corev1.LocalObjectReference{{Name: registrySecret}},
				Containers: []corev1.Container{{Name: "smoke", Image: checker, SecurityContext: restricted(),
					Command: []string{"/pause", "check", "-url", "http://$(WEB_SERVICE_HOST):$(WEB_SERVICE_PORT)/"}}},
			}},
		},
	}}}
	mustCreate(t, ctx, &v1alpha1.Pipeline{
		ObjectMeta: metav1.ObjectMeta{Namespace: rollbackNamespace, Name: "web"},
		Spec: v1alpha1.PipelineSpec{
			AppRef: v1alpha1.AppReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", Container: "app"},
			Environments: []v1alpha1.Environment{{Name: "dev", Targets: []v1alpha1.Target{{Namespace: rollbackNamespace}},
				Verification: &v1alpha1.EnvironmentVerification{Verifications: []v1alpha1.Verification{check}, OnFailure: v1alpha1.OnFailureRollback}}},
		},
	})
	waitDev(t, ctx, "v1 verified", func(e v1alpha1.EnvironmentStatus) bool { return e.LastVerified == "v1" })

	// v2 is rolled out (as a CI system would): its pod runs, but its verification fails.
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var d appsv1.Deployment
		if err := admin.Get(ctx, client.ObjectKey{Namespace: rollbackNamespace, Name: "web"}, &d); err != nil {
			return err
		}
		d.Spec.Template.Spec.Containers[0].Image = repo + "/web:v2"
		return admin.Update(ctx, &d)
	}); err != nil {
		t.Fatal(err)
	}
	dev := waitDev(t, ctx, "rolled back from v2 to v1", func(e v1alpha1.EnvironmentStatus) bool {
		return e.LastRollback != nil && e.LastRollback.From == "v2" && e.LastRollback.To == "v1"
	})
	if v := dev.Verification; v == nil || v.Revision != "v2" || v.State != v1alpha1.JobFailure {
		t.Errorf("dev's verification %+v, want v2 failed", v)
	}
	failed := jobcontract.PipelineRun{PipelineNamespace: rollbackNamespace, Pipeline: "web", Environment: "dev", Revision: "v2", Verification: "smoke", Attempt: 1}.Name()
	pods := jobPodsIn(t, ctx, rollbackNamespace, failed)
	if len(pods) != 1 || pods[0].Status.Phase != corev1.PodFailed {
		t.Errorf("the pods of %s: %d, want one that failed", failed, len(pods))
	} else if logs, err := clientset.CoreV1().Pods(rollbackNamespace).GetLogs(pods[0].Name, &corev1.PodLogOptions{}).DoRaw(ctx); err != nil || !strings.Contains(string(logs), "503") {
		t.Errorf("the failed verification's log %q (%v), want the 503 it saw", logs, err)
	}

	// The Deployment controller rolls the patch out: the app's pod runs v1's image again.
	_, digest, _ := strings.Cut(good, "@")
	eventually(t, 3*time.Minute, "the app's pods running v1 again", func() (bool, string) {
		if ok, status := deploymentAvailable(ctx, rollbackNamespace, "web"); !ok {
			return false, status
		}
		list, err := clientset.CoreV1().Pods(rollbackNamespace).List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
		if err != nil {
			return false, err.Error()
		}
		var images []string
		for _, pod := range list.Items {
			if pod.DeletionTimestamp == nil && len(pod.Status.ContainerStatuses) == 1 {
				images = append(images, pod.Spec.Containers[0].Image+" "+pod.Status.ContainerStatuses[0].ImageID)
			}
		}
		return len(images) == 1 && strings.HasPrefix(images[0], repo+"/web:v1 ") && strings.HasSuffix(images[0], digest), fmt.Sprintf("pods run %q", images)
	})
	got := waitDev(t, ctx, "ready at v1", func(e v1alpha1.EnvironmentStatus) bool { return e.Ready && e.Revision == "v1" })
	var p v1alpha1.Pipeline
	if err := admin.Get(ctx, client.ObjectKey{Namespace: rollbackNamespace, Name: "web"}, &p); err != nil {
		t.Fatal(err)
	}
	if len(p.Status.Unpromotable) != 1 || p.Status.Unpromotable[0].Revision != "v2" || got.LastVerified != "v1" {
		t.Errorf("unpromotable %+v, last verified %q; want v2, v1", p.Status.Unpromotable, got.LastVerified)
	}
}

// smokeImage is the smoke program as an image whose command is args.
func smokeImage(t *testing.T, binary string, args ...string) v1.Image {
	t.Helper()
	img, err := localcluster.BinaryImage(binary, nil)
	if err != nil {
		t.Fatal(err)
	}
	config, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	config = config.DeepCopy()
	config.Config.Cmd = args
	if img, err = mutate.ConfigFile(img, config); err != nil {
		t.Fatal(err)
	}
	return img
}

// installCRDs applies config/crd/bases (once per cluster: an install of the flow tests deletes
// them at its end) and waits until they are served; they are deleted at the end.
func installCRDs(t *testing.T, ctx context.Context) {
	t.Helper()
	crds := filepath.Join(root, "config", "crd", "bases")
	if out, err := kubectl(ctx, "apply", "--server-side", "-f", crds); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if out, err := kubectl(ctx, "wait", "--for=condition=Established", "--timeout=60s", "-f", crds); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	t.Cleanup(func() {
		cleanup, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if out, err := kubectl(cleanup, "delete", "-f", crds, "--ignore-not-found", "--wait=true", "--timeout=90s"); err != nil {
			t.Errorf("deleting the CRDs: %v\n%s", err, out)
		}
	})
}

// startPipelineController runs the pipeline controller in the test, as the cluster's
// administrator with the pipelines acting as their namespaces' default accounts, until the test
// ends.
func startPipelineController(t *testing.T, ctx context.Context) {
	t.Helper()
	mgr, err := manager.New(cfg, manager.Options{MetricsAddr: "0", ProbeAddr: "0", SkipControllerNameValidation: true,
		ReleaseLog: releaselog.Options{Namespace: rollbackNamespace}})
	if err != nil {
		t.Fatal(err)
	}
	r := &pipeline.Reconciler{DefaultServiceAccount: "default",
		Log: releaselog.NewWriter(mgr.GetClient(), mgr.GetAPIReader(), releaselog.Options{Namespace: rollbackNamespace})}
	if err := r.SetupWithManager(ctx, mgr); err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- mgr.Start(runCtx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("the pipeline controller: %v", err)
		}
	})
}

// waitDev waits until the rollback test's pipeline says what ok wants of dev, and returns dev.
func waitDev(t *testing.T, ctx context.Context, what string, ok func(e v1alpha1.EnvironmentStatus) bool) v1alpha1.EnvironmentStatus {
	t.Helper()
	var dev v1alpha1.EnvironmentStatus
	eventually(t, 3*time.Minute, what, func() (bool, string) {
		var p v1alpha1.Pipeline
		if err := admin.Get(ctx, client.ObjectKey{Namespace: rollbackNamespace, Name: "web"}, &p); err != nil {
			return false, err.Error()
		}
		if len(p.Status.Environments) == 0 {
			return false, "no environment status"
		}
		dev = p.Status.Environments[0]
		v := "none"
		if dev.Verification != nil {
			v = fmt.Sprintf("%s %s", dev.Verification.Revision, dev.Verification.State)
		}
		return ok(dev), fmt.Sprintf("dev at %q ready=%v, verification %s, last verified %q", dev.Revision, dev.Ready, v, dev.LastVerified)
	})
	return dev
}
