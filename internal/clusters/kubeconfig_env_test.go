//go:build !unit

package clusters_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/clusters"
	"github.com/release-controller/release-controller/internal/jobcontract"
)

// TestJobsRefuseAnExecKubeconfig: the attack of issue 33 against a verification cluster: a
// kubeconfig whose user's exec plugin would write a file. The view is an invalid cluster
// naming the Secret, the field and the rule (the payload's ClusterUnreachable says it), and the
// command never runs. With --insecure-kubeconfig-exec the same Secret runs it: the check, not
// chance, is what kept it from running.
func TestJobsRefuseAnExecKubeconfig(t *testing.T) {
	ctx, ns, jobs := startJobs(t)
	g := NewWithT(t)
	marker := filepath.Join(t.TempDir(), "pwned")
	kubeconfig := execKubeconfig(t, marker)
	g.Expect(env.Client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "farm"},
		Data: map[string][]byte{v1alpha1.SecretKeyKubeconfig: kubeconfig}})).To(Succeed())
	key := clusters.Key{Namespace: ns, Secret: "farm"}
	payload := types.NamespacedName{Namespace: ns, Name: "p"}

	views, err := jobs.Use(ctx, "payload", payload, map[clusters.Key][]string{key: {ns}})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(views[key].Invalid).To(BeTrue())
	g.Expect(views[key].Problem).To(And(ContainSubstring("kubeconfig Secret "+ns+"/farm"), ContainSubstring("users[ci].user.exec: an exec plugin runs a command"),
		ContainSubstring("--insecure-kubeconfig-exec")))
	g.Expect(jobs.Running()).To(BeEmpty())
	_, err = os.Stat(marker)
	g.Expect(os.IsNotExist(err)).To(BeTrue(), "the exec plugin ran: %v", err)

	// The same Secret with the flag: the plugin runs (the cluster's first probe calls it).
	insecure := clusters.NewJobs(env.Client, env.Client, jobcontract.Selector())
	insecure.InsecureKubeconfigExec = true
	insecureCtx, cancel := context.WithCancel(ctx)
	t.Cleanup(cancel)
	go func() { _ = insecure.Start(insecureCtx) }()
	views, err = insecure.Use(ctx, "payload", payload, map[clusters.Key][]string{key: {ns}})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(views[key].Invalid).To(BeFalse(), views[key].Problem)
	g.Eventually(func() error { _, err := os.Stat(marker); return err }).WithTimeout(waitTimeout).WithPolling(50 * time.Millisecond).Should(Succeed())
}

// execKubeconfig is a kubeconfig of the test API server whose user is an exec plugin that
// creates marker (and then fails, so no credential comes of it).
func execKubeconfig(t *testing.T, marker string) []byte {
	t.Helper()
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["test"] = &clientcmdapi.Cluster{Server: env.Config.Host, CertificateAuthorityData: env.Config.CAData}
	cfg.AuthInfos["ci"] = &clientcmdapi.AuthInfo{Exec: &clientcmdapi.ExecConfig{
		APIVersion: "client.authentication.k8s.io/v1", Command: "/bin/sh", Args: []string{"-c", "touch " + marker + "; exit 1"},
		InteractiveMode: clientcmdapi.NeverExecInteractiveMode,
	}}
	cfg.Contexts["test"] = &clientcmdapi.Context{Cluster: "test", AuthInfo: "ci"}
	cfg.CurrentContext = "test"
	data, err := clientcmd.Write(*cfg)
	if err != nil {
		t.Fatal(err)
	}
	return data
}
