package updateservice

import (
	"fmt"
	"regexp"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/conditions"
	"github.com/release-controller/release-controller/internal/server/catalog"
)

// Names of the risks the update service declares itself.
const (
	// RiskFlakyUpgrade: an upgrade's test failed in some runs and passed in others.
	RiskFlakyUpgrade = "UpgradeTestFlaky"
	// riskInformingPrefix + the verification's name in CamelCase + "Failed": an informing
	// verification failed on the target.
	riskInformingPrefix = "Informing"
)

// maxRunsNamed bounds the runs a detected risk's message lists.
const maxRunsNamed = 5

// Detect returns the risks stream s shows in its own results, when its spec opts in
// (updateService.detectRisks): each upgrade whose runs both failed and passed, and each
// informing verification that failed on a payload. Both apply to every cluster (Always):
// clusters see the edge as not recommended and can still take it, and feeders do not promote
// the payload. pageURL links to a payload's page when a run has no URL of its own.
func Detect(s *catalog.Stream, pageURL func(tag string) string) []Risk {
	if s.Object == nil || s.Object.Spec.UpdateService == nil || !s.Object.Spec.UpdateService.DetectRisks {
		return nil
	}
	always := []v1alpha1.MatchingRule{{Type: v1alpha1.MatchingRuleAlways}}
	var out []Risk
	for _, u := range s.Upgrades() {
		if u.Success == 0 || u.Failure == 0 {
			continue
		}
		var failed []string
		url := ""
		for _, run := range u.Runs {
			if run.State == v1alpha1.JobFailure {
				failed = append(failed, run.Name)
				if url == "" {
					url = run.URL
				}
			}
		}
		if url == "" {
			url = pageURL(u.To)
		}
		out = append(out, Risk{
			Namespace: s.Namespace, Stream: s.Name, Name: RiskFlakyUpgrade, Rules: always, URL: url, Detected: true,
			Message: conditions.Truncate(fmt.Sprintf("The upgrade from %s to %s failed in %d of %d runs (%s); it passed in the others.",
				u.From, u.To, u.Failure, u.Total, listRuns(failed)), 1024),
			toExact: u.To, from: regexp.MustCompile("^" + regexp.QuoteMeta(u.From) + "$"),
			Declared: failedSince(s, u.From, u.To),
		})
	}
	for _, e := range s.Entries {
		for _, v := range e.Payload.Status.Verifications {
			if v.Type != v1alpha1.Informing || v.State != v1alpha1.JobFailure {
				continue
			}
			var failed []string
			url := ""
			since := time.Time{}
			for _, run := range v.Runs {
				if run.State != v1alpha1.JobFailure {
					continue
				}
				failed = append(failed, run.Name)
				if url == "" {
					url = run.URL
				}
				since = earlier(since, run.CompletionTime)
			}
			if url == "" {
				url = pageURL(e.Tag())
			}
			out = append(out, Risk{
				Namespace: s.Namespace, Stream: s.Name, Name: riskInformingPrefix + camel(v.Name) + "Failed", Rules: always, URL: url, Detected: true,
				Message: conditions.Truncate(fmt.Sprintf("The informing verification %s failed on %s (%s).", v.Name, e.Tag(), listRuns(failed)), 1024),
				toExact: e.Tag(), Declared: since,
			})
		}
	}
	return out
}

// failedSince is when the first failed run of the upgrade from → to finished, as the
// payload's status or the upgrade graph records it (zero when neither says).
func failedSince(s *catalog.Stream, from, to string) time.Time {
	since := time.Time{}
	if e, ok := s.Entry(to); ok {
		for _, v := range e.Payload.Status.Verifications {
			for _, run := range v.Runs {
				if run.UpgradeFrom == from && run.State == v1alpha1.JobFailure {
					since = earlier(since, run.CompletionTime)
				}
			}
		}
	}
	for _, edge := range s.Graph.Edges {
		if edge.From == from && edge.To == to && edge.State == v1alpha1.JobFailure {
			since = earlier(since, edge.Completed)
		}
	}
	return since
}

// earlier is the earlier of since (zero: none yet) and t (nil: unknown).
func earlier(since time.Time, t *metav1.Time) time.Time {
	if t == nil || (!since.IsZero() && !t.Time.Before(since)) {
		return since
	}
	return t.Time
}

// listRuns names up to maxRunsNamed runs, and how many more there are.
func listRuns(runs []string) string {
	if len(runs) <= maxRunsNamed {
		return strings.Join(runs, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(runs[:maxRunsNamed], ", "), len(runs)-maxRunsNamed)
}

// camel turns a verification's name (e2e-aws-serial) into a risk name's part (E2eAwsSerial):
// letters and digits only, each word capitalised.
func camel(name string) string {
	var b strings.Builder
	upper := true
	for _, r := range name {
		switch {
		case r >= 'a' && r <= 'z':
			if upper {
				r -= 'a' - 'A'
			}
			b.WriteRune(r)
			upper = false
		case r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
			b.WriteRune(r)
			upper = false
		default:
			upper = true
		}
	}
	return b.String()
}
