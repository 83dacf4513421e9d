package jira

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/time/rate"

	"github.com/release-controller/release-controller/internal/jira/jiraclient"
	"github.com/release-controller/release-controller/internal/jira/jiratest"
)

const (
	payloadTag = "4.15.0-0.nightly-2026-11-22-093000"
	payloadURL = "https://release.example.com/namespaces/ocp/releasestream/4.15.0-0.nightly/release/4.15.0-0.nightly-2026-11-22-093000"
)

func TestPlan(t *testing.T) {
	verify := jiraclient.Transition{ID: "51", Name: "Verify", To: jiraclient.Status{Name: "Verified"}}
	failQA := jiraclient.Transition{ID: "61", Name: "Failed QA", To: jiraclient.Status{Name: "ASSIGNED"}}
	comment := commentBody(payloadTag, payloadURL)
	for _, tc := range []struct {
		name           string
		state          issueState
		wantTransition string // transition id, "" for none
		wantComment    string
		wantErr        string
	}{
		{name: "move and comment",
			state:          issueState{Key: "A-1", Status: "ON_QA", Transitions: []jiraclient.Transition{failQA, verify}},
			wantTransition: "51", wantComment: comment},
		{name: "already in the target status, in another case: comment only",
			state:       issueState{Key: "A-1", Status: "verified"},
			wantComment: comment},
		{name: "already commented for this payload (a crash before the status write): move only",
			state:          issueState{Key: "A-1", Status: "ON_QA", Comments: []string{"other", "Fixed in " + payloadURL + " indeed"}, Transitions: []jiraclient.Transition{verify}},
			wantTransition: "51"},
		{name: "done before",
			state: issueState{Key: "A-1", Status: "VERIFIED", Comments: []string{comment}}},
		{name: "a comment of another payload does not count",
			state:       issueState{Key: "A-1", Status: "VERIFIED", Comments: []string{commentBody("4.15.0-0.nightly-2026-11-21-000000", "https://release.example.com/x/4.15.0-0.nightly-2026-11-21-000000")}},
			wantComment: comment},
		{name: "the URL of a later tag that starts with this one's does not count",
			state:       issueState{Key: "A-1", Status: "VERIFIED", Comments: []string{"Fix included in accepted release x: " + payloadURL + "0", "see " + payloadURL + ".1/x"}},
			wantComment: comment},
		{name: "the URL ending a sentence counts",
			state: issueState{Key: "A-1", Status: "VERIFIED", Comments: []string{"Fixed in " + payloadURL + ". Thanks!"}}},
		{name: "the URL in Jira link markup counts",
			state: issueState{Key: "A-1", Status: "VERIFIED", Comments: []string{"[release|" + payloadURL + "]"}}},
		{name: "no transition to the target",
			state:   issueState{Key: "A-1", Status: "NEW", Transitions: []jiraclient.Transition{{ID: "11", Name: "Assign", To: jiraclient.Status{Name: "ASSIGNED"}}}},
			wantErr: `no transition from NEW to VERIFIED (available: "Assign" to ASSIGNED)`},
		{name: "no transition at all",
			state:   issueState{Key: "A-1", Status: "CLOSED"},
			wantErr: "no transition from CLOSED to VERIFIED (available: none)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, err := plan(tc.state, "VERIFIED", payloadTag, payloadURL)
			if tc.wantErr != "" {
				var nt *noTransitionError
				if err == nil || err.Error() != tc.wantErr || !errors.As(err, &nt) {
					t.Fatalf("plan = %+v, %v; want error %q", a, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			gotTransition := ""
			if a.Transition != nil {
				gotTransition = a.Transition.ID
			}
			if gotTransition != tc.wantTransition || a.Comment != tc.wantComment {
				t.Fatalf("plan = transition %q, comment %q; want %q, %q", gotTransition, a.Comment, tc.wantTransition, tc.wantComment)
			}
			if a.None() != (tc.wantTransition == "" && tc.wantComment == "") {
				t.Fatalf("None() = %v", a.None())
			}
		})
	}
	if _, err := plan(issueState{Status: "NEW"}, "VERIFIED", payloadTag, ""); err == nil {
		t.Fatal("a plan without a payload URL: an empty URL is in every comment")
	}
	if want := "Fix included in accepted release " + payloadTag + ": " + payloadURL; comment != want {
		t.Fatalf("comment %q, want %q", comment, want)
	}
}

func TestFilterKeys(t *testing.T) {
	got := filterKeys([]string{"OCPBUGS-10", "OTHER-1", "OCPBUGS-2", "OCPBUGS-10", "API-7", "OCPBUGS_X-1", "OCPBUGS-0", "OCPBUGSY-3", "API-7"},
		[]string{"OCPBUGS", "API"})
	if want := []string{"API-7", "OCPBUGS-2", "OCPBUGS-10"}; !slices.Equal(got, want) {
		t.Fatalf("filterKeys = %v, want %v", got, want)
	}
	if got := filterKeys([]string{"A-1"}, nil); len(got) != 0 {
		t.Fatalf("no projects: %v", got)
	}
}

func outcomes(res issueResults) map[string]outcome {
	m := map[string]outcome{}
	for _, o := range res.Outcomes {
		m[o.Key] = o
	}
	return m
}

func TestVerifyIssues(t *testing.T) {
	srv := jiratest.Start(t)
	srv.AddIssue("A-1", "ON_QA")
	srv.AddIssue("A-2", "MODIFIED")
	srv.AddIssue("A-3", "VERIFIED") // moved by someone already
	srv.AddIssue("A-4", "NEW")      // no way to VERIFIED from NEW
	c := newClient(t, srv)
	ctx := context.Background()
	keys := []string{"A-1", "A-2", "A-3", "A-4", "A-5"}
	comment := commentBody(payloadTag, payloadURL)

	res := verifyIssues(ctx, c, keys, "VERIFIED", payloadTag, payloadURL)
	if len(res.Outcomes) != len(keys) {
		t.Fatalf("%d outcomes for %d keys", len(res.Outcomes), len(keys))
	}
	if got := res.Keys(outcomeVerified); !slices.Equal(got, []string{"A-1", "A-2"}) {
		t.Errorf("verified %v", got)
	}
	if got := res.Keys(outcomeAlready); !slices.Equal(got, []string{"A-3"}) {
		t.Errorf("already %v", got)
	}
	o := outcomes(res)
	var nt *noTransitionError
	if f := o["A-4"]; f.State != outcomeFailed || !errors.As(f.Err, &nt) || !strings.Contains(f.Err.Error(), `available: "Assign" to ASSIGNED`) || f.Transient() {
		t.Errorf("A-4: %+v", f)
	}
	if f := o["A-5"]; f.State != outcomeFailed || !jiraclient.IsNotFound(f.Err) || f.Transient() ||
		!strings.Contains(f.Err.Error(), "the issue does not exist, or the credentials may not see it") {
		t.Errorf("A-5: %+v", f)
	}
	if res.Transient() {
		t.Error("a missing transition and a missing issue are no transient failures")
	}
	for _, k := range []string{"A-1", "A-2", "A-3"} {
		if s := srv.Status(k); s != "VERIFIED" {
			t.Errorf("%s is %s", k, s)
		}
		if got := srv.Comments(k); !slices.Equal(got, []string{comment}) {
			t.Errorf("%s comments %q", k, got)
		}
		if !o[k].Commented {
			t.Errorf("%s: not reported as commented", k)
		}
	}
	if s, c := srv.Status("A-4"), srv.Comments("A-4"); s != "NEW" || len(c) != 0 {
		t.Errorf("A-4 was changed: %s %q", s, c)
	}
	summary := summarize(res, "VERIFIED")
	for _, want := range []string{"moved 2 issues to VERIFIED: A-1, A-2", "1 issue already VERIFIED: A-3", "2 issues not moved to VERIFIED: A-4: no transition from NEW to VERIFIED"} {
		if !strings.Contains(summary, want) {
			t.Errorf("summary %q lacks %q", summary, want)
		}
	}

	// Again (a restart, a retry): nothing is changed in Jira.
	srv.ResetRequests()
	res = verifyIssues(ctx, c, keys, "VERIFIED", payloadTag, payloadURL)
	for _, r := range srv.Requests() {
		if r.Method != http.MethodGet {
			t.Errorf("second run sent %s %s", r.Method, r.Path)
		}
	}
	if got := res.Keys(outcomeAlready); !slices.Equal(got, []string{"A-1", "A-2", "A-3"}) {
		t.Errorf("second run: already %v", got)
	}
	for _, k := range []string{"A-1", "A-2", "A-3"} {
		if got := srv.Comments(k); len(got) != 1 || outcomes(res)[k].Commented {
			t.Errorf("%s commented again: %q", k, got)
		}
	}
}

// A controller that stopped between the transition and the comment finishes the job: the
// issue is not moved again, and commented once.
func TestVerifyIssuesResumes(t *testing.T) {
	srv := jiratest.Start(t)
	srv.AddIssue("A-1", "VERIFIED") // moved, not commented
	srv.AddIssue("A-2", "ON_QA")    // commented, not moved (a comment added by hand first)
	srv.AddComment("A-2", "see "+payloadURL)
	c := newClient(t, srv)

	res := verifyIssues(context.Background(), c, []string{"A-1", "A-2"}, "VERIFIED", payloadTag, payloadURL)
	o := outcomes(res)
	if o["A-1"].State != outcomeAlready || !o["A-1"].Commented || o["A-2"].State != outcomeVerified || o["A-2"].Commented {
		t.Fatalf("outcomes %+v", res.Outcomes)
	}
	if got := srv.Comments("A-2"); len(got) != 1 {
		t.Fatalf("A-2 comments %q", got)
	}
	if n := srv.Count(http.MethodPost, "/rest/api/2/issue/A-1/transitions"); n != 0 {
		t.Fatalf("A-1 moved %d times", n)
	}
}

// Failures that may go away are reported as transient, and the other issues are still done.
func TestVerifyIssuesTransientFailure(t *testing.T) {
	srv := jiratest.Start(t)
	srv.AddIssue("A-1", "ON_QA")
	srv.AddIssue("A-2", "ON_QA")
	c := newClient(t, srv, jiraclient.WithRetries(0))
	srv.Fail(1, http.StatusServiceUnavailable, "")

	res := verifyIssues(context.Background(), c, []string{"A-1", "A-2"}, "VERIFIED", payloadTag, payloadURL)
	o := outcomes(res)
	if !o["A-1"].Transient() || !res.Transient() || o["A-2"].State != outcomeVerified {
		t.Fatalf("outcomes %+v", res.Outcomes)
	}
	if srv.Status("A-1") != "ON_QA" || srv.Status("A-2") != "VERIFIED" {
		t.Fatalf("statuses %s %s", srv.Status("A-1"), srv.Status("A-2"))
	}

	// A cancelled context fails the rest without a request.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	srv.ResetRequests()
	res = verifyIssues(ctx, c, []string{"A-1"}, "VERIFIED", payloadTag, payloadURL)
	if f := res.Failures(); len(f) != 1 || !errors.Is(f[0].Err, context.Canceled) || len(srv.Requests()) != 0 {
		t.Fatalf("cancelled: %+v, %d requests", res.Outcomes, len(srv.Requests()))
	}
}

// newClient is a client of srv with its token, without a rate limit, and whose retries do not
// wait, so that the tests do not depend on timing.
func newClient(t *testing.T, srv *jiratest.Server, opts ...jiraclient.Option) *jiraclient.Client {
	t.Helper()
	noWait := func(ctx context.Context, _ time.Duration) error { return ctx.Err() }
	opts = append([]jiraclient.Option{jiraclient.WithClock(time.Now, noWait), jiraclient.WithRateLimit(rate.Inf, 0)}, opts...)
	c, err := jiraclient.New(srv.URL, jiraclient.BearerAuth(srv.Token), opts...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
