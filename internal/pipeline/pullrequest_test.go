//go:build !unit

package pipeline_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
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
	// The credentials may go to the test's git server, a plain http one.
	g.Expect(mgmt.Client.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: pns, Name: "git", Annotations: map[string]string{
			v1alpha1.AnnotationAllowedURLs: git.URL, v1alpha1.AnnotationAllowInsecureHTTP: "true"}},
		Data: map[string][]byte{v1alpha1.SecretKeyGitUsername: []byte("bot"), v1alpha1.SecretKeyGitPassword: []byte("token-1")},
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

// The git credentials go only where their Secret allows (annotation allowed-urls, https
// unless allow-insecure-http): each pipeline whose Secret does not allow its URL — every URL
// reaching the same git server — fails its promotion with PromotionFailed and an Event naming
// the field, the Secret and the rule, and the server gets no request at all; a pipeline whose
// Secret allows the URL pushes.
func TestPullRequestPromotionSendsCredentialsOnlyWhereTheSecretAllows(t *testing.T) {
	ctx := context.Background()
	g := NewWithT(t)
	refusedGit := gittest.NewServer(t, "bot", "token-1")
	refusedURL := refusedGit.CreateRepo(t, "fleet", map[string]string{"staging/web.yaml": "image:\n  tag: \"1\"\n"})
	allowedGit := gittest.NewServer(t, "bot", "token-1")
	allowedURL := allowedGit.CreateRepo(t, "fleet", map[string]string{"staging/web.yaml": "image:\n  tag: \"1\"\n"})
	logNS := ns(t, mgmt.Client)
	startController(t, logNS)
	pns := ns(t, mgmt.Client)
	stagingNS := ns(t, mgmt.Client)
	deploy(t, mgmt.Client, pns, "web", "1")
	deploy(t, mgmt.Client, stagingNS, "web", "1")
	insecure := v1alpha1.AnnotationAllowInsecureHTTP
	cases := []struct {
		pipeline, url string
		annotations   map[string]string
		rule          string // empty: allowed
	}{
		{"no-annotation", refusedURL, map[string]string{insecure: "true"},
			"has no annotation release-controller.dev/allowed-urls, so it is sent nowhere: add it"},
		{"plain-http", refusedURL, map[string]string{v1alpha1.AnnotationAllowedURLs: refusedGit.URL},
			`is plain http: the Secret goes over https only, unless it has the annotation release-controller.dev/allow-insecure-http: "true"`},
		{"longer-segment", refusedURL, map[string]string{v1alpha1.AnnotationAllowedURLs: refusedGit.URL + "/flee", insecure: "true"},
			"is under none of the prefixes of the Secret's annotation release-controller.dev/allowed-urls (" + refusedGit.URL + "/flee)"},
		{"userinfo", strings.Replace(refusedURL, "http://", "http://bot@", 1), map[string]string{v1alpha1.AnnotationAllowedURLs: refusedGit.URL, insecure: "true"},
			"user name or password"},
		{"allowed", allowedURL, map[string]string{v1alpha1.AnnotationAllowedURLs: "https://git.example.com/org\n" + allowedGit.URL + "/fleet.git", insecure: "true"}, ""},
	}
	for _, tc := range cases {
		g.Expect(mgmt.Client.Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: pns, Name: tc.pipeline, Annotations: tc.annotations},
			Data:       map[string][]byte{v1alpha1.SecretKeyGitUsername: []byte("bot"), v1alpha1.SecretKeyGitPassword: []byte("token-1")},
		})).To(Succeed())
		g.Expect(mgmt.Client.Create(ctx, &v1alpha1.Pipeline{
			ObjectMeta: metav1.ObjectMeta{Namespace: pns, Name: tc.pipeline},
			Spec: v1alpha1.PipelineSpec{
				AppRef: v1alpha1.AppReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", Container: "web"},
				Environments: []v1alpha1.Environment{
					{Name: "dev", Targets: []v1alpha1.Target{{Namespace: pns}}},
					{Name: "staging", Targets: []v1alpha1.Target{{Namespace: stagingNS}},
						Promotion: &v1alpha1.Promotion{Strategy: v1alpha1.StrategyPullRequest, PullRequest: &v1alpha1.PullRequestPromotion{
							URL: tc.url, Path: "staging/web.yaml", YAMLPath: "image.tag",
							SecretRef: &v1alpha1.GitCredentialsReference{Name: tc.pipeline},
						}}},
				},
			},
		})).To(Succeed())
	}

	// dev rolls out 2: every pipeline promotes staging.
	setImage(t, mgmt.Client, pns, "web", "2")
	rollOut(t, mgmt.Client, pns, "web")
	for _, tc := range cases {
		key := types.NamespacedName{Namespace: pns, Name: tc.pipeline}
		if tc.rule == "" {
			waitPipeline(t, key, "staging promoted to 2", func(p *v1alpha1.Pipeline) bool {
				lp := envStatus(p, "staging").LastPromotion
				return lp != nil && lp.Revision == "2"
			})
			continue
		}
		field := "is not sent to spec.environments[1].promotion.pullRequest.url: "
		failed := waitPipeline(t, key, "PromotionFailed", func(p *v1alpha1.Pipeline) bool {
			return meta.IsStatusConditionTrue(p.Status.Conditions, v1alpha1.ConditionPromotionFailed)
		})
		c := meta.FindStatusCondition(failed.Status.Conditions, v1alpha1.ConditionPromotionFailed)
		g.Expect(c.Message).To(And(ContainSubstring("promoting 2 to staging: the git credentials Secret "+tc.pipeline+" "+field), ContainSubstring(tc.rule)), tc.pipeline)
		g.Expect(envStatus(failed, "staging").LastPromotion).To(BeNil())
		g.Eventually(func(g Gomega) {
			var list eventsv1.EventList
			g.Expect(mgmt.Client.List(ctx, &list, client.InNamespace(pns))).To(Succeed())
			g.Expect(slices.ContainsFunc(list.Items, func(e eventsv1.Event) bool {
				return e.Regarding.Name == tc.pipeline && e.Type == corev1.EventTypeWarning && e.Reason == v1alpha1.EventPromotionFailed &&
					strings.Contains(e.Note, "the git credentials Secret "+tc.pipeline+" "+field) && strings.Contains(e.Note, tc.rule)
			})).To(BeTrue(), "events: %+v", list.Items)
		}).WithTimeout(waitTimeout).Should(Succeed())
	}
	// The refused URLs' server never saw a request, with or without the credentials; the
	// allowed one was pushed to with them.
	g.Expect(refusedGit.Authorized.Load()).To(BeZero())
	g.Expect(refusedGit.Refused.Load()).To(BeZero())
	g.Expect(allowedGit.Authorized.Load()).To(BeNumerically(">", 0))
	g.Expect(gittest.Git(t, allowedGit.Bare("fleet"), "for-each-ref", "--format=%(refname)", "refs/heads/promote/")).To(Equal("refs/heads/promote/allowed/staging/2"))
}
