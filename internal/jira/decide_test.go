package jira

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/jira/jiraclient"
)

func TestDecide(t *testing.T) {
	base := func() verification {
		return verification{Stream: "nightly", Projects: []string{"OCPBUGS"}, Target: "VERIFIED", Previous: "4.15.0-1", Keys: []string{"OCPBUGS-1", "OCPBUGS-2"}}
	}
	unauthorized := &jiraclient.Error{Method: http.MethodGet, Path: "/rest/api/2/issue/OCPBUGS-1", StatusCode: http.StatusUnauthorized}
	unavailable := &jiraclient.Error{Method: http.MethodPost, Path: "/rest/api/2/issue/OCPBUGS-2/transitions", StatusCode: http.StatusServiceUnavailable}
	noTransition := &noTransitionError{Key: "OCPBUGS-2", From: "NEW", Target: "VERIFIED"}
	tests := []struct {
		name       string
		change     func(*verification)
		wantStatus metav1.ConditionStatus
		wantReason string
		wantInMsg  string
		wantRetry  bool
	}{
		{"the previous payload cannot be found", func(v *verification) { v.PreviousErr = errors.New("list failed") },
			metav1.ConditionFalse, v1alpha1.ReasonChangeLogUnavailable, "finding the previous accepted payload: list failed", true},
		{"the first accepted payload", func(v *verification) { v.Previous, v.Keys = "", nil },
			metav1.ConditionTrue, v1alpha1.ReasonNoIssues, "the first accepted payload of stream nightly", false},
		{"no changelog", func(v *verification) { v.ChangeLogErr = errors.New("clone failed") },
			metav1.ConditionFalse, v1alpha1.ReasonChangeLogUnavailable, "computing the changelog from 4.15.0-1: clone failed", true},
		{"no issues", func(v *verification) { v.Keys = nil },
			metav1.ConditionTrue, v1alpha1.ReasonNoIssues, "no issues of OCPBUGS in the changelog from 4.15.0-1", false},
		{"no issues in an incomplete changelog", func(v *verification) { v.Keys, v.Broken = nil, []string{"api: fetch failed"} },
			metav1.ConditionFalse, v1alpha1.ReasonChangeLogUnavailable, "is incomplete: api: fetch failed", true},
		{"Jira cannot be reached", func(v *verification) { v.ClientErr = errors.New("no token Secret") },
			metav1.ConditionFalse, v1alpha1.ReasonJiraMisconfigured, "2 issues not verified: no token Secret", true},
		{"every issue moved", func(v *verification) {
			v.Result = issueResults{Outcomes: []outcome{{Key: "OCPBUGS-1", State: outcomeVerified, Commented: true}, {Key: "OCPBUGS-2", State: outcomeAlready}}}
		}, metav1.ConditionTrue, v1alpha1.ReasonIssuesVerified, "moved 1 issue to VERIFIED: OCPBUGS-1; 1 issue already VERIFIED: OCPBUGS-2", false},
		{"moved, but the changelog is incomplete", func(v *verification) {
			v.Broken = []string{"web: fetch failed"}
			v.Result = issueResults{Outcomes: []outcome{{Key: "OCPBUGS-1", State: outcomeVerified}, {Key: "OCPBUGS-2", State: outcomeVerified}}}
		}, metav1.ConditionFalse, v1alpha1.ReasonChangeLogUnavailable, "incomplete: web: fetch failed; moved 2 issues", true},
		{"a failure that may go away is retried", func(v *verification) {
			v.Result = issueResults{Outcomes: []outcome{{Key: "OCPBUGS-1", State: outcomeVerified}, {Key: "OCPBUGS-2", State: outcomeFailed, Err: unavailable}}}
		}, metav1.ConditionFalse, v1alpha1.ReasonIssuesNotVerified, "1 issue not moved to VERIFIED: OCPBUGS-2: jira:", true},
		{"a failure that needs someone is not retried", func(v *verification) {
			v.Result = issueResults{Outcomes: []outcome{{Key: "OCPBUGS-1", State: outcomeVerified}, {Key: "OCPBUGS-2", State: outcomeFailed, Err: noTransition}}}
		}, metav1.ConditionFalse, v1alpha1.ReasonIssuesNotVerified, "no transition from NEW to VERIFIED", false},
		{"credentials refused for every issue", func(v *verification) {
			v.Result = issueResults{Outcomes: []outcome{{Key: "OCPBUGS-1", State: outcomeFailed, Err: unauthorized}, {Key: "OCPBUGS-2", State: outcomeFailed, Err: unauthorized}}}
		}, metav1.ConditionFalse, v1alpha1.ReasonJiraMisconfigured, "2 issues not moved", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v := base()
			tc.change(&v)
			c, retry := decide(v)
			if c.Status != tc.wantStatus || c.Reason != tc.wantReason || !strings.Contains(c.Message, tc.wantInMsg) {
				t.Errorf("decide = %s %s %q, want %s %s containing %q", c.Status, c.Reason, c.Message, tc.wantStatus, tc.wantReason, tc.wantInMsg)
			}
			if (retry != nil) != tc.wantRetry {
				t.Errorf("retry = %v, want one: %v", retry, tc.wantRetry)
			}
		})
	}
}
