package catalog

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/verdict/verdicttest"
)

var healthEpoch = time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)

// healthPayload is a payload of stream s created at created, whose verdict phase came
// verdictAfter later, with the components and the runs of e2e (blocking, one retry) and
// lint (informing) given; each run took a minute.
type healthPayload struct {
	created, verdictAfter time.Duration
	phase                 v1alpha1.PayloadPhase
	components            map[string]string
	e2e, lint             []v1alpha1.JobState
}

func (hp healthPayload) build(i int) *v1alpha1.ReleasePayload {
	created := healthEpoch.Add(hp.created)
	tag := "4.15.0-0.nightly-" + created.Format("2006-01-02-150405")
	p := &v1alpha1.ReleasePayload{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: tag, CreationTimestamp: metav1.NewTime(created)},
		Spec: v1alpha1.ReleasePayloadSpec{
			PayloadCoordinates: v1alpha1.PayloadCoordinates{Stream: "s", Tag: tag},
			PayloadVerificationConfig: v1alpha1.PayloadVerificationConfig{Verifications: []v1alpha1.Verification{
				{Name: "e2e", MaxRetries: 1}, {Name: "lint", Type: v1alpha1.Informing},
			}},
		},
	}
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for k := range hp.components {
			if !yield(k) {
				return
			}
		}
	}) {
		p.Spec.Components = append(p.Spec.Components, v1alpha1.PinnedComponent{Name: name, Image: hp.components[name]})
	}
	runs := func(name string, states []v1alpha1.JobState) []v1alpha1.JobRun {
		var out []v1alpha1.JobRun
		for j, st := range states {
			start := metav1.NewTime(created.Add(time.Duration(j) * time.Minute))
			r := v1alpha1.JobRun{Kind: v1alpha1.RunKindJob, Namespace: "ns", Name: fmt.Sprintf("%s-%s-%d", tag, name, j+1),
				Attempt: int32(j + 1), State: st, StartTime: &start, URL: fmt.Sprintf("https://ci.example/%d/%s/%d", i, name, j+1)}
			if st.IsTerminal() {
				end := metav1.NewTime(start.Add(time.Minute))
				r.CompletionTime = &end
			}
			out = append(out, r)
		}
		return out
	}
	p.Status.Verifications = []v1alpha1.VerificationStatus{
		{Name: "e2e", Type: v1alpha1.Blocking, Runs: runs("e2e", hp.e2e)},
		{Name: "lint", Type: v1alpha1.Informing, Runs: runs("lint", hp.lint)},
	}
	verdicttest.Earn(p, hp.phase)
	if c := verdictConditions[hp.phase]; c != "" {
		cond := meta.FindStatusCondition(p.Status.Conditions, c)
		cond.LastTransitionTime = metav1.NewTime(created.Add(hp.verdictAfter))
	}
	return p
}

var (
	pass  = v1alpha1.JobSuccess
	fail  = v1alpha1.JobFailure
	run   = v1alpha1.JobPending
	hour  = time.Hour
	comps = func(kv ...string) map[string]string {
		m := map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
)

func healthStream(t *testing.T, payloads []healthPayload) *Stream {
	t.Helper()
	c := New()
	c.SetStream(newStream("ns", "s"))
	for i, hp := range payloads {
		c.SetPayload(hp.build(i))
	}
	s, err := c.Stream("s")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestHealth(t *testing.T) {
	s := healthStream(t, []healthPayload{
		// Day 1: accepted in 1h; then e2e breaks when api changes; then it flakes.
		{created: 0, verdictAfter: hour, phase: v1alpha1.PhaseAccepted, components: comps("api", "a1", "ui", "u1"), e2e: []v1alpha1.JobState{pass}, lint: []v1alpha1.JobState{pass}},
		{created: 2 * hour, verdictAfter: 2 * hour, phase: v1alpha1.PhaseRejected, components: comps("api", "a2", "ui", "u1"), e2e: []v1alpha1.JobState{fail, fail}, lint: []v1alpha1.JobState{fail}},
		{created: 4 * hour, verdictAfter: 3 * hour, phase: v1alpha1.PhaseAccepted, components: comps("api", "a3", "ui", "u1"), e2e: []v1alpha1.JobState{fail, pass}, lint: []v1alpha1.JobState{pass}},
		// Day 2: a failed build, a rejection when ui changes, and one still running.
		{created: 24 * hour, verdictAfter: hour / 2, phase: v1alpha1.PhaseFailed, components: comps("api", "a3", "ui", "u2")},
		{created: 26 * hour, verdictAfter: 4 * hour, phase: v1alpha1.PhaseRejected, components: comps("api", "a3", "ui", "u3"), e2e: []v1alpha1.JobState{fail, fail}, lint: []v1alpha1.JobState{pass}},
		{created: 28 * hour, phase: v1alpha1.PhaseReady, components: comps("api", "a3", "ui", "u4"), e2e: []v1alpha1.JobState{run}},
	})
	now := healthEpoch.Add(30 * hour)
	h := s.Health(HealthWindow{Now: now})

	if h.Payloads != 6 || h.Verdicts != 5 || h.Accepted != 2 || h.Rejected != 2 || h.Failed != 1 || h.Waiting != 1 {
		t.Errorf("counts: %+v", h)
	}
	if h.AcceptanceRate != 0.4 {
		t.Errorf("acceptance rate %v, want 0.4", h.AcceptanceRate)
	}
	// Verdict times 0.5h, 1h, 2h, 3h, 4h.
	if h.VerdictP50 != 2*3600 || h.VerdictP90 != 4*3600 {
		t.Errorf("verdict p50 %v p90 %v, want 7200 and 14400", h.VerdictP50, h.VerdictP90)
	}
	wantDays := []HealthDay{
		{Day: "2026-11-20", Payloads: 3, Verdicts: 3, Accepted: 2, AcceptanceRate: 2.0 / 3, VerdictP50: 2 * 3600, VerdictP90: 3 * 3600},
		{Day: "2026-11-21", Payloads: 3, Verdicts: 2, Accepted: 0, AcceptanceRate: 0, VerdictP50: 1800, VerdictP90: 4 * 3600},
	}
	if !slices.Equal(h.Days, wantDays) {
		t.Errorf("days:\n got %+v\nwant %+v", h.Days, wantDays)
	}
	if h.LastAccepted == nil || h.LastAccepted.Tag != "4.15.0-0.nightly-2026-11-20-040000" {
		t.Errorf("last accepted %+v", h.LastAccepted)
	}
	// The last acceptance came at 07:00 on day 1; nothing since, until now (day 2 06:00).
	wantDrought := Drought{After: "4.15.0-0.nightly-2026-11-20-040000", From: healthEpoch.Add(7 * hour), To: now, Seconds: 23 * 3600, Payloads: 3, Ongoing: true}
	if h.LongestDrought == nil || *h.LongestDrought != wantDrought {
		t.Errorf("drought %+v, want %+v", h.LongestDrought, wantDrought)
	}

	if len(h.Verifications) != 2 || h.Verifications[0].Name != "e2e" || h.Verifications[1].Name != "lint" {
		t.Fatalf("verifications %+v", h.Verifications)
	}
	e2e := h.Verifications[0]
	want := VerificationHealth{Name: "e2e", Blocking: true, Ended: 4, Passed: 2, PassRate: 0.5, Retried: 3, RetryRate: 0.75,
		Flaky: 1, Flakiness: 0.25, Runs: 7, DurationP50: 60, DurationP90: 60, Rejected: 2, Delayed: 1, Harm: 3}
	got := e2e
	got.LastFailure, got.Breaks, got.Suspects = nil, nil, nil
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("e2e:\n got %+v\nwant %+v", got, want)
	}
	if e2e.LastFailure == nil || e2e.LastFailure.Tag != "4.15.0-0.nightly-2026-11-21-020000" || e2e.LastFailure.URL != "https://ci.example/4/e2e/2" {
		t.Errorf("last failure %+v", e2e.LastFailure)
	}
	wantBreaks := []Break{
		{Tag: "4.15.0-0.nightly-2026-11-21-020000", Previous: "4.15.0-0.nightly-2026-11-20-040000", Components: []string{"ui"}},
		{Tag: "4.15.0-0.nightly-2026-11-20-020000", Previous: "4.15.0-0.nightly-2026-11-20-000000", Components: []string{"api"}},
	}
	if fmt.Sprint(e2e.Breaks) != fmt.Sprint(wantBreaks) {
		t.Errorf("breaks:\n got %+v\nwant %+v", e2e.Breaks, wantBreaks)
	}
	if want := []Suspect{{"api", 1}, {"ui", 1}}; !slices.Equal(e2e.Suspects, want) {
		t.Errorf("suspects %+v, want %+v", e2e.Suspects, want)
	}
	lint := h.Verifications[1]
	if lint.Harm != 0 || lint.Ended != 4 || lint.Passed != 3 || lint.Rejected != 0 {
		t.Errorf("lint (informing, harms nothing): %+v", lint)
	}
}

func TestHealthWindow(t *testing.T) {
	var payloads []healthPayload
	for i := range 10 {
		payloads = append(payloads, healthPayload{created: time.Duration(i) * 24 * hour, verdictAfter: hour, phase: v1alpha1.PhaseAccepted,
			components: comps("api", "a"), e2e: []v1alpha1.JobState{pass}, lint: []v1alpha1.JobState{pass}})
	}
	s := healthStream(t, payloads)
	now := healthEpoch.Add(9*24*hour + 12*hour)
	for _, tc := range []struct {
		name         string
		window       HealthWindow
		want         int
		wantFirstDay string
	}{
		{"defaults", HealthWindow{Now: now}, 10, "2026-11-20"},
		{"last 3 days", HealthWindow{Days: 3, Now: now}, 3, "2026-11-27"},
		{"last 4 payloads", HealthWindow{Payloads: 4, Now: now}, 4, "2026-11-26"},
		{"both: the smaller", HealthWindow{Payloads: 2, Days: 5, Now: now}, 2, "2026-11-28"},
		{"beyond the bounds", HealthWindow{Payloads: MaxHealthPayloads + 1, Days: MaxHealthDays + 1, Now: now}, 10, "2026-11-20"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := s.Health(tc.window)
			if h.Payloads != tc.want || h.Days[0].Day != tc.wantFirstDay {
				t.Errorf("got %d payloads from %s, want %d from %s", h.Payloads, h.Days[0].Day, tc.want, tc.wantFirstDay)
			}
		})
	}
	if h := healthStream(t, nil).Health(HealthWindow{Now: now}); h.Payloads != 0 || h.LastAccepted != nil || h.LongestDrought != nil || h.Days != nil {
		t.Errorf("an empty stream: %+v", h)
	}
}

func TestPercentile(t *testing.T) {
	for _, tc := range []struct {
		values []float64
		q      float64
		want   float64
	}{
		{nil, 0.5, 0},
		{[]float64{7}, 0.5, 7},
		{[]float64{7}, 0.9, 7},
		{[]float64{4, 1, 3, 2}, 0.5, 2},
		{[]float64{4, 1, 3, 2}, 0.9, 4},
		{[]float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 0.9, 9},
		{[]float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 0.5, 5},
		{[]float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 1, 10},
	} {
		if got := Percentile(slices.Clone(tc.values), tc.q); got != tc.want {
			t.Errorf("Percentile(%v, %v) = %v, want %v", tc.values, tc.q, got, tc.want)
		}
	}
}

// Percentile selects what sorting would find, whatever the order and repeats of the values.
func TestPercentileSelectsAsSortingWould(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for n := 1; n < 300; n += 7 {
		values := make([]float64, n)
		for i := range values {
			values[i] = float64(rng.IntN(n/3 + 1))
		}
		sorted := slices.Sorted(slices.Values(values))
		for _, q := range []float64{0.01, 0.5, 0.9, 0.99, 1} {
			want := sorted[min(max(int(math.Ceil(q*float64(n))), 1), n)-1]
			if got := Percentile(slices.Clone(values), q); got != want {
				t.Errorf("n=%d q=%v: got %v, want %v", n, q, got, want)
			}
		}
	}
}

func TestChangedComponents(t *testing.T) {
	pc := func(kv ...string) []v1alpha1.PinnedComponent {
		var out []v1alpha1.PinnedComponent
		for i := 0; i+1 < len(kv); i += 2 {
			out = append(out, v1alpha1.PinnedComponent{Name: kv[i], Image: kv[i+1]})
		}
		return out
	}
	for _, tc := range []struct {
		name          string
		before, after []v1alpha1.PinnedComponent
		want          []string
	}{
		{"none", pc("a", "1", "b", "1"), pc("b", "1", "a", "1"), []string{}},
		{"one image", pc("a", "1", "b", "1"), pc("a", "1", "b", "2"), []string{"b"}},
		{"added and removed", pc("a", "1", "gone", "1"), pc("a", "1", "new", "1"), []string{"gone", "new"}},
		{"from nothing", nil, pc("b", "1", "a", "1"), []string{"a", "b"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ChangedComponents(tc.before, tc.after); !slices.Equal(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestCompareHarm(t *testing.T) {
	vs := []VerificationHealth{
		{Name: "b", Harm: 1, Ended: 5, Passed: 5},
		{Name: "c", Harm: 1, Ended: 5, Passed: 3},
		{Name: "a", Harm: 0, Ended: 5, Passed: 0},
		{Name: "d", Harm: 4},
		{Name: "a2", Harm: 1, Ended: 5, Passed: 5},
	}
	slices.SortFunc(vs, CompareHarm)
	var got []string
	for _, v := range vs {
		got = append(got, v.Name)
	}
	if want := []string{"d", "c", "a2", "b", "a"}; !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

// BenchmarkHealth computes the report over a stream of 10,000 payloads with 10
// verifications each, and reports the 99th percentile of one computation.
//
//	go test ./internal/server/catalog/ -run '^$' -bench BenchmarkHealth -benchtime 200x
func BenchmarkHealth(b *testing.B) {
	c := New()
	c.SetStream(newStream("ns", "s"))
	for i := range 10000 {
		created := time.Duration(i) * 10 * time.Minute
		hp := healthPayload{created: created, verdictAfter: 30 * time.Minute, phase: v1alpha1.PhaseAccepted,
			components: comps("api", fmt.Sprint(i%50), "ui", fmt.Sprint(i%7)), e2e: []v1alpha1.JobState{pass}, lint: []v1alpha1.JobState{pass}}
		switch {
		case i%7 == 6:
			hp.phase, hp.e2e = v1alpha1.PhaseRejected, []v1alpha1.JobState{fail, fail}
		case i%5 == 0:
			hp.e2e = []v1alpha1.JobState{fail, pass}
		}
		p := hp.build(i)
		for v := range 8 { // 10 verifications in all
			name := fmt.Sprintf("verify-%d", v)
			p.Spec.PayloadVerificationConfig.Verifications = append(p.Spec.PayloadVerificationConfig.Verifications, v1alpha1.Verification{Name: name})
			start := metav1.NewTime(p.CreationTimestamp.Add(time.Minute))
			end := metav1.NewTime(start.Add(time.Duration(v+1) * time.Minute))
			p.Status.Verifications = append(p.Status.Verifications, v1alpha1.VerificationStatus{Name: name, Runs: []v1alpha1.JobRun{
				{Kind: v1alpha1.RunKindJob, Name: p.Name + name, Attempt: 1, State: pass, StartTime: &start, CompletionTime: &end}}})
		}
		if hp.phase == v1alpha1.PhaseRejected {
			p.Status.Phase = v1alpha1.PhaseRejected
		}
		c.SetPayload(p)
	}
	s, _ := c.Stream("s")
	w := HealthWindow{Payloads: MaxHealthPayloads, Days: MaxHealthDays, Now: healthEpoch.Add(10000 * 10 * time.Minute)}
	if h := s.Health(w); h.Payloads != 10000 || len(h.Verifications) != 10 {
		b.Fatalf("report of %d payloads, %d verifications", h.Payloads, len(h.Verifications))
	}
	var took []time.Duration
	for b.Loop() {
		start := time.Now()
		s.Health(w)
		took = append(took, time.Since(start))
	}
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(took[min(len(took)-1, len(took)*99/100)].Microseconds())/1000, "p99-ms")
}
