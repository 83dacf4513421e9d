//go:build !unit

package scale

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/jira"
	"github.com/release-controller/release-controller/internal/jira/jiratest"
	"github.com/release-controller/release-controller/internal/releaseimage"
	"github.com/release-controller/release-controller/internal/verdict/verdicttest"
)

// TestFaultJira (case 5): streams with Jira configured each get an accepted payload whose
// changelog fixes one issue, while Jira answers 500 to everything, and then leaves two requests
// unanswered until the controller's client times out. The payloads say the issues are not
// verified and why; once Jira is back every issue is moved to VERIFIED once and commented once.
func TestFaultJira(t *testing.T) {
	sc := scaleOf(t)
	n := max(2, sc.streams/4)
	ctx := context.Background()
	srv := jiratest.NewServer()
	t.Cleanup(srv.Close)
	jiraURL, moves := countMoves(t, srv)
	ns, logNS := env.Namespace(t), env.Namespace(t)
	t.Cleanup(func() { deleteReleaseObjects(t, ns) }) // after the controller stops
	// The token may go to the test's Jira, a plain http server.
	if err := env.Client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "jira-token",
		Annotations: map[string]string{v1alpha1.AnnotationAllowedURLs: jiraURL, v1alpha1.AnnotationAllowInsecureHTTP: "true"}},
		StringData: map[string]string{jira.SecretKeyToken: srv.Token}}); err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	type product struct {
		stream, issue string
		first, second *v1alpha1.ReleasePayload
	}
	products := make([]product, n)
	for i := range products {
		p := product{stream: fmt.Sprintf("j-%02d", i), issue: fmt.Sprintf("OCPBUGS-%d", 100+i)}
		dir := filepath.Join(root, p.stream)
		start, fix := gitHistory(t, dir, "Start", p.issue+": fix it")
		srv.AddIssue(p.issue, "ON_QA")
		stream := &v1alpha1.ReleaseStream{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: p.stream},
			Spec: v1alpha1.ReleaseStreamSpec{
				TagPrefix:         fmt.Sprintf("1.%d.0-0.jira", i),
				PayloadRepository: repo(ns, p.stream+"-release"),
				// Never resolves: this stream creates no payloads; the test does.
				Components: []v1alpha1.ComponentSource{{Name: "api", Image: "127.0.0.1:1/none/api:latest"}},
				Jira:       &v1alpha1.JiraConfig{URL: jiraURL, Projects: []string{"OCPBUGS"}, TokenSecret: "jira-token"},
			},
		}
		if err := env.Client.Create(ctx, stream); err != nil {
			t.Fatal(err)
		}
		p.first = jiraPayload(t, ns, p.stream, fmt.Sprintf("1.%d.0-0.jira-2026-11-26-090000", i), dir, start)
		p.second = jiraPayload(t, ns, p.stream, fmt.Sprintf("1.%d.0-0.jira-2026-11-26-100000", i), dir, fix)
		products[i] = p
	}
	c := startFaultController(t, logNS, "--git-source-allow", "file://"+root+"/", "--web-url", "https://releases.example.com")
	issuesCondition := func(ctx context.Context, p *v1alpha1.ReleasePayload) (*metav1.Condition, error) {
		var got v1alpha1.ReleasePayload
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(p), &got); err != nil {
			return nil, err
		}
		return meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionPayloadIssuesVerified), nil
	}
	for _, p := range products {
		createEarned(t, p.first)
	}
	waitFor(t, "the first payloads' issues are looked at", convergeTimeout, []*replica{c.r}, func(ctx context.Context) (bool, string, error) {
		for _, p := range products {
			cond, err := issuesCondition(ctx, p.first)
			if err != nil || cond == nil || cond.Status != metav1.ConditionTrue {
				return false, fmt.Sprintf("%s: %+v", p.first.Name, cond), err
			}
		}
		return true, "", nil
	})

	srv.Down(http.StatusInternalServerError)
	down := time.Now()
	from := c.mark()
	for _, p := range products {
		createEarned(t, p.second)
	}
	var said string
	waitFor(t, "every payload says its issue is not verified", convergeTimeout, nil, func(ctx context.Context) (bool, string, error) {
		c.keepRunning()
		for _, p := range products {
			cond, err := issuesCondition(ctx, p.second)
			if err != nil || cond == nil || cond.Status != metav1.ConditionFalse || !strings.Contains(cond.Message, "500") {
				return false, fmt.Sprintf("%s: %+v", p.second.Name, cond), err
			}
			said = cond.Reason + ": " + cond.Message
		}
		return true, "", nil
	})
	// Then Jira answers nothing to two requests: the client's timeout ends them.
	srv.Stall(2)
	srv.Up()
	restored := time.Now()
	waitFor(t, "every issue is verified", convergeTimeout, nil, func(ctx context.Context) (bool, string, error) {
		c.keepRunning()
		for _, p := range products {
			cond, err := issuesCondition(ctx, p.second)
			if err != nil || cond == nil || cond.Status != metav1.ConditionTrue {
				return false, fmt.Sprintf("%s: %+v", p.second.Name, cond), err
			}
		}
		return true, "", nil
	})
	took := time.Since(restored)
	errs, _ := c.saidSince(from)
	for _, p := range products {
		if s := srv.Status(p.issue); s != "VERIFIED" {
			t.Errorf("%s is %s, want VERIFIED", p.issue, s)
		}
		if comments := srv.Comments(p.issue); len(comments) != 1 {
			t.Errorf("%s has %d comments, want 1: %q", p.issue, len(comments), comments)
		}
		if n := moves(p.issue); n != 1 {
			t.Errorf("%s was moved %d times, want once", p.issue, n)
		}
	}
	faultLine(t, "jira", "streams", n, "down_s", restored.Sub(down).Round(time.Second).Seconds(), "stalled_requests", 2,
		"controller_errors", errs, "converge_s", took.Round(time.Second).Seconds(), "said", strconv.Quote(said))
}

// countMoves puts a proxy in front of srv and returns its URL, and how many transitions of an
// issue Jira carried out (answered 2xx) through it; the requests answered 500, or not at all,
// moved nothing.
func countMoves(t testing.TB, srv *jiratest.Server) (string, func(issue string) int) {
	t.Helper()
	target, err := url.Parse(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	moved := map[string]int{}
	proxy := httptest.NewServer(&httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) { r.SetURL(target) },
		ModifyResponse: func(resp *http.Response) error {
			issue, ok := strings.CutSuffix(strings.TrimPrefix(resp.Request.URL.Path, "/rest/api/2/issue/"), "/transitions")
			if ok && resp.Request.Method == http.MethodPost && resp.StatusCode/100 == 2 {
				mu.Lock()
				moved[issue]++
				mu.Unlock()
			}
			return nil
		},
	})
	t.Cleanup(proxy.Close) // before srv's: the stalled requests end with the client's
	return proxy.URL, func(issue string) int {
		mu.Lock()
		defer mu.Unlock()
		return moved[issue]
	}
}

// gitHistory makes a repository in dir with one commit per message; it returns their hashes.
func gitHistory(t testing.TB, dir string, messages ...string) (first, last plumbing.Hash) {
	t.Helper()
	r, err := git.PlainInitWithOptions(dir, &git.PlainInitOptions{InitOptions: git.InitOptions{DefaultBranch: plumbing.Main}})
	if err != nil {
		t.Fatal(err)
	}
	wt, err := r.Worktree()
	if err != nil {
		t.Fatal(err)
	}
	when := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	var hashes []plumbing.Hash
	for _, m := range messages {
		when = when.Add(time.Hour)
		sig := &object.Signature{Name: "Jane Dev", Email: "jane@example.com", When: when}
		h, err := wt.Commit(m, &git.CommitOptions{Author: sig, Committer: sig, AllowEmptyCommits: true})
		if err != nil {
			t.Fatal(err)
		}
		hashes = append(hashes, h)
	}
	return hashes[0], hashes[len(hashes)-1]
}

// jiraPayload pushes a component image built from revision of the repository in dir and the
// payload image holding it, and returns the payload (not created yet) with that image.
func jiraPayload(t testing.TB, ns, stream, tag, dir string, revision plumbing.Hash) *v1alpha1.ReleasePayload {
	t.Helper()
	component := pushComponent(t, repo(ns, stream+"-api")+":"+revision.String()[:12], "file://"+dir, revision.String())
	repository := repo(ns, stream+"-release")
	built, err := releaseimage.Build(context.Background(), releaseimage.BuildOptions{
		Tag: tag, Stream: stream, Repository: repository, Components: []releaseimage.Component{{Name: "api", Image: component}},
	})
	if err != nil {
		t.Fatal(err)
	}
	p := &v1alpha1.ReleasePayload{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: tag, Labels: map[string]string{v1alpha1.LabelStream: stream}},
		Spec: v1alpha1.ReleasePayloadSpec{
			PayloadCoordinates:    v1alpha1.PayloadCoordinates{Stream: stream, Tag: tag},
			Components:            []v1alpha1.PinnedComponent{{Name: "api", Image: component}},
			PayloadCreationConfig: v1alpha1.PayloadCreationConfig{Repository: repository},
		},
	}
	p.Status.PayloadImage = built.Image
	return p
}

// createEarned creates the payload and gives it the status the payload controller writes when
// it accepts a payload built and verified (it has no verifications), accepted now.
func createEarned(t testing.TB, p *v1alpha1.ReleasePayload) {
	t.Helper()
	ctx := context.Background()
	image := p.Status.PayloadImage
	created := p.DeepCopy()
	if err := env.Client.Create(ctx, created); err != nil {
		t.Fatalf("creating payload %s: %v", p.Name, err)
	}
	verdicttest.Earn(created, v1alpha1.PhaseAccepted)
	created.Status.PayloadImage = image
	for i := range created.Status.Conditions {
		created.Status.Conditions[i].LastTransitionTime = metav1.Now()
	}
	if err := env.Client.Status().Update(ctx, created); err != nil {
		t.Fatalf("accepting payload %s: %v", p.Name, err)
	}
}
