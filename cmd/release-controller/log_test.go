//go:build !unit

package main

import (
	"bytes"
	"context"
	"net"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/release-controller/release-controller/internal/manager"
	"github.com/release-controller/release-controller/internal/releaselog"
	"github.com/release-controller/release-controller/internal/releaselog/logcontroller"
	"github.com/release-controller/release-controller/internal/server/assemble"
)

// startAPI serves the release log of namespace like `release-controller api` does and
// returns its URL.
func startAPI(t *testing.T, namespace string) string {
	t.Helper()
	// The release log key, as --release-log-key-secret finds (and first makes) it.
	key, err := releaseLogKey(context.Background(), env.Config, namespace+"/"+releaselog.DefaultKeySecret)
	if err != nil {
		t.Fatal(err)
	}
	logOpts := releaselog.Options{Namespace: namespace, Types: releaselog.DefaultTypes(), Store: releaselog.NewStore(), SealKey: key}.WithDefaults("")
	mgr, err := manager.New(env.Config, manager.Options{MetricsAddr: "0", ProbeAddr: "0", ReleaseLog: logOpts, SkipControllerNameValidation: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := logcontroller.SetupWithManager(mgr, logOpts); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv, err := assemble.New(mgr, assemble.Options{Log: logOpts})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = mgr.Start(ctx) }()
	go func() { _ = srv.Serve(ctx, l, time.Second); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return "http://" + l.Addr().String()
}

// writerToken makes a service account RBAC allows to add entries (create releaselogs/entries)
// and returns a token.
func writerToken(t *testing.T, namespace string) string {
	t.Helper()
	ctx := context.Background()
	cs := kubernetes.NewForConfigOrDie(env.Config)
	if _, err := cs.CoreV1().ServiceAccounts(namespace).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "writer"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "writer"}, Rules: []rbacv1.PolicyRule{{
		APIGroups: []string{"release-controller.dev"}, Resources: []string{"releaselogs/entries"}, Verbs: []string{"create"},
	}}}
	if _, err := cs.RbacV1().Roles(namespace).Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "writer"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "writer"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: namespace, Name: "writer"}}}
	if _, err := cs.RbacV1().RoleBindings(namespace).Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tr, err := cs.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, "writer", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return tr.Status.Token
}

func runCLI(args ...string) (string, error) {
	var out bytes.Buffer
	cmd := newRootCommand()
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs(args)
	err := cmd.Execute()
	return out.String(), err
}

// TestLogCommands adds to the release log and lists it through the CLI, as a user would.
func TestLogCommands(t *testing.T) {
	ns := env.Namespace(t)
	url := startAPI(t, ns)
	g := NewWithT(t)
	out, err := runCLI("log", "list", "--server", url)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(ContainSubstring("The release log is empty."))

	_, err = runCLI("log", "add", "--server", url, "--kubeconfig", "/nonexistent", "--type", "hotfix", "--version", "1.0.1")
	g.Expect(err).To(MatchError(ContainSubstring("pass --token or --token-file")))

	token := writerToken(t, ns)
	// RBAC takes a moment to see a new binding.
	g.Eventually(func() error {
		_, err := runCLI("log", "add", "--server", url, "--token", token, "--type", "hotfix", "--version", "1.0.1", "--message", "patched the web config")
		return err
	}).WithTimeout(time.Minute).Should(Succeed())
	// --author names who the entry is for; the author stays the token's user.
	_, err = runCLI("log", "add", "--server", url, "--token", token, "--type", "hotfix", "--version", "1.0.2", "--author", "alice")
	g.Expect(err).NotTo(HaveOccurred())
	_, err = runCLI("log", "add", "--server", url, "--token", token, "--type", "bogus", "--version", "1")
	g.Expect(err).To(MatchError(ContainSubstring(`invalid_argument: entry type not allowed: "bogus"`)))

	g.Eventually(func(g Gomega) {
		out, err := runCLI("log", "list", "--server", url)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(out).To(ContainSubstring(": 2 entries"))
		g.Expect(out).To(MatchRegexp(`hotfix\s+1\.0\.1\s+system:serviceaccount:` + ns + `:writer\s+patched the web config`))
		g.Expect(out).To(MatchRegexp(`hotfix\s+1\.0\.2\s+system:serviceaccount:` + ns + `:writer \(for alice\)\s+-`))
	}).WithTimeout(time.Minute).Should(Succeed())
	day := time.Now().UTC().Format("2006-01-02")
	out, err = runCLI("log", "list", "--server", url, "--day", day)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(strings.HasPrefix(out, day)).To(BeTrue(), out)
}
