//go:build !unit

package main

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/release-controller/release-controller/api/v1alpha1"
)

// pipelineApprover makes the ServiceAccount namespace/name, which RBAC lets approve the
// pipelines of namespace, and returns a token of it.
func pipelineApprover(t *testing.T, namespace, name string) string {
	t.Helper()
	ctx := context.Background()
	g := NewWithT(t)
	cs := kubernetes.NewForConfigOrDie(env.Config)
	g.Expect(env.Client.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}})).To(Succeed())
	g.Expect(env.Client.Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{v1alpha1.GroupVersion.Group}, Resources: []string{"pipelines/approval"}, Verbs: []string{"update"}}}})).To(Succeed())
	g.Expect(env.Client.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: namespace, Name: name}}})).To(Succeed())
	tr, err := cs.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	return tr.Status.Token
}

// TestPipelineApproveAndReject approves under a policy of two approvers and rejects through
// the CLI, against the API server's routes as `release-controller api` assembles them: the
// status, the Events and the release log record both, with the approvers' names.
func TestPipelineApproveAndReject(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	url := startAPI(t, ns)
	p := &v1alpha1.Pipeline{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
		Spec: v1alpha1.PipelineSpec{
			AppRef: v1alpha1.AppReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", Container: "web"},
			Environments: []v1alpha1.Environment{
				{Name: "dev", Targets: []v1alpha1.Target{{Namespace: ns}}},
				{Name: "prod", Targets: []v1alpha1.Target{{Namespace: ns + "-prod"}}, Approval: &v1alpha1.Approval{MinApprovers: 2}},
			},
		},
	}
	g.Expect(env.Client.Create(ctx, p)).To(Succeed())
	// prod waits for 2, as the controller writes it.
	u := &unstructured.Unstructured{Object: map[string]any{"status": map[string]any{"environments": []any{
		map[string]any{"name": "dev"},
		map[string]any{"name": "prod", "waitingApproval": map[string]any{"revision": "2", "since": time.Now().UTC().Format(time.RFC3339)}},
	}}}}
	u.SetGroupVersionKind(v1alpha1.GroupVersion.WithKind("Pipeline"))
	u.SetNamespace(ns)
	u.SetName("web")
	g.Expect(env.Client.Status().Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner("release-controller"), client.ForceOwnership)).To(Succeed())
	alice, bob := pipelineApprover(t, ns, "alice"), pipelineApprover(t, ns, "bob")
	aliceName, bobName := "system:serviceaccount:"+ns+":alice", "system:serviceaccount:"+ns+":bob"

	// Until the server's cache has the pipeline and RBAC the bindings: 404, 403.
	var out string
	var err error
	g.Eventually(func() error {
		out, err = run(t, "pipeline", "approve", ns+"/web", "prod", "2", "--server", url, "--token", alice)
		return err
	}).WithTimeout(time.Minute).Should(Succeed())
	g.Expect(out).To(Equal("approved 2 of " + ns + "/web into prod (approver " + aliceName + ")\n1 of 2 approvals (" + aliceName + "): 1 more needed\n"))
	_, err = run(t, "pipeline", "approve", ns+"/web", "prod", "2", "--server", url, "--token", alice)
	g.Expect(err).To(MatchError(ContainSubstring("409 Conflict: " + aliceName + ` approved revision 2 of environment "prod" already`)))
	g.Eventually(func() error {
		out, err = run(t, "pipeline", "approve", ns+"/web", "prod", "2", "--server", url, "--token", bob)
		return err
	}).WithTimeout(time.Minute).Should(Succeed())
	g.Expect(out).To(ContainSubstring("the approval policy is met (2 of 2: " + aliceName + ", " + bobName + "): the revision is promoted\n"))

	_, err = run(t, "pipeline", "reject", ns+"/web", "prod", "3", "--server", url, "--token", alice)
	g.Expect(err).To(MatchError(ContainSubstring("--reason is required")))
	out, err = run(t, "pipeline", "reject", ns+"/web", "prod", "3", "--server", url, "--token", alice, "--reason", "CVE-2026-1234 in the base image")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(MatchRegexp(`^rejected 3 of ` + ns + `/web for prod \(by ` + aliceName + ` at [0-9TZ:-]+\): CVE-2026-1234 in the base image\n$`))

	var got v1alpha1.Pipeline
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(p), &got)).To(Succeed())
	prod := got.Status.Environments[1]
	g.Expect(prod.Approval.PolicyMet).NotTo(BeNil())
	g.Expect(prod.Approval.Approver).To(Equal(bobName))
	g.Expect(prod.Rejections).To(HaveLen(1))
	g.Expect(prod.Rejections[0].By).To(Equal(aliceName))

	// The release log shows both, authored by the approvers (sealed: verified), and the
	// pipeline has the Events.
	g.Eventually(func(g Gomega) {
		out, err := run(t, "log", "list", "--server", url)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(out).To(MatchRegexp(`approval\s+2\s+` + aliceName + `\s+pipeline ` + ns + `/web: ` + aliceName + ` approved 2 for prod: 1 of 2 approvals`))
		g.Expect(out).To(MatchRegexp(`approval\s+2\s+` + bobName + `\s+pipeline ` + ns + `/web: ` + bobName + ` approved 2 for prod: the approval policy is met`))
		g.Expect(out).To(MatchRegexp(`rejection\s+3\s+` + aliceName + `\s+pipeline ` + ns + `/web: ` + aliceName + ` rejected 3 for prod: CVE-2026-1234`))
	}).WithTimeout(time.Minute).Should(Succeed())
	g.Eventually(func(g Gomega) {
		var events eventsv1.EventList
		g.Expect(env.Client.List(ctx, &events, client.InNamespace(ns))).To(Succeed())
		reasons := map[string]string{}
		for _, e := range events.Items {
			if e.Regarding.Kind == "Pipeline" && e.Regarding.Name == "web" {
				reasons[e.Reason] = e.Type
			}
		}
		g.Expect(reasons).To(Equal(map[string]string{
			v1alpha1.EventApproved: "Normal", v1alpha1.EventApprovalPolicyMet: "Normal", v1alpha1.EventRevisionRejected: "Warning",
		}))
	}).WithTimeout(time.Minute).Should(Succeed())
}
