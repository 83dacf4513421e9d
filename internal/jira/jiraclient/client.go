// Package jiraclient is a small typed client over Jira's REST API v2 (Client) and its wire
// types: rate-limited per Jira server, retrying what may go away, and keeping its credentials
// within the server's URL. The controller that uses it is internal/jira; jiratest is a local
// Jira server for the tests.
package jiraclient

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/time/rate"

	"github.com/release-controller/release-controller/internal/secreturl"
)

// Auth is how the client authenticates: a personal access token sent as a bearer token, or,
// with Email set, a Jira Cloud API token sent with the email as basic authentication.
type Auth struct {
	Email string
	Token string
}

// BearerAuth authenticates with a personal access token.
func BearerAuth(token string) Auth { return Auth{Token: token} }

// BasicAuth authenticates with a Jira Cloud account's email and API token.
func BasicAuth(email, token string) Auth { return Auth{Email: email, Token: token} }

func (a Auth) header() string {
	if a.Email != "" {
		return "Basic " + base64.StdEncoding.EncodeToString([]byte(a.Email+":"+a.Token))
	}
	return "Bearer " + a.Token
}

// Defaults of the client's options.
const (
	// DefaultRateLimit and DefaultBurst bound the requests per second to one Jira server:
	// Jira Cloud and busy Jira Data Center instances throttle clients that go faster.
	DefaultRateLimit rate.Limit = 5
	DefaultBurst     int        = 10
	// DefaultMaxRetries is how often a throttled or failed request is tried again.
	DefaultMaxRetries = 4
	// DefaultBackoffBase doubles per retry up to DefaultBackoffMax.
	DefaultBackoffBase = time.Second
	DefaultBackoffMax  = 30 * time.Second
	// DefaultMaxRetryAfter is the longest Retry-After the client waits out; a longer one is
	// returned as the error, and the caller retries later.
	DefaultMaxRetryAfter = 2 * time.Minute
	// DefaultTimeout bounds one request.
	DefaultTimeout = 30 * time.Second
)

// Client calls Jira's REST API v2. It is safe for concurrent use.
type Client struct {
	base          *url.URL
	auth          Auth
	http          *http.Client
	limiter       *rate.Limiter
	now           func() time.Time
	sleep         func(context.Context, time.Duration) error
	maxRetries    int
	backoffBase   time.Duration
	backoffMax    time.Duration
	maxRetryAfter time.Duration
}

// Option configures a Client.
type Option func(*Client)

// WithHTTPClient sends the requests with hc (its Timeout bounds each attempt).
func WithHTTPClient(hc *http.Client) Option { return func(c *Client) { c.http = hc } }

// WithRateLimit allows limit requests per second with bursts of burst; rate.Inf disables
// the limit.
func WithRateLimit(limit rate.Limit, burst int) Option {
	return func(c *Client) { c.limiter = rate.NewLimiter(limit, burst) }
}

// WithLimiter shares l between clients, so that clients of one Jira server (one per
// credential) keep to one budget.
func WithLimiter(l *rate.Limiter) Option { return func(c *Client) { c.limiter = l } }

// WithRetries sets how often a request that met 429, 5xx or a network error is tried again.
func WithRetries(n int) Option { return func(c *Client) { c.maxRetries = max(n, 0) } }

// WithBackoff sets the first wait between tries, doubled per retry up to maxDelay.
func WithBackoff(base, maxDelay time.Duration) Option {
	return func(c *Client) { c.backoffBase, c.backoffMax = base, maxDelay }
}

// WithMaxRetryAfter sets the longest Retry-After the client waits out.
func WithMaxRetryAfter(d time.Duration) Option { return func(c *Client) { c.maxRetryAfter = d } }

// WithClock replaces the clock and the wait used by the rate limit and the retries, so that
// tests neither wait nor depend on timing. sleep must return ctx's error when ctx ends first.
func WithClock(now func() time.Time, sleep func(ctx context.Context, d time.Duration) error) Option {
	return func(c *Client) { c.now, c.sleep = now, sleep }
}

// New returns a client of the Jira server at baseURL (e.g. https://issues.example.com, or
// with the context path of a Jira Server install).
func New(baseURL string, auth Auth, opts ...Option) (*Client, error) {
	u, err := url.Parse(baseURL)
	if err != nil {
		return nil, fmt.Errorf("jira: URL %q: %w", baseURL, err)
	}
	if (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, fmt.Errorf("jira: URL %q is not an http or https URL", baseURL)
	}
	if auth.Token == "" {
		return nil, errors.New("jira: no token")
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	u.RawPath, u.RawQuery, u.Fragment = "", "", ""
	c := &Client{
		base:          u,
		auth:          auth,
		http:          &http.Client{Timeout: DefaultTimeout},
		limiter:       rate.NewLimiter(DefaultRateLimit, DefaultBurst),
		now:           time.Now,
		sleep:         sleepContext,
		maxRetries:    DefaultMaxRetries,
		backoffBase:   DefaultBackoffBase,
		backoffMax:    DefaultBackoffMax,
		maxRetryAfter: DefaultMaxRetryAfter,
	}
	for _, o := range opts {
		o(c)
	}
	c.http = keepWithin(c.http, c.base.String())
	return c, nil
}

// keepWithin returns a copy of hc that follows no redirect out of base (another scheme, host,
// port or path): Go keeps the Authorization header on a redirect to the same host, even to
// plain http or another port, and the token was allowed for base only.
func keepWithin(hc *http.Client, base string) *http.Client {
	c := *hc
	next := hc.CheckRedirect
	c.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if !secreturl.Within(base, req.URL.String()) {
			return fmt.Errorf("jira: not following the redirect to %s: it leaves %s, the URL the credentials are for", req.URL.Redacted(), base)
		}
		if next != nil {
			return next(req, via)
		}
		if len(via) >= 10 {
			return errors.New("jira: stopped after 10 redirects")
		}
		return nil
	}
	return &c
}

// BaseURL is the server's URL as the client uses it.
func (c *Client) BaseURL() string { return c.base.String() }

func sleepContext(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// keyRe is what an issue key (or id) may hold; anything else would change the request's path.
var keyRe = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_-]*$`)

func issuePath(key string, rest ...string) (string, error) {
	if !keyRe.MatchString(key) {
		return "", fmt.Errorf("jira: %q is not an issue key", key)
	}
	return "/rest/api/2/issue/" + strings.Join(append([]string{key}, rest...), "/"), nil
}

// Issue reads an issue's status and comments (GET /rest/api/2/issue/{key}?fields=status,comment).
// When Jira returns only part of the comments, the rest are read from the comment resource,
// so that the comments are complete.
func (c *Client) Issue(ctx context.Context, key string) (*Issue, error) {
	p, err := issuePath(key)
	if err != nil {
		return nil, err
	}
	var issue Issue
	if err := c.do(ctx, http.MethodGet, p, url.Values{"fields": {"status,comment"}}, nil, true, &issue); err != nil {
		return nil, err
	}
	if cs := issue.Fields.Comment; cs != nil && len(cs.Comments) < cs.Total {
		all := make([]Comment, 0, cs.Total)
		for start := 0; start < cs.Total; {
			page, err := c.Comments(ctx, key, start, 100)
			if err != nil {
				return nil, err
			}
			if len(page.Comments) == 0 {
				break // deleted meanwhile
			}
			all = append(all, page.Comments...)
			start += len(page.Comments)
			cs.Total = page.Total
		}
		cs.Comments, cs.StartAt, cs.MaxResults = all, 0, len(all)
	}
	return &issue, nil
}

// Comments reads a page of an issue's comments (GET /rest/api/2/issue/{key}/comment).
func (c *Client) Comments(ctx context.Context, key string, startAt, maxResults int) (*Comments, error) {
	p, err := issuePath(key, "comment")
	if err != nil {
		return nil, err
	}
	q := url.Values{"startAt": {strconv.Itoa(startAt)}, "maxResults": {strconv.Itoa(maxResults)}}
	var cs Comments
	if err := c.do(ctx, http.MethodGet, p, q, nil, true, &cs); err != nil {
		return nil, err
	}
	return &cs, nil
}

// Search runs a JQL query (POST /rest/api/2/search) and returns one page of issues with the
// given fields.
func (c *Client) Search(ctx context.Context, jql string, fields []string, startAt, maxResults int) (*SearchResult, error) {
	var res SearchResult
	body := SearchRequest{JQL: jql, StartAt: startAt, MaxResults: maxResults, Fields: fields}
	// A search changes nothing, so it is retried like a GET.
	if err := c.do(ctx, http.MethodPost, "/rest/api/2/search", nil, body, true, &res); err != nil {
		return nil, err
	}
	return &res, nil
}

// Transitions lists the transitions available from the issue's current status
// (GET /rest/api/2/issue/{key}/transitions).
func (c *Client) Transitions(ctx context.Context, key string) ([]Transition, error) {
	p, err := issuePath(key, "transitions")
	if err != nil {
		return nil, err
	}
	var res TransitionsResponse
	if err := c.do(ctx, http.MethodGet, p, nil, nil, true, &res); err != nil {
		return nil, err
	}
	return res.Transitions, nil
}

// Transition moves the issue along a transition (POST /rest/api/2/issue/{key}/transitions).
func (c *Client) Transition(ctx context.Context, key, transitionID string) error {
	p, err := issuePath(key, "transitions")
	if err != nil {
		return err
	}
	return c.do(ctx, http.MethodPost, p, nil, TransitionRequest{Transition: TransitionRef{ID: transitionID}}, false, nil)
}

// AddComment adds a comment to the issue (POST /rest/api/2/issue/{key}/comment).
func (c *Client) AddComment(ctx context.Context, key, body string) (*Comment, error) {
	p, err := issuePath(key, "comment")
	if err != nil {
		return nil, err
	}
	var comment Comment
	if err := c.do(ctx, http.MethodPost, p, nil, CommentRequest{Body: body}, false, &comment); err != nil {
		return nil, err
	}
	return &comment, nil
}

// do sends one call, waiting for the rate limit, and retries it with exponential backoff
// (or Retry-After) when Jira throttles it (429) or is unavailable (503), and, for calls that
// change nothing (idempotent), on other 5xx answers and network errors too: a POST that
// failed that way may have been applied, and the caller re-reads the issue before it tries
// again, so a comment is never added twice.
func (c *Client) do(ctx context.Context, method, path string, query url.Values, body any, idempotent bool, out any) error {
	u := *c.base
	u.Path += path
	u.RawQuery = query.Encode()
	var payload []byte
	if body != nil {
		var err error
		if payload, err = json.Marshal(body); err != nil {
			return fmt.Errorf("jira: encoding %s %s: %w", method, path, err)
		}
	}
	for attempt := 0; ; attempt++ {
		if err := c.wait(ctx); err != nil {
			return err
		}
		err := c.send(ctx, method, u.String(), path, payload, out)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		delay := c.backoff(attempt)
		var jerr *Error
		switch {
		case errors.As(err, &jerr):
			retry := jerr.StatusCode == http.StatusTooManyRequests || jerr.StatusCode == http.StatusServiceUnavailable ||
				(idempotent && jerr.StatusCode >= 500)
			if !retry || attempt >= c.maxRetries {
				return err
			}
			if jerr.RetryAfter > 0 {
				if jerr.RetryAfter > c.maxRetryAfter {
					return err
				}
				delay = jerr.RetryAfter
			}
		case isNetwork(err):
			if !idempotent || attempt >= c.maxRetries {
				return err
			}
		default:
			return err
		}
		if err := c.sleep(ctx, delay); err != nil {
			return err
		}
	}
}

// wait takes a token of the rate limit, waiting with the client's clock.
func (c *Client) wait(ctx context.Context) error {
	if c.limiter == nil {
		return nil
	}
	now := c.now()
	r := c.limiter.ReserveN(now, 1)
	if !r.OK() {
		return errors.New("jira: the rate limit allows no request (burst 0)")
	}
	if d := r.DelayFrom(now); d > 0 {
		if err := c.sleep(ctx, d); err != nil {
			r.CancelAt(c.now())
			return err
		}
	}
	return nil
}

func (c *Client) backoff(attempt int) time.Duration {
	d := c.backoffBase
	for range attempt {
		d *= 2
		if d >= c.backoffMax {
			return c.backoffMax
		}
	}
	return min(d, c.backoffMax)
}

// NetworkError is a call that got no answer from Jira.
type NetworkError struct {
	Method, Path string
	Err          error
}

func (e *NetworkError) Error() string {
	return fmt.Sprintf("jira: %s %s: %v", e.Method, e.Path, e.Err)
}

func (e *NetworkError) Unwrap() error { return e.Err }

func isNetwork(err error) bool {
	var n *NetworkError
	return errors.As(err, &n)
}

// maxErrorBody bounds what is kept of an answer that is not Jira's error JSON.
const maxErrorBody = 512

func (c *Client) send(ctx context.Context, method, target, path string, payload []byte, out any) error {
	var body io.Reader
	if payload != nil {
		body = bytes.NewReader(payload)
	}
	req, err := http.NewRequestWithContext(ctx, method, target, body)
	if err != nil {
		return fmt.Errorf("jira: %s %s: %w", method, path, err)
	}
	req.Header.Set("Authorization", c.auth.header())
	req.Header.Set("Accept", "application/json")
	if payload != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return &NetworkError{Method: method, Path: path, Err: err}
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 32<<20))
	if err != nil {
		return &NetworkError{Method: method, Path: path, Err: fmt.Errorf("reading the answer: %w", err)}
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return newError(method, path, resp, data, c.now())
	}
	if out == nil || len(bytes.TrimSpace(data)) == 0 {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("jira: %s %s: the answer is not the JSON expected (is the URL a Jira server?): %w", method, path, err)
	}
	return nil
}

// Error is an answer of Jira other than 2xx, with Jira's error body when it sent one.
type Error struct {
	Method     string
	Path       string
	StatusCode int
	// ErrorMessages and Errors (by field) are Jira's error collection.
	ErrorMessages []string
	Errors        map[string]string
	// Body is the start of an answer that was not an error collection.
	Body string
	// RetryAfter is the wait the Retry-After header asked for, if any.
	RetryAfter time.Duration
}

func newError(method, path string, resp *http.Response, data []byte, now time.Time) *Error {
	e := &Error{Method: method, Path: path, StatusCode: resp.StatusCode, RetryAfter: retryAfter(resp.Header.Get("Retry-After"), now)}
	var ec ErrorCollection
	if json.Unmarshal(data, &ec) == nil && (len(ec.ErrorMessages) > 0 || len(ec.Errors) > 0) {
		e.ErrorMessages, e.Errors = ec.ErrorMessages, ec.Errors
	} else if s := strings.TrimSpace(string(data)); s != "" {
		if len(s) > maxErrorBody {
			s = s[:maxErrorBody] + "…"
		}
		e.Body = s
	}
	return e
}

// retryAfter reads a Retry-After header: seconds, or an HTTP date.
func retryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if s, err := strconv.Atoi(v); err == nil {
		return time.Duration(max(s, 0)) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "jira: %s %s: %d %s", e.Method, e.Path, e.StatusCode, http.StatusText(e.StatusCode))
	var details []string
	details = append(details, e.ErrorMessages...)
	for _, f := range slices.Sorted(maps.Keys(e.Errors)) {
		details = append(details, f+": "+e.Errors[f])
	}
	if len(details) == 0 && e.Body != "" {
		details = append(details, e.Body)
	}
	if len(details) > 0 {
		b.WriteString(": ")
		b.WriteString(strings.Join(details, "; "))
	}
	return b.String()
}

// IsNotFound reports whether err is Jira's 404: the issue does not exist, or the
// credentials may not see it.
func IsNotFound(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.StatusCode == http.StatusNotFound
}

// IsUnauthorized reports whether Jira refused the credentials (401 or 403).
func IsUnauthorized(err error) bool {
	var e *Error
	return errors.As(err, &e) && (e.StatusCode == http.StatusUnauthorized || e.StatusCode == http.StatusForbidden)
}

// IsTransient reports whether err may go away by itself: Jira throttled the call (429), failed
// (5xx), or did not answer. Other answers (4xx: a missing transition, bad credentials) need
// someone to change something.
func IsTransient(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) {
		return false
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return true // a slow server
	}
	var e *Error
	if errors.As(err, &e) {
		return e.StatusCode == http.StatusTooManyRequests || e.StatusCode >= 500
	}
	return isNetwork(err)
}
