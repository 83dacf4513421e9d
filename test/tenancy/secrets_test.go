//go:build !unit

package tenancy

import (
	"context"
	"net"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/release-controller/release-controller/api/v1alpha1"
)

// TestAttackGitCredentialsToAnotherURL: tenant A's pipelines promote by pull request with a git
// credentials Secret of A's, to a repository URL A chose: with a Secret that lists no URL, over
// plain http when the Secret did not opt in, and to a path that only textually extends the
// Secret's prefix (team-abc under team-a). Before issue 33 the credentials went to whatever URL
// the pipeline named. Now each promotion fails before anything is sent (PromotionFailed and an
// Event naming the field, the Secret and the rule), and nothing connects to the server.
func TestAttackGitCredentialsToAnotherURL(t *testing.T) {
	g := NewWithT(t)
	a := rc.a
	l, err := net.Listen("tcp", "127.0.0.1:0")
	g.Expect(err).NotTo(HaveOccurred())
	defer l.Close()
	var connections atomic.Int64
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			connections.Add(1)
			_ = c.Close()
		}
	}()
	server := l.Addr().String()

	asTenant(t, a, deployment(a.namespace, "pr", "r7"))
	rollOut(t, a.namespace, "pr")
	asTenant(t, a, deployment(a.prod, "pr", "0"))
	rollOut(t, a.prod, "pr")
	since := time.Now()
	for _, tc := range []struct {
		name, url   string
		annotations map[string]string
		want        string
	}{
		{"pr-no-urls", "https://" + server + "/team-a/fleet.git", nil,
			"the Secret has no annotation " + v1alpha1.AnnotationAllowedURLs + ", so it is sent nowhere"},
		{"pr-http", "http://" + server + "/team-a/fleet.git", map[string]string{v1alpha1.AnnotationAllowedURLs: "http://" + server + "/team-a/"},
			"is plain http: the Secret goes over https only, unless it has the annotation " + v1alpha1.AnnotationAllowInsecureHTTP},
		{"pr-prefix", "https://" + server + "/team-abc/fleet.git", map[string]string{v1alpha1.AnnotationAllowedURLs: "https://" + server + "/team-a"},
			"is under none of the prefixes of the Secret's annotation " + v1alpha1.AnnotationAllowedURLs},
	} {
		asTenant(t, a, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: a.namespace, Name: tc.name, Annotations: tc.annotations},
			Data: map[string][]byte{v1alpha1.SecretKeyGitUsername: []byte("tenant-a"), v1alpha1.SecretKeyGitPassword: []byte("tenant a's git token")}})
		asTenant(t, a, &v1alpha1.Pipeline{
			ObjectMeta: metav1.ObjectMeta{Namespace: a.namespace, Name: tc.name},
			Spec: v1alpha1.PipelineSpec{
				AppRef:             v1alpha1.AppReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "pr", Container: "web"},
				ServiceAccountName: promoterAccount,
				Promotion: &v1alpha1.Promotion{Strategy: v1alpha1.StrategyPullRequest, PullRequest: &v1alpha1.PullRequestPromotion{
					URL: tc.url, Path: "apps/pr/release.yaml", YAMLPath: "spec.version",
					SecretRef: &v1alpha1.GitCredentialsReference{Name: tc.name},
				}},
				Environments: []v1alpha1.Environment{
					{Name: "dev", Targets: []v1alpha1.Target{{Namespace: a.namespace}}},
					{Name: "prod", Targets: []v1alpha1.Target{{Namespace: a.prod}}},
				},
			},
		})
		refusal := []string{"the git credentials Secret " + tc.name + " is not sent to spec.promotion.pullRequest.url", tc.want}
		c := waitCondition(t, a.namespace, tc.name, v1alpha1.ConditionPromotionFailed, metav1.ConditionTrue, v1alpha1.ReasonPromotionFailed)
		mustContainAll(t, tc.name+"'s PromotionFailed condition", c.Message, refusal...)
		waitEvent(t, a.namespace, "Pipeline", tc.name, v1alpha1.EventPromotionFailed, refusal...)
	}
	g.Expect(connections.Load()).To(BeZero(), "the controller connected to the repository's server")
	checkNothingOutside(t, since, a)
}

// TestAttackJiraTokenToAnotherURL: tenant A's streams verify the Jira issues of their payloads'
// changelogs with a token Secret of A's, at a Jira URL A chose: with a Secret that lists no
// URL, over plain http when the Secret did not opt in, and at a host the Secret does not list.
// Before issue 33 the token went to whatever spec.jira.url named. Now each payload's issues
// are not verified (PayloadIssuesVerified=False, JiraMisconfigured, and an Event, naming
// spec.jira.url, the Secret and the rule), and nothing connects to the URL's server.
func TestAttackJiraTokenToAnotherURL(t *testing.T) {
	g := NewWithT(t)
	a := rc.a
	l, err := net.Listen("tcp", "127.0.0.1:0")
	g.Expect(err).NotTo(HaveOccurred())
	defer l.Close()
	var connections atomic.Int64
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			connections.Add(1)
			_ = c.Close()
		}
	}()
	jira := l.Addr().String()

	// The component's repository, which the controller may clone (--git-source-allow): the
	// second revision fixes an issue.
	repo, dir := gitRepo(t)
	first := commit(t, repo, "the first revision")
	since := time.Now()
	cases := []struct {
		name, url   string
		annotations map[string]string
		want        string
	}{
		{"jira-no-urls", "https://" + jira, nil,
			"the Secret has no annotation " + v1alpha1.AnnotationAllowedURLs + ", so it is sent nowhere"},
		{"jira-http", "http://" + jira, map[string]string{v1alpha1.AnnotationAllowedURLs: "http://" + jira + "/"},
			"is plain http: the Secret goes over https only"},
		{"jira-elsewhere", "https://" + jira, map[string]string{v1alpha1.AnnotationAllowedURLs: "https://jira.example.com/"},
			"is under none of the prefixes of the Secret's annotation " + v1alpha1.AnnotationAllowedURLs + " (https://jira.example.com/)"},
	}
	publish(t, a.namespace, "jira-web", first.String(), "file://"+dir)
	for _, tc := range cases {
		asTenant(t, a, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: a.namespace, Name: tc.name, Annotations: tc.annotations},
			Data: map[string][]byte{"token": []byte("tenant a's jira token")}})
		s := streamOf(a.namespace, tc.name, []string{"jira-web"})
		s.Spec.Jira = &v1alpha1.JiraConfig{URL: tc.url, Projects: []string{"OCPBUGS"}, TokenSecret: tc.name}
		asTenant(t, a, s)
	}
	firsts := map[string]string{}
	for _, tc := range cases {
		firsts[tc.name] = waitAccepted(t, a.namespace, tc.name).Name
	}
	publish(t, a.namespace, "jira-web", commit(t, repo, "OCPBUGS-1: fix the login").String(), "file://"+dir)
	for _, tc := range cases {
		p := waitAccepted(t, a.namespace, tc.name, firsts[tc.name])
		refusal := []string{"the token Secret " + tc.name + " is not sent to spec.jira.url", tc.want}
		var c *metav1.Condition
		g.Eventually(func(g Gomega) {
			var got v1alpha1.ReleasePayload
			g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(&p), &got)).To(Succeed())
			c = meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionPayloadIssuesVerified)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Reason).To(Equal(v1alpha1.ReasonJiraMisconfigured), "%+v", c)
		}).WithTimeout(waitTimeout).WithPolling(200 * time.Millisecond).Should(Succeed())
		g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
		mustContainAll(t, tc.name+"'s PayloadIssuesVerified condition", c.Message, refusal...)
		waitEvent(t, a.namespace, "ReleasePayload", p.Name, v1alpha1.ReasonJiraMisconfigured, refusal...)
	}
	g.Expect(connections.Load()).To(BeZero(), "the controller connected to the Jira URL's server")
	checkNothingOutside(t, since, a)
}

// gitRepo makes a git repository under workDir/git, where the controller may clone from
// (--git-source-allow), and returns it and its folder.
func gitRepo(t *testing.T) (*git.Repository, string) {
	t.Helper()
	dir := filepath.Join(workDir, "git", "web")
	repo, err := git.PlainInitWithOptions(dir, &git.PlainInitOptions{InitOptions: git.InitOptions{DefaultBranch: plumbing.Main}})
	if err != nil {
		t.Fatal(err)
	}
	return repo, dir
}

// commit adds an empty commit with message to the repository's main branch.
func commit(t *testing.T, repo *git.Repository, message string) plumbing.Hash {
	t.Helper()
	wt, err := repo.Worktree()
	if err != nil {
		t.Fatal(err)
	}
	sig := &object.Signature{Name: "Tenant A", Email: "a@example.com", When: time.Now()}
	h, err := wt.Commit(message, &git.CommitOptions{Author: sig, Committer: sig, AllowEmptyCommits: true})
	if err != nil {
		t.Fatal(err)
	}
	return h
}
