package approval

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/release-controller/release-controller/internal/pipeline/signature"
	"github.com/release-controller/release-controller/internal/shellquote"
)

// CommandArgv is the command that approves revision into environment of the pipeline
// namespace/name: `release-controller pipeline approve`, with --server when server is not
// empty. The positional arguments follow "--" when one starts with "-", so that none is
// taken for a flag.
func CommandArgv(server, namespace, name, environment, revision string) []string {
	argv := []string{"release-controller", "pipeline", "approve"}
	if server != "" {
		argv = append(argv, "--server", server)
	}
	args := []string{namespace + "/" + name, environment, revision}
	if slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "-") }) {
		argv = append(argv, "--")
	}
	return append(argv, args...)
}

// Command is CommandArgv as a shell command line, each word quoted for a POSIX shell: the
// one command line the pages and MCP show.
func Command(server, namespace, name, environment, revision string) string {
	return shellquote.Join(CommandArgv(server, namespace, name, environment, revision)...)
}

// RejectReason is the placeholder of the reason in RejectCommandArgv, for the user to
// replace.
const RejectReason = "REASON"

// RejectCommandArgv is the command that rejects revision for environment of the pipeline
// namespace/name: `release-controller pipeline reject`, with --server when server is not
// empty, and --reason RejectReason before the "--" that keeps a revision starting with "-"
// from being read as a flag.
func RejectCommandArgv(server, namespace, name, environment, revision string) []string {
	argv := CommandArgv(server, namespace, name, environment, revision)
	argv[2] = "reject"
	at := slices.Index(argv, "--")
	if at < 0 {
		at = len(argv)
	}
	return slices.Insert(argv, at, "--reason", RejectReason)
}

// RejectCommand is RejectCommandArgv as a shell command line: the one the pages and MCP
// show beside the approve command.
func RejectCommand(server, namespace, name, environment, revision string) string {
	return shellquote.Join(RejectCommandArgv(server, namespace, name, environment, revision)...)
}

// Request is an approval, or a rejection, to send.
type Request struct {
	// Server is the release-controller's URL, e.g. http://127.0.0.1:8080.
	Server                                     string
	Namespace, Pipeline, Environment, Revision string
	// Key signs the request; else Token is sent as a bearer token.
	Key   []byte
	Token string
	// Now is the clock of the timestamp; nil: the real one.
	Now func() time.Time
}

// URL is the approval's URL: the route with each part escaped, under the server's path.
func (r Request) URL() (*url.URL, error) { return r.url("approve") }

// RejectURL is the rejection's URL.
func (r Request) RejectURL() (*url.URL, error) { return r.url("reject") }

func (r Request) url(verb string) (*url.URL, error) {
	u, err := url.Parse(strings.TrimSuffix(r.Server, "/"))
	if err != nil {
		return nil, err
	}
	raw := u.EscapedPath() + "/pipelines"
	for _, p := range []string{r.Namespace, r.Pipeline, r.Environment, r.Revision} {
		raw += "/" + url.PathEscape(p)
	}
	raw += "/" + verb
	if u.Path, err = url.PathUnescape(raw); err != nil {
		return nil, err
	}
	u.RawPath = raw
	return u, nil
}

// Send posts the approval and returns what the server recorded; an error carries the
// server's message.
func (r Request) Send(ctx context.Context, c *http.Client) (*Response, error) {
	u, err := r.URL()
	if err != nil {
		return nil, err
	}
	var out Response
	if err := r.post(ctx, c, u, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Reject posts the rejection of the revision, for reason, and returns what the server
// recorded; an error carries the server's message.
func (r Request) Reject(ctx context.Context, c *http.Client, reason string) (*RejectResponse, error) {
	u, err := r.RejectURL()
	if err != nil {
		return nil, err
	}
	body, err := json.Marshal(RejectBody{Reason: reason})
	if err != nil {
		return nil, err
	}
	var out RejectResponse
	if err := r.post(ctx, c, u, body, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// post sends body to u, signed with Key or with Token as a bearer token, and decodes the
// answer into out.
func (r Request) post(ctx context.Context, c *http.Client, u *url.URL, body []byte, out any) error {
	if c == nil {
		c = http.DefaultClient
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), bytes.NewReader(body))
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	switch {
	case len(r.Key) > 0:
		now := time.Now
		if r.Now != nil {
			now = r.Now
		}
		ts := now().UTC().Format(time.RFC3339)
		req.Header.Set(signature.HeaderTimestamp, ts)
		req.Header.Set(signature.HeaderSignature, signature.Header(r.Key, http.MethodPost, u.EscapedPath(), ts, body))
	case r.Token != "":
		req.Header.Set("Authorization", "Bearer "+r.Token)
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return &StatusError{Code: resp.StatusCode, Message: strings.TrimSpace(string(data))}
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("reading the server's answer: %w", err)
	}
	return nil
}

// StatusError is a refused approval or rejection.
type StatusError struct {
	Code    int
	Message string
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("%d %s: %s", e.Code, http.StatusText(e.Code), e.Message)
}
