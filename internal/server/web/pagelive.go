package web

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/release-controller/release-controller/internal/server/catalog"
)

// Live updates of the stream pages. A page with work in flight names its live parts (the
// index's streams, a stream page's state and payloads, a payload page's status) and the URL
// of their event stream; the stream sends the parts rendered anew whenever the catalog
// snapshot they come from changes and their HTML differs from what was sent, and the page's
// script swaps them in. Without the script the pages are complete, just not live.

// Events of the page streams.
const (
	// PageUpdateEvent carries parts of a page rendered anew.
	PageUpdateEvent = "update"
	// PageGoneEvent says the page's stream or payload no longer exists.
	PageGoneEvent = "gone"
)

// liveInterval is the least time between two renders for one stream: changes that come in
// bursts (a stream's payloads verified at once) are sent together.
const liveInterval = 250 * time.Millisecond

// livePart is one part of a page, by its element's id.
type livePart struct {
	ID      string `json:"id"`
	HTML    string `json:"html"`
	Version string `json:"version"`
	// Announce is what screen readers are told when the part changes; empty: "Updated".
	Announce string `json:"announce,omitempty"`
}

type liveUpdate struct {
	Parts []livePart `json:"parts"`
}

// errGone ends a stream whose stream or payload was deleted.
type errGone struct{ message string }

func (e errGone) Error() string { return e.message }

// liveView renders a page's live parts; it returns nil parts when nothing it reads changed
// since its last call.
type liveView func() ([]livePart, error)

// liveViewOf parses an event stream's query into the view it follows; the error is meant for
// people, with its status code.
func (p *site) liveViewOf(r *http.Request) (liveView, int, error) {
	q := r.URL.Query()
	streamOf := func() (*catalog.Stream, error) {
		s, err := p.cat.StreamIn(q.Get("namespace"), q.Get("stream"))
		if errors.Is(err, catalog.ErrNotFound) {
			return nil, errGone{fmt.Sprintf("The release stream %s/%s no longer exists.", q.Get("namespace"), q.Get("stream"))}
		}
		return s, err
	}
	switch q.Get("view") {
	case "index":
		var last []*catalog.Stream
		return func() ([]livePart, error) {
			streams := p.cat.Streams()
			if last != nil && slices.Equal(streams, last) {
				return nil, nil
			}
			last = streams
			f, err := p.indexPart(streams)
			return []livePart{{ID: "streams", HTML: string(f.HTML), Version: f.Version}}, err
		}, 0, nil
	case "stream":
		sq, err := parseStreamQuery(q)
		if err != nil {
			return nil, http.StatusBadRequest, err
		}
		if _, err := streamOf(); err != nil {
			return nil, http.StatusNotFound, err
		}
		var last *catalog.Stream
		return func() ([]livePart, error) {
			s, err := streamOf()
			if err != nil || s == last {
				return nil, err
			}
			last = s
			parts, err := p.streamParts(s, sq)
			if errors.Is(err, errNoSuchPage) {
				return nil, errGone{fmt.Sprintf("Page %d of %s/%s no longer exists.", sq.Page, s.Namespace, s.Name)}
			}
			return []livePart{
				{ID: "stream-info", HTML: string(parts.info.HTML), Version: parts.info.Version},
				{ID: "payloads", HTML: string(parts.payloads.HTML), Version: parts.payloads.Version},
			}, err
		}, 0, nil
	case "pipelines", "pipeline":
		return p.pipelineLiveView(r, q.Get("view"))
	case "release":
		tag := q.Get("tag")
		s, err := streamOf()
		if err != nil {
			return nil, http.StatusNotFound, err
		}
		if _, ok := s.Entry(tag); !ok {
			return nil, http.StatusNotFound, fmt.Errorf("the stream %s/%s has no payload tagged %q", s.Namespace, s.Name, tag)
		}
		var last *catalog.Stream
		lastRisks := ""
		return func() ([]livePart, error) {
			s, err := streamOf()
			if err != nil {
				return nil, err
			}
			// The status shows the risks into the payload too.
			risks := risksVersion(p.cat.Risks(), s.Namespace)
			if s == last && risks == lastRisks {
				return nil, nil
			}
			last, lastRisks = s, risks
			e, ok := s.Entry(tag)
			if !ok {
				return nil, errGone{fmt.Sprintf("The payload %s was deleted.", tag)}
			}
			f, err := p.statusPart(s, e)
			return []livePart{{ID: "status", HTML: string(f.HTML), Version: f.Version}}, err
		}, 0, nil
	}
	return nil, http.StatusBadRequest, fmt.Errorf("view must be index, stream, release, pipelines or pipeline, not %q", q.Get("view"))
}

// events streams a page's live parts: at once, then whenever they change. It returns when
// the request's context ends (the client left, or the server shuts down).
func (p *site) events(w http.ResponseWriter, r *http.Request) {
	view, code, err := p.liveViewOf(r)
	if err != nil {
		http.Error(w, err.Error(), code)
		return
	}
	// The pipeline views follow the pipelines' changes, the others the streams'.
	changedOf := p.cat.Changed
	if v := r.URL.Query().Get("view"); v == "pipelines" || v == "pipeline" {
		changedOf = p.cat.PipelinesChanged
	}
	serveLive(w, r, changedOf, view)
}

// serveLive is every page's event stream: it sends view's parts as PageUpdateEvent events, at
// once and then whenever changedOf's channel closes and a part's HTML differs from what was
// sent, and PageGoneEvent when view says its object is gone. Changes that come in a burst are
// sent together (liveInterval). It returns when the request's context ends (the client left,
// or the server shuts down).
func serveLive(w http.ResponseWriter, r *http.Request, changedOf func() <-chan struct{}, view liveView) {
	rc, ok := startEventStream(w, r)
	if !ok {
		return
	}
	tick := time.NewTicker(keepAlive)
	defer tick.Stop()
	sent := map[string]string{}
	for {
		changed := changedOf()
		parts, err := view()
		var gone errGone
		if errors.As(err, &gone) {
			data, _ := json.Marshal(map[string]string{"message": gone.message})
			_, _ = fmt.Fprintf(w, "event: %s\ndata: %s\n\n", PageGoneEvent, data)
			_ = rc.Flush()
			return
		}
		if err != nil {
			return
		}
		var update liveUpdate
		for _, pt := range parts {
			if sent[pt.ID] != pt.Version {
				update.Parts = append(update.Parts, pt)
				sent[pt.ID] = pt.Version
			}
		}
		if len(update.Parts) > 0 {
			data, err := json.Marshal(update)
			if err != nil {
				return
			}
			if _, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", PageUpdateEvent, data); err != nil {
				return
			}
			if err := rc.Flush(); err != nil {
				return
			}
		}
		if !waitLive(w, rc, r, changed, tick.C) {
			return
		}
	}
}

// waitLive waits for changed to close, keeping the stream alive meanwhile, then lets a burst
// of changes settle for liveInterval; it reports false when the stream is over.
func waitLive(w http.ResponseWriter, rc *http.ResponseController, r *http.Request, changed <-chan struct{}, tick <-chan time.Time) bool {
	for {
		select {
		case <-r.Context().Done():
			return false
		case <-changed:
			settle := time.NewTimer(liveInterval)
			defer settle.Stop()
			select {
			case <-r.Context().Done():
				return false
			case <-settle.C:
				return true
			}
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
