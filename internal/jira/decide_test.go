package jira

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/eventlog"
	"github.com/release-controller/release-controller/internal/jira/jiraclient"
)

func TestDecide(t *testing.T) {
	base := func() verification {
		return verification{Stream: "nightly", Projects: []string{"OCPBUGS"}, Target: "VERIFIED", Previous: "4.15.0-1", Keys: []string{"OCPBUGS-1", "OCPBUGS-2"}}
	}
	unauthorized := &jiraclient.Error{Method: http.MethodGet, Path: "/rest/api/2/issue/OCPBUGS-1", StatusCode: http.StatusUnauthorized}
	unavailable := &jiraclient.Error{Method: http.MethodPost, Path: "/rest/api/2/issue/OCPBUGS-2/transitions", StatusCode: http.StatusServiceUnavailable}
	noTransition := &noTransitionError{Key: "OCPBUGS-2", From: "NEW", Target: "VERIFIED"}
	notVerified := v1alpha1.ReasonIssuesNotVerified
	var many []outcome // a dozen issues without a way to VERIFIED, then one Jira failed on
	for i := range 12 {
		many = append(many, outcome{Key: fmt.Sprintf("OCPBUGS-%d", i+1), State: outcomeFailed, Err: noTransition})
	}
	many = append(many, outcome{Key: "OCPBUGS-13", State: outcomeFailed, Err: unavailable})
	tests := []struct {
		name       string
		change     func(*verification)
		wantStatus metav1.ConditionStatus
		wantReason string
		wantInMsg  string
		wantRetry  bool
		// wantEvents are the failures' reasons: one Warning Event each.
		wantEvents []string
	}{
		{"the previous payload cannot be found", func(v *verification) { v.PreviousErr = errors.New("list failed") },
			metav1.ConditionFalse, v1alpha1.ReasonChangeLogUnavailable, "finding the previous accepted payload: list failed", true, []string{v1alpha1.ReasonChangeLogUnavailable}},
		{"the first accepted payload", func(v *verification) { v.Previous, v.Keys = "", nil },
			metav1.ConditionTrue, v1alpha1.ReasonNoIssues, "the first accepted payload of stream nightly", false, nil},
		{"no changelog", func(v *verification) { v.ChangeLogErr = errors.New("clone failed") },
			metav1.ConditionFalse, v1alpha1.ReasonChangeLogUnavailable, "computing the changelog from 4.15.0-1: clone failed", true, []string{v1alpha1.ReasonChangeLogUnavailable}},
		{"no issues", func(v *verification) { v.Keys = nil },
			metav1.ConditionTrue, v1alpha1.ReasonNoIssues, "no issues of OCPBUGS in the changelog from 4.15.0-1", false, nil},
		{"no issues in an incomplete changelog", func(v *verification) { v.Keys, v.Broken = nil, []string{"api: fetch failed"} },
			metav1.ConditionFalse, v1alpha1.ReasonChangeLogUnavailable, "is incomplete: api: fetch failed", true, []string{v1alpha1.ReasonChangeLogUnavailable}},
		{"Jira cannot be reached", func(v *verification) { v.ClientErr = errors.New("no token Secret") },
			metav1.ConditionFalse, v1alpha1.ReasonJiraMisconfigured, "2 issues not verified: no token Secret", true, []string{v1alpha1.ReasonJiraMisconfigured}},
		{"every issue moved", func(v *verification) {
			v.Result = issueResults{Outcomes: []outcome{{Key: "OCPBUGS-1", State: outcomeVerified, Commented: true}, {Key: "OCPBUGS-2", State: outcomeAlready}}}
		}, metav1.ConditionTrue, v1alpha1.ReasonIssuesVerified, "moved 1 issue to VERIFIED: OCPBUGS-1; 1 issue already VERIFIED: OCPBUGS-2", false, nil},
		{"moved, but the changelog is incomplete", func(v *verification) {
			v.Broken = []string{"web: fetch failed"}
			v.Result = issueResults{Outcomes: []outcome{{Key: "OCPBUGS-1", State: outcomeVerified}, {Key: "OCPBUGS-2", State: outcomeVerified}}}
		}, metav1.ConditionFalse, v1alpha1.ReasonChangeLogUnavailable, "incomplete: web: fetch failed; moved 2 issues", true, []string{v1alpha1.ReasonChangeLogUnavailable}},
		{"a failure that may go away is retried", func(v *verification) {
			v.Result = issueResults{Outcomes: []outcome{{Key: "OCPBUGS-1", State: outcomeVerified}, {Key: "OCPBUGS-2", State: outcomeFailed, Err: unavailable}}}
		}, metav1.ConditionFalse, v1alpha1.ReasonIssuesNotVerified, "1 issue not moved to VERIFIED: OCPBUGS-2: jira:", true, []string{notVerified}},
		{"a failure that needs someone is not retried", func(v *verification) {
			v.Result = issueResults{Outcomes: []outcome{{Key: "OCPBUGS-1", State: outcomeVerified}, {Key: "OCPBUGS-2", State: outcomeFailed, Err: noTransition}}}
		}, metav1.ConditionFalse, v1alpha1.ReasonIssuesNotVerified, "no transition from NEW to VERIFIED", false, []string{notVerified}},
		{"credentials refused for every issue", func(v *verification) {
			v.Result = issueResults{Outcomes: []outcome{{Key: "OCPBUGS-1", State: outcomeFailed, Err: unauthorized}, {Key: "OCPBUGS-2", State: outcomeFailed, Err: unauthorized}}}
		}, metav1.ConditionFalse, v1alpha1.ReasonJiraMisconfigured, "2 issues not moved", false, []string{notVerified, notVerified}},
		{"many failures: maxIssueEvents, then one for the rest", func(v *verification) {
			v.Result = issueResults{Outcomes: many}
		}, metav1.ConditionFalse, v1alpha1.ReasonIssuesNotVerified, "13 issues not moved", true, slices.Repeat([]string{notVerified}, maxIssueEvents+1)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v := base()
			tc.change(&v)
			c, err := decide(v)
			if c.Status != tc.wantStatus || c.Reason != tc.wantReason || !strings.Contains(c.Message, tc.wantInMsg) {
				t.Errorf("decide = %s %s %q, want %s %s containing %q", c.Status, c.Reason, c.Message, tc.wantStatus, tc.wantReason, tc.wantInMsg)
			}
			var reasons []string
			for _, f := range eventlog.Failures(err) {
				reasons = append(reasons, f.Reason)
			}
			if !slices.Equal(reasons, tc.wantEvents) {
				t.Errorf("failures %v (%v), want %v", reasons, err, tc.wantEvents)
			}
			summary, failed := eventlog.Summarize(err)
			if retry := failed && !summary.Stalled; retry != tc.wantRetry {
				t.Errorf("retried: %v, want %v (%v)", retry, tc.wantRetry, err)
			}
		})
	}
}
