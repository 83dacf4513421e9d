package jiraclient_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/release-controller/release-controller/internal/jira/jiraclient"
	"github.com/release-controller/release-controller/internal/jira/jiratest"
)

// A pool keeps one client per server and credential, and one rate limit per server: a second
// credential of the same server waits on the first one's budget.
func TestPoolSharesAServersRateLimit(t *testing.T) {
	srv := jiratest.Start(t)
	srv.AddIssue("A-1", "NEW")
	clock := newFakeClock()
	pool := jiraclient.NewPool(jiraclient.WithClock(clock.Now, clock.Sleep), jiraclient.WithRateLimit(1, 1))

	a, err := pool.Client(srv.URL, jiraclient.BearerAuth(srv.Token))
	if err != nil {
		t.Fatal(err)
	}
	again, err := pool.Client(srv.URL+"/", jiraclient.BearerAuth(srv.Token))
	if err != nil {
		t.Fatal(err)
	}
	if again != a {
		t.Fatal("the same server and credential got a new client")
	}
	b, err := pool.Client(srv.URL, jiraclient.BasicAuth(srv.Email, srv.Token))
	if err != nil {
		t.Fatal(err)
	}
	if b == a {
		t.Fatal("another credential got the first credential's client")
	}
	for _, c := range []*jiraclient.Client{a, b} {
		if _, err := c.Transitions(context.Background(), "A-1"); err != nil {
			t.Fatal(err)
		}
	}
	if got := clock.Sleeps(); !slices.Equal(got, []time.Duration{time.Second}) {
		t.Fatalf("waits %v: the credentials do not share the server's budget", got)
	}

	if _, err := pool.Client("ftp://jira.example.com", jiraclient.BearerAuth("t")); err == nil {
		t.Fatal("a URL that is not http(s) was accepted")
	}
}
