//go:build !unit

package tenancy

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/testbinary"
)

// TestAttackExecKubeconfig: tenant A names, as a pipeline target's clusterRef, a Secret of its
// own whose kubeconfig runs a command (an exec plugin that would write a file as the
// controller's user), and in other users and clusters of the same file an auth-provider, a
// tokenFile, certificate, key and CA file paths and a proxy-url. Before issue 33 the command ran
// inside the controller within seconds. Now the Secret is refused, every field named with its
// rule and the flag that would allow it (a ClusterUnreachable condition with reason
// KubeconfigInvalid, and a Warning Event); the same as a stream's verification cluster (an
// Event on the payload) and creation cluster (the payload's PayloadCreated condition); and the
// command never runs.
func TestAttackExecKubeconfig(t *testing.T) {
	g := NewWithT(t)
	a := rc.a
	since := time.Now()
	marker := filepath.Join(workDir, "exec-plugin-ran")
	secretFile := filepath.Join(workDir, "controller.kubeconfig") // a file of the controller's
	kubeconfig, err := clientcmd.Write(clientcmdapi.Config{
		Clusters: map[string]*clientcmdapi.Cluster{
			"self":  {Server: env.Config.Host, CertificateAuthorityData: env.Config.CAData},
			"ca":    {Server: env.Config.Host, CertificateAuthority: secretFile},
			"proxy": {Server: env.Config.Host, CertificateAuthorityData: env.Config.CAData, ProxyURL: "http://127.0.0.1:9"},
		},
		AuthInfos: map[string]*clientcmdapi.AuthInfo{
			"exec": {Exec: &clientcmdapi.ExecConfig{
				APIVersion: "client.authentication.k8s.io/v1", InteractiveMode: clientcmdapi.NeverExecInteractiveMode,
				Command: "sh",
				Args:    []string{"-c", "touch " + marker + `; echo '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"x"}}'`},
			}},
			"plugin":    {AuthProvider: &clientcmdapi.AuthProviderConfig{Name: "oidc", Config: map[string]string{"idp-issuer-url": "https://127.0.0.1:9"}}},
			"tokenfile": {TokenFile: secretFile},
			"certfile":  {ClientCertificate: secretFile, ClientKey: secretFile},
		},
		Contexts:       map[string]*clientcmdapi.Context{"self": {Cluster: "self", AuthInfo: "exec"}},
		CurrentContext: "self",
	})
	g.Expect(err).NotTo(HaveOccurred())
	asTenant(t, a, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: a.namespace, Name: "exec-cluster"},
		Data: map[string][]byte{v1alpha1.SecretKeyKubeconfig: kubeconfig}})
	asTenant(t, a, &v1alpha1.Pipeline{
		ObjectMeta: metav1.ObjectMeta{Namespace: a.namespace, Name: "exec"},
		Spec: v1alpha1.PipelineSpec{
			AppRef:             v1alpha1.AppReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "exec", Container: "web"},
			ServiceAccountName: promoterAccount,
			Environments:       []v1alpha1.Environment{{Name: "dev", Targets: []v1alpha1.Target{{Namespace: a.namespace, ClusterRef: "exec-cluster"}}}},
		},
	})

	c := waitCondition(t, a.namespace, "exec", v1alpha1.ConditionClusterUnreachable, metav1.ConditionTrue, v1alpha1.ReasonKubeconfigInvalid)
	refusals := []string{
		"users[exec].user.exec: an exec plugin runs a command inside the controller",
		"users[plugin].user.auth-provider",
		"users[tokenfile].user.tokenFile",
		"users[certfile].user.client-certificate",
		"users[certfile].user.client-key",
		"clusters[ca].cluster.certificate-authority",
		"clusters[proxy].cluster.proxy-url",
		"--insecure-kubeconfig-exec",
	}
	mustContainAll(t, "the ClusterUnreachable condition", c.Message, refusals...)
	waitEvent(t, a.namespace, "Pipeline", "exec", v1alpha1.EventClusterUnreachable, "exec-cluster", "users[exec].user.exec")

	// The same Secret as a stream's verification cluster and as its creation cluster (a build
	// farm): the payload says why its Jobs cannot run there.
	publish(t, a.namespace, "exec-web", "r1", "")
	v := verifyJob("e2e", "true")
	v.Cluster = &v1alpha1.VerificationCluster{SecretRef: "exec-cluster"}
	asTenant(t, a, streamOf(a.namespace, "exec-verify", []string{"exec-web"}, v))
	p := waitPayload(t, a.namespace, "exec-verify")
	waitEvent(t, a.namespace, "ReleasePayload", p.Name, v1alpha1.EventClusterUnreachable, "kubeconfig Secret "+a.namespace+"/exec-cluster", refusals[0], refusals[len(refusals)-1])
	s := streamOf(a.namespace, "exec-create", []string{"exec-web"})
	s.Spec.CreationCluster = &v1alpha1.VerificationCluster{SecretRef: "exec-cluster"}
	asTenant(t, a, s)
	p = waitPayload(t, a.namespace, "exec-create")
	g.Eventually(func(g Gomega) {
		var got v1alpha1.ReleasePayload
		g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(&p), &got)).To(Succeed())
		c := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionPayloadCreated)
		g.Expect(c).NotTo(BeNil())
		// The condition's message is bounded: it names the Secret and its first refused field.
		g.Expect(c.Message).To(ContainSubstring("kubeconfig Secret " + a.namespace + "/exec-cluster (key value): users[certfile].user.client-certificate: a file path reads a file of the controller's"))
	}).WithTimeout(waitTimeout).WithPolling(200 * time.Millisecond).Should(Succeed())

	if _, err := os.Stat(marker); !os.IsNotExist(err) {
		t.Errorf("the kubeconfig's exec command ran (%s exists: %v)", marker, err)
	}
	checkNothingOutside(t, since, a)
}

// TestAttackTargetInAnotherNamespace: tenant A's pipelines target tenant B's Deployment. Before
// issue 33 the controller patched it with its own rights. Now it acts as the pipeline's account
// (A's promoter, or A's default account when the pipeline names none): a target the account
// may not even get is neither shown nor promoted (Ready=False, TargetForbidden, naming the
// account and the namespace, and an Event); and where B lets A's promoter read its app but not
// change it, the promotion is tried as that account and the API server refuses it
// (PromotionFailed with its Forbidden message, and an Event). B's Deployment is unchanged.
func TestAttackTargetInAnotherNamespace(t *testing.T) {
	ctx := context.Background()
	g := NewWithT(t)
	a, b := rc.a, rc.b
	// B's apps, and A's own, which A's pipelines promote from (A runs r7 already).
	for _, app := range []string{"api", "status"} {
		asTenant(t, b, deployment(b.namespace, app, "0"))
		rollOut(t, b.namespace, app)
		asTenant(t, a, deployment(a.namespace, app, "r7"))
		rollOut(t, a.namespace, app)
	}
	// B shows its status app to A's promoter (the administrator binds it: teams write no
	// RoleBindings), read-only.
	g.Expect(createObject(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: b.namespace, Name: "show-status-to-a"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, ResourceNames: []string{"status"}, Verbs: []string{"get"}}}})).To(Succeed())
	g.Expect(createObject(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: b.namespace, Name: "show-status-to-a"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "show-status-to-a"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: a.namespace, Name: promoterAccount}}})).To(Succeed())
	before := map[string]appsv1.Deployment{}
	for _, app := range []string{"api", "status"} {
		var d appsv1.Deployment
		g.Expect(env.Client.Get(ctx, types.NamespacedName{Namespace: b.namespace, Name: app}, &d)).To(Succeed())
		before[app] = d
	}
	since := time.Now()

	pipeline := func(name, app, account string) {
		asTenant(t, a, &v1alpha1.Pipeline{
			ObjectMeta: metav1.ObjectMeta{Namespace: a.namespace, Name: name},
			Spec: v1alpha1.PipelineSpec{
				AppRef:             v1alpha1.AppReference{APIVersion: "apps/v1", Kind: "Deployment", Name: app, Container: "web"},
				ServiceAccountName: account,
				Environments: []v1alpha1.Environment{
					{Name: "dev", Targets: []v1alpha1.Target{{Namespace: a.namespace}}},
					{Name: "b", Targets: []v1alpha1.Target{{Namespace: b.namespace}}},
				},
			},
		})
	}
	for _, tc := range []struct{ pipeline, account, user string }{
		{"cross", promoterAccount, "system:serviceaccount:" + a.namespace + ":" + promoterAccount},
		// No account named: the controller's --default-service-account, default.
		{"cross-default", "", "system:serviceaccount:" + a.namespace + ":default"},
	} {
		pipeline(tc.pipeline, "api", tc.account)
		hidden := "account " + tc.user + " may not get deployments.apps api in namespace " + b.namespace
		c := waitCondition(t, a.namespace, tc.pipeline, v1alpha1.ConditionPipelineReady, metav1.ConditionFalse, v1alpha1.ReasonTargetForbidden)
		mustContainAll(t, tc.pipeline+"'s Ready condition", c.Message, hidden)
		// (The default account may not get A's own dev target either: its Event may name that.)
		waitEvent(t, a.namespace, "Pipeline", tc.pipeline, v1alpha1.EventTargetForbidden, "account "+tc.user+" may not get deployments.apps api in namespace")
	}

	pipeline("cross-readable", "status", promoterAccount)
	c := waitCondition(t, a.namespace, "cross-readable", v1alpha1.ConditionPromotionFailed, metav1.ConditionTrue, v1alpha1.ReasonPromotionFailed)
	forbidden := []string{"forbidden", `User "system:serviceaccount:` + a.namespace + ":" + promoterAccount + `" cannot patch resource "deployments"`, `namespace "` + b.namespace + `"`}
	mustContainAll(t, "cross-readable's PromotionFailed condition", c.Message, forbidden...)
	waitEvent(t, a.namespace, "Pipeline", "cross-readable", v1alpha1.EventPromotionFailed, forbidden...)

	for app, d := range before {
		var after appsv1.Deployment
		g.Expect(env.Client.Get(ctx, types.NamespacedName{Namespace: b.namespace, Name: app}, &after)).To(Succeed())
		g.Expect(after.Generation).To(Equal(d.Generation), "B's Deployment %s changed", app)
		g.Expect(after.Spec.Template.Spec.Containers[0].Image).To(Equal(appImage + ":0"))
	}
	checkNothingOutside(t, since, a)
}

// waitCondition waits until the pipeline's condition typ has status and reason, and returns
// it.
func waitCondition(t *testing.T, namespace, name, typ string, status metav1.ConditionStatus, reason string) metav1.Condition {
	t.Helper()
	var c *metav1.Condition
	NewWithT(t).Eventually(func(g Gomega) {
		var p v1alpha1.Pipeline
		g.Expect(env.Client.Get(context.Background(), types.NamespacedName{Namespace: namespace, Name: name}, &p)).To(Succeed())
		c = meta.FindStatusCondition(p.Status.Conditions, typ)
		g.Expect(c).NotTo(BeNil(), "no %s condition: %+v", typ, p.Status.Conditions)
		g.Expect(c.Status).To(Equal(status), "%s: %+v", typ, c)
		g.Expect(c.Reason).To(Equal(reason), "%s: %+v", typ, c)
	}).WithTimeout(waitTimeout).WithPolling(200 * time.Millisecond).Should(Succeed())
	return *c
}

// waitEvent waits for an Event with reason on the object kind namespace/name whose note says
// every one of parts.
func waitEvent(t *testing.T, namespace, kind, name, reason string, parts ...string) {
	t.Helper()
	NewWithT(t).Eventually(func(g Gomega) {
		var list eventsv1.EventList
		g.Expect(env.Client.List(context.Background(), &list, client.InNamespace(namespace))).To(Succeed())
		var notes []string
		for _, e := range list.Items {
			if e.Reason == reason && e.Regarding.Kind == kind && e.Regarding.Name == name {
				notes = append(notes, e.Note)
			}
		}
		g.Expect(slices.ContainsFunc(notes, func(n string) bool { return containsAll(n, parts) })).To(BeTrue(),
			"no %s Event on %s %s/%s saying %q; its %s Events say %q", reason, kind, namespace, name, parts, reason, notes)
	}).WithTimeout(waitTimeout).WithPolling(200 * time.Millisecond).Should(Succeed())
}

// containsAll reports whether s holds every one of parts.
func containsAll(s string, parts []string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}

// TestAPIReadsNoTenantSecret: the API server started with --git-credentials-secret naming
// tenant B's Secret (a mistaken or hostile flag) cannot read it: its ClusterRole reads no
// Secret and its Role only those of its own namespace, so it stops at start, saying so.
// Before issue 33 its ClusterRole read every Secret of the cluster.
func TestAPIReadsNoTenantSecret(t *testing.T) {
	g := NewWithT(t)
	b := rc.b
	asTenant(t, b, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: b.namespace, Name: "git-credentials"},
		Data: map[string][]byte{"token": []byte("tenant b's git token")}})
	listen, err := testbinary.FreeAddr()
	g.Expect(err).NotTo(HaveOccurred())
	api, err := startBinary("api-b-secret", rc.apiToken, "api", "--listen", listen, "--log-namespace", logNamespace,
		"--changelog-cache-dir", filepath.Join(workDir, "changelog-cache-b"), "--git-credentials-secret", b.namespace+"/git-credentials")
	g.Expect(err).NotTo(HaveOccurred())
	defer api.Stop(30 * time.Second)
	g.Eventually(api.Exited()).WithTimeout(waitTimeout).Should(BeClosed(), "the api started: %s", api.Tail(10))
	g.Expect(api.ExitStatus()).NotTo(Equal("exit status 0"))
	mustContainAll(t, "the api's output", api.Log(),
		`User "system:serviceaccount:`+systemNamespace+`:release-controller-api" cannot get resource "secrets"`,
		`in the namespace "`+b.namespace+`"`,
		"the api reads --git-credentials-secret only in its own namespace")
}

// waitPayload waits until ns's stream has a payload, and returns it.
func waitPayload(t *testing.T, ns, streamName string) v1alpha1.ReleasePayload {
	t.Helper()
	var found v1alpha1.ReleasePayload
	NewWithT(t).Eventually(func(g Gomega) {
		var list v1alpha1.ReleasePayloadList
		g.Expect(env.Client.List(context.Background(), &list, client.InNamespace(ns))).To(Succeed())
		ok := false
		for _, p := range list.Items {
			if p.Spec.PayloadCoordinates.Stream == streamName {
				found, ok = p, true
			}
		}
		g.Expect(ok).To(BeTrue(), "no payload of %s", streamName)
	}).WithTimeout(waitTimeout).WithPolling(200 * time.Millisecond).Should(Succeed())
	return found
}
