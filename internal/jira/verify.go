package jira

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/release-controller/release-controller/internal/jira/jiraclient"
)

// issueState is what plan decides on: an issue's status and comments, and the transitions
// available from its status (needed only when it is not in the target status yet).
type issueState struct {
	Key         string
	Status      string
	Comments    []string
	Transitions []jiraclient.Transition
}

// issueActions are what to do with one issue. The transition comes first: a comment then never
// announces a move that Jira refused.
type issueActions struct {
	// Transition moves the issue to the target status; nil when it is there already.
	Transition *jiraclient.Transition
	// Comment is added to the issue; "" when a comment already links the payload.
	Comment string
}

// None reports whether there is nothing to do.
func (a issueActions) None() bool { return a.Transition == nil && a.Comment == "" }

// commentBody is the comment left on an issue fixed in an accepted payload.
func commentBody(payloadTag, payloadURL string) string {
	return fmt.Sprintf("Fix included in accepted release %s: %s", payloadTag, payloadURL)
}

// noTransitionError says that the issue's workflow offers no way to the target status from
// where the issue is.
type noTransitionError struct {
	Key, From, Target string
	Available         []jiraclient.Transition
}

func (e *noTransitionError) Error() string {
	var names []string
	for _, t := range e.Available {
		names = append(names, fmt.Sprintf("%q to %s", t.Name, t.To.Name))
	}
	available := "none"
	if len(names) > 0 {
		available = strings.Join(names, ", ")
	}
	return fmt.Sprintf("no transition from %s to %s (available: %s)", e.From, e.Target, available)
}

// plan decides what to do with one issue of an accepted payload: move it to target unless it
// is there (the transition whose destination is target, ignoring case), and comment with
// the payload's URL unless a comment holds that URL already. Deciding from Jira's state,
// not from the controller's, is what makes it happen once per issue and payload even when
// the controller stopped between its Jira calls and its status write.
func plan(state issueState, target, payloadTag, payloadURL string) (issueActions, error) {
	if target == "" || payloadURL == "" {
		return issueActions{}, errors.New("no target status or payload URL")
	}
	var a issueActions
	if !strings.EqualFold(state.Status, target) {
		i := slices.IndexFunc(state.Transitions, func(t jiraclient.Transition) bool { return strings.EqualFold(t.To.Name, target) })
		if i < 0 {
			return issueActions{}, &noTransitionError{Key: state.Key, From: state.Status, Target: target, Available: state.Transitions}
		}
		t := state.Transitions[i]
		a.Transition = &t
	}
	if !slices.ContainsFunc(state.Comments, func(body string) bool { return containsURL(body, payloadURL) }) {
		a.Comment = commentBody(payloadTag, payloadURL)
	}
	return a, nil
}

// containsURL reports whether body holds u as a whole link: the URL of tag 1.0.1 is a prefix of
// the URL of tag 1.0.10, whose comment must not count for 1.0.1.
func containsURL(body, u string) bool {
	for i := strings.Index(body, u); i >= 0; {
		rest := body[i+len(u):]
		if !continuesURL(rest) {
			return true
		}
		j := strings.Index(rest, u)
		if j < 0 {
			return false
		}
		i += len(u) + j
	}
	return false
}

// continuesURL reports whether rest, the text right after a URL, continues it.
func continuesURL(rest string) bool {
	if rest == "" {
		return false
	}
	isWord := func(c byte) bool {
		return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("-_~%", c) >= 0
	}
	switch c := rest[0]; {
	case isWord(c):
		return true
	case c == '.' || c == '/' || c == '?' || c == '#':
		// A sentence's full stop ends the link; "1.0.1.2" or "…/1.0.1/x" do not.
		return len(rest) > 1 && isWord(rest[1])
	}
	return false
}

// outcomeState is what became of one issue.
type outcomeState string

const (
	// outcomeVerified: the issue was moved to the target status.
	outcomeVerified outcomeState = "verified"
	// outcomeAlready: the issue was in the target status before (a comment may have been added).
	outcomeAlready outcomeState = "already"
	// outcomeFailed: the issue could not be read, moved or commented on; Err says why.
	outcomeFailed outcomeState = "failed"
)

// outcome is what became of one issue.
type outcome struct {
	Key   string
	State outcomeState
	// Commented is set when a comment was added.
	Commented bool
	Err       error
}

// Transient reports whether the failure may go away by itself (see jiraclient.IsTransient).
func (o outcome) Transient() bool { return o.State == outcomeFailed && jiraclient.IsTransient(o.Err) }

// issueResults is the outcome of every issue, in the order of the keys.
type issueResults struct {
	Outcomes []outcome
}

// Keys returns the keys of the outcomes in state.
func (r issueResults) Keys(state outcomeState) []string {
	var keys []string
	for _, o := range r.Outcomes {
		if o.State == state {
			keys = append(keys, o.Key)
		}
	}
	return keys
}

// Failures are the failed outcomes.
func (r issueResults) Failures() []outcome {
	var out []outcome
	for _, o := range r.Outcomes {
		if o.State == outcomeFailed {
			out = append(out, o)
		}
	}
	return out
}

// Transient reports whether a failure may go away by itself, so that trying again later
// is worth it.
func (r issueResults) Transient() bool {
	return slices.ContainsFunc(r.Outcomes, outcome.Transient)
}

// verifyIssues moves each issue to target and comments with the payload's URL, as plan
// decides from the issue's current state. A failed issue does not stop the others.
func verifyIssues(ctx context.Context, c *jiraclient.Client, keys []string, target, payloadTag, payloadURL string) issueResults {
	res := issueResults{Outcomes: make([]outcome, 0, len(keys))}
	for _, key := range keys {
		res.Outcomes = append(res.Outcomes, verifyIssue(ctx, c, key, target, payloadTag, payloadURL))
	}
	return res
}

func verifyIssue(ctx context.Context, c *jiraclient.Client, key, target, payloadTag, payloadURL string) outcome {
	fail := func(err error) outcome { return outcome{Key: key, State: outcomeFailed, Err: err} }
	if err := ctx.Err(); err != nil {
		return fail(err)
	}
	issue, err := c.Issue(ctx, key)
	if err != nil {
		if jiraclient.IsNotFound(err) {
			return fail(fmt.Errorf("the issue does not exist, or the credentials may not see it: %w", err))
		}
		return fail(err)
	}
	state := issueState{Key: key, Status: issue.StatusName(), Comments: issue.CommentBodies()}
	if !strings.EqualFold(state.Status, target) {
		if state.Transitions, err = c.Transitions(ctx, key); err != nil {
			return fail(err)
		}
	}
	actions, err := plan(state, target, payloadTag, payloadURL)
	if err != nil {
		return fail(err)
	}
	out := outcome{Key: key, State: outcomeAlready}
	if actions.Transition != nil {
		if err := c.Transition(ctx, key, actions.Transition.ID); err != nil {
			return fail(fmt.Errorf("moving it to %s with %q: %w", target, actions.Transition.Name, err))
		}
		out.State = outcomeVerified
	}
	if actions.Comment != "" {
		if _, err := c.AddComment(ctx, key, actions.Comment); err != nil {
			if out.State == outcomeVerified {
				err = fmt.Errorf("moved to %s, but commenting failed: %w", target, err)
			}
			return fail(err)
		}
		out.Commented = true
	}
	return out
}

// filterKeys returns the keys of the given projects, deduplicated and ordered by project,
// then by number.
func filterKeys(keys []string, projects []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, k := range keys {
		project, _, ok := splitKey(k)
		if ok && !seen[k] && slices.Contains(projects, project) {
			seen[k] = true
			out = append(out, k)
		}
	}
	slices.SortFunc(out, compareKeys)
	return out
}

// splitKey splits PROJECT-123 into its project and number.
func splitKey(key string) (project string, number int, ok bool) {
	i := strings.LastIndexByte(key, '-')
	if i <= 0 {
		return "", 0, false
	}
	n, err := strconv.Atoi(key[i+1:])
	if err != nil || n <= 0 {
		return "", 0, false
	}
	return key[:i], n, true
}

// compareKeys orders issue keys by project, then by number (A-2 before A-10).
func compareKeys(a, b string) int {
	pa, na, _ := splitKey(a)
	pb, nb, _ := splitKey(b)
	return cmp.Or(cmp.Compare(pa, pb), cmp.Compare(na, nb), cmp.Compare(a, b))
}
