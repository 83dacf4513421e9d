package web

import (
	"fmt"
	"net/http"
	"time"

	"github.com/release-controller/release-controller/internal/releaselog"
)

// keepAlive is how often an idle stream sends a comment, so proxies and load balancers do
// not close it for inactivity.
const keepAlive = 25 * time.Second

// reconnectMillis tells the browser how long to wait before it reconnects a broken stream.
const reconnectMillis = 3000

// events streams a day's navigation, entries and counts per day (with the page's filters) as
// the parts "day-nav", "entries" and "day-counts" of PageUpdateEvent events: the current state at once, then again whenever the store changes in
// a way that changes them (see serveLive). It returns when the request's context ends.
func (p *pages) events(w http.ResponseWriter, r *http.Request) {
	day := r.URL.Query().Get("day")
	if _, err := releaselog.ParseDay(day); err != nil {
		http.Error(w, "day must be a day, YYYY-MM-DD: "+err.Error(), http.StatusBadRequest)
		return
	}
	f, err := parseLogFilter(r.URL.Query())
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	serveLive(w, r, p.store.Changed, func() ([]livePart, error) {
		first, last := p.pickerRange(p.opts.Clock.Now())
		v, err := p.dayView(day, f, first, last)
		if err != nil {
			return nil, err
		}
		return []livePart{
			{ID: "day-nav", HTML: string(v.Nav.HTML), Version: v.Nav.Version},
			{ID: "entries", HTML: string(v.Entries.HTML), Version: v.Entries.Version, Announce: "Updated: " + v.Summary},
			{ID: "day-counts", HTML: string(v.Counts.HTML), Version: v.Counts.Version},
		}, nil
	})
}

// startEventStream answers with an event stream and tells the client how soon to reconnect;
// false when there is nothing to stream (a HEAD request, or the client left).
func startEventStream(w http.ResponseWriter, r *http.Request) (*http.ResponseController, bool) {
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	// nginx-style proxies buffer responses unless told otherwise.
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		// The GET pattern also answers HEAD, which has no body to stream.
		return nil, false
	}
	if _, err := fmt.Fprintf(w, "retry: %d\n\n", reconnectMillis); err != nil {
		return nil, false
	}
	return rc, true
}
