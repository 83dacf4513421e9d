package web

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/release-controller/release-controller/internal/releaselog"
)

// EventName is the server-sent event that carries a day's rendered parts.
const EventName = "day"

// keepAlive is how often an idle stream sends a comment, so proxies and load balancers do
// not close it for inactivity.
const keepAlive = 25 * time.Second

// reconnectMillis tells the browser how long to wait before it reconnects a broken stream.
const reconnectMillis = 3000

// dayEvent is the data of an EventName event.
type dayEvent struct {
	Day     string   `json:"day"`
	Summary string   `json:"summary"`
	Nav     fragment `json:"nav"`
	Entries fragment `json:"entries"`
}

// events streams a day's navigation and entries as server-sent events: the current state at
// once, then again whenever the store changes in a way that changes them. It returns when
// the request's context ends (the client left, or the server shuts down).
func (p *pages) events(w http.ResponseWriter, r *http.Request) {
	day := r.URL.Query().Get("day")
	if _, err := releaselog.ParseDay(day); err != nil {
		http.Error(w, "day must be a day, YYYY-MM-DD: "+err.Error(), http.StatusBadRequest)
		return
	}
	rc, ok := startEventStream(w, r)
	if !ok {
		return
	}

	keepAliveTicker := time.NewTicker(keepAlive)
	defer keepAliveTicker.Stop()
	var sent []byte
	for {
		// Take the channel before reading, so a change between the read and the wait is
		// not missed.
		changed := p.store.Changed()
		data, err := p.dayEventData(day)
		if err != nil {
			return
		}
		// Many changes concern other days: send only what the page would see change.
		if string(data) != string(sent) {
			if _, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", EventName, data); err != nil {
				return
			}
			if err := rc.Flush(); err != nil {
				return
			}
			sent = data
		}
		if !p.waitForChange(w, rc, r, changed, keepAliveTicker.C) {
			return
		}
	}
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

// waitForChange waits for changed to close, keeping the stream alive meanwhile; it reports
// false when the stream is over.
func (p *pages) waitForChange(w http.ResponseWriter, rc *http.ResponseController, r *http.Request, changed <-chan struct{}, tick <-chan time.Time) bool {
	for {
		select {
		case <-r.Context().Done():
			return false
		case <-changed:
			return true
		case <-tick:
			if _, err := fmt.Fprint(w, ": keep-alive\n\n"); err != nil {
				return false
			}
			if err := rc.Flush(); err != nil {
				return false
			}
		}
	}
}

// dayEventData is the JSON of a day's event (one line, as an SSE data field needs).
func (p *pages) dayEventData(day string) ([]byte, error) {
	v, err := p.dayView(day)
	if err != nil {
		return nil, err
	}
	return json.Marshal(dayEvent{Day: v.Day, Summary: v.Summary, Nav: v.Nav, Entries: v.Entries})
}
