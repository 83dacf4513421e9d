//go:build !unit

package pipeline_test

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
	"github.com/release-controller/release-controller/internal/manager"
	"github.com/release-controller/release-controller/internal/pipeline"
	"github.com/release-controller/release-controller/internal/releaselog"
)

func TestTenantOf(t *testing.T) {
	named := &v1alpha1.Pipeline{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a"}, Spec: v1alpha1.PipelineSpec{ServiceAccountName: "deployer"}}
	unnamed := &v1alpha1.Pipeline{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a"}}
	for _, tc := range []struct {
		name           string
		p              *v1alpha1.Pipeline
		defaultAccount string
		want           string
	}{
		{"the pipeline's account", named, "default", "system:serviceaccount:team-a:deployer"},
		{"the pipeline's account without a default", named, "", "system:serviceaccount:team-a:deployer"},
		{"the default account of the pipeline's namespace", unnamed, "default", "system:serviceaccount:team-a:default"},
		{"no account and no default: the controller", unnamed, "", ""},
		{"no pipeline", nil, "default", ""},
	} {
		if got := pipeline.TenantOf(tc.p, tc.defaultAccount); got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, got, tc.want)
		}
	}
}

// startTenantController runs the pipeline controller as startController does, acting as
// defaultAccount for pipelines that name no service account, with insecureExec as
// --insecure-kubeconfig-exec. Its answers to "may the account get this target's app?" last
// tenantAccessTTL, so that a grant is seen soon.
func startTenantController(t *testing.T, logNamespace, defaultAccount string, insecureExec bool) {
	t.Helper()
	opts := manager.Options{MetricsAddr: "0", ProbeAddr: "0", SkipControllerNameValidation: true,
		ReleaseLog: releaselog.Options{Namespace: logNamespace}}
	mgr, err := manager.New(mgmt.Config, opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &pipeline.Reconciler{
		Log:                   releaselog.NewWriter(mgr.GetClient(), mgr.GetAPIReader(), releaselog.Options{Namespace: logNamespace}),
		DefaultServiceAccount: defaultAccount, InsecureKubeconfigExec: insecureExec, AccessTTL: tenantAccessTTL,
	}
	if err := r.SetupWithManager(ctx, mgr); err != nil {
		t.Fatal(err)
	}
	r.Clusters.HealthInterval = 500 * time.Millisecond
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	})
}

// tenantAccessTTL is the tenant controllers' pipeline.Reconciler.AccessTTL.
const tenantAccessTTL = 2 * time.Second

// grant binds account of namespace accountNS to a Role of namespace with rules.
func grant(t *testing.T, namespace, accountNS, account string, rules ...rbacv1.PolicyRule) {
	t.Helper()
	ctx := context.Background()
	name := "grant-" + accountNS + "-" + account
	for _, obj := range []client.Object{
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}, Rules: rules},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: accountNS, Name: account}}},
	} {
		if err := mgmt.Client.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
}

// editDeployments is what a pipeline's account needs on the Deployments it promotes.
var editDeployments = rbacv1.PolicyRule{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: []string{"get", "list", "watch", "patch", "update"}}

// readDeployments lets a pipeline's account see the Deployments of a namespace, not change them.
var readDeployments = rbacv1.PolicyRule{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: []string{"get"}}

// waitEvent waits for a Warning Event of reason on the pipeline whose note holds every part.
func waitEvent(t *testing.T, key types.NamespacedName, reason string, parts ...string) {
	t.Helper()
	waitEventOf(t, key, corev1.EventTypeWarning, reason, parts...)
}

// waitEventOf waits for an Event of eventType and reason on the pipeline whose note holds
// every part.
func waitEventOf(t *testing.T, key types.NamespacedName, eventType, reason string, parts ...string) {
	t.Helper()
	NewWithT(t).Eventually(func(g Gomega) {
		var list eventsv1.EventList
		g.Expect(mgmt.Client.List(context.Background(), &list, client.InNamespace(key.Namespace))).To(Succeed())
		g.Expect(slices.ContainsFunc(list.Items, func(e eventsv1.Event) bool {
			if e.Regarding.Name != key.Name || e.Type != eventType || e.Reason != reason {
				return false
			}
			for _, p := range parts {
				if !strings.Contains(e.Note, p) {
					return false
				}
			}
			return true
		})).To(BeTrue(), "no %s event with %q: %+v", reason, parts, list.Items)
	}).WithTimeout(waitTimeout).Should(Succeed())
}

// TestAPipelineActsAsItsServiceAccount: the patch strategy writes a local target as the
// pipeline's service account (impersonated), so the API server's RBAC decides. A pipeline of
// namespace A whose target is a Deployment of namespace B, where A's default account may get
// but not patch, is refused with the API server's Forbidden (PromotionFailed, an Event) and
// B's Deployment stays as it was; a pipeline of A naming an account that may edit A's
// Deployments promotes into A. Before the change the controller patched B with its own rights.
// (Both accounts may get the source environment's Deployment: a target the account may not
// get is not even shown, TestATargetTheAccountMayNotGetIsHidden.)
func TestAPipelineActsAsItsServiceAccount(t *testing.T) {
	ctx := context.Background()
	g := NewWithT(t)
	tenant, other, source := ns(t, mgmt.Client), ns(t, mgmt.Client), ns(t, mgmt.Client)
	startTenantController(t, ns(t, mgmt.Client), "default", false)

	// The source environment's app is at 2 and rolled out; the targets are at 1.
	deploy(t, mgmt.Client, source, "web", "2")
	deploy(t, mgmt.Client, other, "web", "1")
	deploy(t, mgmt.Client, tenant, "web", "1")
	envs := func(target string) []v1alpha1.Environment {
		return []v1alpha1.Environment{
			{Name: "dev", Targets: []v1alpha1.Target{{Namespace: source}}},
			{Name: "prod", Targets: []v1alpha1.Target{{Namespace: target}}},
		}
	}
	app := v1alpha1.AppReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", Container: "web"}

	// Into another tenant's namespace, as A's default account, which may read it: refused.
	grant(t, source, tenant, "default", readDeployments)
	grant(t, other, tenant, "default", readDeployments)
	intruder := &v1alpha1.Pipeline{ObjectMeta: metav1.ObjectMeta{Namespace: tenant, Name: "intruder"}, Spec: v1alpha1.PipelineSpec{AppRef: app, Environments: envs(other)}}
	g.Expect(mgmt.Client.Create(ctx, intruder)).To(Succeed())
	t.Cleanup(func() { _ = mgmt.Client.Delete(context.Background(), intruder) })
	key := client.ObjectKeyFromObject(intruder)
	user := "system:serviceaccount:" + tenant + ":default"
	failed := waitPipeline(t, key, "PromotionFailed with the API server's Forbidden", func(p *v1alpha1.Pipeline) bool {
		return meta.IsStatusConditionTrue(p.Status.Conditions, v1alpha1.ConditionPromotionFailed)
	})
	c := meta.FindStatusCondition(failed.Status.Conditions, v1alpha1.ConditionPromotionFailed)
	g.Expect(c.Reason).To(Equal(v1alpha1.ReasonPromotionFailed))
	g.Expect(c.Message).To(And(ContainSubstring("promoting 2 to prod"), ContainSubstring("forbidden"),
		ContainSubstring(`User "`+user+`" cannot patch resource "deployments"`), ContainSubstring(`in the namespace "`+other+`"`)))
	g.Expect(envStatus(failed, "prod").LastPromotion).To(BeNil())
	waitEvent(t, key, v1alpha1.EventPromotionFailed, "forbidden", user)
	var d appsv1.Deployment
	g.Expect(mgmt.Client.Get(ctx, types.NamespacedName{Namespace: other, Name: "web"}, &d)).To(Succeed())
	g.Expect(d.Spec.Template.Spec.Containers[1].Image).To(Equal(image + ":1"))
	g.Expect(slices.ContainsFunc(d.ManagedFields, func(f metav1.ManagedFieldsEntry) bool { return f.Manager == pipeline.FieldManager })).To(BeFalse())

	// Into its own namespace, as an account granted edit on Deployments there: promoted.
	grant(t, source, tenant, "deployer", readDeployments)
	grant(t, tenant, tenant, "deployer", editDeployments)
	own := &v1alpha1.Pipeline{ObjectMeta: metav1.ObjectMeta{Namespace: tenant, Name: "own"},
		Spec: v1alpha1.PipelineSpec{AppRef: app, Environments: envs(tenant), ServiceAccountName: "deployer"}}
	g.Expect(mgmt.Client.Create(ctx, own)).To(Succeed())
	t.Cleanup(func() { _ = mgmt.Client.Delete(context.Background(), own) })
	waitImage(t, mgmt.Client, tenant, "web", "2")
	waitPipeline(t, client.ObjectKeyFromObject(own), "prod promoted to 2", func(p *v1alpha1.Pipeline) bool {
		lp := envStatus(p, "prod").LastPromotion
		return lp != nil && lp.Revision == "2" && meta.IsStatusConditionFalse(p.Status.Conditions, v1alpha1.ConditionPromotionFailed)
	})
	// The intruder is still refused.
	g.Expect(mgmt.Client.Get(ctx, types.NamespacedName{Namespace: other, Name: "web"}, &d)).To(Succeed())
	g.Expect(d.Spec.Template.Spec.Containers[1].Image).To(Equal(image + ":1"))
}

// TestAKubeconfigSecretIsReadAsTheTenant: a pipeline's kubeconfig Secret is read as its
// service account: one its account may not get is a KubeconfigInvalid condition (and an
// Event) naming the Secret and the account; once granted, the leaf is watched without an edit.
func TestAKubeconfigSecretIsReadAsTheTenant(t *testing.T) {
	ctx := context.Background()
	g := NewWithT(t)
	tenant := ns(t, mgmt.Client)
	startTenantController(t, ns(t, mgmt.Client), "default", false)
	leafNS := ns(t, leafClient)
	deploy(t, leafClient, leafNS, "web", "1")
	g.Expect(mgmt.Client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: tenant, Name: "leaf"},
		Data: map[string][]byte{v1alpha1.SecretKeyKubeconfig: leafKubeconfig}})).To(Succeed())
	p := &v1alpha1.Pipeline{ObjectMeta: metav1.ObjectMeta{Namespace: tenant, Name: "remote"}, Spec: v1alpha1.PipelineSpec{
		AppRef:       v1alpha1.AppReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", Container: "web"},
		Environments: []v1alpha1.Environment{{Name: "prod", Targets: []v1alpha1.Target{{Namespace: leafNS, ClusterRef: "leaf"}}}},
	}}
	g.Expect(mgmt.Client.Create(ctx, p)).To(Succeed())
	t.Cleanup(func() { _ = mgmt.Client.Delete(context.Background(), p) })
	key := client.ObjectKeyFromObject(p)
	user := "system:serviceaccount:" + tenant + ":default"
	refused := waitPipeline(t, key, "KubeconfigInvalid: the account may not read the Secret", func(p *v1alpha1.Pipeline) bool {
		c := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ConditionClusterUnreachable)
		return c != nil && c.Status == metav1.ConditionTrue && c.Reason == v1alpha1.ReasonKubeconfigInvalid
	})
	c := meta.FindStatusCondition(refused.Status.Conditions, v1alpha1.ConditionClusterUnreachable)
	g.Expect(c.Message).To(And(ContainSubstring("kubeconfig Secret "+tenant+"/leaf"), ContainSubstring("service account "+user+" may not read it"), ContainSubstring("forbidden")))
	waitEvent(t, key, v1alpha1.EventClusterUnreachable, "kubeconfig Secret "+tenant+"/leaf", user)

	grant(t, tenant, tenant, "default", rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get"}, ResourceNames: []string{"leaf"}})
	// Nothing watched tells of the grant: the pipeline is retried (pipeline.TenantRetry).
	waitPipeline(t, key, "the leaf watched", func(p *v1alpha1.Pipeline) bool {
		return meta.IsStatusConditionFalse(p.Status.Conditions, v1alpha1.ConditionClusterUnreachable) && envStatus(p, "prod").Revision == "1"
	})
}

// TestAnExecKubeconfigNeverRuns: the attack of issue 33: a kubeconfig Secret whose user has an
// exec plugin that writes a file, named by a target's clusterRef. The kubeconfig is refused
// (ClusterUnreachable, KubeconfigInvalid, and an Event, naming the field and the rule) and the
// command never runs. (internal/clusters' TestJobsRefuseAnExecKubeconfig shows the same Secret
// runs it with --insecure-kubeconfig-exec: before the change, it ran within seconds.)
func TestAnExecKubeconfigNeverRuns(t *testing.T) {
	ctx := context.Background()
	g := NewWithT(t)
	tenant := ns(t, mgmt.Client)
	startTenantController(t, ns(t, mgmt.Client), "", false)
	marker := filepath.Join(t.TempDir(), "pwned")
	kc := clientcmdapi.NewConfig()
	kc.Clusters["leaf"] = &clientcmdapi.Cluster{Server: leaf.Config.Host, CertificateAuthorityData: leaf.Config.CAData}
	kc.AuthInfos["ci"] = &clientcmdapi.AuthInfo{Exec: &clientcmdapi.ExecConfig{
		APIVersion: "client.authentication.k8s.io/v1", Command: "/bin/sh", Args: []string{"-c", "touch " + marker + "; exit 1"},
		InteractiveMode: clientcmdapi.NeverExecInteractiveMode,
	}}
	kc.Contexts["leaf"] = &clientcmdapi.Context{Cluster: "leaf", AuthInfo: "ci"}
	kc.CurrentContext = "leaf"
	data, err := clientcmd.Write(*kc)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(mgmt.Client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: tenant, Name: "ci"},
		Data: map[string][]byte{v1alpha1.SecretKeyKubeconfig: data}})).To(Succeed())
	p := &v1alpha1.Pipeline{ObjectMeta: metav1.ObjectMeta{Namespace: tenant, Name: "exec"}, Spec: v1alpha1.PipelineSpec{
		AppRef:       v1alpha1.AppReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", Container: "web"},
		Environments: []v1alpha1.Environment{{Name: "prod", Targets: []v1alpha1.Target{{Namespace: "web", ClusterRef: "ci"}}}},
	}}
	g.Expect(mgmt.Client.Create(ctx, p)).To(Succeed())
	t.Cleanup(func() { _ = mgmt.Client.Delete(context.Background(), p) })
	key := client.ObjectKeyFromObject(p)
	refused := waitPipeline(t, key, "KubeconfigInvalid naming the exec plugin", func(p *v1alpha1.Pipeline) bool {
		c := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ConditionClusterUnreachable)
		return c != nil && c.Status == metav1.ConditionTrue && c.Reason == v1alpha1.ReasonKubeconfigInvalid
	})
	field := "users[ci].user.exec: an exec plugin runs a command inside the controller; refused unless the controller runs with --insecure-kubeconfig-exec"
	g.Expect(meta.FindStatusCondition(refused.Status.Conditions, v1alpha1.ConditionClusterUnreachable).Message).To(And(
		ContainSubstring("kubeconfig Secret "+tenant+"/ci"), ContainSubstring(field)))
	waitEvent(t, key, v1alpha1.EventClusterUnreachable, "kubeconfig Secret "+tenant+"/ci", field)
	_, err = os.Stat(marker)
	g.Expect(os.IsNotExist(err)).To(BeTrue(), "the exec plugin ran: %v", err)
}
