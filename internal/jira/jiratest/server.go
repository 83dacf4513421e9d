// Package jiratest is a local Jira server for tests. It checks requests as Jira's REST API v2
// does — credentials, content type, the JSON shape of bodies, transitions valid for the
// issue's current status — answers with Jira's JSON shapes, and keeps the issues' state
// (status, comments) so that tests can assert what a client did. It can be told to throttle
// (429 with Retry-After) or to be unavailable (503) for a number of requests.
package jiratest

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/release-controller/release-controller/internal/jira/jiraclient"
)

// Credentials the server accepts by default.
const (
	DefaultToken = "jira-test-token"
	DefaultEmail = "release-bot@example.com"
)

// DefaultWorkflow is the workflow of new issues: the transitions leaving each status, as a
// bug tracker's might be (VERIFIED is reachable from MODIFIED and ON_QA only).
func DefaultWorkflow() map[string][]jiraclient.Transition {
	t := func(id, name, to string) jiraclient.Transition {
		return jiraclient.Transition{ID: id, Name: name, To: jiraclient.Status{Name: to}}
	}
	return map[string][]jiraclient.Transition{
		"NEW":      {t("11", "Assign", "ASSIGNED")},
		"ASSIGNED": {t("21", "Post", "POST")},
		"POST":     {t("31", "Modified", "MODIFIED")},
		"MODIFIED": {t("41", "On QA", "ON_QA"), t("51", "Verify", "VERIFIED")},
		"ON_QA":    {t("51", "Verify", "VERIFIED"), t("61", "Failed QA", "ASSIGNED")},
		"VERIFIED": {t("71", "Close", "CLOSED")},
		"CLOSED":   {t("81", "Reopen", "NEW")},
	}
}

// Request is one request the server received.
type Request struct {
	Method string
	Path   string
	// Authorization is the request's Authorization header, so that tests can tell where a
	// credential was sent.
	Authorization string
}

// Server is a running Jira.
type Server struct {
	// URL is the server's base URL.
	URL string
	// Token is the accepted bearer token and API token; Email the accepted basic-auth user.
	Token, Email string

	srv *httptest.Server

	mu       sync.Mutex
	issues   map[string]*issue
	workflow map[string][]jiraclient.Transition
	nextID   int
	requests []Request
	failures []failure
	// down, when not zero, is the status every request gets (Down).
	down int
	// stalls are how many of the next requests get no answer (Stall).
	stalls int
	// commentFieldLimit bounds the comments the issue's comment field holds, as Jira Cloud
	// does; the comment resource pages through all of them.
	commentFieldLimit int
}

type issue struct {
	id       string
	status   string
	comments []jiraclient.Comment
}

type failure struct {
	status     int
	retryAfter string
}

// NewServer starts a server with no issues and DefaultWorkflow. Close it when done.
func NewServer() *Server {
	s := &Server{Token: DefaultToken, Email: DefaultEmail, issues: map[string]*issue{}, workflow: DefaultWorkflow(), nextID: 10000}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL
	return s
}

// Start starts a server as NewServer does, closed when the test ends.
func Start(t testing.TB) *Server {
	t.Helper()
	s := NewServer()
	t.Cleanup(s.Close)
	return s
}

// Close stops the server.
func (s *Server) Close() { s.srv.Close() }

// AddIssue creates (or resets) an issue in a status.
func (s *Server) AddIssue(key, status string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nextID++
	s.issues[key] = &issue{id: strconv.Itoa(s.nextID), status: status}
}

// SetTransitions replaces the transitions leaving a status.
func (s *Server) SetTransitions(status string, transitions ...jiraclient.Transition) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.workflow[status] = transitions
}

// SetCommentFieldLimit makes an issue's comment field hold at most n comments (0: all).
func (s *Server) SetCommentFieldLimit(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.commentFieldLimit = n
}

// AddComment adds a comment as someone else would.
func (s *Server) AddComment(key, body string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if is, ok := s.issues[key]; ok {
		is.comments = append(is.comments, s.newComment(key, body))
	}
}

// Status is an issue's status, "" for an unknown issue.
func (s *Server) Status(key string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if is, ok := s.issues[key]; ok {
		return is.status
	}
	return ""
}

// Comments are the bodies of an issue's comments, oldest first.
func (s *Server) Comments(key string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	if is, ok := s.issues[key]; ok {
		for _, c := range is.comments {
			out = append(out, c.Body)
		}
	}
	return out
}

// Fail makes the next n requests (authenticated or not) answer status, with a Retry-After
// header when retryAfter is not empty. It adds to failures already queued.
func (s *Server) Fail(n, status int, retryAfter string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for range n {
		s.failures = append(s.failures, failure{status: status, retryAfter: retryAfter})
	}
}

// Down makes every request answer status (500, say) until Up.
func (s *Server) Down(status int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.down = status
}

// Up ends Down.
func (s *Server) Up() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.down = 0
}

// Stall makes the next n requests get no answer until their client gives up (a timeout).
func (s *Server) Stall(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stalls += n
}

// Requests are the requests received so far, in order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.requests)
}

// Count is how many requests had method and path.
func (s *Server) Count(method, path string) int {
	n := 0
	for _, r := range s.Requests() {
		if r.Method == method && r.Path == path {
			n++
		}
	}
	return n
}

// ResetRequests forgets the requests received so far.
func (s *Server) ResetRequests() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = nil
}

func (s *Server) newComment(key, body string) jiraclient.Comment {
	s.nextID++
	id := strconv.Itoa(s.nextID)
	now := time.Now().UTC().Format("2006-01-02T15:04:05.000-0700")
	return jiraclient.Comment{
		ID: id, Self: s.URL + "/rest/api/2/issue/" + key + "/comment/" + id, Body: body,
		Author:  &jiraclient.User{Name: "release-bot", DisplayName: "Release Bot", EmailAddress: s.Email},
		Created: now, Updated: now,
	}
}

var (
	issueRoute = regexp.MustCompile(`^/rest/api/2/issue/([^/]+)(/transitions|/comment)?$`)
	// A tiny JQL: key in (…), key = X, project = X, project in (…).
	jqlRe = regexp.MustCompile(`^\s*(key|project)\s*(=|in)\s*(\(([^)]*)\)|[A-Za-z0-9_-]+)\s*$`)
)

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.requests = append(s.requests, Request{Method: r.Method, Path: r.URL.Path, Authorization: r.Header.Get("Authorization")})
	if s.stalls > 0 {
		s.stalls--
		s.mu.Unlock()
		<-r.Context().Done() // the client gave up, or the server closes
		return
	}
	defer s.mu.Unlock()
	if s.down != 0 {
		writeErrors(w, s.down, http.StatusText(s.down))
		return
	}
	if len(s.failures) > 0 {
		f := s.failures[0]
		s.failures = s.failures[1:]
		if f.retryAfter != "" {
			w.Header().Set("Retry-After", f.retryAfter)
		}
		writeErrors(w, f.status, http.StatusText(f.status))
		return
	}
	if code, msg := s.authenticate(r); code != 0 {
		writeErrors(w, code, msg)
		return
	}
	if r.URL.Path == "/rest/api/2/search" {
		if r.Method != http.MethodPost && r.Method != http.MethodGet {
			methodNotAllowed(w)
			return
		}
		s.search(w, r)
		return
	}
	m := issueRoute.FindStringSubmatch(r.URL.Path)
	if m == nil {
		writeErrors(w, http.StatusNotFound, "null for uri: "+r.URL.String())
		return
	}
	is, ok := s.issues[m[1]]
	if !ok {
		writeErrors(w, http.StatusNotFound, "Issue does not exist or you do not have permission to see it.")
		return
	}
	switch {
	case m[2] == "" && r.Method == http.MethodGet:
		s.getIssue(w, r, m[1], is)
	case m[2] == "/transitions" && r.Method == http.MethodGet:
		writeJSON(w, http.StatusOK, jiraclient.TransitionsResponse{Expand: "transitions", Transitions: s.transitionsOf(is)})
	case m[2] == "/transitions" && r.Method == http.MethodPost:
		s.transition(w, r, is)
	case m[2] == "/comment" && r.Method == http.MethodGet:
		s.listComments(w, r, is)
	case m[2] == "/comment" && r.Method == http.MethodPost:
		s.addComment(w, r, m[1], is)
	default:
		methodNotAllowed(w)
	}
}

// authenticate checks the Authorization header: missing or malformed is 401, wrong
// credentials are 403.
func (s *Server) authenticate(r *http.Request) (int, string) {
	h := r.Header.Get("Authorization")
	scheme, cred, _ := strings.Cut(h, " ")
	switch strings.ToLower(scheme) {
	case "bearer":
		if cred == s.Token {
			return 0, ""
		}
	case "basic":
		raw, err := base64.StdEncoding.DecodeString(cred)
		if err != nil {
			return http.StatusUnauthorized, "You are not authenticated. Authentication required to perform this operation."
		}
		user, pass, _ := strings.Cut(string(raw), ":")
		if user == s.Email && pass == s.Token {
			return 0, ""
		}
	default:
		return http.StatusUnauthorized, "You are not authenticated. Authentication required to perform this operation."
	}
	return http.StatusForbidden, "The credentials are not valid."
}

func (s *Server) getIssue(w http.ResponseWriter, r *http.Request, key string, is *issue) {
	fields := map[string]bool{}
	for _, f := range strings.Split(r.URL.Query().Get("fields"), ",") {
		fields[strings.TrimSpace(f)] = true
	}
	writeJSON(w, http.StatusOK, s.issueJSON(key, is, fields))
}

func (s *Server) issueJSON(key string, is *issue, fields map[string]bool) jiraclient.Issue {
	all := fields["*all"] || len(fields) == 0 || (len(fields) == 1 && fields[""])
	out := jiraclient.Issue{ID: is.id, Key: key, Self: s.URL + "/rest/api/2/issue/" + is.id}
	if all || fields["status"] {
		out.Fields.Status = &jiraclient.Status{Name: is.status, ID: statusID(is.status), Self: s.URL + "/rest/api/2/status/" + statusID(is.status)}
	}
	if all || fields["comment"] {
		comments := is.comments
		if s.commentFieldLimit > 0 && len(comments) > s.commentFieldLimit {
			comments = comments[:s.commentFieldLimit]
		}
		out.Fields.Comment = &jiraclient.Comments{Comments: nonNil(comments), StartAt: 0, MaxResults: len(comments), Total: len(is.comments)}
	}
	return out
}

func statusID(name string) string {
	h := 0
	for _, c := range name {
		h = h*31 + int(c)
	}
	return strconv.Itoa(1 + (h&0xffff)%10000)
}

func nonNil(cs []jiraclient.Comment) []jiraclient.Comment {
	if cs == nil {
		return []jiraclient.Comment{}
	}
	return slices.Clone(cs)
}

func (s *Server) transitionsOf(is *issue) []jiraclient.Transition {
	ts := slices.Clone(s.workflow[is.status])
	if ts == nil {
		ts = []jiraclient.Transition{}
	}
	for i := range ts {
		ts[i].To.ID = statusID(ts[i].To.Name)
		ts[i].To.Self = s.URL + "/rest/api/2/status/" + ts[i].To.ID
	}
	return ts
}

func (s *Server) transition(w http.ResponseWriter, r *http.Request, is *issue) {
	var body struct {
		Transition *struct {
			ID string `json:"id"`
		} `json:"transition"`
		Fields          json.RawMessage `json:"fields"`
		Update          json.RawMessage `json:"update"`
		HistoryMetadata json.RawMessage `json:"historyMetadata"`
		Properties      json.RawMessage `json:"properties"`
	}
	if !decodeBody(w, r, &body) {
		return
	}
	if body.Transition == nil || body.Transition.ID == "" {
		writeFieldErrors(w, http.StatusBadRequest, map[string]string{"transition": "Transition id is required."})
		return
	}
	for _, t := range s.workflow[is.status] {
		if t.ID == body.Transition.ID {
			is.status = t.To.Name
			w.WriteHeader(http.StatusNoContent)
			return
		}
	}
	writeErrors(w, http.StatusBadRequest, fmt.Sprintf("Transition id '%s' is not valid for this issue.", body.Transition.ID))
}

func (s *Server) listComments(w http.ResponseWriter, r *http.Request, is *issue) {
	q := r.URL.Query()
	start, _ := strconv.Atoi(q.Get("startAt"))
	limit, err := strconv.Atoi(q.Get("maxResults"))
	if err != nil || limit <= 0 || limit > 5000 {
		limit = 5000
	}
	start = min(max(start, 0), len(is.comments))
	end := min(start+limit, len(is.comments))
	writeJSON(w, http.StatusOK, jiraclient.Comments{Comments: nonNil(is.comments[start:end]), StartAt: start, MaxResults: limit, Total: len(is.comments)})
}

func (s *Server) addComment(w http.ResponseWriter, r *http.Request, key string, is *issue) {
	var body struct {
		Body       *string         `json:"body"`
		Visibility json.RawMessage `json:"visibility"`
		Properties json.RawMessage `json:"properties"`
	}
	if !decodeBody(w, r, &body) {
		return
	}
	if body.Body == nil || strings.TrimSpace(*body.Body) == "" {
		writeFieldErrors(w, http.StatusBadRequest, map[string]string{"comment": "Comment body can not be empty!"})
		return
	}
	c := s.newComment(key, *body.Body)
	is.comments = append(is.comments, c)
	writeJSON(w, http.StatusCreated, c)
}

func (s *Server) search(w http.ResponseWriter, r *http.Request) {
	var req jiraclient.SearchRequest
	if r.Method == http.MethodPost {
		var body struct {
			JQL           *string         `json:"jql"`
			StartAt       int             `json:"startAt"`
			MaxResults    *int            `json:"maxResults"`
			Fields        []string        `json:"fields"`
			Expand        json.RawMessage `json:"expand"`
			ValidateQuery json.RawMessage `json:"validateQuery"`
		}
		if !decodeBody(w, r, &body) {
			return
		}
		if body.JQL != nil {
			req.JQL = *body.JQL
		}
		req.StartAt, req.Fields, req.MaxResults = body.StartAt, body.Fields, 50
		if body.MaxResults != nil {
			req.MaxResults = *body.MaxResults
		}
	} else {
		q := r.URL.Query()
		req.JQL = q.Get("jql")
		req.StartAt, _ = strconv.Atoi(q.Get("startAt"))
		req.MaxResults = 50
		if n, err := strconv.Atoi(q.Get("maxResults")); err == nil {
			req.MaxResults = n
		}
		if f := q.Get("fields"); f != "" {
			req.Fields = strings.Split(f, ",")
		}
	}
	m := jqlRe.FindStringSubmatch(req.JQL)
	if m == nil {
		writeErrors(w, http.StatusBadRequest, fmt.Sprintf("Error in the JQL Query: the query %q is not supported by jiratest.", req.JQL))
		return
	}
	values := []string{m[3]}
	if m[2] == "in" {
		if m[4] == "" && !strings.HasPrefix(m[3], "(") {
			writeErrors(w, http.StatusBadRequest, "Error in the JQL Query: Expecting '(' after 'in'.")
			return
		}
		values = strings.Split(m[4], ",")
	}
	want := map[string]bool{}
	for _, v := range values {
		want[strings.Trim(strings.TrimSpace(v), `"'`)] = true
	}
	var keys []string
	for key := range s.issues {
		project, _, _ := strings.Cut(key, "-")
		if (m[1] == "key" && want[key]) || (m[1] == "project" && want[project]) {
			keys = append(keys, key)
		}
	}
	slices.SortFunc(keys, compareKeys)
	fields := map[string]bool{}
	for _, f := range req.Fields {
		fields[f] = true
	}
	if len(fields) == 0 {
		fields["*all"] = true
	}
	res := jiraclient.SearchResult{Expand: "schema,names", StartAt: req.StartAt, MaxResults: req.MaxResults, Total: len(keys), Issues: []jiraclient.Issue{}}
	for i := req.StartAt; i >= 0 && i < len(keys) && i < req.StartAt+req.MaxResults; i++ {
		res.Issues = append(res.Issues, s.issueJSON(keys[i], s.issues[keys[i]], fields))
	}
	writeJSON(w, http.StatusOK, res)
}

// compareKeys orders issue keys by project, then number.
func compareKeys(a, b string) int {
	pa, na, _ := strings.Cut(a, "-")
	pb, nb, _ := strings.Cut(b, "-")
	if c := strings.Compare(pa, pb); c != 0 {
		return c
	}
	ia, _ := strconv.Atoi(na)
	ib, _ := strconv.Atoi(nb)
	return ia - ib
}

// decodeBody checks the content type and decodes the body strictly, answering Jira's errors
// (415, 400) itself when it cannot.
func decodeBody(w http.ResponseWriter, r *http.Request, into any) bool {
	ct := r.Header.Get("Content-Type")
	if mt, _, _ := strings.Cut(ct, ";"); strings.TrimSpace(strings.ToLower(mt)) != "application/json" {
		writeErrors(w, http.StatusUnsupportedMediaType, "Unsupported Media Type: "+ct)
		return false
	}
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(r.Body); err != nil {
		writeErrors(w, http.StatusBadRequest, "Could not read the request body.")
		return false
	}
	dec := json.NewDecoder(&buf)
	dec.DisallowUnknownFields()
	if err := dec.Decode(into); err != nil {
		writeErrors(w, http.StatusBadRequest, "Unexpected character or field in the request body: "+err.Error())
		return false
	}
	if dec.More() {
		writeErrors(w, http.StatusBadRequest, "Unexpected content after the request body.")
		return false
	}
	return true
}

func methodNotAllowed(w http.ResponseWriter) {
	writeErrors(w, http.StatusMethodNotAllowed, "Method Not Allowed")
}

func writeErrors(w http.ResponseWriter, status int, messages ...string) {
	writeJSON(w, status, jiraclient.ErrorCollection{ErrorMessages: messages})
}

func writeFieldErrors(w http.ResponseWriter, status int, errs map[string]string) {
	writeJSON(w, status, jiraclient.ErrorCollection{Errors: errs})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json;charset=UTF-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
