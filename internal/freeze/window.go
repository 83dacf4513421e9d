package freeze

import (
	"fmt"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/release-controller/release-controller/api/v1alpha1"
)

// State is where a freeze's window stands at a moment.
type State struct {
	// Active: the moment is inside a window.
	Active bool
	// Since is when the current window began; when inactive, when the last one began, if
	// known (a one-shot freeze that ended; zero for a schedule).
	Since time.Time
	// Until is when the current window ends (zero while active: no end, a stop-the-line);
	// when inactive, when the last one ended, if known.
	Until time.Time
	// Next is when the next window begins (zero: none is due). While active, the first
	// window that begins after Until.
	Next time.Time
}

// maxWindows bounds the windows of a schedule one call looks at: a cron that starts a window
// every minute for a 63h duration has 3,780 of them open at once. Past it the spec is refused
// rather than the controllers slowed.
const maxWindows = 10000

// zoneMargin widens the search for the windows open at a moment beyond the duration: a window
// counted on the zone's clock lasts up to this much longer in real time across a clock change.
const zoneMargin = 3 * time.Hour

var cronParser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// schedule is a parsed FreezeSchedule.
type schedule struct {
	spec     *cron.SpecSchedule
	loc      *time.Location
	duration time.Duration
}

// parseSchedule reads s; its error names the field that cannot be read.
func parseSchedule(s *v1alpha1.FreezeSchedule) (schedule, error) {
	zone := s.TimeZone
	if zone == "" {
		zone = "UTC"
	}
	loc, err := time.LoadLocation(zone)
	if err != nil {
		return schedule{}, fmt.Errorf("spec.schedule.timeZone: unknown time zone %q", s.TimeZone)
	}
	expr := strings.TrimSpace(s.Cron)
	if strings.HasPrefix(expr, "TZ=") || strings.HasPrefix(expr, "CRON_TZ=") {
		return schedule{}, fmt.Errorf("spec.schedule.cron: %q names a time zone: set it in spec.schedule.timeZone", s.Cron)
	}
	parsed, err := cronParser.Parse(expr)
	if err != nil {
		return schedule{}, fmt.Errorf("spec.schedule.cron: %q: %w (five fields: minute hour day-of-month month day-of-week)", s.Cron, err)
	}
	spec, ok := parsed.(*cron.SpecSchedule)
	if !ok {
		// @every: a delay from whenever it is asked, not a time of the calendar.
		return schedule{}, fmt.Errorf("spec.schedule.cron: %q is no calendar schedule: give minute hour day-of-month month day-of-week", s.Cron)
	}
	spec.Location = loc
	if s.Duration.Duration <= 0 {
		return schedule{}, fmt.Errorf("spec.schedule.duration: %s is not a positive duration", s.Duration.Duration)
	}
	return schedule{spec: spec, loc: loc, duration: s.Duration.Duration}, nil
}

// end is when the window starting at start ends: its duration counted on the zone's clock.
func (s schedule) end(start time.Time) time.Time {
	l := start.In(s.loc)
	return time.Date(l.Year(), l.Month(), l.Day(), l.Hour(), l.Minute(), l.Second(), l.Nanosecond()+int(s.duration), s.loc)
}

// next is the first start after t; zero when none comes within five years (robfig/cron's
// horizon: a cron of February 30th).
func (s schedule) next(t time.Time) time.Time {
	return s.spec.Next(t)
}

var errTooManyWindows = fmt.Errorf("spec.schedule: more than %d windows open at once: the cron starts windows too often for the duration", maxWindows)

// at is where the schedule stands at now. Windows that overlap or touch are one: the freeze
// is active from the first one's start to the last one's end.
func (s schedule) at(now time.Time) (State, error) {
	// The windows open at now began in (now - duration - margin, now]: take the first whose
	// end is after now.
	n := 0
	start := s.next(now.Add(-s.duration - zoneMargin))
	for !start.IsZero() && !start.After(now) && !s.end(start).After(now) {
		if n++; n > maxWindows {
			return State{}, errTooManyWindows
		}
		start = s.next(start)
	}
	if start.IsZero() {
		return State{}, nil
	}
	if start.After(now) {
		return State{Next: start}, nil
	}
	st := State{Active: true, Since: start, Until: s.end(start)}
	// The windows that begin before this one ends continue it.
	for next := s.next(start); !next.IsZero() && !next.After(st.Until); next = s.next(next) {
		if n++; n > maxWindows {
			return State{}, errTooManyWindows
		}
		if e := s.end(next); e.After(st.Until) {
			st.Until = e
		}
	}
	st.Next = s.next(st.Until)
	return st, nil
}

// Window is where the freeze with spec, created at created, stands at now. A freeze without
// a schedule runs from spec.start (else its creation) to spec.end (else until it is ended);
// a schedule opens a window at each time its cron gives in its time zone. Its error names
// the field that cannot be read (spec.schedule.timeZone, spec.schedule.cron). It is pure.
func Window(spec v1alpha1.ReleaseFreezeSpec, created, now time.Time) (State, error) {
	if spec.Schedule != nil {
		s, err := parseSchedule(spec.Schedule)
		if err != nil {
			return State{}, err
		}
		return s.at(now)
	}
	start := created
	if spec.Start != nil {
		start = spec.Start.Time
	}
	var end time.Time
	if spec.End != nil {
		end = spec.End.Time
	}
	switch {
	case now.Before(start):
		return State{Next: start}, nil
	case end.IsZero() || now.Before(end):
		return State{Active: true, Since: start, Until: end}, nil
	}
	return State{Since: start, Until: end}, nil
}

// Selector is the selector of the pipelines the freeze covers (everything when spec.pipelines
// is absent); its error names the field.
func Selector(spec v1alpha1.ReleaseFreezeSpec) (labels.Selector, error) {
	if spec.Pipelines == nil {
		return labels.Everything(), nil
	}
	sel, err := metav1.LabelSelectorAsSelector(spec.Pipelines)
	if err != nil {
		return nil, fmt.Errorf("spec.pipelines: %w", err)
	}
	return sel, nil
}
