//go:build !unit

package main

import (
	"context"
	"crypto/tls"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/release-controller/release-controller/internal/manager"
	"github.com/release-controller/release-controller/internal/server/servertest"
)

// metricsReader makes two service accounts, one a ClusterRole allows to get /metrics and one
// it does not, and returns their tokens once the API server applies the binding.
func metricsReader(t *testing.T) (allowed, denied string) {
	t.Helper()
	ctx := context.Background()
	ns := env.Namespace(t)
	cs := kubernetes.NewForConfigOrDie(env.Config)
	token := func(name string) string {
		if _, err := cs.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		tr, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return tr.Status.Token
	}
	allowed, denied = token("scraper"), token("nobody")
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "metrics-reader-" + ns},
		Rules:      []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}},
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "metrics-reader-" + ns},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: "scraper"}},
	}
	for _, obj := range []client.Object{role, binding} {
		if err := env.Client.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = env.Client.Delete(context.Background(), obj) })
	}
	NewWithT(t).Eventually(func(g Gomega) {
		sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User:                  "system:serviceaccount:" + ns + ":scraper",
			Groups:                []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"},
			NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: "/metrics", Verb: "get"},
		}}
		g.Expect(env.Client.Create(ctx, sar)).To(Succeed())
		g.Expect(sar.Status.Allowed).To(BeTrue())
	}).WithTimeout(time.Minute).Should(Succeed())
	return allowed, denied
}

// getWith GETs url with client and a bearer token (none when empty).
func getWith(c *http.Client, url, token string) (int, string, error) {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return 0, "", err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), err
}

// (The api's TLS and --metrics-auth are tested end to end in internal/apiserver: a process
// runs one manager's controllers, and TestControllerCommand already runs the controller's.)

func TestAPICommandRefusesBadFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		says string
	}{
		{[]string{"--tls-cert-file", "cert.pem"}, "--tls-cert-file and --tls-key-file"},
		{[]string{"--log-type", "release=red;}body{display:none"}, "not a CSS colour"},
	} {
		cmd := newRootCommand()
		cmd.SetOut(io.Discard)
		cmd.SetErr(io.Discard)
		cmd.SetArgs(append([]string{"api", "--kubeconfig", filepath.Join(t.TempDir(), "missing")}, tc.args...))
		err := cmd.Execute()
		if err == nil || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%v: %v, want an error saying %q", tc.args, err, tc.says)
		}
	}
}

// The controller's manager with --metrics-secure (MetricsSecure) serves its metrics over
// HTTPS, its certificate from --metrics-cert-dir, only to a token allowed to get /metrics,
// with controller-runtime's filters. (The manager alone: TestControllerCommand runs the
// command, and a process may start the controllers once.)
func TestSecureControllerMetrics(t *testing.T) {
	dir := t.TempDir()
	cert := servertest.WriteCert(t, dir, "controller metrics")
	metricsAddr := freeAddr(t)
	mgr, err := manager.New(env.Config, manager.Options{
		MetricsAddr: metricsAddr, MetricsSecure: true, MetricsCertDir: dir, ProbeAddr: "0", SkipControllerNameValidation: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	})
	allowed, denied := metricsReader(t)
	c := servertest.TrustingClient(t, cert, false)
	g := NewWithT(t)
	g.Eventually(func(g Gomega) {
		code, body, err := getWith(c, "https://"+metricsAddr+"/metrics", allowed)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(code).To(Equal(http.StatusOK))
		g.Expect(body).To(ContainSubstring("rest_client_requests_total"))
	}).WithTimeout(time.Minute).Should(Succeed())
	code, _, err := getWith(c, "https://"+metricsAddr+"/metrics", "")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(code).To(Equal(http.StatusUnauthorized))
	code, _, err = getWith(c, "https://"+metricsAddr+"/metrics", denied)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(code).To(Equal(http.StatusForbidden))
	// Not to a client that does not trust the certificate.
	if _, _, err := getWith(&http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{}}}, "https://"+metricsAddr+"/metrics", allowed); err == nil {
		t.Errorf("a client that does not trust the certificate connected")
	}
}
