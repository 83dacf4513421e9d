package jira

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// IssueState is what Plan decides on: an issue's status and comments, and the transitions
// available from its status (needed only when it is not in the target status yet).
type IssueState struct {
	Key         string
	Status      string
	Comments    []string
	Transitions []Transition
}

// Actions are what to do with one issue. The transition comes first: a comment then never
// announces a move that Jira refused.
type Actions struct {
	// Transition moves the issue to the target status; nil when it is there already.
	Transition *Transition
	// Comment is added to the issue; "" when a comment already links the payload.
	Comment string
}

// None reports whether there is nothing to do.
func (a Actions) None() bool { return a.Transition == nil && a.Comment == "" }

// CommentBody is the comment left on an issue fixed in an accepted payload.
func CommentBody(payloadTag, payloadURL string) string {
	return fmt.Sprintf("Fix included in accepted release %s: %s", payloadTag, payloadURL)
}

// NoTransitionError says that the issue's workflow offers no way to the target status from
// where the issue is.
type NoTransitionError struct {
	Key, From, Target string
	Available         []Transition
}

func (e *NoTransitionError) Error() string {
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

// Plan decides what to do with one issue of an accepted payload: move it to target unless it
// is there (the transition whose destination is target, ignoring case), and comment with
// the payload's URL unless a comment holds that URL already. Deciding from Jira's state,
// not from the controller's, is what makes it happen once per issue and payload even when
// the controller stopped between its Jira calls and its status write.
func Plan(state IssueState, target, payloadTag, payloadURL string) (Actions, error) {
	if target == "" || payloadURL == "" {
		return Actions{}, errors.New("no target status or payload URL")
	}
	var a Actions
	if !strings.EqualFold(state.Status, target) {
		i := slices.IndexFunc(state.Transitions, func(t Transition) bool { return strings.EqualFold(t.To.Name, target) })
		if i < 0 {
			return Actions{}, &NoTransitionError{Key: state.Key, From: state.Status, Target: target, Available: state.Transitions}
		}
		t := state.Transitions[i]
		a.Transition = &t
	}
	if !slices.ContainsFunc(state.Comments, func(body string) bool { return containsURL(body, payloadURL) }) {
		a.Comment = CommentBody(payloadTag, payloadURL)
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

// OutcomeState is what became of one issue.
type OutcomeState string

const (
	// Verified: the issue was moved to the target status.
	Verified OutcomeState = "verified"
	// Already: the issue was in the target status before (a comment may have been added).
	Already OutcomeState = "already"
	// Failed: the issue could not be read, moved or commented on; Err says why.
	Failed OutcomeState = "failed"
)

// Outcome is what became of one issue.
type Outcome struct {
	Key   string
	State OutcomeState
	// Commented is set when a comment was added.
	Commented bool
	Err       error
}

// Transient reports whether the failure may go away by itself (see IsTransient).
func (o Outcome) Transient() bool { return o.State == Failed && IsTransient(o.Err) }

// Result is the outcome of every issue, in the order of the keys.
type Result struct {
	Outcomes []Outcome
}

// Keys returns the keys of the outcomes in state.
func (r Result) Keys(state OutcomeState) []string {
	var keys []string
	for _, o := range r.Outcomes {
		if o.State == state {
			keys = append(keys, o.Key)
		}
	}
	return keys
}

// Failures are the failed outcomes.
func (r Result) Failures() []Outcome {
	var out []Outcome
	for _, o := range r.Outcomes {
		if o.State == Failed {
			out = append(out, o)
		}
	}
	return out
}

// Transient reports whether a failure may go away by itself, so that trying again later
// is worth it.
func (r Result) Transient() bool {
	return slices.ContainsFunc(r.Outcomes, Outcome.Transient)
}

// VerifyIssues moves each issue to target and comments with the payload's URL, as Plan
// decides from the issue's current state. A failed issue does not stop the others.
func VerifyIssues(ctx context.Context, c *Client, keys []string, target, payloadTag, payloadURL string) Result {
	res := Result{Outcomes: make([]Outcome, 0, len(keys))}
	for _, key := range keys {
		res.Outcomes = append(res.Outcomes, verifyIssue(ctx, c, key, target, payloadTag, payloadURL))
	}
	return res
}

func verifyIssue(ctx context.Context, c *Client, key, target, payloadTag, payloadURL string) Outcome {
	fail := func(err error) Outcome { return Outcome{Key: key, State: Failed, Err: err} }
	if err := ctx.Err(); err != nil {
		return fail(err)
	}
	issue, err := c.Issue(ctx, key)
	if err != nil {
		if IsNotFound(err) {
			return fail(fmt.Errorf("the issue does not exist, or the credentials may not see it: %w", err))
		}
		return fail(err)
	}
	state := IssueState{Key: key, Status: issue.StatusName(), Comments: issue.CommentBodies()}
	if !strings.EqualFold(state.Status, target) {
		if state.Transitions, err = c.Transitions(ctx, key); err != nil {
			return fail(err)
		}
	}
	actions, err := Plan(state, target, payloadTag, payloadURL)
	if err != nil {
		return fail(err)
	}
	out := Outcome{Key: key, State: Already}
	if actions.Transition != nil {
		if err := c.Transition(ctx, key, actions.Transition.ID); err != nil {
			return fail(fmt.Errorf("moving it to %s with %q: %w", target, actions.Transition.Name, err))
		}
		out.State = Verified
	}
	if actions.Comment != "" {
		if _, err := c.AddComment(ctx, key, actions.Comment); err != nil {
			if out.State == Verified {
				err = fmt.Errorf("moved to %s, but commenting failed: %w", target, err)
			}
			return fail(err)
		}
		out.Commented = true
	}
	return out
}

// FilterKeys returns the keys of the given projects, deduplicated and ordered by project,
// then by number.
func FilterKeys(keys []string, projects []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, k := range keys {
		project, _, ok := splitKey(k)
		if ok && !seen[k] && slices.Contains(projects, project) {
			seen[k] = true
			out = append(out, k)
		}
	}
	slices.SortFunc(out, CompareKeys)
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

// CompareKeys orders issue keys by project, then by number (A-2 before A-10).
func CompareKeys(a, b string) int {
	pa, na, _ := splitKey(a)
	pb, nb, _ := splitKey(b)
	return cmp.Or(cmp.Compare(pa, pb), cmp.Compare(na, nb), cmp.Compare(a, b))
}
