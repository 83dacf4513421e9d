package releaselog_test

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/releaselog"
)

func TestSeal(t *testing.T) {
	key := bytes.Repeat([]byte{7}, releaselog.MinKeyBytes)
	otherKey := bytes.Repeat([]byte{8}, releaselog.MinKeyBytes)
	entry := v1alpha1.ReleaseLogEntry{
		ID: "uid/Accepted/1", Type: "release", Version: "4.18.2", Origin: "release-controller", Author: "release-controller",
		Date: metav1.NewTime(at("2026-11-22T15:00:00Z")), Message: "Accepted", Link: "/namespaces/ocp/releasestream/4.18/release/4.18.2",
	}
	sealed := entry
	sealed.Seal = releaselog.Seal(key, "ns", "2026-11-22", entry)
	if len(sealed.Seal) != 22 {
		t.Fatalf("seal %q: want 22 characters (16 bytes, base64url)", sealed.Seal)
	}
	changed := func(change func(e *v1alpha1.ReleaseLogEntry)) v1alpha1.ReleaseLogEntry {
		e := sealed
		change(&e)
		return e
	}
	tests := []struct {
		name          string
		key           []byte
		namespace     string
		day           string
		entry         v1alpha1.ReleaseLogEntry
		want          bool
		wantSealEmpty bool
	}{
		{name: "sealed by the writer", key: key, namespace: "ns", day: "2026-11-22", entry: sealed, want: true},
		{name: "read back from the API server (JSON)", key: key, namespace: "ns", day: "2026-11-22", entry: roundTrip(t, sealed), want: true},
		{name: "written directly: no seal", key: key, namespace: "ns", day: "2026-11-22", entry: entry},
		{name: "another author", key: key, namespace: "ns", day: "2026-11-22", entry: changed(func(e *v1alpha1.ReleaseLogEntry) { e.Author = "mallory" })},
		{name: "another message", key: key, namespace: "ns", day: "2026-11-22", entry: changed(func(e *v1alpha1.ReleaseLogEntry) { e.Message = "Rejected" })},
		{name: "a reported author added", key: key, namespace: "ns", day: "2026-11-22", entry: changed(func(e *v1alpha1.ReleaseLogEntry) { e.ReportedAuthor = "x" })},
		{name: "another time", key: key, namespace: "ns", day: "2026-11-22", entry: changed(func(e *v1alpha1.ReleaseLogEntry) { e.Date = metav1.NewTime(at("2026-11-22T15:00:01Z")) })},
		{name: "copied to another day", key: key, namespace: "ns", day: "2026-11-23", entry: sealed},
		{name: "copied to another namespace", key: key, namespace: "other", day: "2026-11-22", entry: sealed},
		{name: "another key", key: otherKey, namespace: "ns", day: "2026-11-22", entry: sealed},
		{name: "no key: nothing is sealed", namespace: "ns", day: "2026-11-22", entry: sealed, wantSealEmpty: true},
		{name: "a longer seal", key: key, namespace: "ns", day: "2026-11-22", entry: changed(func(e *v1alpha1.ReleaseLogEntry) { e.Seal += "AA" })},
		{name: "a seal that is not base64url", key: key, namespace: "ns", day: "2026-11-22", entry: changed(func(e *v1alpha1.ReleaseLogEntry) { e.Seal = "not a seal!" })},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := releaselog.Sealed(tt.key, tt.namespace, tt.day, tt.entry); got != tt.want {
				t.Errorf("Sealed = %v, want %v", got, tt.want)
			}
			if got := releaselog.Seal(tt.key, tt.namespace, tt.day, tt.entry); (got == "") != tt.wantSealEmpty {
				t.Errorf("Seal = %q", got)
			}
		})
	}
}

// roundTrip is e as the API server gives it back: through JSON.
func roundTrip(t *testing.T, e v1alpha1.ReleaseLogEntry) v1alpha1.ReleaseLogEntry {
	t.Helper()
	data, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	var back v1alpha1.ReleaseLogEntry
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	return back
}

func TestShownAuthor(t *testing.T) {
	for _, tt := range []struct {
		entry releaselog.Entry
		want  string
	}{
		{releaselog.Entry{Author: "release-controller", Verified: true}, "release-controller"},
		{releaselog.Entry{Author: "release-controller"}, "unverified: release-controller"},
		{releaselog.Entry{}, "unverified"},
	} {
		if got := tt.entry.ShownAuthor(); got != tt.want {
			t.Errorf("%+v: %q, want %q", tt.entry, got, tt.want)
		}
	}
}

// at parses an RFC 3339 time.
func at(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}
