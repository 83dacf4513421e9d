package demo

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"time"
)

// RunBuildSystem is the simulated build system: every interval, starting one interval from
// now, it bumps a random component; about one build in five breaks e2e and one in ten has
// one platform only, which the next build fixes. It prints a line per build to log and
// returns when ctx is done.
// A non-positive interval builds nothing.
func RunBuildSystem(ctx context.Context, opts Options, interval time.Duration, log io.Writer) {
	if interval <= 0 {
		fmt.Fprintln(log, "demo build system: off (no interval)")
		return
	}
	rng := rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	timer := time.NewTimer(interval)
	defer timer.Stop()
	var lacking string // the component last built without a platform, until it is built again
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		}
		component, breakage := pickBuild(rng, lacking)
		b, err := Bump(ctx, opts, component, breakage)
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			fmt.Fprintf(log, "demo build system: building %s failed: %v\n", component, err)
		default:
			fmt.Fprintf(log, "demo build system: %s %.7s %q%s -> %s\n", b.Component, b.Commit, b.Message, describe(breakage), b.Image)
			lacking = ""
			if breakage == MissingPlatform {
				lacking = component
			}
		}
		// The next build is an interval after this one ended, so slow builds never pile up.
		timer.Reset(interval)
	}
}

// pickBuild chooses the next build: a random component, breaking e2e 2 times in 10 and
// built without one of its platforms 1 time in 10. A component built without a platform
// (lacking) is built again next, for every platform, as a team fixes a broken build: the
// stream makes no payload while one of its components lacks a platform, and with a random
// pick the demo would show none for four builds (12 minutes) on average.
func pickBuild(rng *rand.Rand, lacking string) (string, Breakage) {
	if lacking != "" {
		return lacking, NoBreakage
	}
	component := Components[rng.IntN(len(Components))]
	switch roll := rng.IntN(10); {
	case roll < 2:
		return component, BreakE2E
	case roll == 2:
		return component, MissingPlatform
	default:
		return component, NoBreakage
	}
}

func describe(b Breakage) string {
	switch b {
	case BreakE2E:
		return " (breaks e2e)"
	case MissingPlatform:
		return " (built for " + Platforms[0] + " only)"
	}
	return ""
}
