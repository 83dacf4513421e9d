package web_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/server/catalog"
	"github.com/release-controller/release-controller/internal/verdict/verdicttest"
)

// The health benchmark's stream: 10,000 payloads, one every 10 minutes (about 70 days),
// each with 10 verifications of a minute or more. Every seventh payload is rejected by
// verify-0 after two failed runs, every fifth passes verify-2 on its retry, every
// thirteenth failed its build; a component changes in every payload.
const (
	healthBenchPayloads      = 10000
	healthBenchVerifications = 10
)

var healthBenchStart = at("2026-09-01T00:00:00Z")

var healthBenchOnce = sync.OnceValue(func() *catalog.Catalog {
	cat := catalog.New()
	cat.SetStream(newReleaseStream("bench", "health", "4.20.0-0.nightly", 3))
	var config []v1alpha1.Verification
	for v := range healthBenchVerifications {
		cfg := v1alpha1.Verification{Name: fmt.Sprintf("verify-%d", v), Type: v1alpha1.Blocking, MaxRetries: 1}
		if v >= 7 {
			cfg.Type = v1alpha1.Informing
		}
		config = append(config, cfg)
	}
	for i := range healthBenchPayloads {
		created := healthBenchStart.Add(time.Duration(i) * 10 * time.Minute)
		tag := "4.20.0-0.nightly-" + created.Format("2006-01-02-150405")
		phase := v1alpha1.PhaseAccepted
		switch {
		case i%13 == 12:
			phase = v1alpha1.PhaseFailed
		case i%7 == 6:
			phase = v1alpha1.PhaseRejected
		}
		p := newPayload("bench", "health", tag, phase, created.Format(time.RFC3339))
		p.Spec.Components = append(p.Spec.Components, v1alpha1.PinnedComponent{Name: fmt.Sprintf("component-%d", i%20), Image: fmt.Sprintf("registry.example.com/c@sha256:%064d", i)})
		p.Spec.PayloadVerificationConfig.Verifications = config
		if phase != v1alpha1.PhaseFailed {
			for v, cfg := range config {
				states := []v1alpha1.JobState{v1alpha1.JobSuccess}
				switch {
				case phase == v1alpha1.PhaseRejected && v == 0:
					states = []v1alpha1.JobState{v1alpha1.JobFailure, v1alpha1.JobFailure}
				case i%5 == 0 && v == 2:
					states = []v1alpha1.JobState{v1alpha1.JobFailure, v1alpha1.JobSuccess}
				}
				st := v1alpha1.VerificationStatus{Name: cfg.Name, Type: cfg.Type}
				for a, state := range states {
					start := created.Add(time.Duration(a*10+1) * time.Minute)
					st.Runs = append(st.Runs, v1alpha1.JobRun{Kind: v1alpha1.RunKindJob, Namespace: "bench", Name: fmt.Sprintf("%s-%s-%d", tag, cfg.Name, a+1),
						Attempt: int32(a + 1), State: state, URL: "https://ci.example.com/" + tag + "/" + cfg.Name,
						StartTime: &metav1.Time{Time: start}, CompletionTime: &metav1.Time{Time: start.Add(time.Duration(v+1) * time.Minute)}})
				}
				p.Status.Verifications = append(p.Status.Verifications, st)
			}
		} else {
			p.Status.PayloadImage = ""
		}
		verdicttest.Earn(p, phase)
		// The verdict came half an hour after creation.
		for j := range p.Status.Conditions {
			if p.Status.Conditions[j].Status == metav1.ConditionTrue && p.Status.Conditions[j].Type != v1alpha1.ConditionPayloadCreated {
				p.Status.Conditions[j].LastTransitionTime = metav1.NewTime(created.Add(30 * time.Minute))
			}
		}
		cat.SetPayload(p)
	}
	return cat
})

// BenchmarkStreamHealth serves the health of a stream of 10,000 payloads over all of
// them, as the page (with its charts) and as JSON in turn, each request after a change of
// the stream: every request computes the report from a new snapshot.
//
//	go test ./internal/server/web/ -run '^$' -bench BenchmarkStreamHealth -benchtime 200x
func BenchmarkStreamHealth(b *testing.B) {
	benchHealth(b, true)
}

// BenchmarkStreamHealthCached is BenchmarkStreamHealth for an unchanged stream: the report
// is computed once a minute.
func BenchmarkStreamHealthCached(b *testing.B) {
	benchHealth(b, false)
}

func benchHealth(b *testing.B, fresh bool) {
	cat := healthBenchOnce()
	now := healthBenchStart.Add(healthBenchPayloads * 10 * time.Minute)
	window := fmt.Sprintf("?payloads=%d&days=365", healthBenchPayloads)
	paths := []string{"/releasestream/health/health" + window, "/releasestream/health/health" + window + "&format=json"}
	benchPagesOf(b, cat, nil, now, paths, []string{"health"}, fresh)
}
