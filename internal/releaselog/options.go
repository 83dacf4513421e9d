// Package releaselog keeps the release log: one ReleaseLog object per UTC day, an in-memory
// store the readers use, a writer that adds entries safely under concurrency, and the
// controllers that expire old days, keep the store in step and log accepted and rejected
// payloads.
package releaselog

import (
	"time"

	"k8s.io/utils/clock"
)

// Defaults of Options.
const (
	// DefaultNamespace holds the log when neither Options.Namespace nor the manager's
	// namespace says otherwise.
	DefaultNamespace = "release-controller"
	// DefaultTTL is how long a day is kept.
	DefaultTTL = 30 * 24 * time.Hour
	// DefaultFutureSkew is how far in the future an entry may be dated, for writers whose
	// clocks run a little ahead.
	DefaultFutureSkew = 5 * time.Minute
)

// Options configure the release log.
type Options struct {
	// Namespace holds the ReleaseLog objects (it must exist). Empty means the namespace the
	// manager is restricted to, or DefaultNamespace when it watches every namespace.
	Namespace string
	// TTL is how long a day is kept, counted from the day's start; zero means DefaultTTL.
	TTL time.Duration
	// FutureSkew is how far past now an entry may be dated; zero means DefaultFutureSkew.
	FutureSkew time.Duration
	// Types are the entry types writers may use, with their colours; empty allows every type.
	// The controller's own entries (release, rejected) are written whatever the list says.
	Types []TypeConfig
	// Clock tells the time; nil is the real clock (tests inject a fake one).
	Clock clock.PassiveClock
	// Store receives the projection of the log. Set it to read the log (the API server's
	// handlers do); nil gives the controllers a store of their own.
	Store *Store
}

// WithDefaults fills the unset options; managerNamespace is the namespace the manager is
// restricted to, empty when it watches all.
func (o Options) WithDefaults(managerNamespace string) Options {
	if o.Namespace == "" {
		o.Namespace = managerNamespace
	}
	if o.Namespace == "" {
		o.Namespace = DefaultNamespace
	}
	if o.TTL <= 0 {
		o.TTL = DefaultTTL
	}
	if o.FutureSkew <= 0 {
		o.FutureSkew = DefaultFutureSkew
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	return o
}
