package server

import (
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
)

// Bounds of the server-sent-event streams, the defaults of Options. A stream holds a
// goroutine and a connection for as long as its client stays, so without a bound a client
// (or many) could hold the server's memory and file descriptors.
const (
	// DefaultMaxStreams bounds the streams open at once, all clients together.
	DefaultMaxStreams = 1000
	// DefaultMaxStreamsPerClient bounds the streams of one client (one remote IP address):
	// a person with a few tabs open needs a handful. Behind a reverse proxy every client
	// shares the proxy's address; raise it there (or turn it off with a negative value).
	DefaultMaxStreamsPerClient = 32
)

// streamRetryAfter is the Retry-After of a refused stream, in seconds.
const streamRetryAfter = 30

// EventStream marks a route as a long-lived stream (server-sent events): it counts against
// Options.MaxStreams and MaxStreamsPerClient while it runs, and is refused beyond them.
func EventStream() RouteOption { return func(r *route) { r.stream = true } }

// streamLimit counts the streams open, in all and per client.
type streamLimit struct {
	max, perClient int

	mu       sync.Mutex
	total    int
	byClient map[string]int
}

func newStreamLimit(limit, perClient int) *streamLimit {
	return &streamLimit{max: limit, perClient: perClient, byClient: map[string]int{}}
}

// StreamRefusal decides whether a new stream of a client may open: 0 when it may, else the
// status code and the message of the refusal. total and ofClient are the streams open now (in
// all, of that client); a limit below 0 is no limit.
func StreamRefusal(total, ofClient, limit, perClient int, client string) (int, string) {
	switch {
	case perClient >= 0 && ofClient >= perClient:
		return http.StatusTooManyRequests, fmt.Sprintf("this client (%s) has %d event streams open, as many as the server allows one client "+
			"(--max-event-streams-per-client): close a page or tab that updates live, or reload it later", client, ofClient)
	case limit >= 0 && total >= limit:
		return http.StatusServiceUnavailable, fmt.Sprintf("the server has %d event streams open, as many as it allows (--max-event-streams): "+
			"the page works without live updates; reload it later", total)
	}
	return 0, ""
}

// acquire counts a stream of client, or says why it may not open; release uncounts it.
func (l *streamLimit) acquire(client string) (release func(), code int, msg string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if code, msg := StreamRefusal(l.total, l.byClient[client], l.max, l.perClient, client); code != 0 {
		return nil, code, msg
	}
	l.total++
	l.byClient[client]++
	return func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.total--
		if l.byClient[client]--; l.byClient[client] <= 0 {
			delete(l.byClient, client)
		}
	}, 0, ""
}

// clientOf is the client a request counts for: its remote IP address (without the port, so
// that one client's connections count together).
func clientOf(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// limitStreams refuses a stream beyond the limits and counts it while it runs.
func (l *streamLimit) limitStreams(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		release, code, msg := l.acquire(clientOf(r))
		if code != 0 {
			w.Header().Set("Retry-After", strconv.Itoa(streamRetryAfter))
			http.Error(w, msg, code)
			return
		}
		defer release()
		h.ServeHTTP(w, r)
	})
}
