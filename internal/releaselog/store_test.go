package releaselog

import (
	"slices"
	"testing"
)

func entry(version, at string) Entry {
	return Entry{Type: TypeRelease, Version: version, Origin: "test", Date: date(at)}
}

func versions(entries []Entry) []string {
	var v []string
	for _, e := range entries {
		v = append(v, e.Version)
	}
	return v
}

func TestStoreKeepsDaysAndEntriesInOrder(t *testing.T) {
	s := NewStore()
	s.Set("2026-03-02", []Entry{entry("b", "2026-03-02T10:00:00Z"), entry("a", "2026-03-02T09:00:00Z")})
	s.Set("2026-02-27", nil)
	s.Set("2026-03-10", []Entry{
		entry("late", "2026-03-10T23:00:00Z"),
		entry("same-second-1", "2026-03-10T08:00:00Z"),
		entry("same-second-2", "2026-03-10T08:00:00Z"),
		entry("early", "2026-03-10T01:00:00Z"),
	})
	if got, want := s.Days(), []string{"2026-03-10", "2026-03-02", "2026-02-27"}; !slices.Equal(got, want) {
		t.Errorf("Days = %v, want newest first %v", got, want)
	}
	if got, want := versions(s.Entries("2026-03-10")), []string{"early", "same-second-1", "same-second-2", "late"}; !slices.Equal(got, want) {
		t.Errorf("Entries = %v, want time order, ties in the given order: %v", got, want)
	}
	if latest, ok := s.Latest(); !ok || latest != "2026-03-10" {
		t.Errorf("Latest = %s %v", latest, ok)
	}

	tests := []struct {
		day                    string
		wantPrevious, wantNext string
	}{
		{"2026-03-02", "2026-02-27", "2026-03-10"},
		{"2026-03-05", "2026-03-02", "2026-03-10"},
		{"2026-02-27", "", "2026-03-02"},
		{"2026-03-10", "2026-03-02", ""},
		{"2026-01-01", "", "2026-02-27"},
		{"2026-12-31", "2026-03-10", ""},
	}
	for _, tt := range tests {
		if previous, next := s.Adjacent(tt.day); previous != tt.wantPrevious || next != tt.wantNext {
			t.Errorf("Adjacent(%s) = %q, %q; want %q, %q", tt.day, previous, next, tt.wantPrevious, tt.wantNext)
		}
	}

	s.Delete("2026-03-02")
	s.Delete("2026-03-03") // not there: nothing happens
	if got, want := s.Days(), []string{"2026-03-10", "2026-02-27"}; !slices.Equal(got, want) {
		t.Errorf("after Delete, Days = %v, want %v", got, want)
	}
	if s.Has("2026-03-02") || s.Entries("2026-03-02") != nil {
		t.Errorf("a deleted day still has entries")
	}
}

func TestStorePage(t *testing.T) {
	s := NewStore()
	var entries []Entry
	for _, v := range []string{"1", "2", "3", "4", "5"} {
		entries = append(entries, entry(v, "2026-03-02T0"+v+":00:00Z"))
	}
	s.Set("2026-03-02", entries)
	tests := []struct {
		offset, limit int
		want          []string
	}{
		{0, 2, []string{"1", "2"}},
		{2, 2, []string{"3", "4"}},
		{4, 2, []string{"5"}},
		{5, 2, nil},
		{9, 2, nil},
		{-1, 1, []string{"1"}},
		{1, -1, []string{"2", "3", "4", "5"}},
	}
	for _, tt := range tests {
		page, total := s.Page("2026-03-02", tt.offset, tt.limit)
		if total != 5 || !slices.Equal(versions(page), tt.want) {
			t.Errorf("Page(%d, %d) = %v of %d, want %v of 5", tt.offset, tt.limit, versions(page), total, tt.want)
		}
	}
	if page, total := s.Page("2026-03-03", 0, 10); page != nil || total != 0 {
		t.Errorf("a day without a log has entries: %v %d", page, total)
	}
}

func TestStoreCopiesWhatItIsGivenAndReturns(t *testing.T) {
	s := NewStore()
	given := []Entry{entry("a", "2026-03-02T09:00:00Z")}
	s.Set("2026-03-02", given)
	given[0].Version = "changed by the caller"
	got := s.Entries("2026-03-02")
	got[0].Version = "changed by a reader"
	if v := s.Entries("2026-03-02")[0].Version; v != "a" {
		t.Errorf("the store's entry changed to %q", v)
	}
}

func TestStoreEntryIDs(t *testing.T) {
	s := NewStore()
	withID := entry("a", "2026-03-02T09:00:00Z")
	withID.ID = "uid/Accepted/1"
	s.Set("2026-03-02", []Entry{withID, entry("b", "2026-03-02T10:00:00Z")})
	if !s.HasEntry("2026-03-02", "uid/Accepted/1") {
		t.Error("the id is not found")
	}
	if s.HasEntry("2026-03-02", "") || s.HasEntry("2026-03-03", "uid/Accepted/1") || s.HasEntry("2026-03-02", "other") {
		t.Error("an id is found where it is not")
	}
	s.Set("2026-03-02", []Entry{entry("b", "2026-03-02T10:00:00Z")})
	if s.HasEntry("2026-03-02", "uid/Accepted/1") {
		t.Error("the id of a replaced entry is still found")
	}
}

func TestStoreSignalsChanges(t *testing.T) {
	s := NewStore()
	changed := s.Changed()
	s.Set("2026-03-02", []Entry{entry("a", "2026-03-02T09:00:00Z")})
	if !closed(changed) {
		t.Fatal("Set of a new day is not signalled")
	}
	changed = s.Changed()
	s.Set("2026-03-02", []Entry{entry("a", "2026-03-02T09:00:00Z")})
	if closed(changed) {
		t.Error("Set of the same entries is signalled")
	}
	s.Set("2026-03-02", []Entry{entry("a", "2026-03-02T09:00:00Z"), entry("b", "2026-03-02T10:00:00Z")})
	if !closed(changed) {
		t.Error("a new entry is not signalled")
	}
	changed = s.Changed()
	s.Delete("2026-03-02")
	if !closed(changed) {
		t.Error("Delete is not signalled")
	}
}

func closed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}
