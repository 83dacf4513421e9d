package audit

import (
	"testing"
	"time"

	"golang.org/x/time/rate"
)

// The audits' rate limit is a decision at a time: take a token, or come back when there is
// one; waiting gives the token back, so that waiting payloads do not use up the budget.
func TestAdmit(t *testing.T) {
	start := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	at := func(d time.Duration) time.Time { return start.Add(d) }
	// DefaultBurst per DefaultInterval: a token every 400ms, five at once.
	l := rate.NewLimiter(rate.Every(DefaultInterval/DefaultBurst), DefaultBurst)
	steps := []struct {
		name string
		now  time.Time
		want time.Duration
	}{
		{"1st of the burst", at(0), 0},
		{"2nd", at(0), 0},
		{"3rd", at(0), 0},
		{"4th", at(0), 0},
		{"5th", at(0), 0},
		{"6th waits for the next token", at(0), 400 * time.Millisecond},
		{"waiting took no token: the same wait", at(0), 400 * time.Millisecond},
		{"later, a shorter wait", at(300 * time.Millisecond), 100 * time.Millisecond},
		{"the token is there", at(400 * time.Millisecond), 0},
		{"the next one is 400ms away", at(400 * time.Millisecond), 400 * time.Millisecond},
		{"after a quiet while the burst is back", at(10 * time.Second), 0},
	}
	for _, s := range steps {
		if got := admit(l, s.now); got != s.want {
			t.Fatalf("%s: admit at +%v = %v, want %v", s.name, s.now.Sub(start), got, s.want)
		}
	}
}
