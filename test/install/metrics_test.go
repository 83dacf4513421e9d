//go:build !unit

package install

import (
	"context"
	"crypto/x509"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/release-controller/release-controller/internal/server/servertest"
)

// secureMetricsValues are the chart's values of TestHelmChart's "secure metrics" case: /metrics
// behind authorization, the controller's with the certificate of Secret metrics-tls, the API
// server serving HTTPS with Secret api-tls, and monitoring/prometheus allowed to scrape.
func secureMetricsValues(repo string) map[string]any {
	return map[string]any{
		"image": map[string]any{"repository": repo},
		"metrics": map[string]any{"secure": true, "certSecret": "metrics-tls",
			"readers": []any{map[string]any{"name": "prometheus", "namespace": "monitoring"}}},
		"api":            map[string]any{"tls": map[string]any{"secretName": "api-tls"}},
		"serviceMonitor": map[string]any{"enabled": true},
	}
}

// checkSecureMetricsObjects checks what metrics.secure and api.tls render: the flags, the
// Secret volumes, HTTPS probes, and ServiceMonitors scraping over HTTPS with Prometheus' token.
func checkSecureMetricsObjects(t *testing.T, objs []*unstructured.Unstructured, fullname string) {
	t.Helper()
	deploys := deployments(t, objs)
	checkControllerArgs(t, deploys[fullname+"-controller"], "--metrics-secure", "--metrics-cert-dir=/etc/release-controller/metrics-tls")
	api := deploys[fullname+"-api"].Spec.Template.Spec.Containers[0]
	for _, arg := range []string{"--metrics-auth", "--tls-cert-file=/etc/release-controller/tls/tls.crt", "--tls-key-file=/etc/release-controller/tls/tls.key"} {
		if !slices.Contains(api.Args, arg) {
			t.Errorf("API server args %v lack %s", api.Args, arg)
		}
	}
	for _, probe := range []*corev1.Probe{api.LivenessProbe, api.ReadinessProbe} {
		if probe.HTTPGet.Scheme != corev1.URISchemeHTTPS {
			t.Errorf("an API server probe asks over %q, want HTTPS", probe.HTTPGet.Scheme)
		}
	}
	for component, https := range map[string]bool{"controller": true, "api": true} {
		sm := find(t, objs, "ServiceMonitor", fullname+"-"+component)
		endpoint := sm.Object["spec"].(map[string]any)["endpoints"].([]any)[0].(map[string]any)
		if endpoint["bearerTokenFile"] != "/var/run/secrets/kubernetes.io/serviceaccount/token" {
			t.Errorf("ServiceMonitor %s scrapes without Prometheus' token: %v", sm.GetName(), endpoint)
		}
		if https && endpoint["scheme"] != "https" {
			t.Errorf("ServiceMonitor %s scrapes over %v, want https", sm.GetName(), endpoint["scheme"])
		}
	}
	binding := find(t, objs, "ClusterRoleBinding", fullname+"-metrics-reader")
	if got := fmt.Sprint(binding.Object["subjects"]); got != "[map[kind:ServiceAccount name:prometheus namespace:monitoring]]" {
		t.Errorf("the metrics reader is bound to %s, want monitoring/prometheus", got)
	}
}

// runSecureMetrics runs the controller and the API server as the Deployments of
// secureMetricsValues say (their TLS Secrets made here, with certificates for 127.0.0.1), as
// their own service accounts, and scrapes each one's /metrics over HTTPS: refused without a
// token (401) and with the token of an account the reader role is not bound to (403),
// served to monitoring/prometheus (200). The controller can only judge tokens with the
// reviews the chart grants it; neither may log a forbidden request of its own.
func runSecureMetrics(t *testing.T, controller, api *appsv1.Deployment) {
	t.Helper()
	ctx := context.Background()
	certs := map[string]*x509.Certificate{}
	for _, name := range []string{"metrics-tls", "api-tls"} {
		dir := t.TempDir()
		certs[name] = servertest.WriteCert(t, dir, name)
		secret := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: controller.Namespace, Name: name},
			Type:       corev1.SecretTypeTLS,
			Data: map[string][]byte{
				corev1.TLSCertKey:       mustRead(t, filepath.Join(dir, servertest.CertFile)),
				corev1.TLSPrivateKeyKey: mustRead(t, filepath.Join(dir, servertest.KeyFile)),
			},
		}
		if err := admin.Create(ctx, secret); err != nil {
			t.Fatal(err)
		}
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	tokenOf := func(namespace, name string) string {
		if err := admin.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}); err != nil {
			t.Fatal(err)
		}
		req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}
		tr, err := cs.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, name, req, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return tr.Status.Token
	}
	scrapes := []struct {
		who, token string
		want       int
	}{
		{who: "no token", want: http.StatusUnauthorized},
		{who: "an account without the reader role", token: tokenOf(controller.Namespace, "stranger"), want: http.StatusForbidden},
		{who: "monitoring/prometheus", token: tokenOf("monitoring", "prometheus"), want: http.StatusOK},
	}
	scrape := func(t *testing.T, c *http.Client, url string) {
		t.Helper()
		for _, s := range scrapes {
			req, err := http.NewRequest(http.MethodGet, url, nil)
			if err != nil {
				t.Fatal(err)
			}
			if s.token != "" {
				req.Header.Set("Authorization", "Bearer "+s.token)
			}
			resp, err := c.Do(req)
			if err != nil {
				t.Fatalf("%s as %s: %v", url, s.who, err)
			}
			_ = resp.Body.Close()
			if resp.StatusCode != s.want {
				t.Errorf("%s as %s: %s, want %d", url, s.who, resp.Status, s.want)
			}
		}
	}

	t.Run("controller", func(t *testing.T) {
		probes, metrics := freeAddr(t), freeAddr(t)
		p := startAsDeployment(t, controller, "--health-probe-bind-address="+probes, "--metrics-bind-address="+metrics)
		waitOK(t, p, http.DefaultClient, "http://"+probes+"/readyz")
		scrape(t, servertest.TrustingClient(t, certs["metrics-tls"], false), "https://"+metrics+"/metrics")
		stopAndCheckLog(t, p)
	})
	t.Run("api", func(t *testing.T) {
		listen := freeAddr(t)
		p := startAsDeployment(t, api, "--listen="+listen)
		c := servertest.TrustingClient(t, certs["api-tls"], false)
		waitOK(t, p, c, "https://"+listen+"/healthz")
		scrape(t, c, "https://"+listen+"/metrics")
		stopAndCheckLog(t, p)
	})
}
