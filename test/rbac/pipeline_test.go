//go:build !unit

package rbac

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/client-go/util/retry"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/testbinary"
)

const (
	pipelineImage = "registry.example.com/web"
	// approverAccount may approve pipelines of its namespace (update pipelines/approval).
	approverAccount = "pipeline-approver"
)

// pipelineFlow runs a pipeline through every path the pipeline grants are for: the
// controller's watches (pipelines, Secrets' metadata, Deployments), its read of a kubeconfig
// Secret and its server-side apply of a local Deployment (both as the pipeline's account,
// impersonated), and of its status; the api's read of a pipeline and of an approval key (as
// the pipeline's account, impersonated), and its write of an approval with a signed request
// and with a user's token (TokenReview, SubjectAccessReview on pipelines/approval).
func pipelineFlow(t *testing.T, streamNS, server, accepted string, cli *strings.Builder) {
	t.Helper()
	ctx := context.Background()
	g := NewWithT(t)
	devNS, stagingNS, prodNS := streamNS+"-dev", streamNS+"-staging", streamNS+"-prod"
	for _, n := range []string{devNS, stagingNS, prodNS} {
		create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: n}})
		pipelineDeployment(t, n)
	}
	// staging's cluster is this one, through a kubeconfig of its own (the administrator's).
	kubeconfig, err := clientcmd.Write(clientcmdapi.Config{
		Clusters:       map[string]*clientcmdapi.Cluster{"self": {Server: env.Config.Host, CertificateAuthorityData: env.Config.CAData}},
		AuthInfos:      map[string]*clientcmdapi.AuthInfo{"admin": {ClientCertificateData: env.Config.CertData, ClientKeyData: env.Config.KeyData}},
		Contexts:       map[string]*clientcmdapi.Context{"self": {Cluster: "self", AuthInfo: "admin"}},
		CurrentContext: "self",
	})
	if err != nil {
		t.Fatal(err)
	}
	key := "staging approval key"
	create(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: streamNS, Name: "self"}, Data: map[string][]byte{v1alpha1.SecretKeyKubeconfig: kubeconfig}})
	create(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: streamNS, Name: "staging-approvals"}, Data: map[string][]byte{v1alpha1.SecretKeyHMAC: []byte(key)}})
	// The api reads approval keys as the pipeline's ServiceAccount (here the namespace's
	// default, the api's --default-service-account), never with its own rights.
	create(t, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: streamNS, Name: "approval-keys"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{"staging-approvals"}, Verbs: []string{"get"}}}})
	create(t, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: streamNS, Name: "approval-keys"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "approval-keys"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: streamNS, Name: "default"}}})
	keyFile := filepath.Join(workDir, "staging-approval-key")
	if err := os.WriteFile(keyFile, []byte(key), 0o600); err != nil {
		t.Fatal(err)
	}

	// The approver: RBAC lets it update pipelines/approval in the pipeline's namespace.
	create(t, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: streamNS, Name: approverAccount}})
	create(t, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: streamNS, Name: approverAccount},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{v1alpha1.GroupVersion.Group}, Resources: []string{"pipelines/approval"}, Verbs: []string{"update"}}}})
	create(t, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: streamNS, Name: approverAccount},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: approverAccount},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: streamNS, Name: approverAccount}}})
	cs, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	tokenFile := filepath.Join(workDir, "approver-token")
	if err := os.WriteFile(tokenFile, []byte(token(t, cs, types.NamespacedName{Namespace: streamNS, Name: approverAccount})), 0o600); err != nil {
		t.Fatal(err)
	}

	// The controller acts as the pipeline's account (its namespace's default, the
	// controller's --default-service-account): it may patch the local targets' app and read the
	// kubeconfig Secret, nothing more.
	tenant := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: streamNS, Name: "default"}}
	for namespace, rule := range map[string]rbacv1.PolicyRule{
		devNS:    {APIGroups: []string{"apps"}, Resources: []string{"deployments"}, ResourceNames: []string{"web"}, Verbs: []string{"get", "patch"}},
		prodNS:   {APIGroups: []string{"apps"}, Resources: []string{"deployments"}, ResourceNames: []string{"web"}, Verbs: []string{"get", "patch"}},
		streamNS: {APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{"self"}, Verbs: []string{"get"}},
	} {
		create(t, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "pipeline"}, Rules: []rbacv1.PolicyRule{rule}})
		create(t, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "pipeline"},
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "pipeline"}, Subjects: tenant})
	}

	create(t, &v1alpha1.Pipeline{
		ObjectMeta: metav1.ObjectMeta{Namespace: streamNS, Name: "web"},
		Spec: v1alpha1.PipelineSpec{
			AppRef: v1alpha1.AppReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", Container: "web"},
			Source: &v1alpha1.PipelineSource{ReleaseStream: "nightly"},
			Environments: []v1alpha1.Environment{
				{Name: "dev", Targets: []v1alpha1.Target{{Namespace: devNS}}},
				{Name: "staging", Targets: []v1alpha1.Target{{Namespace: stagingNS, ClusterRef: "self"}},
					Approval: &v1alpha1.Approval{SecretRef: &v1alpha1.SecretKeyReference{Name: "staging-approvals"}}},
				{Name: "prod", Targets: []v1alpha1.Target{{Namespace: prodNS}},
					Approval: &v1alpha1.Approval{SecretRef: &v1alpha1.SecretKeyReference{Name: "prod-approvals"}}},
			},
		},
	})

	// The stream's accepted payload reaches dev; rolled out, staging waits for approval.
	waitPipelineImage(t, devNS, accepted)
	rollOutPipelineDeployment(t, devNS)
	waitWaiting(t, streamNS, "staging", accepted)
	approve(t, server, cli, streamNS, "staging", accepted, "--key-file", keyFile)
	waitPipelineImage(t, stagingNS, accepted)
	rollOutPipelineDeployment(t, stagingNS)
	waitWaiting(t, streamNS, "prod", accepted)
	approve(t, server, cli, streamNS, "prod", accepted, "--token-file", tokenFile)
	waitPipelineImage(t, prodNS, accepted)
	var p v1alpha1.Pipeline
	g.Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(ctx, types.NamespacedName{Namespace: streamNS, Name: "web"}, &p)).To(Succeed())
		lp := p.Status.Environments[2].LastPromotion
		g.Expect(lp).NotTo(BeNil())
		g.Expect(lp.Approver).To(Equal("system:serviceaccount:" + streamNS + ":" + approverAccount))
	}).WithTimeout(waitTimeout).Should(Succeed())
	g.Expect(p.Status.Environments[1].LastPromotion.Approver).To(Equal("hmac:staging-approvals"))

	// Freezes of both scopes that hold no pipeline of the flow: the freeze controller records
	// each as active in its status, with its own account.
	others := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "not-in-this-flow"}}
	spec := v1alpha1.ReleaseFreezeSpec{Reason: "rbac flow", Pipelines: others}
	create(t, &v1alpha1.ReleaseFreeze{ObjectMeta: metav1.ObjectMeta{Namespace: streamNS, Name: "rbac-flow"}, Spec: spec})
	create(t, &v1alpha1.ClusterReleaseFreeze{ObjectMeta: metav1.ObjectMeta{Name: "rbac-flow-" + streamNS}, Spec: spec})
	g.Eventually(func(g Gomega) {
		var f v1alpha1.ReleaseFreeze
		g.Expect(env.Client.Get(ctx, types.NamespacedName{Namespace: streamNS, Name: "rbac-flow"}, &f)).To(Succeed())
		g.Expect(meta.IsStatusConditionTrue(f.Status.Conditions, v1alpha1.ConditionFreezeActive)).To(BeTrue(), "%+v", f.Status)
		var c v1alpha1.ClusterReleaseFreeze
		g.Expect(env.Client.Get(ctx, types.NamespacedName{Name: "rbac-flow-" + streamNS}, &c)).To(Succeed())
		g.Expect(meta.IsStatusConditionTrue(c.Status.Conditions, v1alpha1.ConditionFreezeActive)).To(BeTrue(), "%+v", c.Status)
	}).WithTimeout(waitTimeout).Should(Succeed())
}

func pipelineDeployment(t *testing.T, namespace string) {
	t.Helper()
	labels := map[string]string{"app": "web"}
	create(t, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "web"},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: pipelineImage + ":0"}}}},
		},
	})
	rollOutPipelineDeployment(t, namespace)
}

// rollOutPipelineDeployment writes the status the Deployment controller would (none runs here).
func rollOutPipelineDeployment(t *testing.T, namespace string) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var d appsv1.Deployment
		if err := env.Client.Get(context.Background(), types.NamespacedName{Namespace: namespace, Name: "web"}, &d); err != nil {
			return err
		}
		d.Status = appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: 1, UpdatedReplicas: 1, ReadyReplicas: 1, AvailableReplicas: 1}
		return env.Client.Status().Update(context.Background(), &d)
	})
	if err != nil {
		t.Fatal(err)
	}
}

func waitPipelineImage(t *testing.T, namespace, tag string) {
	t.Helper()
	NewWithT(t).Eventually(func(g Gomega) {
		var d appsv1.Deployment
		g.Expect(env.Client.Get(context.Background(), types.NamespacedName{Namespace: namespace, Name: "web"}, &d)).To(Succeed())
		g.Expect(d.Spec.Template.Spec.Containers[0].Image).To(Equal(pipelineImage + ":" + tag))
	}).WithTimeout(waitTimeout).Should(Succeed())
}

func waitWaiting(t *testing.T, namespace, envName, revision string) {
	t.Helper()
	NewWithT(t).Eventually(func(g Gomega) {
		var p v1alpha1.Pipeline
		g.Expect(env.Client.Get(context.Background(), types.NamespacedName{Namespace: namespace, Name: "web"}, &p)).To(Succeed())
		found := false
		for _, e := range p.Status.Environments {
			if e.Name == envName && e.WaitingApproval != nil && e.WaitingApproval.Revision == revision {
				found = true
			}
		}
		g.Expect(found).To(BeTrue(), "%s does not wait for %s: %+v", envName, revision, p.Status)
	}).WithTimeout(waitTimeout).Should(Succeed())
}

// approve runs `release-controller pipeline approve` with the given credentials flags.
func approve(t *testing.T, server string, cli *strings.Builder, namespace, envName, revision string, creds ...string) {
	t.Helper()
	args := append([]string{"pipeline", "approve", namespace + "/web", envName, revision, "--server", server}, creds...)
	cmd := testbinary.Command(binary, args...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + workDir}
	out, err := cmd.CombinedOutput()
	cli.Write(out)
	if err != nil {
		t.Fatalf("pipeline approve %s: %v: %s", envName, err, out)
	}
}
