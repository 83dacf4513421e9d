package jiraclient_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/time/rate"

	"github.com/release-controller/release-controller/internal/jira/jiraclient"
	"github.com/release-controller/release-controller/internal/jira/jiratest"
)

// fakeClock is the client's clock and sleep: a sleep records its duration and moves the
// clock on at once, so the tests neither wait nor depend on timing.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	sleeps []time.Duration
	// onSleep, when set, runs before each sleep returns.
	onSleep func()
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Sleep(ctx context.Context, d time.Duration) error {
	c.mu.Lock()
	c.sleeps = append(c.sleeps, d)
	c.now = c.now.Add(d)
	hook := c.onSleep
	c.mu.Unlock()
	if hook != nil {
		hook()
	}
	return ctx.Err()
}

func (c *fakeClock) Sleeps() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.sleeps)
}

// newClient is a client of srv with its token, the fake clock and no rate limit unless opts
// set one.
func newClient(t *testing.T, srv *jiratest.Server, clock *fakeClock, opts ...jiraclient.Option) *jiraclient.Client {
	t.Helper()
	opts = append([]jiraclient.Option{jiraclient.WithClock(clock.Now, clock.Sleep), jiraclient.WithRateLimit(rate.Inf, 0)}, opts...)
	c, err := jiraclient.New(srv.URL, jiraclient.BearerAuth(srv.Token), opts...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func jiraError(t *testing.T, err error) *jiraclient.Error {
	t.Helper()
	var e *jiraclient.Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v (%T) is no *jiraclient.Error", err, err)
	}
	return e
}

func TestClientReadsAndChangesIssues(t *testing.T) {
	srv := jiratest.Start(t)
	srv.AddIssue("OCPBUGS-1", "ON_QA")
	srv.AddIssue("OCPBUGS-2", "NEW")
	srv.AddIssue("OTHER-1", "NEW")
	c := newClient(t, srv, newFakeClock())
	ctx := context.Background()

	issue, err := c.Issue(ctx, "OCPBUGS-1")
	if err != nil {
		t.Fatal(err)
	}
	if issue.Key != "OCPBUGS-1" || issue.StatusName() != "ON_QA" || len(issue.CommentBodies()) != 0 || issue.Fields.Comment.Total != 0 {
		t.Fatalf("issue = %+v", issue)
	}

	ts, err := c.Transitions(ctx, "OCPBUGS-1")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, tr := range ts {
		got = append(got, tr.ID+":"+tr.Name+"->"+tr.To.Name)
	}
	if want := []string{"51:Verify->VERIFIED", "61:Failed QA->ASSIGNED"}; !slices.Equal(got, want) {
		t.Fatalf("transitions = %v, want %v", got, want)
	}

	if err := c.Transition(ctx, "OCPBUGS-1", "51"); err != nil {
		t.Fatal(err)
	}
	if s := srv.Status("OCPBUGS-1"); s != "VERIFIED" {
		t.Fatalf("status after the transition = %q", s)
	}

	comment, err := c.AddComment(ctx, "OCPBUGS-1", "Fix included in accepted release 1.0.1")
	if err != nil {
		t.Fatal(err)
	}
	if comment.ID == "" || comment.Body != "Fix included in accepted release 1.0.1" {
		t.Fatalf("comment = %+v", comment)
	}
	if got := srv.Comments("OCPBUGS-1"); !slices.Equal(got, []string{"Fix included in accepted release 1.0.1"}) {
		t.Fatalf("comments on the server = %q", got)
	}
	issue, err = c.Issue(ctx, "OCPBUGS-1")
	if err != nil {
		t.Fatal(err)
	}
	if issue.StatusName() != "VERIFIED" || !slices.Equal(issue.CommentBodies(), []string{"Fix included in accepted release 1.0.1"}) {
		t.Fatalf("issue after the changes = %+v", issue)
	}

	res, err := c.Search(ctx, "key in (OCPBUGS-2, OCPBUGS-1)", []string{"status"}, 0, 50)
	if err != nil {
		t.Fatal(err)
	}
	if res.Total != 2 || len(res.Issues) != 2 || res.Issues[0].Key != "OCPBUGS-1" || res.Issues[0].StatusName() != "VERIFIED" ||
		res.Issues[1].StatusName() != "NEW" || res.Issues[0].Fields.Comment != nil {
		t.Fatalf("search = %+v", res)
	}
	page, err := c.Search(ctx, "project = OCPBUGS", []string{"status"}, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	if page.Total != 2 || page.StartAt != 1 || len(page.Issues) != 1 || page.Issues[0].Key != "OCPBUGS-2" {
		t.Fatalf("second page = %+v", page)
	}
}

func TestClientBasicAuth(t *testing.T) {
	srv := jiratest.Start(t)
	srv.AddIssue("A-1", "NEW")
	clock := newFakeClock()
	c, err := jiraclient.New(srv.URL, jiraclient.BasicAuth(srv.Email, srv.Token), jiraclient.WithClock(clock.Now, clock.Sleep))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Issue(context.Background(), "A-1"); err != nil {
		t.Fatalf("basic auth: %v", err)
	}
	c, err = jiraclient.New(srv.URL, jiraclient.BasicAuth("someone@example.com", srv.Token), jiraclient.WithClock(clock.Now, clock.Sleep))
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Issue(context.Background(), "A-1")
	if e := jiraError(t, err); e.StatusCode != http.StatusForbidden || !jiraclient.IsUnauthorized(err) || jiraclient.IsTransient(err) {
		t.Fatalf("another user: %v", err)
	}
}

func TestClientErrors(t *testing.T) {
	srv := jiratest.Start(t)
	srv.AddIssue("A-1", "NEW")
	c := newClient(t, srv, newFakeClock())
	ctx := context.Background()

	_, err := c.Issue(ctx, "A-404")
	e := jiraError(t, err)
	if !jiraclient.IsNotFound(err) || jiraclient.IsTransient(err) ||
		!slices.Equal(e.ErrorMessages, []string{"Issue does not exist or you do not have permission to see it."}) {
		t.Fatalf("unknown issue: %+v", e)
	}
	if want := "jira: GET /rest/api/2/issue/A-404: 404 Not Found: Issue does not exist or you do not have permission to see it."; err.Error() != want {
		t.Fatalf("error text %q, want %q", err, want)
	}

	err = c.Transition(ctx, "A-1", "51")
	e = jiraError(t, err)
	if e.StatusCode != http.StatusBadRequest || jiraclient.IsTransient(err) || jiraclient.IsNotFound(err) ||
		!slices.Equal(e.ErrorMessages, []string{"Transition id '51' is not valid for this issue."}) {
		t.Fatalf("invalid transition: %+v", e)
	}
	if s := srv.Status("A-1"); s != "NEW" {
		t.Fatalf("an invalid transition moved the issue to %s", s)
	}

	_, err = c.Search(ctx, "status changed AFTER -1d", nil, 0, 10)
	if e := jiraError(t, err); e.StatusCode != http.StatusBadRequest || !strings.Contains(err.Error(), "Error in the JQL Query") {
		t.Fatalf("bad JQL: %v", err)
	}

	// Keys that would change the request's path are refused before any request.
	before := len(srv.Requests())
	if _, err := c.Issue(ctx, "../search"); err == nil || !strings.Contains(err.Error(), "not an issue key") {
		t.Fatalf("a path as key: %v", err)
	}
	if len(srv.Requests()) != before {
		t.Fatal("a bad key was sent")
	}

	// A wrong token is 403, and not retried.
	bad, err := jiraclient.New(srv.URL, jiraclient.BearerAuth("wrong"), jiraclient.WithClock(newFakeClock().Now, newFakeClock().Sleep))
	if err != nil {
		t.Fatal(err)
	}
	srv.ResetRequests()
	_, err = bad.Issue(ctx, "A-1")
	if e := jiraError(t, err); e.StatusCode != http.StatusForbidden || !jiraclient.IsUnauthorized(err) || len(srv.Requests()) != 1 {
		t.Fatalf("wrong token: %v after %d requests", err, len(srv.Requests()))
	}

	for _, u := range []string{"", "ftp://jira.example.com", "https://"} {
		if _, err := jiraclient.New(u, jiraclient.BearerAuth("t")); err == nil {
			t.Errorf("URL %q accepted", u)
		}
	}
	if _, err := jiraclient.New(srv.URL, jiraclient.BearerAuth("")); err == nil {
		t.Error("an empty token accepted")
	}
}

func TestClientRetriesThrottledRequests(t *testing.T) {
	srv := jiratest.Start(t)
	srv.AddIssue("A-1", "ON_QA")
	clock := newFakeClock()
	c := newClient(t, srv, clock)

	srv.Fail(2, http.StatusTooManyRequests, "7")
	issue, err := c.Issue(context.Background(), "A-1")
	if err != nil || issue.StatusName() != "ON_QA" {
		t.Fatalf("after two 429s: %v, %+v", err, issue)
	}
	if got := srv.Count(http.MethodGet, "/rest/api/2/issue/A-1"); got != 3 {
		t.Fatalf("%d requests, want 3", got)
	}
	if got, want := clock.Sleeps(), []time.Duration{7 * time.Second, 7 * time.Second}; !slices.Equal(got, want) {
		t.Fatalf("waits %v, want Retry-After's %v", got, want)
	}

	// Retry-After as an HTTP date.
	clock.sleeps = nil
	srv.Fail(1, http.StatusTooManyRequests, clock.Now().Add(90*time.Second).Format(http.TimeFormat))
	if _, err := c.Issue(context.Background(), "A-1"); err != nil {
		t.Fatal(err)
	}
	if got := clock.Sleeps(); !slices.Equal(got, []time.Duration{90 * time.Second}) {
		t.Fatalf("waits %v for an HTTP date 90 s ahead", got)
	}

	// A POST throttled by Jira was not applied: it is sent again, and done once.
	srv.Fail(1, http.StatusServiceUnavailable, "")
	if _, err := c.AddComment(context.Background(), "A-1", "hello"); err != nil {
		t.Fatal(err)
	}
	if got := srv.Comments("A-1"); !slices.Equal(got, []string{"hello"}) {
		t.Fatalf("comments = %q", got)
	}
}

func TestClientBackoffAndExhaustedRetries(t *testing.T) {
	srv := jiratest.Start(t)
	srv.AddIssue("A-1", "ON_QA")
	clock := newFakeClock()
	c := newClient(t, srv, clock, jiraclient.WithRetries(3), jiraclient.WithBackoff(time.Second, 3*time.Second))

	srv.Fail(4, http.StatusInternalServerError, "")
	_, err := c.Issue(context.Background(), "A-1")
	e := jiraError(t, err)
	if e.StatusCode != http.StatusInternalServerError || !jiraclient.IsTransient(err) {
		t.Fatalf("exhausted: %v", err)
	}
	if got := srv.Count(http.MethodGet, "/rest/api/2/issue/A-1"); got != 4 {
		t.Fatalf("%d requests, want 1 + 3 retries", got)
	}
	if got, want := clock.Sleeps(), []time.Duration{time.Second, 2 * time.Second, 3 * time.Second}; !slices.Equal(got, want) {
		t.Fatalf("backoff %v, want %v", got, want)
	}

	// A POST that met a 500 may have been applied: it is not sent again.
	srv.ResetRequests()
	srv.Fail(1, http.StatusInternalServerError, "")
	if err := c.Transition(context.Background(), "A-1", "51"); !jiraclient.IsTransient(err) {
		t.Fatalf("transition after a 500: %v", err)
	}
	if got := srv.Count(http.MethodPost, "/rest/api/2/issue/A-1/transitions"); got != 1 {
		t.Fatalf("%d transition requests, want 1", got)
	}

	// A Retry-After longer than the client waits out is returned at once.
	srv.ResetRequests()
	clock.sleeps = nil
	srv.Fail(1, http.StatusTooManyRequests, "600")
	_, err = c.Issue(context.Background(), "A-1")
	if e := jiraError(t, err); e.StatusCode != http.StatusTooManyRequests || e.RetryAfter != 10*time.Minute || !jiraclient.IsTransient(err) ||
		len(clock.Sleeps()) != 0 || len(srv.Requests()) != 1 {
		t.Fatalf("long Retry-After: %v, waits %v", err, clock.Sleeps())
	}
}

func TestClientNetworkErrors(t *testing.T) {
	srv := jiratest.NewServer()
	url := srv.URL
	srv.Close()
	clock := newFakeClock()
	c, err := jiraclient.New(url, jiraclient.BearerAuth("t"), jiraclient.WithClock(clock.Now, clock.Sleep), jiraclient.WithRetries(2))
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Issue(context.Background(), "A-1")
	var netErr *jiraclient.NetworkError
	if !errors.As(err, &netErr) || !jiraclient.IsTransient(err) || len(clock.Sleeps()) != 2 {
		t.Fatalf("closed server: %v, waits %v", err, clock.Sleeps())
	}
	clock.sleeps = nil
	if _, err := c.AddComment(context.Background(), "A-1", "x"); !errors.As(err, &netErr) || len(clock.Sleeps()) != 0 {
		t.Fatalf("a POST without an answer was retried: %v, waits %v", err, clock.Sleeps())
	}
}

func TestClientRateLimit(t *testing.T) {
	srv := jiratest.Start(t)
	srv.AddIssue("A-1", "NEW")
	clock := newFakeClock()
	c := newClient(t, srv, clock, jiraclient.WithRateLimit(2, 1))
	for range 3 {
		if _, err := c.Transitions(context.Background(), "A-1"); err != nil {
			t.Fatal(err)
		}
	}
	// The first request uses the burst; each next one waits half a second at 2 per second.
	if got, want := clock.Sleeps(), []time.Duration{500 * time.Millisecond, 500 * time.Millisecond}; !slices.Equal(got, want) {
		t.Fatalf("waits %v, want %v", got, want)
	}

	// Clients sharing a limiter share the budget.
	shared := rate.NewLimiter(1, 1)
	clock2 := newFakeClock()
	a := newClient(t, srv, clock2, jiraclient.WithLimiter(shared))
	b := newClient(t, srv, clock2, jiraclient.WithLimiter(shared))
	for _, cl := range []*jiraclient.Client{a, b} {
		if _, err := cl.Transitions(context.Background(), "A-1"); err != nil {
			t.Fatal(err)
		}
	}
	if got := clock2.Sleeps(); !slices.Equal(got, []time.Duration{time.Second}) {
		t.Fatalf("shared limiter waits %v", got)
	}
}

func TestClientContextCancellation(t *testing.T) {
	srv := jiratest.Start(t)
	srv.AddIssue("A-1", "NEW")
	clock := newFakeClock()
	c := newClient(t, srv, clock)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := c.Issue(ctx, "A-1"); !errors.Is(err, context.Canceled) || jiraclient.IsTransient(err) {
		t.Fatalf("cancelled before: %v", err)
	}

	// Cancelled while waiting to retry: no more requests.
	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	clock.onSleep = cancel
	srv.ResetRequests()
	srv.Fail(5, http.StatusServiceUnavailable, "1")
	if _, err := c.Issue(ctx, "A-1"); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled while waiting: %v", err)
	}
	if n := len(srv.Requests()); n != 1 {
		t.Fatalf("%d requests after the cancellation, want 1", n)
	}
}

// Jira Cloud puts only some comments in the comment field; the client reads the rest, so a
// comment linking the payload is never missed.
func TestClientReadsEveryComment(t *testing.T) {
	srv := jiratest.Start(t)
	srv.AddIssue("A-1", "NEW")
	srv.SetCommentFieldLimit(2)
	for i := range 7 {
		srv.AddComment("A-1", fmt.Sprintf("comment %d", i))
	}
	c := newClient(t, srv, newFakeClock())
	issue, err := c.Issue(context.Background(), "A-1")
	if err != nil {
		t.Fatal(err)
	}
	if got := issue.CommentBodies(); len(got) != 7 || got[6] != "comment 6" {
		t.Fatalf("comments = %q", got)
	}
	if srv.Count(http.MethodGet, "/rest/api/2/issue/A-1/comment") == 0 {
		t.Fatal("the comment resource was not read")
	}
}

// The local server checks what Jira checks, so the client's requests are known to be right.
func TestServerChecksRequests(t *testing.T) {
	srv := jiratest.Start(t)
	srv.AddIssue("A-1", "ON_QA")
	do := func(method, path, contentType, body string, auth bool) (int, string) {
		t.Helper()
		req, err := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if contentType != "" {
			req.Header.Set("Content-Type", contentType)
		}
		if auth {
			req.Header.Set("Authorization", "Bearer "+srv.Token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		data, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, string(data)
	}
	for _, tc := range []struct {
		name, method, path, contentType, body string
		auth                                  bool
		status                                int
		contains                              string
	}{
		{"no credentials", http.MethodGet, "/rest/api/2/issue/A-1", "", "", false, 401, "You are not authenticated"},
		{"not JSON", http.MethodPost, "/rest/api/2/issue/A-1/comment", "text/plain", `{"body":"x"}`, true, 415, "Unsupported Media Type"},
		{"unknown field", http.MethodPost, "/rest/api/2/issue/A-1/comment", "application/json", `{"text":"x"}`, true, 400, `"errorMessages":["Unexpected character`},
		{"empty comment", http.MethodPost, "/rest/api/2/issue/A-1/comment", "application/json", `{"body":" "}`, true, 400, `"errors":{"comment":"Comment body can not be empty!"}`},
		{"transition without id", http.MethodPost, "/rest/api/2/issue/A-1/transitions", "application/json", `{"transition":{}}`, true, 400, `"transition":"Transition id is required."`},
		{"transition id as a number", http.MethodPost, "/rest/api/2/issue/A-1/transitions", "application/json", `{"transition":{"id":51}}`, true, 400, "Unexpected character"},
		{"unknown issue", http.MethodGet, "/rest/api/2/issue/B-1", "", "", true, 404, `{"errorMessages":["Issue does not exist or you do not have permission to see it."],"errors":{}}`},
		{"wrong method", http.MethodDelete, "/rest/api/2/issue/A-1/comment", "", "", true, 405, "Method Not Allowed"},
		{"JSON with charset", http.MethodPost, "/rest/api/2/issue/A-1/transitions", "application/json; charset=utf-8", `{"transition":{"id":"51"}}`, true, 204, ""},
	} {
		status, body := do(tc.method, tc.path, tc.contentType, tc.body, tc.auth)
		if status != tc.status || !strings.Contains(body, tc.contains) {
			t.Errorf("%s: %d %s, want %d containing %s", tc.name, status, body, tc.status, tc.contains)
		}
	}
	if s := srv.Status("A-1"); s != "VERIFIED" {
		t.Errorf("status = %s after the one valid transition", s)
	}
	if c := srv.Comments("A-1"); len(c) != 0 {
		t.Errorf("invalid comments were added: %q", c)
	}
}

// A redirect within the Jira URL is followed; one out of it (another port of the same host,
// another path) is not: Go would keep the Authorization header on a redirect to the same
// host, and the token was allowed for the Jira URL only.
func TestClientFollowsNoRedirectOutOfItsURL(t *testing.T) {
	const token = "jira-token"
	var mu sync.Mutex
	var elsewhere []string
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		elsewhere = append(elsewhere, r.Header.Get("Authorization"))
		mu.Unlock()
		http.NotFound(w, r)
	}))
	defer other.Close()
	var movedAuth string
	jiraSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/jira/rest/api/2/issue/OCPBUGS-1": // within /jira: followed
			http.Redirect(w, r, "/jira/moved/OCPBUGS-1", http.StatusTemporaryRedirect)
		case "/jira/moved/OCPBUGS-1":
			mu.Lock()
			movedAuth = r.Header.Get("Authorization")
			mu.Unlock()
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"id":"1","key":"OCPBUGS-1","fields":{"status":{"name":"NEW"}}}`)
		case "/jira/rest/api/2/issue/OCPBUGS-1/transitions": // another port
			http.Redirect(w, r, other.URL+r.URL.Path, http.StatusTemporaryRedirect)
		case "/jira/rest/api/2/issue/OCPBUGS-1/comment": // out of /jira on the same server
			http.Redirect(w, r, "/admin/steal", http.StatusTemporaryRedirect)
		case "/admin/steal":
			mu.Lock()
			elsewhere = append(elsewhere, r.Header.Get("Authorization"))
			mu.Unlock()
			http.NotFound(w, r)
		default:
			http.NotFound(w, r)
		}
	}))
	defer jiraSrv.Close()
	c, err := jiraclient.New(jiraSrv.URL+"/jira", jiraclient.BearerAuth(token), jiraclient.WithRetries(0), jiraclient.WithRateLimit(rate.Inf, 0))
	if err != nil {
		t.Fatal(err)
	}
	issue, err := c.Issue(context.Background(), "OCPBUGS-1")
	if err != nil || issue.StatusName() != "NEW" {
		t.Fatalf("a redirect within the Jira URL: %+v, %v", issue, err)
	}
	if movedAuth != "Bearer "+token {
		t.Fatalf("the redirect within the Jira URL lost the credentials: %q", movedAuth)
	}
	if _, err := c.Transitions(context.Background(), "OCPBUGS-1"); err == nil ||
		!strings.Contains(err.Error(), "not following the redirect to "+other.URL+"/jira/rest/api/2/issue/OCPBUGS-1/transitions: it leaves "+jiraSrv.URL+"/jira") {
		t.Fatalf("a redirect to another port: %v", err)
	}
	if _, err := c.Comments(context.Background(), "OCPBUGS-1", 0, 10); err == nil || !strings.Contains(err.Error(), "not following the redirect to "+jiraSrv.URL+"/admin/steal") {
		t.Fatalf("a redirect out of the path: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(elsewhere) != 0 {
		t.Fatalf("%d requests out of the Jira URL (Authorization %q)", len(elsewhere), elsewhere)
	}
}
