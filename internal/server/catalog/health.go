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
// days before Now, at most the newest Payloads of them. Now is the caller's clock's.
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
	// lastEnded is the index in the window of the payload it last ended on (-1: none yet),
	// lastPassed whether it passed there: a failure after a pass is a break.
	lastEnded  int
	lastPassed bool
	// failure is the check with the latest failed run so far, on the payload failureIn.
	failure   *checkFacts
	failureIn int
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

	verdictTimes := make([]float64, 0, len(window))
	var day *HealthDay
	var dayTimes []float64
	closeDay := func() {
		if day != nil {
			day.AcceptanceRate = rate(day.Accepted, day.Verdicts)
			day.VerdictP50, day.VerdictP90 = Percentile(dayTimes, 0.5), Percentile(dayTimes, 0.9)
			h.Days = append(h.Days, *day)
		}
	}
	verifications := &tallies{byName: map[string]*VerificationHealth{}}
	dayEnd := time.Time{} // the end of day's UTC day
	for i, e := range window {
		if created := e.Payload.CreationTimestamp.UTC(); day == nil || !created.Before(dayEnd) {
			closeDay()
			start := created.Truncate(24 * time.Hour)
			day, dayTimes, dayEnd = &HealthDay{Day: start.Format(time.DateOnly)}, nil, start.Add(24*time.Hour)
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
		f := e.healthFacts()
		if verdict.IsVerdict(phase) {
			h.Verdicts++
			day.Verdicts++
			if f.verdictSeconds >= 0 {
				verdictTimes = append(verdictTimes, f.verdictSeconds)
				dayTimes = append(dayTimes, f.verdictSeconds)
			}
		}
		addVerifications(verifications, window, i, f, phase)
	}
	closeDay()
	h.AcceptanceRate = rate(h.Accepted, h.Verdicts)
	h.VerdictP50, h.VerdictP90 = Percentile(verdictTimes, 0.5), Percentile(verdictTimes, 0.9)
	h.LongestDrought = longestDrought(window, w.Now)
	for _, t := range verifications.byName {
		if c := t.failure; c != nil {
			r := c.lastFailure
			t.LastFailure = &FailedRun{Tag: window[t.failureIn].Tag(), Run: r.Name, URL: r.URL, Message: r.Message, Time: c.lastFailureAt}
		}
	}
	h.Verifications = finishVerifications(verifications.byName)
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
	return w
}

// window returns the payloads the window covers, oldest first (by creation, then tag).
func (s *Stream) window(w HealthWindow) []Entry {
	since := w.Now.Add(-time.Duration(w.Days) * 24 * time.Hour)
	out := make([]Entry, 0, len(s.Entries))
	// Entries are newest first, and their tags usually go with their creation: taken
	// from the end they are mostly in order already, which the sort then costs little.
	for _, e := range slices.Backward(s.Entries) {
		if !e.Payload.CreationTimestamp.Time.Before(since) {
			out = append(out, e)
		}
	}
	slices.SortStableFunc(out, func(a, b Entry) int {
		return a.Payload.CreationTimestamp.Compare(b.Payload.CreationTimestamp.Time)
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

// healthFacts are what the health report needs of one payload, found once when the catalog
// takes the payload in: a report over thousands of payloads then reads these compact values
// instead of judging every verification again.
type healthFacts struct {
	// verdictSeconds is the time from creation to the verdict; -1 when it is not known.
	verdictSeconds float64
	// acceptedAt is when an accepted payload got its verdict (its creation when that is
	// not known).
	acceptedAt time.Time
	// checks are the verifications that ended (Success or Failure), as configured in the
	// payload's spec and judged from their recorded runs.
	checks []checkFacts
	// durations are the run times of every check's ended runs, in seconds.
	durations []float64
}

// checkFacts is one verification that ended on a payload.
type checkFacts struct {
	name                                 string
	blocking, passed, retried, failedRun bool
	// runs counts its ended runs; their durations are durations[durFrom:durTo].
	runs           int
	durFrom, durTo int
	// lastFailure is its latest failed run, nil when none failed.
	lastFailure   *v1alpha1.JobRun
	lastFailureAt time.Time
}

// factsOf finds the health facts of a payload in phase.
func factsOf(p *v1alpha1.ReleasePayload, phase v1alpha1.PayloadPhase) *healthFacts {
	f := &healthFacts{verdictSeconds: -1}
	if verdict.IsVerdict(phase) {
		if t, ok := verdictTime(p, phase); ok && !p.CreationTimestamp.IsZero() && !t.Before(p.CreationTimestamp.Time) {
			f.verdictSeconds = t.Sub(p.CreationTimestamp.Time).Seconds()
		}
	}
	if phase == v1alpha1.PhaseAccepted {
		f.acceptedAt = p.CreationTimestamp.UTC()
		if t, ok := verdictTime(p, phase); ok {
			f.acceptedAt = t.UTC()
		}
	}
	for _, v := range p.Spec.PayloadVerificationConfig.Verifications {
		runs := recordedRuns(p, v.Name)
		state := verdict.StateOf(v, runs)
		if state != v1alpha1.JobSuccess && state != v1alpha1.JobFailure {
			continue
		}
		c := checkFacts{name: v.Name, blocking: v.IsBlocking(), passed: state == v1alpha1.JobSuccess,
			retried: v.Aggregation == nil && len(runs) > 1, durFrom: len(f.durations)}
		for i := range runs {
			r := &runs[i]
			if !r.State.IsTerminal() {
				continue
			}
			c.runs++
			if r.StartTime != nil && r.CompletionTime != nil && !r.CompletionTime.Before(r.StartTime) {
				f.durations = append(f.durations, r.CompletionTime.Sub(r.StartTime.Time).Seconds())
			}
			if r.State == v1alpha1.JobFailure || r.State == v1alpha1.JobUnknown {
				c.failedRun = true
				at := p.CreationTimestamp.Time
				if r.CompletionTime != nil {
					at = r.CompletionTime.Time
				}
				if c.lastFailure == nil || !at.Before(c.lastFailureAt) {
					c.lastFailure, c.lastFailureAt = r, at.UTC()
				}
			}
		}
		c.durTo = len(f.durations)
		f.checks = append(f.checks, c)
	}
	return f
}

// healthFacts are the entry's facts, found now for an entry made without them.
func (e Entry) healthFacts() *healthFacts {
	if e.facts != nil {
		return e.facts
	}
	return factsOf(e.Payload, e.Phase())
}

// tallies are the verifications' records being added up. Payloads mostly list the same
// verifications in the same order, so the record of a payload's j-th check is looked for
// at slot j first, and in the map only when that is another verification's.
type tallies struct {
	byName map[string]*VerificationHealth
	slots  []*VerificationHealth
}

func (ts *tallies) of(j int, name string, payloads int) *VerificationHealth {
	if j < len(ts.slots) && ts.slots[j].Name == name {
		return ts.slots[j]
	}
	t := ts.byName[name]
	if t == nil {
		// Room for a run of each payload: most have one.
		t = &VerificationHealth{Name: name, byComponent: map[string]int{}, lastEnded: -1, durations: make([]float64, 0, payloads)}
		ts.byName[name] = t
	}
	if j < len(ts.slots) {
		ts.slots[j] = t
	} else {
		ts.slots = append(ts.slots, t)
	}
	return t
}

// addVerifications adds the ended verifications of window[i] to the tallies.
func addVerifications(ts *tallies, window []Entry, i int, f *healthFacts, phase v1alpha1.PayloadPhase) {
	for j, c := range f.checks {
		t := ts.of(j, c.name, len(window))
		t.Blocking = c.blocking // as the newest payload configures it
		t.Ended++
		t.Runs += c.runs
		t.durations = append(t.durations, f.durations[c.durFrom:c.durTo]...)
		if c.lastFailure != nil && (t.failure == nil || !c.lastFailureAt.Before(t.failure.lastFailureAt)) {
			t.failure, t.failureIn = &f.checks[j], i
		}
		if c.retried {
			t.Retried++
		}
		switch {
		case c.passed:
			t.Passed++
			if c.failedRun {
				t.Flaky++
				if c.blocking {
					t.Delayed++
				}
			}
		case c.blocking && phase == v1alpha1.PhaseRejected:
			t.Rejected++
		}
		if t.lastEnded >= 0 && t.lastPassed && !c.passed {
			t.addBreak(window[t.lastEnded], window[i])
		}
		t.lastEnded, t.lastPassed = i, c.passed
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
	// Payloads of a stream list their components in the same order: compare them pairwise
	// then, without a map.
	if len(before) == len(after) {
		changed, same := []string{}, true
		for i := range after {
			if before[i].Name != after[i].Name {
				same = false
				break
			}
			if before[i].Image != after[i].Image {
				changed = append(changed, after[i].Name)
			}
		}
		if same {
			slices.Sort(changed)
			return changed
		}
	}
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
		t.byComponent, t.durations, t.lastEnded, t.lastPassed, t.failure, t.failureIn = nil, nil, 0, false, nil, 0
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
	best, found := Drought{}, false
	end := func(d Drought) {
		d.Seconds = d.To.Sub(d.From).Seconds()
		if !found || d.Seconds > best.Seconds {
			best, found = d, true
		}
	}
	for _, e := range window {
		if e.Phase() != v1alpha1.PhaseAccepted {
			cur.Payloads++
			continue
		}
		at := e.healthFacts().acceptedAt
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
	return &best
}

// rate is n of total as a share; 0 when total is 0.
func rate(n, total int) float64 {
	if total == 0 {
		return 0
	}
	return float64(n) / float64(total)
}

// Percentile is the nearest-rank percentile q (0 < q ≤ 1) of values, 0 for none. It
// reorders values: it selects the value in place (quickselect), which costs less than
// sorting the tens of thousands of run times of a large window.
func Percentile(values []float64, q float64) float64 {
	if len(values) == 0 {
		return 0
	}
	k := min(max(int(math.Ceil(q*float64(len(values)))), 1), len(values)) - 1
	lo, hi := 0, len(values)-1
	for lo < hi {
		// Hoare partition around the median of three.
		mid := lo + (hi-lo)/2
		pivot := median3(values[lo], values[mid], values[hi])
		i, j := lo, hi
		for i <= j {
			for values[i] < pivot {
				i++
			}
			for values[j] > pivot {
				j--
			}
			if i <= j {
				values[i], values[j] = values[j], values[i]
				i++
				j--
			}
		}
		switch {
		case k <= j:
			hi = j
		case k >= i:
			lo = i
		default:
			return values[k]
		}
	}
	return values[k]
}

func median3(a, b, c float64) float64 {
	return max(min(a, b), min(max(a, b), c))
}
