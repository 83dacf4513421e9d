package releaselog

import (
	"slices"
	"sort"
	"sync"
)

// Store is the in-memory read side of the release log: for each day its entries in time
// order, and the days in order. The controller projects the ReleaseLog objects into it; readers
// (the Connect API, MCP, the web page) never touch the API server. Reads cost the size of what
// they return, plus a binary search over the days.
type Store struct {
	mu sync.RWMutex
	// days maps a day (YYYY-MM-DD) to its entries.
	days map[string]*dayEntries
	// order holds the days, oldest first; day keys sort like the dates they name.
	order []string
	// changed is closed, and replaced, on every change.
	changed chan struct{}
}

type dayEntries struct {
	// entries in time order; replaced, never modified, so a reader's copy stays valid.
	entries []Entry
	// ids holds the entries' non-empty ids.
	ids map[string]struct{}
}

// NewStore returns an empty store.
func NewStore() *Store {
	return &Store{days: map[string]*dayEntries{}, changed: make(chan struct{})}
}

// Set replaces a day's entries; they are kept in time order, entries of the same second in
// the order given.
func (s *Store) Set(day string, entries []Entry) {
	sorted := slices.Clone(entries)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Date.Before(sorted[j].Date) })
	s.mu.Lock()
	defer s.mu.Unlock()
	if old, ok := s.days[day]; ok && slices.EqualFunc(old.entries, sorted, Entry.equal) {
		// A status-only update of the object: nothing for readers to see.
		return
	}
	d := &dayEntries{entries: sorted, ids: map[string]struct{}{}}
	for _, e := range sorted {
		if e.ID != "" {
			d.ids[e.ID] = struct{}{}
		}
	}
	if _, ok := s.days[day]; !ok {
		i, _ := slices.BinarySearch(s.order, day)
		s.order = slices.Insert(s.order, i, day)
	}
	s.days[day] = d
	s.notifyLocked()
}

// Delete removes a day.
func (s *Store) Delete(day string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.days[day]; !ok {
		return
	}
	delete(s.days, day)
	i, _ := slices.BinarySearch(s.order, day)
	s.order = slices.Delete(s.order, i, i+1)
	s.notifyLocked()
}

func (s *Store) notifyLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// Changed returns a channel that is closed at the next change of the store: a reader that
// wants live updates reads, waits on the channel, then reads again.
func (s *Store) Changed() <-chan struct{} {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.changed
}

// Days returns the days that have a log, newest first.
func (s *Store) Days() []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	days := make([]string, len(s.order))
	for i, day := range s.order {
		days[len(s.order)-1-i] = day
	}
	return days
}

// Latest returns the newest day, if any.
func (s *Store) Latest() (string, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if len(s.order) == 0 {
		return "", false
	}
	return s.order[len(s.order)-1], true
}

// Has reports whether the store holds day.
func (s *Store) Has(day string) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	_, ok := s.days[day]
	return ok
}

// Adjacent returns the closest older (previous) and newer (next) days that have a log, or ""
// where there is none. day itself need not have a log.
func (s *Store) Adjacent(day string) (previous, next string) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	i, found := slices.BinarySearch(s.order, day)
	if i > 0 {
		previous = s.order[i-1]
	}
	if found {
		i++
	}
	if i < len(s.order) {
		next = s.order[i]
	}
	return previous, next
}

// Entries returns a day's entries in time order (none for a day without a log).
func (s *Store) Entries(day string) []Entry {
	page, _ := s.Page(day, 0, -1)
	return page
}

// Page returns up to limit entries of a day from offset on, in time order, and how many the
// day holds; a negative limit means all the rest.
func (s *Store) Page(day string, offset, limit int) (page []Entry, total int) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	d, ok := s.days[day]
	if !ok {
		return nil, 0
	}
	total = len(d.entries)
	start := min(max(offset, 0), total)
	end := total
	if limit >= 0 {
		end = min(start+limit, total)
	}
	return slices.Clone(d.entries[start:end]), total
}

// HasEntry reports whether a day holds an entry with id.
func (s *Store) HasEntry(day, id string) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	d, ok := s.days[day]
	if !ok {
		return false
	}
	_, ok = d.ids[id]
	return ok
}
