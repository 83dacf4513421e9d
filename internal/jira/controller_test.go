//go:build !unit

package jira_test

import (
	"context"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	. "github.com/onsi/gomega"
	"go.uber.org/zap/zapcore"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/changelog"
	"github.com/release-controller/release-controller/internal/devenv/registry"
	"github.com/release-controller/release-controller/internal/jira"
	"github.com/release-controller/release-controller/internal/jira/jiraclient"
	"github.com/release-controller/release-controller/internal/jira/jiratest"
	"github.com/release-controller/release-controller/internal/manager"
	"github.com/release-controller/release-controller/internal/registryclient"
	"github.com/release-controller/release-controller/internal/releaseimage"
	"github.com/release-controller/release-controller/internal/testenv"
)

// env is the API server shared by the package's tests; each controller test runs its own
// manager with only the Jira controller, so the payloads' conditions written by the test stay.
var env *testenv.Env

// waitTimeout bounds every wait; it is a deadline for a broken test, not a performance assertion.
const waitTimeout = 60 * time.Second

func TestMain(m *testing.M) {
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(zapcore.ErrorLevel)))
	testenv.Main(m, &env, nil)
}

const pageBase = "https://release.example.com"

// product is a component's git repository and the registry its images and payloads are
// pushed to: payloads built as the stream controller builds them, so that the changelog
// between two of them is computed from real commits.
type product struct {
	t    *testing.T
	reg  *registry.Server
	repo *git.Repository
	dir  string
	when time.Time
}

func newProduct(t *testing.T) *product {
	t.Helper()
	reg, err := registry.Start(context.Background(), registry.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = reg.Close() })
	dir := t.TempDir()
	repo, err := git.PlainInitWithOptions(dir, &git.PlainInitOptions{InitOptions: git.InitOptions{DefaultBranch: plumbing.Main}})
	if err != nil {
		t.Fatal(err)
	}
	return &product{t: t, reg: reg, repo: repo, dir: dir, when: time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)}
}

// commit adds a commit with message to the repository's main branch.
func (p *product) commit(message string) plumbing.Hash {
	p.t.Helper()
	wt, err := p.repo.Worktree()
	if err != nil {
		p.t.Fatal(err)
	}
	p.when = p.when.Add(time.Hour)
	sig := &object.Signature{Name: "Jane Dev", Email: "jane@example.com", When: p.when}
	h, err := wt.Commit(message, &git.CommitOptions{Author: sig, Committer: sig, AllowEmptyCommits: true})
	if err != nil {
		p.t.Fatal(err)
	}
	return h
}

// payload builds the image of a component at revision and a payload image holding it, and
// returns the ReleasePayload of tag recording it (not created yet).
func (p *product) payload(ns, tag string, revision plumbing.Hash) *v1alpha1.ReleasePayload {
	p.t.Helper()
	img, err := random.Image(64, 1)
	if err != nil {
		p.t.Fatal(err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		p.t.Fatal(err)
	}
	cfg = cfg.DeepCopy()
	cfg.Config.Labels = map[string]string{releaseimage.LabelSource: "file://" + p.dir, releaseimage.LabelRevision: revision.String()}
	if img, err = mutate.ConfigFile(img, cfg); err != nil {
		p.t.Fatal(err)
	}
	ref, err := name.NewTag(p.reg.Addr() + "/product/api:" + revision.String()[:12])
	if err != nil {
		p.t.Fatal(err)
	}
	if err := remote.Write(ref, img); err != nil {
		p.t.Fatal(err)
	}
	digest, err := img.Digest()
	if err != nil {
		p.t.Fatal(err)
	}
	component := ref.Context().Digest(digest.String()).String()
	repository := p.reg.Addr() + "/product/release"
	built, err := releaseimage.Build(context.Background(), releaseimage.BuildOptions{
		Tag: tag, Stream: "nightly", Repository: repository,
		Components: []releaseimage.Component{{Name: "api", Image: component}},
	})
	if err != nil {
		p.t.Fatal(err)
	}
	return &v1alpha1.ReleasePayload{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: tag, Labels: map[string]string{v1alpha1.LabelStream: "nightly"}},
		Spec: v1alpha1.ReleasePayloadSpec{
			PayloadCoordinates:    v1alpha1.PayloadCoordinates{Stream: "nightly", Tag: tag},
			Components:            []v1alpha1.PinnedComponent{{Name: "api", Image: component}},
			PayloadCreationConfig: v1alpha1.PayloadCreationConfig{Repository: repository},
		},
		Status: v1alpha1.ReleasePayloadStatus{PayloadImage: built.Image},
	}
}

// createAccepted creates the payload and writes the status the payload controller writes
// when it accepts a payload.
func createAccepted(t *testing.T, p *v1alpha1.ReleasePayload) {
	t.Helper()
	ctx := context.Background()
	status := p.Status
	if err := env.Client.Create(ctx, p); err != nil {
		t.Fatalf("creating payload %s: %v", p.Name, err)
	}
	now := metav1.Now()
	status.Phase = v1alpha1.PhaseAccepted
	status.ReleaseCreationJobResult = v1alpha1.ReleaseCreationJobResult{Name: "create-" + p.Name[len(p.Name)-6:], Status: v1alpha1.CreationJobSuccess}
	status.Conditions = []metav1.Condition{
		{Type: v1alpha1.ConditionPayloadCreated, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonCreationJobSucceeded, Message: "built", LastTransitionTime: now},
		{Type: v1alpha1.ConditionPayloadFailed, Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonCreationJobNotFailed, Message: "built", LastTransitionTime: now},
		{Type: v1alpha1.ConditionPayloadAccepted, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonVerificationsCompleted, Message: "no blocking jobs", LastTransitionTime: now},
		{Type: v1alpha1.ConditionPayloadRejected, Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonPayloadAccepted, Message: "accepted", LastTransitionTime: now},
	}
	p.Status = status
	if err := env.Client.Status().Update(ctx, p); err != nil {
		t.Fatalf("accepting payload %s: %v", p.Name, err)
	}
}

func createStream(t *testing.T, ns, jiraURL, secret string) {
	t.Helper()
	s := &v1alpha1.ReleaseStream{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "nightly"},
		Spec: v1alpha1.ReleaseStreamSpec{
			TagPrefix:         "4.15.0-0.nightly",
			PayloadRepository: "registry.example.com/product/release",
			Components:        []v1alpha1.ComponentSource{{Name: "api", Image: "registry.example.com/product/api:latest"}},
			Jira:              &v1alpha1.JiraConfig{URL: jiraURL, Projects: []string{"OCPBUGS"}, TokenSecret: secret},
		},
	}
	if err := env.Client.Create(context.Background(), s); err != nil {
		t.Fatalf("creating stream: %v", err)
	}
}

// createSecret creates a token Secret that may be sent to the test's Jira: the annotation
// allowed-urls names jiraURL, and plain http is allowed (the test's Jira is an http server);
// with jiraURL empty, the Secret has no annotations.
func createSecret(t *testing.T, ns, name, jiraURL string, data map[string]string) {
	t.Helper()
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, StringData: data}
	if jiraURL != "" {
		s.Annotations = map[string]string{v1alpha1.AnnotationAllowedURLs: jiraURL, v1alpha1.AnnotationAllowInsecureHTTP: "true"}
	}
	if err := env.Client.Create(context.Background(), s); err != nil {
		t.Fatalf("creating secret: %v", err)
	}
}

// startController runs a manager restricted to ns with only the Jira controller until the
// returned stop is called (or the test ends).
func startController(t *testing.T, ns string, r *jira.Reconciler) (stop func()) {
	t.Helper()
	mgr, err := manager.New(env.Config, manager.Options{MetricsAddr: "0", ProbeAddr: "0", Namespace: ns, SkipControllerNameValidation: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := r.SetupWithManager(ctx, mgr); err != nil {
		cancel()
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager stopped with: %v", err)
		}
	}
	t.Cleanup(stop)
	return stop
}

func newReconciler(t *testing.T) *jira.Reconciler {
	t.Helper()
	repos, err := changelog.NewRepoCache(changelog.RepoCacheOptions{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	return &jira.Reconciler{
		ChangeLogs: changelog.NewPayloadChangeLogs(changelog.NewGenerator(repos, changelog.GeneratorOptions{}), registryclient.New(), changelog.PayloadsOptions{}),
		PayloadURL: jira.PayloadPageURL(pageBase),
	}
}

// waitCondition waits until the payload's PayloadIssuesVerified passes check.
func waitCondition(t *testing.T, ns, tag string, check func(g Gomega, c *metav1.Condition)) {
	t.Helper()
	NewWithT(t).Eventually(func(g Gomega) {
		var p v1alpha1.ReleasePayload
		g.Expect(env.Client.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: tag}, &p)).To(Succeed())
		c := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ConditionPayloadIssuesVerified)
		g.Expect(c).NotTo(BeNil(), "no %s condition on %s", v1alpha1.ConditionPayloadIssuesVerified, tag)
		g.Expect(c.ObservedGeneration).To(Equal(p.Generation))
		check(g, c)
	}).WithTimeout(waitTimeout).WithPolling(50 * time.Millisecond).Should(Succeed())
}

func conditionIs(status metav1.ConditionStatus, reason string, message ...string) func(g Gomega, c *metav1.Condition) {
	return func(g Gomega, c *metav1.Condition) {
		g.Expect(c.Status).To(Equal(status), "condition %+v", c)
		g.Expect(c.Reason).To(Equal(reason), "condition %+v", c)
		for _, m := range message {
			g.Expect(c.Message).To(ContainSubstring(m))
		}
	}
}

const (
	tag0 = "4.15.0-0.nightly-2026-11-22-090000"
	tag1 = "4.15.0-0.nightly-2026-11-22-100000"
	tag2 = "4.15.0-0.nightly-2026-11-22-110000"
)

func pageOf(ns, tag string) string {
	return pageBase + "/namespaces/" + ns + "/releasestream/nightly/release/" + tag
}

func TestControllerVerifiesIssuesOnce(t *testing.T) {
	ns := env.Namespace(t)
	srv := jiratest.Start(t)
	srv.AddIssue("OCPBUGS-1", "ON_QA")
	srv.AddIssue("OCPBUGS-2", "MODIFIED")
	srv.AddIssue("OCPBUGS-3", "VERIFIED")
	srv.AddIssue("OCPBUGS-4", "NEW")
	srv.AddIssue("OCPBUGS-5", "ON_QA")
	// OTHER-9 is of another project: asking Jira for it would fail with a 404.

	prod := newProduct(t)
	c0 := prod.commit("Start the api component\n\nOCPBUGS-99 was fixed before the first payload.")
	prod.commit("OCPBUGS-1: fix the crash on start\n\nAlso fixes OCPBUGS-2 and relates to OTHER-9.")
	c2 := prod.commit("Merge pull request #3 from jane/fix\n\nOCPBUGS-3: retry the upload")
	c3 := prod.commit("OCPBUGS-4, OCPBUGS-5: two more (#4)")

	createSecret(t, ns, "jira-token", srv.URL, map[string]string{jira.SecretKeyToken: srv.Token + "\n"})
	createStream(t, ns, srv.URL, "jira-token")
	createAccepted(t, prod.payload(ns, tag0, c0))
	createAccepted(t, prod.payload(ns, tag1, c2))
	createAccepted(t, prod.payload(ns, tag2, c3))

	stop := startController(t, ns, newReconciler(t))
	waitCondition(t, ns, tag0, conditionIs(metav1.ConditionTrue, v1alpha1.ReasonNoIssues, "the first accepted payload of stream nightly"))
	waitCondition(t, ns, tag1, conditionIs(metav1.ConditionTrue, v1alpha1.ReasonIssuesVerified,
		"moved 2 issues to VERIFIED: OCPBUGS-1, OCPBUGS-2; 1 issue already VERIFIED: OCPBUGS-3"))
	waitCondition(t, ns, tag2, conditionIs(metav1.ConditionFalse, v1alpha1.ReasonIssuesNotVerified,
		"moved 1 issue to VERIFIED: OCPBUGS-5",
		`1 issue not moved to VERIFIED: OCPBUGS-4: no transition from NEW to VERIFIED (available: "Assign" to ASSIGNED)`))

	wantComments := map[string][]string{
		"OCPBUGS-1": {jira.CommentBody(tag1, pageOf(ns, tag1))},
		"OCPBUGS-2": {jira.CommentBody(tag1, pageOf(ns, tag1))},
		"OCPBUGS-3": {jira.CommentBody(tag1, pageOf(ns, tag1))},
		"OCPBUGS-4": nil,
		"OCPBUGS-5": {jira.CommentBody(tag2, pageOf(ns, tag2))},
	}
	checkJira := func() {
		t.Helper()
		for key, want := range wantComments {
			if got := srv.Comments(key); !slices.Equal(got, want) {
				t.Errorf("%s comments %q, want %q", key, got, want)
			}
			wantStatus := "VERIFIED"
			if key == "OCPBUGS-4" {
				wantStatus = "NEW"
			}
			if s := srv.Status(key); s != wantStatus {
				t.Errorf("%s is %s, want %s", key, s, wantStatus)
			}
		}
		for _, r := range srv.Requests() {
			if strings.Contains(r.Path, "OTHER-9") || strings.Contains(r.Path, "OCPBUGS-99") {
				t.Errorf("an issue outside the changelog or the projects was asked for: %s %s", r.Method, r.Path)
			}
		}
	}
	checkJira()

	// The failure is reported as an Event on the payload.
	NewWithT(t).Eventually(func(g Gomega) {
		var list eventsv1.EventList
		g.Expect(env.Client.List(context.Background(), &list, client.InNamespace(ns))).To(Succeed())
		found := slices.ContainsFunc(list.Items, func(e eventsv1.Event) bool {
			return e.Regarding.Name == tag2 && e.Type == corev1.EventTypeWarning && e.Reason == v1alpha1.ReasonIssuesNotVerified &&
				strings.Contains(e.Note, "OCPBUGS-4 not moved to VERIFIED")
		})
		g.Expect(found).To(BeTrue(), "events: %+v", list.Items)
	}).WithTimeout(waitTimeout).WithPolling(100 * time.Millisecond).Should(Succeed())

	// A controller stopped after its Jira calls but before its status write: the condition is
	// gone, and a new manager does the payload again, without touching Jira.
	stop()
	var p1 v1alpha1.ReleasePayload
	if err := env.Client.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: tag1}, &p1); err != nil {
		t.Fatal(err)
	}
	meta.RemoveStatusCondition(&p1.Status.Conditions, v1alpha1.ConditionPayloadIssuesVerified)
	if err := env.Client.Status().Update(context.Background(), &p1); err != nil {
		t.Fatal(err)
	}
	srv.ResetRequests()
	startController(t, ns, newReconciler(t))
	waitCondition(t, ns, tag1, conditionIs(metav1.ConditionTrue, v1alpha1.ReasonIssuesVerified,
		"3 issues already VERIFIED: OCPBUGS-1, OCPBUGS-2, OCPBUGS-3"))
	// The failed payload is looked at again at the start too; it waits for its retry now.
	NewWithT(t).Eventually(func() int { return srv.Count(http.MethodGet, "/rest/api/2/issue/OCPBUGS-4/transitions") }).
		WithTimeout(waitTimeout).WithPolling(50 * time.Millisecond).Should(BeNumerically(">=", 1))
	for _, r := range srv.Requests() {
		if r.Method != http.MethodGet {
			t.Errorf("after the restart: %s %s", r.Method, r.Path)
		}
	}
	checkJira()
}

// A stream whose token Secret is missing says so, and goes on once the Secret exists.
func TestControllerWaitsForTheTokenSecret(t *testing.T) {
	ns := env.Namespace(t)
	srv := jiratest.Start(t)
	srv.AddIssue("OCPBUGS-7", "ON_QA")
	prod := newProduct(t)
	c0 := prod.commit("Start")
	c1 := prod.commit("OCPBUGS-7: fix it")

	createStream(t, ns, srv.URL, "jira-cloud")
	createAccepted(t, prod.payload(ns, tag0, c0))
	createAccepted(t, prod.payload(ns, tag1, c1))
	r := newReconciler(t)
	r.RetryBase = time.Hour // only the Secret's creation brings the payload back in time
	r.RetryMax = time.Hour
	startController(t, ns, r)
	waitCondition(t, ns, tag1, conditionIs(metav1.ConditionFalse, v1alpha1.ReasonJiraMisconfigured, "the token Secret jira-cloud does not exist"))
	if n := len(srv.Requests()); n != 0 {
		t.Fatalf("%d requests to Jira without credentials", n)
	}

	// A Jira Cloud credential: email and API token, sent as basic authentication.
	createSecret(t, ns, "jira-cloud", srv.URL, map[string]string{jira.SecretKeyEmail: srv.Email, jira.SecretKeyToken: srv.Token})
	waitCondition(t, ns, tag1, conditionIs(metav1.ConditionTrue, v1alpha1.ReasonIssuesVerified, "moved 1 issue to VERIFIED: OCPBUGS-7"))
	if s, c := srv.Status("OCPBUGS-7"), srv.Comments("OCPBUGS-7"); s != "VERIFIED" || !slices.Equal(c, []string{jira.CommentBody(tag1, pageOf(ns, tag1))}) {
		t.Fatalf("OCPBUGS-7: %s, %q", s, c)
	}
}

// Jira unavailable: the payload says so, and is retried with backoff until Jira answers.
func TestControllerRetriesWhenJiraIsUnavailable(t *testing.T) {
	ns := env.Namespace(t)
	srv := jiratest.Start(t)
	srv.AddIssue("OCPBUGS-8", "ON_QA")
	prod := newProduct(t)
	c0 := prod.commit("Start")
	c1 := prod.commit("OCPBUGS-8: fix it")
	createSecret(t, ns, "jira-token", srv.URL, map[string]string{jira.SecretKeyToken: srv.Token})
	createStream(t, ns, srv.URL, "jira-token")
	createAccepted(t, prod.payload(ns, tag0, c0))

	// Every request of the first attempt fails; the client does not retry by itself here, so
	// the controller's backoff does.
	srv.Fail(1, http.StatusServiceUnavailable, "")
	r := newReconciler(t)
	r.ClientOptions = []jiraclient.Option{jiraclient.WithRetries(0)}
	r.RetryBase, r.RetryMax = 10*time.Millisecond, 100*time.Millisecond
	startController(t, ns, r)
	createAccepted(t, prod.payload(ns, tag1, c1))
	// "moved 1 issue to VERIFIED", or "1 issue already VERIFIED" when the status write of the
	// attempt that moved it met a cache behind the failed attempt's write (a conflict) and the
	// next attempt found the issue moved: either way the issue is VERIFIED, commented once.
	waitCondition(t, ns, tag1, conditionIs(metav1.ConditionTrue, v1alpha1.ReasonIssuesVerified, "VERIFIED: OCPBUGS-8"))
	if s := srv.Status("OCPBUGS-8"); s != "VERIFIED" {
		t.Fatalf("OCPBUGS-8 is %s", s)
	}
	if got := srv.Count(http.MethodGet, "/rest/api/2/issue/OCPBUGS-8"); got < 2 {
		t.Fatalf("the issue was read %d times; the 503 was not retried", got)
	}
	if c := srv.Comments("OCPBUGS-8"); len(c) != 1 {
		t.Fatalf("comments %q", c)
	}
}

// The token goes only where its Secret allows (annotation allowed-urls, https unless
// allow-insecure-http): for each refused URL — every one reaching the test's Jira — the
// payload's condition and an Event name spec.jira.url, the Secret and the rule, and Jira gets
// no request at all; once the Secret allows the URL the token is sent.
func TestControllerSendsTheTokenOnlyWhereTheSecretAllows(t *testing.T) {
	srv := jiratest.Start(t)
	srv.AddIssue("OCPBUGS-7", "ON_QA")
	prod := newProduct(t)
	c0 := prod.commit("Start")
	c1 := prod.commit("OCPBUGS-7: fix it")
	port := srv.URL[strings.LastIndex(srv.URL, ":")+1:]
	insecure := map[string]string{v1alpha1.AnnotationAllowInsecureHTTP: "true"}
	with := func(a map[string]string, prefixes string) map[string]string {
		out := map[string]string{v1alpha1.AnnotationAllowedURLs: prefixes}
		for k, v := range a {
			out[k] = v
		}
		return out
	}
	for _, tc := range []struct {
		name        string
		url         string
		annotations map[string]string
		rule        string
	}{
		{"no allowed-urls", srv.URL, insecure, "has no annotation release-controller.dev/allowed-urls, so it is sent nowhere: add it"},
		{"plain http without the opt-in", srv.URL, with(nil, srv.URL), `is plain http: the Secret goes over https only, unless it has the annotation release-controller.dev/allow-insecure-http: "true"`},
		{"another host", srv.URL, with(insecure, "http://localhost:"+port), "is under none of the prefixes of the Secret's annotation release-controller.dev/allowed-urls (http://localhost:" + port + ")"},
		{"another port", srv.URL, with(insecure, "http://127.0.0.1:1"), "is under none of the prefixes"},
		{"the allowed host as user name", "http://127.0.0.1:1@127.0.0.1:" + port, with(insecure, "http://127.0.0.1:1"), "user name or password"},
		{"a longer path segment", srv.URL + "/a/bc", with(insecure, srv.URL+"/a/b"), "is under none of the prefixes"},
		{"encoded dots", srv.URL + "/a/b/%2e%2e/%2e%2e", with(insecure, srv.URL+"/a/b"), "percent-encoded slash, backslash or dot"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns := env.Namespace(t)
			s := &corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "jira-token", Annotations: tc.annotations},
				StringData: map[string]string{jira.SecretKeyToken: srv.Token},
			}
			if err := env.Client.Create(context.Background(), s); err != nil {
				t.Fatal(err)
			}
			createStream(t, ns, tc.url, "jira-token")
			createAccepted(t, prod.payload(ns, tag0, c0))
			createAccepted(t, prod.payload(ns, tag1, c1))
			startController(t, ns, newReconciler(t))
			message := "1 issues not verified: the token Secret jira-token is not sent to spec.jira.url: "
			waitCondition(t, ns, tag1, conditionIs(metav1.ConditionFalse, v1alpha1.ReasonJiraMisconfigured, message, tc.rule))
			waitEvent(t, ns, tag1, v1alpha1.ReasonJiraMisconfigured, "the token Secret jira-token is not sent to spec.jira.url: ", tc.rule)
			if got := srv.Requests(); len(got) != 0 {
				t.Fatalf("Jira got %d requests: %+v", len(got), got)
			}
		})
	}

	// Allowed: the same Secret with the opt-in and the Jira URL as prefix sends the token.
	ns := env.Namespace(t)
	createSecret(t, ns, "jira-token", "", map[string]string{jira.SecretKeyToken: srv.Token})
	createStream(t, ns, srv.URL, "jira-token")
	createAccepted(t, prod.payload(ns, tag0, c0))
	createAccepted(t, prod.payload(ns, tag1, c1))
	r := newReconciler(t)
	r.RetryBase, r.RetryMax = time.Hour, time.Hour // only the Secret's annotations bring it back in time
	startController(t, ns, r)
	waitCondition(t, ns, tag1, conditionIs(metav1.ConditionFalse, v1alpha1.ReasonJiraMisconfigured, "has no annotation release-controller.dev/allowed-urls"))
	var s corev1.Secret
	if err := env.Client.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: "jira-token"}, &s); err != nil {
		t.Fatal(err)
	}
	s.Annotations = with(insecure, "https://jira.example.com\n"+srv.URL+"/")
	if err := env.Client.Update(context.Background(), &s); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, ns, tag1, conditionIs(metav1.ConditionTrue, v1alpha1.ReasonIssuesVerified, "moved 1 issue to VERIFIED: OCPBUGS-7"))
	got := srv.Requests()
	if len(got) == 0 {
		t.Fatal("Jira got no request once allowed")
	}
	for _, req := range got {
		if req.Authorization != "Bearer "+srv.Token {
			t.Errorf("%s %s without the token: %q", req.Method, req.Path, req.Authorization)
		}
	}
}

// waitEvent waits for a Warning Event on the payload tag with reason whose note holds every
// part.
func waitEvent(t *testing.T, ns, tag, reason string, parts ...string) {
	t.Helper()
	NewWithT(t).Eventually(func(g Gomega) {
		var list eventsv1.EventList
		g.Expect(env.Client.List(context.Background(), &list, client.InNamespace(ns))).To(Succeed())
		found := slices.ContainsFunc(list.Items, func(e eventsv1.Event) bool {
			if e.Regarding.Name != tag || e.Type != corev1.EventTypeWarning || e.Reason != reason {
				return false
			}
			for _, p := range parts {
				if !strings.Contains(e.Note, p) {
					return false
				}
			}
			return true
		})
		g.Expect(found).To(BeTrue(), "events: %+v", list.Items)
	}).WithTimeout(waitTimeout).WithPolling(100 * time.Millisecond).Should(Succeed())
}
