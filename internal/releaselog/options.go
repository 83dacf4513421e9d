// Package releaselog keeps the release log: one ReleaseLog object per UTC day, an in-memory
// store the readers use, a writer that adds entries safely under concurrency, and the
// controllers that expire old days, keep the store in step and log accepted and rejected
// payloads.
package releaselog

import (
	"time"

	"k8s.io/utils/clock"

	"github.com/release-controller/release-controller/api/v1alpha1"
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
	// DefaultMaxEntriesPerDay is how many entries a day holds by default. A verdict's entry
	// is about 395 bytes of JSON with its seal, so a full day of them is about 1.38 MB: inside
	// DefaultMaxDayBytes, and 500 entries short of the ~4,000 at which the object would reach
	// etcd's 1.5 MiB request limit. A day whose entries carry long messages (up to 1,024
	// characters, about 1.4 KB an entry) reaches DefaultMaxDayBytes first, near 1,000 entries.
	DefaultMaxEntriesPerDay = 3500
	// DefaultMaxDayBytes bounds the serialized size of a day's object: 1.375 MiB, 128 KiB
	// below etcd's default request limit (1.5 MiB), for what the writer's estimate leaves out
	// (the managedFields the API server adds and the cache drops, a few hundred bytes) and for
	// the request around the object. (It was 1.25 MiB before entries carried a seal, 32 bytes
	// an entry.)
	DefaultMaxDayBytes = 1408 * 1024
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
	// MaxEntriesPerDay is the most entries a day holds; adds beyond it are refused with
	// ErrDayFull. Zero means DefaultMaxEntriesPerDay; more than v1alpha1.MaxReleaseLogEntries
	// (the schema's limit) means that limit.
	MaxEntriesPerDay int
	// MaxDayBytes bounds the serialized size of a day's object, so that a day of long entries
	// stays below etcd's request limit too; adds beyond it are refused with ErrDayFull. Zero
	// means DefaultMaxDayBytes.
	MaxDayBytes int
	// Types are the entry types writers may use, with their colours; empty allows every type.
	// The controller's own entries (release, rejected) are written whatever the list says.
	Types []TypeConfig
	// Clock tells the time; nil is the real clock (tests inject a fake one).
	Clock clock.PassiveClock
	// Store receives the projection of the log. Set it to read the log (the API server's
	// handlers do); nil gives the controllers a store of their own.
	Store *Store
	// SealKey is the release log key (EnsureKey): writers seal their entries with it, and
	// readers show an entry as verified only when its seal checks out. Without it nothing is
	// sealed and every entry shows as written directly.
	SealKey []byte
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
	if o.MaxEntriesPerDay <= 0 {
		o.MaxEntriesPerDay = DefaultMaxEntriesPerDay
	}
	o.MaxEntriesPerDay = min(o.MaxEntriesPerDay, v1alpha1.MaxReleaseLogEntries)
	if o.MaxDayBytes <= 0 {
		o.MaxDayBytes = DefaultMaxDayBytes
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	return o
}
