package pipeline_test

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/pipeline/gittest"
	"github.com/release-controller/release-controller/internal/releaselog"
)

// TestPullRequestPromotion: a pipeline whose staging is promoted by the pullRequest strategy
// pushes a branch to a real git server (HTTP, basic auth from the Secret), records the
// promotion in its status and the release log; a yamlPath the file lacks is a PromotionFailed
// condition saying so.
func TestPullRequestPromotion(t *testing.T) {
	ctx := context.Background()
	g := NewWithT(t)
	git := gittest.NewServer(t, "bot", "token-1")
	url := git.CreateRepo(t, "fleet", map[string]string{
		"staging/web.yaml": "# staging's web\nimage:\n  repository: " + image + "\n  tag: \"1\" # promoted by the pipeline\n",
	})
	logNS := ns(t, mgmt.Client)
	startController(t, logNS)
	pns := ns(t, mgmt.Client)
	stagingNS := ns(t, mgmt.Client)
	deploy(t, mgmt.Client, pns, "web", "1")
	deploy(t, mgmt.Client, stagingNS, "web", "1")
	g.Expect(mgmt.Client.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: pns, Name: "git"},
		Data:       map[string][]byte{v1alpha1.SecretKeyGitUsername: []byte("bot"), v1alpha1.SecretKeyGitPassword: []byte("token-1")},
	})).To(Succeed())

	pipelineWith := func(name, yamlPath string) *v1alpha1.Pipeline {
		return &v1alpha1.Pipeline{
			ObjectMeta: metav1.ObjectMeta{Namespace: pns, Name: name},
			Spec: v1alpha1.PipelineSpec{
				AppRef: v1alpha1.AppReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", Container: "web"},
				Environments: []v1alpha1.Environment{
					{Name: "dev", Targets: []v1alpha1.Target{{Namespace: pns}}},
					{Name: "staging", Targets: []v1alpha1.Target{{Namespace: stagingNS}},
						Promotion: &v1alpha1.Promotion{Strategy: v1alpha1.StrategyPullRequest, PullRequest: &v1alpha1.PullRequestPromotion{
							URL: url, Path: "staging/web.yaml", YAMLPath: yamlPath,
							SecretRef: &v1alpha1.GitCredentialsReference{Name: "git"},
							Author:    &v1alpha1.GitAuthor{Name: "Pipeline Bot", Email: "pipelines@example.com"},
						}}},
				},
			},
		}
	}
	p := pipelineWith("web", "image.tag")
	g.Expect(mgmt.Client.Create(ctx, p)).To(Succeed())
	broken := pipelineWith("web-broken", "image.version")
	g.Expect(mgmt.Client.Create(ctx, broken)).To(Succeed())

	// dev rolls out 2: staging's promotion is a branch with one commit setting image.tag.
	setImage(t, mgmt.Client, pns, "web", "2")
	rollOut(t, mgmt.Client, pns, "web")
	got := waitPipeline(t, client.ObjectKeyFromObject(p), "staging promoted to 2 by pullRequest", func(p *v1alpha1.Pipeline) bool {
		lp := envStatus(p, "staging").LastPromotion
		return lp != nil && lp.Revision == "2" && lp.Strategy == v1alpha1.StrategyPullRequest &&
			meta.IsStatusConditionFalse(p.Status.Conditions, v1alpha1.ConditionPromotionFailed)
	})
	bare := git.Bare("fleet")
	branch := "promote/web/staging/2"
	g.Expect(gittest.Git(t, bare, "show", branch+":staging/web.yaml")).To(Equal(
		"# staging's web\nimage:\n  repository: " + image + "\n  tag: \"2\" # promoted by the pipeline"))
	g.Expect(gittest.Git(t, bare, "log", "-1", "--format=%an <%ae>%n%P", branch)).To(Equal(
		"Pipeline Bot <pipelines@example.com>\n" + gittest.Git(t, bare, "rev-parse", "main")))
	id := envStatus(got, "staging").LastPromotion.ID
	g.Expect(gittest.Git(t, bare, "log", "-1", "--format=%B", branch)).To(ContainSubstring("Release-Controller-Promotion-Id: " + id))
	g.Expect(git.Authorized.Load()).To(BeNumerically(">", 0))
	g.Expect(git.Refused.Load()).To(BeZero())

	// The release log has the promotion once, naming the branch.
	g.Eventually(func(g Gomega) {
		var logs v1alpha1.ReleaseLogList
		g.Expect(mgmt.Client.List(ctx, &logs, client.InNamespace(logNS))).To(Succeed())
		var found []v1alpha1.ReleaseLogEntry
		for _, l := range logs.Items {
			for _, e := range l.Spec.Entries {
				if e.ID == id {
					found = append(found, e)
				}
			}
		}
		g.Expect(found).To(HaveLen(1))
		g.Expect(found[0].Type).To(Equal(releaselog.TypePromotion))
		g.Expect(found[0].Version).To(Equal("2"))
		g.Expect(found[0].Message).To(ContainSubstring("(pullRequest)"))
		g.Expect(found[0].Message).To(ContainSubstring("pushed to branch " + branch))
	}).WithTimeout(waitTimeout).Should(Succeed())

	// The pipeline whose yamlPath the file lacks fails, and says why; nothing is pushed for it.
	failed := waitPipeline(t, client.ObjectKeyFromObject(broken), "PromotionFailed", func(p *v1alpha1.Pipeline) bool {
		return meta.IsStatusConditionTrue(p.Status.Conditions, v1alpha1.ConditionPromotionFailed)
	})
	c := meta.FindStatusCondition(failed.Status.Conditions, v1alpha1.ConditionPromotionFailed)
	g.Expect(c.Reason).To(Equal(v1alpha1.ReasonPromotionFailed))
	g.Expect(c.Message).To(ContainSubstring(`promoting 2 to staging: staging/web.yaml on branch main of ` + url + `: yamlPath image.version not found: image has no key "version"`))
	g.Expect(meta.IsStatusConditionFalse(failed.Status.Conditions, v1alpha1.ConditionReady)).To(BeTrue())
	g.Expect(envStatus(failed, "staging").LastPromotion).To(BeNil())
	g.Expect(gittest.Git(t, bare, "for-each-ref", "refs/heads/promote/web-broken/")).To(BeEmpty())
}
