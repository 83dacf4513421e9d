package releaselog

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/release-controller/release-controller/api/v1alpha1"
)

func TestPlanWrite(t *testing.T) {
	held := func(count, bytes int, ids ...string) dayState {
		d := dayState{ids: map[string]struct{}{}, count: count, bytes: bytes}
		for _, id := range ids {
			d.ids[id] = struct{}{}
		}
		return d
	}
	limits := dayLimits{maxEntries: 5, maxBytes: 1000}
	const (
		add     = verdictAdd
		present = verdictPresent
		full    = verdictFull
		large   = verdictTooLarge
	)
	tests := []struct {
		name    string
		day     dayState
		entries []queued
		want    []verdict
	}{
		{"a new day takes everything", held(0, 100), []queued{{"a", 100}, {"", 100}, {"b", 100}}, []verdict{add, add, add}},
		{"ids the day holds are skipped", held(2, 300, "a", "b"), []queued{{"a", 100}, {"c", 100}, {"b", 100}}, []verdict{present, add, present}},
		{"an id twice in one write goes in once", held(0, 100), []queued{{"a", 100}, {"a", 100}}, []verdict{add, present}},
		{"entries without an id are never the same", held(1, 200), []queued{{"", 100}, {"", 100}}, []verdict{add, add}},
		{"the count cap", held(3, 400), []queued{{"a", 10}, {"b", 10}, {"c", 10}}, []verdict{add, add, full}},
		{"a full day still knows its ids", held(5, 500, "a"), []queued{{"a", 10}, {"b", 10}}, []verdict{present, full}},
		{"an id refused once is refused again", held(4, 500), []queued{{"", 10}, {"a", 10}, {"a", 10}}, []verdict{add, full, full}},
		{"the byte budget", held(1, 700), []queued{{"a", 200}, {"b", 200}}, []verdict{add, large}},
		{"exactly at the byte budget", held(1, 700), []queued{{"a", 300}}, []verdict{add}},
		{"a short entry fits after a long one did not", held(1, 700), []queued{{"a", 400}, {"b", 50}}, []verdict{large, add}},
		{"a day already past the caps takes nothing", held(7, 2000), []queued{{"a", 1}}, []verdict{full}},
		{"nothing queued", held(0, 100), nil, []verdict{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := planWrite(tt.day, tt.entries, limits); !slices.Equal(got, tt.want) {
				t.Errorf("planWrite = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestAppendPatch(t *testing.T) {
	entry := func(version string) v1alpha1.ReleaseLogEntry {
		return v1alpha1.ReleaseLogEntry{Type: "release", Version: version, Origin: "ci", Date: metav1.NewTime(time.Date(2026, 6, 15, 9, 30, 0, 0, time.UTC))}
	}
	base := newDay(client.ObjectKey{Namespace: "release-controller", Name: "release-2026-06-15"}, []v1alpha1.ReleaseLogEntry{entry("1.0.0")})
	base.UID, base.Generation = "0d9e", 4
	tests := []struct {
		name string
		base *v1alpha1.ReleaseLog
		want string
	}{
		{"appends to the list", base, `[{"op":"test","path":"/metadata/uid","value":"0d9e"},{"op":"test","path":"/metadata/generation","value":4},` +
			`{"op":"add","path":"/spec/entries/-","value":{"type":"release","version":"1.0.1","origin":"ci","date":"2026-06-15T09:30:00Z"}},` +
			`{"op":"add","path":"/spec/entries/-","value":{"type":"release","version":"1.0.2","origin":"ci","date":"2026-06-15T09:30:00Z"}}]`},
		{"sets the spec of a day without entries", &v1alpha1.ReleaseLog{ObjectMeta: metav1.ObjectMeta{UID: "0d9e", Generation: 1}},
			`[{"op":"test","path":"/metadata/uid","value":"0d9e"},{"op":"test","path":"/metadata/generation","value":1},` +
				`{"op":"add","path":"/spec","value":{"entries":[{"type":"release","version":"1.0.1","origin":"ci","date":"2026-06-15T09:30:00Z"},` +
				`{"type":"release","version":"1.0.2","origin":"ci","date":"2026-06-15T09:30:00Z"}]}}]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := json.Marshal(appendPatch(tt.base, []v1alpha1.ReleaseLogEntry{entry("1.0.1"), entry("1.0.2")}))
			if err != nil || string(got) != tt.want {
				t.Errorf("appendPatch = %s (%v)\nwant          %s", got, err, tt.want)
			}
		})
	}
}

// TestEntrySizeCountsTheJSON checks the size the byte budget adds up: an entry costs its JSON
// and a comma, so a day's entries cost what their list does.
func TestEntrySizeCountsTheJSON(t *testing.T) {
	entries := []v1alpha1.ReleaseLogEntry{
		{Type: "release", Version: "1.0.0", Origin: "ci", Message: strings.Repeat("é", v1alpha1.MaxReleaseLogMessageLength)},
		{Type: "hotfix", Version: "1.0.1", Origin: "ci", Message: "<escaped> & \"quoted\""},
	}
	sum := 0
	for i := range entries {
		sum += entrySize(&entries[i])
	}
	// A list of n entries is their JSON, n-1 commas and two brackets: one byte more.
	if list := JSONSize(entries); sum+1 != list {
		t.Errorf("entries cost %d bytes, their list is %d", sum, list)
	}
}
