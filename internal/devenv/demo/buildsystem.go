package demo

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"time"
)

// RunBuildSystem is the simulated build system: every interval, starting one interval from
// now, it bumps a random component; about one build in five breaks e2e, one in ten has one
// platform only and one in ten breaks the smoke check of the pipeline's dev environment, the
// last two fixed by the next build. It prints a line per build to log and returns when ctx is
// done.
// A non-positive interval builds nothing.
func RunBuildSystem(ctx context.Context, opts Options, interval time.Duration, log io.Writer) {
	if interval <= 0 {
		fmt.Fprintln(log, "demo build system: off (no interval)")
		return
	}
	rng := rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	timer := time.NewTimer(interval)
	defer timer.Stop()
	var repair string // the component last built without a platform or breaking smoke, until it is built again
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		}
		component, breakage := pickBuild(rng, repair)
		b, err := Bump(ctx, opts, component, breakage)
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			fmt.Fprintf(log, "demo build system: building %s failed: %v\n", component, err)
		default:
			fmt.Fprintf(log, "demo build system: %s %.7s %q%s -> %s\n", b.Component, b.Commit, b.Message, describe(breakage), b.Image)
			repair = ""
			if breakage == MissingPlatform || breakage == BreakSmoke {
				repair = component
			}
		}
		// The next build is an interval after this one ended, so slow builds never pile up.
		timer.Reset(interval)
	}
}

// pickBuild chooses the next build: a random component, breaking e2e 2 times in 10, built
// without one of its platforms 1 time in 10 and breaking smoke 1 time in 10. A component built
// without a platform or breaking smoke (repair) is built again next, whole, as a team fixes a
// broken build: the stream makes no payload while one of its components lacks a platform, and
// every payload holding the smoke breakage is rolled back in dev; with a random pick either
// would last four builds (12 minutes) on average.
func pickBuild(rng *rand.Rand, repair string) (string, Breakage) {
	if repair != "" {
		return repair, NoBreakage
	}
	component := Components[rng.IntN(len(Components))]
	switch roll := rng.IntN(10); {
	case roll < 2:
		return component, BreakE2E
	case roll == 2:
		return component, MissingPlatform
	case roll == 3:
		return component, BreakSmoke
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
	case BreakSmoke:
		return " (breaks smoke in dev)"
	}
	return ""
}
