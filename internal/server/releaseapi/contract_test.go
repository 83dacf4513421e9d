//go:build !unit

package releaseapi_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	releasecontrollerv1 "github.com/release-controller/release-controller/internal/gen/releasecontroller/v1"
	"github.com/release-controller/release-controller/internal/releaselog"
	"github.com/release-controller/release-controller/internal/server/releaseapi"
)

// post sends a Connect-protocol unary call as any HTTP client would: a JSON body to
// /<service>/<method>.
func post(t *testing.T, url, method, body string) (int, string, map[string]any) {
	t.Helper()
	resp, err := httpClient(t, false).Post(url+"/releasecontroller.v1.ReleaseService/"+method, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	var decoded map[string]any
	if err := json.Unmarshal(raw, &decoded); err != nil {
		t.Fatalf("%s answered %d with a body that is not JSON: %q", method, resp.StatusCode, raw)
	}
	return resp.StatusCode, resp.Header.Get("Content-Type"), decoded
}

// The contract: POST /releasecontroller.v1.ReleaseService/ListReleaseDays with a JSON body
// works with the Connect protocol, served at the server's root.
func TestContractListReleaseDaysOverPlainHTTP(t *testing.T) {
	parts := storeOnly(t, releaselog.Options{Types: releaselog.DefaultTypes()})
	fill(t, parts.Store, oldDay, 1)
	fill(t, parts.Store, latestDay, 1)
	url := serve(t, parts)

	code, contentType, body := post(t, url, "ListReleaseDays", "{}")
	if code != http.StatusOK || contentType != "application/json" {
		t.Fatalf("got %d %s %v, want 200 application/json", code, contentType, body)
	}
	var days []string
	for _, d := range body["days"].([]any) {
		days = append(days, d.(string))
	}
	if !slices.Equal(days, []string{latestDay, oldDay}) {
		t.Errorf("days %v, want [%s %s]", days, latestDay, oldDay)
	}
	if body["ttlDays"] != float64(30) {
		t.Errorf("ttlDays %v, want 30", body["ttlDays"])
	}
	types := body["types"].([]any)
	if len(types) != len(releaselog.DefaultTypes()) {
		t.Fatalf("types %v, want the %d default types", types, len(releaselog.DefaultTypes()))
	}
	if first := types[0].(map[string]any); first["name"] != "release" || first["color"] != "green" {
		t.Errorf("first type %v, want release in green", first)
	}
}

func TestContractListReleasesAndRefusedWriteOverPlainHTTP(t *testing.T) {
	parts := storeOnly(t, releaselog.Options{})
	fill(t, parts.Store, middleDay, 3)
	url := serve(t, parts)

	code, _, body := post(t, url, "ListReleases", `{"day":"`+middleDay+`","pageSize":2}`)
	if code != http.StatusOK {
		t.Fatalf("got %d %v, want 200", code, body)
	}
	releases := body["releases"].([]any)
	first := releases[0].(map[string]any)
	if len(releases) != 2 || body["total"] != float64(3) || body["nextPageToken"] == "" || first["version"] != middleDay+".00000" {
		t.Errorf("got %v, want the first 2 of 3 entries and a next page token", body)
	}
	// Dates are RFC 3339 strings in JSON.
	if date, err := time.Parse(time.RFC3339, first["date"].(string)); err != nil || !date.Equal(time.Date(2026, 3, 10, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("date %v (%v), want 2026-03-10T00:00:00Z", first["date"], err)
	}

	// An anonymous write is refused with the Connect protocol's JSON error and HTTP 401.
	code, _, body = post(t, url, "AddRelease", `{"release":{"type":"release","version":"1.0.0","origin":"curl"}}`)
	if code != http.StatusUnauthorized || body["code"] != "unauthenticated" {
		t.Errorf("got %d %v, want 401 and code unauthenticated", code, body)
	}
}

// A request body over the limit is refused before it is decoded, in the Connect protocol's
// terms: resource_exhausted (HTTP 429 in the Connect protocol), saying the limit; whether the
// client announced its length or sent it chunked.
func TestContractOversizedRequest(t *testing.T) {
	parts := storeOnly(t, releaselog.Options{})
	url := serve(t, parts)
	body := `{"day":"` + strings.Repeat("x", releaseapi.MaxRequestBytes) + `"}`
	for _, chunked := range []bool{false, true} {
		var r io.Reader = strings.NewReader(body)
		if chunked {
			r = struct{ io.Reader }{r} // no length: sent chunked
		}
		resp, err := httpClient(t, false).Post(url+"/releasecontroller.v1.ReleaseService/ListReleases", "application/json", r)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		var decoded map[string]any
		_ = json.Unmarshal(raw, &decoded)
		msg, _ := decoded["message"].(string)
		if resp.StatusCode != http.StatusTooManyRequests || decoded["code"] != "resource_exhausted" || !strings.Contains(msg, strconv.Itoa(releaseapi.MaxRequestBytes)) {
			t.Errorf("chunked %v: %d %s, want 429 resource_exhausted naming the limit %d", chunked, resp.StatusCode, raw, releaseapi.MaxRequestBytes)
		}
	}
	// Every protocol's client gets ResourceExhausted.
	for _, p := range protocols {
		_, err := newClient(t, url, p).ListReleases(context.Background(), connect.NewRequest(&releasecontrollerv1.ListReleasesRequest{Day: strings.Repeat("x", releaseapi.MaxRequestBytes)}))
		t.Logf("%s: %v", p.name, err)
		expectCode(t, err, connect.CodeResourceExhausted)
	}
}
