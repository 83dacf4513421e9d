//go:build !unit

package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/testenv"
	"github.com/release-controller/release-controller/internal/version"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	testenv.Main(m, &env, nil)
}

func TestVersion(t *testing.T) {
	var out bytes.Buffer
	cmd := newRootCommand()
	cmd.SetOut(&out)
	cmd.SetArgs([]string{"version"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(out.String()); got != version.Version {
		t.Errorf("version printed %q, want %q", got, version.Version)
	}
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// TestControllerCommand runs `release-controller controller` as a user would, against a
// kubeconfig, and checks its probes, its metrics and that it reconciles payloads.
func TestControllerCommand(t *testing.T) {
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := env.WriteKubeconfig(kubeconfig); err != nil {
		t.Fatal(err)
	}
	metricsAddr, probeAddr := freeAddr(t), freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		cmd := newRootCommand()
		cmd.SetArgs([]string{"controller", "--kubeconfig", kubeconfig, "--metrics-bind-address", metricsAddr,
			"--health-probe-bind-address", probeAddr, "--leader-election-namespace", "default", "--zap-log-level", "error",
			"--build-image", "registry.example.com/release-controller:test"})
		done <- cmd.ExecuteContext(ctx)
	}()
	g := NewWithT(t)
	get := func(url string) (int, string, error) {
		resp, err := http.Get(url)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body), err
	}
	g.Eventually(func(g Gomega) {
		code, _, err := get("http://" + probeAddr + "/readyz")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(code).To(Equal(http.StatusOK))
	}).WithTimeout(time.Minute).Should(Succeed())
	code, _, err := get("http://" + probeAddr + "/healthz")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(code).To(Equal(http.StatusOK))

	// The controller holds the lease and reconciles a payload.
	ns := env.Namespace(t)
	tag := "1.0.0-2026-11-22-093000"
	payload := &v1alpha1.ReleasePayload{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: tag},
		Spec: v1alpha1.ReleasePayloadSpec{
			PayloadCoordinates:    v1alpha1.PayloadCoordinates{Stream: "s", Tag: tag},
			Components:            []v1alpha1.PinnedComponent{{Name: "api", Image: "registry.example.com/api@sha256:" + fmt.Sprintf("%064d", 1)}},
			PayloadCreationConfig: v1alpha1.PayloadCreationConfig{Repository: "registry.example.com/release"},
		},
	}
	g.Expect(env.Client.Create(ctx, payload)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(payload), payload)).To(Succeed())
		g.Expect(payload.Status.Phase).To(Equal(v1alpha1.PhasePending))
	}).WithTimeout(time.Minute).Should(Succeed())

	g.Eventually(func(g Gomega) {
		code, body, err := get("http://" + metricsAddr + "/metrics")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(code).To(Equal(http.StatusOK))
		g.Expect(body).To(ContainSubstring(`controller_runtime_reconcile_total{controller="releasepayload",result="success"}`))
	}).WithTimeout(time.Minute).Should(Succeed())

	cancel()
	g.Eventually(done).WithTimeout(time.Minute).Should(Receive(BeNil()))
}

func TestControllerCommandReportsBadKubeconfig(t *testing.T) {
	cmd := newRootCommand()
	cmd.SetOut(io.Discard)
	cmd.SetErr(io.Discard)
	cmd.SetArgs([]string{"controller", "--kubeconfig", filepath.Join(t.TempDir(), "missing")})
	err := cmd.Execute()
	if err == nil || !strings.Contains(err.Error(), "loading --kubeconfig") {
		t.Errorf("error = %v, want one about loading the kubeconfig", err)
	}
}

// Outside a pod there is no image of its own to default to: the controller refuses to start
// without --build-image rather than create creation jobs no node can pull.
func TestControllerCommandNeedsBuildImageOutsideAPod(t *testing.T) {
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := env.WriteKubeconfig(kubeconfig); err != nil {
		t.Fatal(err)
	}
	t.Setenv("POD_NAME", "")
	t.Setenv("POD_NAMESPACE", "")
	cmd := newRootCommand()
	cmd.SetOut(io.Discard)
	cmd.SetErr(io.Discard)
	cmd.SetArgs([]string{"controller", "--kubeconfig", kubeconfig, "--metrics-bind-address", "0", "--health-probe-bind-address", "0"})
	err := cmd.Execute()
	if err == nil || !strings.Contains(err.Error(), "--build-image is required outside a pod") {
		t.Errorf("error = %v, want one asking for --build-image", err)
	}
}
