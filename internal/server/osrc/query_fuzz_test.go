package osrc_test

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"

	"github.com/release-controller/release-controller/internal/server"
	"github.com/release-controller/release-controller/internal/server/osrc"
)

// The REST routes' path segments and query parameters are outside input: the stream, the
// tag, a semantic version range (?in), a count (?rel), a prefix, a channel, a format. Whatever
// they hold, the server answers with a client error or a result, never a server error or a
// panic.
func FuzzRESTQueries(f *testing.F) {
	s := server.New()
	osrc.Register(s, fixture(), osrc.Options{})
	h := s.Handler()
	f.Add(nightly, n3, ">=4.15.0 <4.16.0", "1", "4.15", "stable-4.17", "", n1)
	f.Add("4-stable", "4.17.0", ">4.16.0 || <1.0.0-0", "-1", "", "prerelease-4.17", "cincinnati", "4.16.5")
	f.Add("dup", "nothing", "not a range", "99999999999999999999", "\x00", "nightly-", "json", "")
	f.Add("", "", ">= 1.x", "0", "%", "candidate-4", "cincinnati", "1.0.0")
	f.Fuzz(func(t *testing.T, stream, tag, in, rel, prefix, channel, format, from string) {
		streamPath := "/api/v1/releasestream/" + url.PathEscape(stream)
		for _, target := range []string{
			streamPath + "/latest?" + url.Values{"in": {in}, "rel": {rel}, "prefix": {prefix}}.Encode(),
			streamPath + "/tags?" + url.Values{"phase": {prefix}}.Encode(),
			streamPath + "/release/" + url.PathEscape(tag) + "?" + url.Values{"from": {from}, "format": {format}}.Encode(),
			streamPath + "/candidate?" + url.Values{"rel": {rel}, "prefix": {prefix}}.Encode(),
			"/releasestream/" + url.PathEscape(stream) + "/latest?" + url.Values{"in": {in}, "rel": {rel}, "prefix": {prefix}}.Encode(),
			"/graph?" + url.Values{"channel": {channel}, "format": {format}, "arch": {prefix}}.Encode(),
			"/api/v1/releasestreams/accepted?" + url.Values{"format": {format}}.Encode(),
		} {
			req, err := http.NewRequest(http.MethodGet, "http://example.com"+target, nil)
			if err != nil {
				continue // not a URL any client sends
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code >= 500 && rec.Code != http.StatusNotImplemented {
				t.Errorf("GET %s: %d %s", target, rec.Code, rec.Body)
			}
			if rec.Code >= 400 && rec.Body.Len() == 0 {
				t.Errorf("GET %s: %d without a word why", target, rec.Code)
			}
		}
	})
}
