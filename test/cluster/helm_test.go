//go:build !unit

package cluster

import (
	"context"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/kube"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/localcluster"
)

const (
	// helmNamespace is the Helm release's namespace; helmTeam the stream's.
	helmNamespace = "rc-helm"
	helmTeam      = "team-b"
)

// TestHelmInstallOnARealNode installs the chart as README says (helm install with
// image.repository and image.tag, here through Helm's own install action) with the registry
// Secret (registryAuth.secretName) and a stream's namespace for the creation Jobs' account
// (build.extraNamespaces), and checks that both Deployments run and that a payload is built and
// verified in pods to Accepted.
func TestHelmInstallOnARealNode(t *testing.T) {
	ctx := t.Context()
	reg := newRegistryClient(t)
	rcImage := releaseControllerImage(t, reg)
	host := localcluster.RegistryHost()

	createNamespace(t, ctx, helmNamespace)
	createNamespace(t, ctx, helmTeam)
	createRegistrySecret(t, ctx, helmNamespace, registrySecret)
	createRegistrySecret(t, ctx, helmTeam, registrySecret)

	chart, err := loader.Load(filepath.Join(root, "charts", "release-controller"))
	if err != nil {
		t.Fatal(err)
	}
	flags := genericclioptions.NewConfigFlags(false)
	kubeconfig, namespace := paths.Kubeconfig(), helmNamespace
	flags.KubeConfig, flags.Namespace = &kubeconfig, &namespace
	config := action.NewConfiguration(action.ConfigurationSetLogger(slog.DiscardHandler))
	if err := config.Init(flags, helmNamespace, "secret"); err != nil {
		t.Fatal(err)
	}
	install := action.NewInstall(config)
	install.ReleaseName, install.Namespace = "release-controller", helmNamespace
	// As `helm install` without --wait: the test waits for the Deployments itself.
	install.WaitStrategy, install.Timeout = kube.HookOnlyStrategy, 3*time.Minute
	values := map[string]any{
		"image":        map[string]any{"repository": imageRepository, "tag": imageTag},
		"registryAuth": map[string]any{"secretName": registrySecret},
		"build":        map[string]any{"extraNamespaces": []any{helmTeam}},
	}
	if _, err := install.RunWithContext(ctx, chart, values); err != nil {
		t.Fatalf("helm install: %v", err)
	}
	t.Cleanup(func() {
		dump(t, helmNamespace, helmTeam)
		uninstallHelm(t, config)
	})
	for _, d := range []string{"release-controller-controller", "release-controller-api"} {
		eventually(t, 3*time.Minute, "Deployment "+d+" available", func() (bool, string) {
			return deploymentAvailable(ctx, helmNamespace, d)
		})
	}

	operator := reg.push(t, helmTeam+"/operator:1", pauseImage(t, map[string]string{"org.opencontainers.image.revision": "o1"}))
	stream := &v1alpha1.ReleaseStream{
		ObjectMeta: metav1.ObjectMeta{Namespace: helmTeam, Name: streamName},
		Spec: v1alpha1.ReleaseStreamSpec{
			TagPrefix:         "2.0.0-0.helm",
			PayloadRepository: host + "/" + helmTeam + "/release",
			Components:        []v1alpha1.ComponentSource{{Name: "operator", Image: operator}},
			Verification:      []v1alpha1.Verification{verification("info", rcImage, "release-controller", "payload", "info", "$(RELEASE_IMAGE_LATEST)")},
		},
	}
	mustCreate(t, ctx, stream)
	var p v1alpha1.ReleasePayload
	eventually(t, 4*time.Minute, "a payload of the Helm install Accepted", func() (bool, string) {
		var list v1alpha1.ReleasePayloadList
		if err := admin.List(ctx, &list, client.InNamespace(helmTeam)); err != nil || len(list.Items) == 0 {
			return false, "no payload yet"
		}
		p = list.Items[0]
		if p.Status.Phase == v1alpha1.PhaseRejected || p.Status.Phase == v1alpha1.PhaseFailed {
			t.Fatalf("payload %s is %s: %s", p.Name, p.Status.Phase, conditionSummary(p.Status.Conditions))
		}
		return p.Status.Phase == v1alpha1.PhaseAccepted, string(p.Status.Phase) + ": " + conditionSummary(p.Status.Conditions)
	})
	// The creation Job ran as the chart's build account in the stream's namespace.
	pods := jobPodsIn(t, ctx, helmTeam, creationJob(p.Name))
	if len(pods) != 1 || pods[0].Spec.ServiceAccountName != "release-controller-build" || pods[0].Status.Phase != corev1.PodSucceeded {
		t.Errorf("creation job pods %+v: want one that succeeded as release-controller-build", pods)
	}
}

// uninstallHelm uninstalls the release, deletes the CRDs Helm keeps, and the namespaces.
func uninstallHelm(t *testing.T, config *action.Configuration) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	uninstall := action.NewUninstall(config)
	uninstall.WaitStrategy = kube.HookOnlyStrategy
	if _, err := uninstall.Run("release-controller"); err != nil {
		t.Errorf("helm uninstall: %v", err)
	}
	if out, err := kubectl(ctx, "delete", "-f", filepath.Join(root, "charts", "release-controller", "crds"), "--ignore-not-found", "--wait=true", "--timeout=120s"); err != nil {
		t.Errorf("deleting the CRDs: %v\n%s", err, out)
	}
	if out, err := kubectl(ctx, "delete", "namespace", helmNamespace, helmTeam, "--ignore-not-found", "--wait=true", "--timeout=120s"); err != nil {
		t.Errorf("deleting the namespaces: %v\n%s", err, out)
	}
}
