package releaseapi_test

import (
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/release-controller/release-controller/internal/releaselog"
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
