package catalog

import (
	"cmp"
	"maps"
	"math"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/verdict"
)

// Bounds of a health window.
const (
	DefaultHealthPayloads = 200
	MaxHealthPayloads     = 10000
	DefaultHealthDays     = 14
	MaxHealthDays         = 365
)

// HealthWindow picks the payloads a health report covers: those created in the last Days
// days before Now, at most the newest Payloads of them.
type HealthWindow struct {
	Payloads int
	Days     int
	Now      time.Time
}

// Health is how a stream has fared over a window of payloads: acceptance, time to a
// verdict, and each verification's record. Rates are shares (0 to 1) of the counts beside
// them; durations are seconds. The web page, its JSON and the MCP tool all show this value.
type Health struct {
	Namespace string `json:"namespace"`
	Stream    string `json:"stream"`
	// AsOf is the time the report was made for: the window ends there.
	AsOf time.Time `json:"asOf"`
	// Window is what was asked for; From and To bound the creation times of the payloads found.
	Window struct {
		Payloads int `json:"payloads"`
		Days     int `json:"days"`
	} `json:"window"`
	From time.Time `json:"from,omitzero"`
	To   time.Time `json:"to,omitzero"`

	Payloads int `json:"payloads"`
	// Verdicts counts the payloads with one (Accepted, Rejected or Failed); the others wait.
	Verdicts       int     `json:"verdicts"`
	Accepted       int     `json:"accepted"`
	Rejected       int     `json:"rejected"`
	Failed         int     `json:"failed"`
	Waiting        int     `json:"waiting"`
	AcceptanceRate float64 `json:"acceptanceRate"`
	// VerdictP50 and VerdictP90 are the times from creation to verdict.
	VerdictP50 float64 `json:"verdictSecondsP50"`
	VerdictP90 float64 `json:"verdictSecondsP90"`

	// Days are the same figures per UTC day of creation, oldest first.
	Days []HealthDay `json:"days"`
	// Verifications are ordered by harm, most harmful first.
	Verifications []VerificationHealth `json:"verifications"`

	// LastAccepted is the stream's newest accepted payload (in the whole stream, not only
	// the window); nil when it has none.
	LastAccepted *PayloadRef `json:"lastAccepted,omitempty"`
	// LongestDrought is the longest time in the window without a new accepted payload.
	LongestDrought *Drought `json:"longestDrought,omitempty"`
}

// HealthDay is one day of a health report.
type HealthDay struct {
	Day            string  `json:"day"`
	Payloads       int     `json:"payloads"`
	Verdicts       int     `json:"verdicts"`
	Accepted       int     `json:"accepted"`
	AcceptanceRate float64 `json:"acceptanceRate"`
	VerdictP50     float64 `json:"verdictSecondsP50"`
	VerdictP90     float64 `json:"verdictSecondsP90"`
}

// VerificationHealth is one verification's record over the window.
type VerificationHealth struct {
	Name     string `json:"name"`
	Blocking bool   `json:"blocking"`
	// Ended counts the payloads on which it ended (Success or Failure); the rates are
	// shares of it.
	Ended     int     `json:"ended"`
	Passed    int     `json:"passed"`
	PassRate  float64 `json:"passRate"`
	Retried   int     `json:"retried"`
	RetryRate float64 `json:"retryRate"`
	// Flaky counts the payloads on which it failed a run and still passed.
	Flaky     int     `json:"flaky"`
	Flakiness float64 `json:"flakiness"`
	// Runs counts its ended runs; the durations are theirs.
	Runs        int     `json:"runs"`
	DurationP50 float64 `json:"durationSecondsP50"`
	DurationP90 float64 `json:"durationSecondsP90"`
	// Rejected counts the payloads its failure rejected; Delayed those whose verdict waited
	// for its retries. Harm is their sum, the order of the list.
	Rejected    int        `json:"rejected"`
	Delayed     int        `json:"delayed"`
	Harm        int        `json:"harm"`
	LastFailure *FailedRun `json:"lastFailure,omitempty"`
	Breaks      []Break    `json:"breaks,omitempty"`
	Suspects    []Suspect  `json:"suspects,omitempty"`
	byComponent map[string]int
	durations   []float64
}

// PayloadRef names a payload and when it was created.
type PayloadRef struct {
	Tag     string    `json:"tag"`
	Created time.Time `json:"created,omitzero"`
}

// FailedRun is a verification's failed run.
type FailedRun struct {
	Tag     string    `json:"tag"`
	Run     string    `json:"run"`
	URL     string    `json:"url,omitempty"`
	Message string    `json:"message,omitempty"`
	Time    time.Time `json:"time,omitzero"`
}

// Break is a payload on which a verification failed after it had passed on the payload
// before, with the components whose image changed between the two: the likely culprits.
type Break struct {
	Tag        string   `json:"tag"`
	Previous   string   `json:"previous"`
	Components []string `json:"components"`
}

// Suspect is a component and how many of a verification's breaks changed it.
type Suspect struct {
	Component string `json:"component"`
	Breaks    int    `json:"breaks"`
}

// Drought is a time without a new accepted payload: after the acceptance of After (empty
// when the window starts with the drought) until the acceptance of Until (empty while it
// goes on), with the payloads created in it that were not accepted.
type Drought struct {
	After    string    `json:"after,omitempty"`
	Until    string    `json:"until,omitempty"`
	From     time.Time `json:"from"`
	To       time.Time `json:"to"`
	Seconds  float64   `json:"seconds"`
	Payloads int       `json:"payloads"`
	Ongoing  bool      `json:"ongoing"`
}

// maxBreaks bounds the breaks a verification lists (its suspects count them all).
const maxBreaks = 5

// Health computes the stream's health over the window, from the snapshot alone.
func (s *Stream) Health(w HealthWindow) Health {
	w = w.withDefaults()
	h := Health{Namespace: s.Namespace, Stream: s.Name, AsOf: w.Now.UTC()}
	h.Window.Payloads, h.Window.Days = w.Payloads, w.Days
	window := s.window(w)
	if last, ok := s.lastAccepted(); ok {
		h.LastAccepted = &PayloadRef{Tag: last.Tag(), Created: last.Payload.CreationTimestamp.UTC()}
	}
	if len(window) == 0 {
		return h
	}
	h.From = window[0].Payload.CreationTimestamp.UTC()
	h.To = window[len(window)-1].Payload.CreationTimestamp.UTC()
	h.Payloads = len(window)

	var verdictTimes []float64
	var day *HealthDay
	var dayTimes []float64
	closeDay := func() {
		if day != nil {
			day.AcceptanceRate = rate(day.Accepted, day.Verdicts)
			day.VerdictP50, day.VerdictP90 = Percentile(dayTimes, 0.5), Percentile(dayTimes, 0.9)
			h.Days = append(h.Days, *day)
		}
	}
	verifications := map[string]*VerificationHealth{}
	lastEnded := map[string]verificationOutcome{} // per verification, its latest outcome so far
	for _, e := range window {
		d := e.Payload.CreationTimestamp.UTC().Format(time.DateOnly)
		if day == nil || day.Day != d {
			closeDay()
			day, dayTimes = &HealthDay{Day: d}, nil
		}
		day.Payloads++
		phase := e.Phase()
		switch phase {
		case v1alpha1.PhaseAccepted:
			h.Accepted++
			day.Accepted++
		case v1alpha1.PhaseRejected:
			h.Rejected++
		case v1alpha1.PhaseFailed:
			h.Failed++
		default:
			h.Waiting++
		}
		if verdict.IsVerdict(phase) {
			h.Verdicts++
			day.Verdicts++
			if secs, ok := verdictSeconds(e.Payload, phase); ok {
				verdictTimes = append(verdictTimes, secs)
				dayTimes = append(dayTimes, secs)
			}
		}
		addVerifications(verifications, lastEnded, e, phase)
	}
	closeDay()
	h.AcceptanceRate = rate(h.Accepted, h.Verdicts)
	h.VerdictP50, h.VerdictP90 = Percentile(verdictTimes, 0.5), Percentile(verdictTimes, 0.9)
	h.LongestDrought = longestDrought(window, w.Now)
	h.Verifications = finishVerifications(verifications)
	return h
}

func (w HealthWindow) withDefaults() HealthWindow {
	if w.Payloads <= 0 {
		w.Payloads = DefaultHealthPayloads
	}
	if w.Days <= 0 {
		w.Days = DefaultHealthDays
	}
	w.Payloads, w.Days = min(w.Payloads, MaxHealthPayloads), min(w.Days, MaxHealthDays)
	if w.Now.IsZero() {
		w.Now = time.Now()
	}
	return w
}

// window returns the payloads the window covers, oldest first (by creation, then tag).
func (s *Stream) window(w HealthWindow) []Entry {
	since := w.Now.Add(-time.Duration(w.Days) * 24 * time.Hour)
	var out []Entry
	for _, e := range s.Entries {
		if !e.Payload.CreationTimestamp.Time.Before(since) {
			out = append(out, e)
		}
	}
	slices.SortFunc(out, func(a, b Entry) int {
		return cmp.Or(a.Payload.CreationTimestamp.Compare(b.Payload.CreationTimestamp.Time), -compareEntries(a, b))
	})
	if len(out) > w.Payloads {
		out = out[len(out)-w.Payloads:]
	}
	return out
}

// lastAccepted is the accepted payload created last.
func (s *Stream) lastAccepted() (Entry, bool) {
	var last Entry
	for _, e := range s.Entries {
		if e.Phase() == v1alpha1.PhaseAccepted && (last.Payload == nil || e.Payload.CreationTimestamp.After(last.Payload.CreationTimestamp.Time)) {
			last = e
		}
	}
	return last, last.Payload != nil
}

// verdictConditions are the conditions that say each verdict; their transition is its time.
var verdictConditions = map[v1alpha1.PayloadPhase]string{
	v1alpha1.PhaseAccepted: v1alpha1.ConditionPayloadAccepted,
	v1alpha1.PhaseRejected: v1alpha1.ConditionPayloadRejected,
	v1alpha1.PhaseFailed:   v1alpha1.ConditionPayloadFailed,
}

// verdictTime is when the payload got its verdict phase: the transition of the condition
// that says it.
func verdictTime(p *v1alpha1.ReleasePayload, phase v1alpha1.PayloadPhase) (time.Time, bool) {
	c := meta.FindStatusCondition(p.Status.Conditions, verdictConditions[phase])
	if c == nil || c.Status != metav1.ConditionTrue || c.LastTransitionTime.IsZero() {
		return time.Time{}, false
	}
	return c.LastTransitionTime.Time, true
}

func verdictSeconds(p *v1alpha1.ReleasePayload, phase v1alpha1.PayloadPhase) (float64, bool) {
	t, ok := verdictTime(p, phase)
	if !ok || p.CreationTimestamp.IsZero() || t.Before(p.CreationTimestamp.Time) {
		return 0, false
	}
	return t.Sub(p.CreationTimestamp.Time).Seconds(), true
}

// verificationOutcome is a verification's end on one payload, remembered to find breaks.
type verificationOutcome struct {
	entry  Entry
	passed bool
}

// addVerifications adds one payload's verifications (as configured in its spec, judged
// from their recorded runs) to the tallies.
func addVerifications(tallies map[string]*VerificationHealth, lastEnded map[string]verificationOutcome, e Entry, phase v1alpha1.PayloadPhase) {
	for _, v := range e.Payload.Spec.PayloadVerificationConfig.Verifications {
		runs := recordedRuns(e.Payload, v.Name)
		state, _ := verdict.VerificationState(v, runs)
		if state != v1alpha1.JobSuccess && state != v1alpha1.JobFailure {
			continue
		}
		t := tallies[v.Name]
		if t == nil {
			t = &VerificationHealth{Name: v.Name, byComponent: map[string]int{}}
			tallies[v.Name] = t
		}
		t.Blocking = v.IsBlocking() // as the newest payload configures it
		t.Ended++
		failedRun := false
		for _, r := range runs {
			if !r.State.IsTerminal() {
				continue
			}
			t.Runs++
			if r.StartTime != nil && r.CompletionTime != nil && !r.CompletionTime.Before(r.StartTime) {
				t.durations = append(t.durations, r.CompletionTime.Sub(r.StartTime.Time).Seconds())
			}
			if r.State == v1alpha1.JobFailure || r.State == v1alpha1.JobUnknown {
				failedRun = true
				t.noteFailure(e, r)
			}
		}
		retried := v.Aggregation == nil && len(runs) > 1
		if retried {
			t.Retried++
		}
		passed := state == v1alpha1.JobSuccess
		switch {
		case passed:
			t.Passed++
			if failedRun {
				t.Flaky++
				if t.Blocking {
					t.Delayed++
				}
			}
		case t.Blocking && phase == v1alpha1.PhaseRejected:
			t.Rejected++
		}
		if prev, ok := lastEnded[v.Name]; ok && prev.passed && !passed {
			t.addBreak(prev.entry, e)
		}
		lastEnded[v.Name] = verificationOutcome{entry: e, passed: passed}
	}
}

// recordedRuns are the runs the payload's status records for a verification.
func recordedRuns(p *v1alpha1.ReleasePayload, name string) []v1alpha1.JobRun {
	for _, vs := range p.Status.Verifications {
		if vs.Name == name {
			return vs.Runs
		}
	}
	return nil
}

// noteFailure keeps the latest failed run (by completion, else by the payload's creation).
func (t *VerificationHealth) noteFailure(e Entry, r v1alpha1.JobRun) {
	at := e.Payload.CreationTimestamp.Time
	if r.CompletionTime != nil {
		at = r.CompletionTime.Time
	}
	if t.LastFailure != nil && at.Before(t.LastFailure.Time) {
		return
	}
	t.LastFailure = &FailedRun{Tag: e.Tag(), Run: r.Name, URL: r.URL, Message: r.Message, Time: at.UTC()}
}

// addBreak records that the verification passed on prev and failed on e.
func (t *VerificationHealth) addBreak(prev, e Entry) {
	changed := ChangedComponents(prev.Payload.Spec.Components, e.Payload.Spec.Components)
	for _, c := range changed {
		t.byComponent[c]++
	}
	t.Breaks = append(t.Breaks, Break{Tag: e.Tag(), Previous: prev.Tag(), Components: changed})
	if len(t.Breaks) > maxBreaks {
		t.Breaks = t.Breaks[1:] // the newest ones
	}
}

// ChangedComponents names the components whose image differs between two payloads, or that
// only one of them has, sorted.
func ChangedComponents(before, after []v1alpha1.PinnedComponent) []string {
	images := make(map[string]string, len(before))
	for _, c := range before {
		images[c.Name] = c.Image
	}
	changed := []string{}
	for _, c := range after {
		if img, ok := images[c.Name]; !ok || img != c.Image {
			changed = append(changed, c.Name)
		}
		delete(images, c.Name)
	}
	changed = append(changed, slices.Collect(maps.Keys(images))...)
	slices.Sort(changed)
	return changed
}

// finishVerifications computes the rates, durations and suspects, most harmful first.
func finishVerifications(tallies map[string]*VerificationHealth) []VerificationHealth {
	out := make([]VerificationHealth, 0, len(tallies))
	for _, t := range tallies {
		t.PassRate = rate(t.Passed, t.Ended)
		t.RetryRate = rate(t.Retried, t.Ended)
		t.Flakiness = rate(t.Flaky, t.Ended)
		t.Harm = t.Rejected + t.Delayed
		t.DurationP50, t.DurationP90 = Percentile(t.durations, 0.5), Percentile(t.durations, 0.9)
		for c, n := range t.byComponent {
			t.Suspects = append(t.Suspects, Suspect{Component: c, Breaks: n})
		}
		slices.SortFunc(t.Suspects, func(a, b Suspect) int {
			return cmp.Or(cmp.Compare(b.Breaks, a.Breaks), cmp.Compare(a.Component, b.Component))
		})
		slices.Reverse(t.Breaks) // newest first
		t.byComponent, t.durations = nil, nil
		out = append(out, *t)
	}
	slices.SortFunc(out, CompareHarm)
	return out
}

// CompareHarm orders verifications most harmful first: by harm, then by failures, then by
// name.
func CompareHarm(a, b VerificationHealth) int {
	return cmp.Or(cmp.Compare(b.Harm, a.Harm), cmp.Compare(b.Ended-b.Passed, a.Ended-a.Passed), cmp.Compare(a.Name, b.Name))
}

// longestDrought finds the longest time without a new acceptance in the window (oldest
// first): between two acceptances, from the window's start to the first, or from the last
// until now.
func longestDrought(window []Entry, now time.Time) *Drought {
	cur := Drought{From: window[0].Payload.CreationTimestamp.UTC()}
	var best *Drought
	end := func(d Drought) {
		d.Seconds = d.To.Sub(d.From).Seconds()
		if best == nil || d.Seconds > best.Seconds {
			best = &d
		}
	}
	for _, e := range window {
		if e.Phase() != v1alpha1.PhaseAccepted {
			cur.Payloads++
			continue
		}
		at, ok := verdictTime(e.Payload, v1alpha1.PhaseAccepted)
		if !ok {
			at = e.Payload.CreationTimestamp.Time
		}
		at = at.UTC()
		if at.Before(cur.From) {
			at = cur.From // accepted before the one before it: no drought in between
		}
		cur.Until, cur.To = e.Tag(), at
		end(cur)
		cur = Drought{After: e.Tag(), From: at}
	}
	cur.To, cur.Ongoing = now.UTC(), true
	if cur.To.Before(cur.From) {
		cur.To = cur.From
	}
	end(cur)
	return best
}

// rate is n of total as a share; 0 when total is 0.
func rate(n, total int) float64 {
	if total == 0 {
		return 0
	}
	return float64(n) / float64(total)
}

// Percentile is the nearest-rank percentile q (0 < q ≤ 1) of values, 0 for none. It sorts
// values.
func Percentile(values []float64, q float64) float64 {
	if len(values) == 0 {
		return 0
	}
	slices.Sort(values)
	rank := int(math.Ceil(q * float64(len(values))))
	return values[min(max(rank, 1), len(values))-1]
}
