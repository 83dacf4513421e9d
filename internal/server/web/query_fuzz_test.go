package web_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/release-controller/release-controller/internal/server"
	"github.com/release-controller/release-controller/internal/server/web"
)

// The pages' paths and query parameters are outside input: days, page numbers, phases,
// tags, formats, the changelog's from and to, the health window, the release log's filters. Whatever they hold, a page answers with a
// client error or a page, never a server error or a panic. (The event streams get a HEAD,
// which answers and ends, or their error.)
func FuzzPageQueries(f *testing.F) {
	s := server.New()
	web.Register(s, filledStore(), options())
	web.RegisterPages(s, fixture(), web.PageOptions{Clock: clocktesting.NewFakePassiveClock(now)})
	h := s.Handler()
	f.Add("2026-11-22", "nightly", ciTag, "2", "accepted", "html", ciTag, "stream")
	f.Add("2026-02-30", "empty", "nothing", "0", "Rejected", "svg", "", "release")
	f.Add("22-11-2026", "ci", "../..", "99999999999999999999", "x", "json", "4.16.0", "index")
	f.Add("", "", "", "-1", "", "markdown", "%", "")
	f.Add("2026-11-22", "nightly", ciTag, "9223372036854775807", "", "", "", "stream")
	f.Fuzz(func(t *testing.T, day, stream, tag, page, phase, format, from, view string) {
		streamPath := "/namespaces/demo/releasestream/" + url.PathEscape(stream)
		for _, tc := range []struct{ method, target string }{
			{"GET", web.ReleasesPath + "?" + url.Values{"day": {day}, "type": {phase}, "stream": {stream}, "q": {tag}}.Encode()},
			{"HEAD", web.EventsPath + "?" + url.Values{"day": {day}, "type": {phase}, "stream": {stream}, "q": {tag}}.Encode()},
			{"GET", streamPath + "?" + url.Values{"page": {page}, "phase": {phase}}.Encode()},
			{"GET", streamPath + "/release/" + url.PathEscape(tag) + "?" + url.Values{"from": {from}}.Encode()},
			{"GET", streamPath + "/graph?" + url.Values{"format": {format}}.Encode()},
			{"GET", streamPath + "/compare?" + url.Values{"from": {from}, "to": {tag}}.Encode()},
			{"GET", streamPath + "/health?" + url.Values{"payloads": {page}, "days": {page}, "format": {format}}.Encode()},
			{"GET", "/releasestream/" + url.PathEscape(stream) + "/release/" + url.PathEscape(tag)},
			{"GET", "/releasetag/" + url.PathEscape(tag)},
			{"GET", web.ChangeLogPath + "?" + url.Values{"from": {from}, "to": {tag}, "format": {format}}.Encode()},
			{"HEAD", web.PageEventsPath + "?" + url.Values{"view": {view}, "namespace": {"demo"}, "stream": {stream}, "tag": {tag}}.Encode()},
		} {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			req, err := http.NewRequestWithContext(ctx, tc.method, "http://example.com"+tc.target, nil)
			if err != nil {
				cancel()
				continue // not a URL any client sends
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			cancel()
			if rec.Code >= 500 && rec.Code != http.StatusNotImplemented {
				t.Errorf("%s %s: %d %s", tc.method, tc.target, rec.Code, rec.Body)
			}
			if tc.method == "GET" && rec.Code >= 400 && rec.Body.Len() == 0 {
				t.Errorf("%s %s: %d without a word why", tc.method, tc.target, rec.Code)
			}
		}
	})
}
