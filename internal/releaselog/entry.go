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
	// Type, e.g. release, rejected, promotion, hotfix.
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
		{Name: "promotion", Color: "blue"},
		{Name: "hotfix", Color: "orange"},
	}
}

// EntryFromAPI is the entry of an object's entry.
func EntryFromAPI(e *v1alpha1.ReleaseLogEntry) Entry {
	return Entry{
		ID: e.ID, Type: e.Type, Version: e.Version, Origin: e.Origin, Date: e.Date.UTC(),
		Author: e.Author, Message: e.Message, Link: e.Link, ReportedAuthor: e.ReportedAuthor,
	}
}

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
		e.ReportedAuthor == o.ReportedAuthor
}
