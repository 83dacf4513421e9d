package releaselog

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/release-controller/release-controller/api/v1alpha1"
)

// Entry is one release event, as readers and writers of the log see it.
type Entry struct {
	// ID, when set, makes adding the entry idempotent within its day.
	ID string
	// Type, e.g. release, rejected, promotion, hotfix, freeze, approval, rejection.
	Type string
	// Version the event is about.
	Version string
	// Origin is the system that recorded the event.
	Origin string
	// Date is when the event happened (UTC, whole seconds once stored); zero means now
	// when the entry is added.
	Date time.Time
	// Author, Message and Link are optional. Author is who wrote the entry (through the API:
	// the authenticated caller).
	Author  string
	Message string
	Link    string
	// ReportedAuthor is the author the writer named when it was not itself: display text,
	// not verified.
	ReportedAuthor string
	// Verified says the entry carries a valid seal (Seal): the controller or AddRelease wrote
	// it, and its author is who wrote it. An entry that is not verified was written directly
	// into a ReleaseLog object, by anyone RBAC let, and its author is only what they claimed.
	// Readers fill it; writers ignore it.
	Verified bool
}

// TypeConfig is one configured entry type and the colour it is shown in.
type TypeConfig struct {
	Name string
	// Color is a CSS colour, e.g. green or #2e7d32.
	Color string
}

// The types of the entries the controller writes itself.
const (
	TypeRelease  = "release"
	TypeRejected = "rejected"
)

// DefaultTypes are the usual entry types and their colours, for configurations that want an
// allowlist without writing one.
func DefaultTypes() []TypeConfig {
	return []TypeConfig{
		{Name: TypeRelease, Color: "green"},
		{Name: TypeRejected, Color: "red"},
		{Name: TypePromotion, Color: "blue"},
		{Name: "hotfix", Color: "orange"},
		{Name: TypeFreeze, Color: "purple"},
		{Name: TypeApproval, Color: "teal"},
		{Name: TypeRejection, Color: "crimson"},
	}
}

// EntryFromAPI is the entry of an object's entry, not verified.
func EntryFromAPI(e *v1alpha1.ReleaseLogEntry) Entry {
	return Entry{
		ID: e.ID, Type: e.Type, Version: e.Version, Origin: e.Origin, Date: e.Date.UTC(),
		Author: e.Author, Message: e.Message, Link: e.Link, ReportedAuthor: e.ReportedAuthor,
	}
}

// EntriesOf returns the entries of a ReleaseLog of day, each verified when its seal is the
// one key gives it.
func EntriesOf(l *v1alpha1.ReleaseLog, day string, key []byte) []Entry {
	entries := make([]Entry, len(l.Spec.Entries))
	for i := range l.Spec.Entries {
		entries[i] = EntryFromAPI(&l.Spec.Entries[i])
		entries[i].Verified = Sealed(key, l.Namespace, day, l.Spec.Entries[i])
	}
	return entries
}

// ShownAuthor is the author as readers show it: an entry written directly says so, so that it
// cannot pass for the controller's or another writer's.
func (e Entry) ShownAuthor() string {
	switch {
	case e.Verified:
		return e.Author
	case e.Author == "":
		return "unverified"
	}
	return UnverifiedPrefix + e.Author
}

// UnverifiedPrefix starts the author of an entry that was written directly, as readers show it.
const UnverifiedPrefix = "unverified: "

func (e Entry) toAPI() v1alpha1.ReleaseLogEntry {
	return v1alpha1.ReleaseLogEntry{
		ID: e.ID, Type: e.Type, Version: e.Version, Origin: e.Origin, Date: metav1.NewTime(e.Date),
		Author: e.Author, Message: e.Message, Link: e.Link, ReportedAuthor: e.ReportedAuthor,
	}
}

// equal compares two entries, dates by instant.
func (e Entry) equal(o Entry) bool {
	return e.ID == o.ID && e.Type == o.Type && e.Version == o.Version && e.Origin == o.Origin &&
		e.Date.Equal(o.Date) && e.Author == o.Author && e.Message == o.Message && e.Link == o.Link &&
		e.ReportedAuthor == o.ReportedAuthor && e.Verified == o.Verified
}
