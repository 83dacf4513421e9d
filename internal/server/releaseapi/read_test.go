//go:build !unit

package releaseapi_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"connectrpc.com/connect"

	releasecontrollerv1 "github.com/release-controller/release-controller/internal/gen/releasecontroller/v1"
	"github.com/release-controller/release-controller/internal/gen/releasecontroller/v1/releasecontrollerv1connect"
	"github.com/release-controller/release-controller/internal/releaselog"
)

// fill puts n entries on day into the store, one a second from the day's start, with versions
// that say which day and which entry they are; every other entry is verified.
func fill(t testing.TB, store *releaselog.Store, day string, n int) []string {
	t.Helper()
	start, err := releaselog.ParseDay(day)
	if err != nil {
		t.Fatal(err)
	}
	entries := make([]releaselog.Entry, n)
	versions := make([]string, n)
	for i := range entries {
		versions[i] = fmt.Sprintf("%s.%05d", day, i)
		entries[i] = releaselog.Entry{
			Type: "release", Version: versions[i], Origin: "ci", Date: start.Add(time.Duration(i) * time.Second),
			Author: "builder", Message: "entry " + versions[i], Link: "/releases/" + versions[i], Verified: i%2 == 1,
		}
	}
	store.Set(day, entries)
	return versions
}

// readLog is a store with three days, the middle one holding 250 entries, served over HTTP.
type readLog struct {
	url    string
	middle []string
}

const (
	oldDay    = "2026-03-07"
	middleDay = "2026-03-10"
	latestDay = "2026-03-12"
)

func newReadLog(t *testing.T) *readLog {
	parts := storeOnly(t, releaselog.Options{Types: releaselog.DefaultTypes()})
	fill(t, parts.Store, oldDay, 2)
	middle := fill(t, parts.Store, middleDay, 250)
	fill(t, parts.Store, latestDay, 3)
	return &readLog{url: serve(t, parts), middle: middle}
}

// list calls ListReleases and returns the response message.
func list(c releasecontrollerv1connect.ReleaseServiceClient, req *releasecontrollerv1.ListReleasesRequest) (*releasecontrollerv1.ListReleasesResponse, error) {
	resp, err := c.ListReleases(context.Background(), connect.NewRequest(req))
	if err != nil {
		return nil, err
	}
	return resp.Msg, nil
}

func TestListReleasesPagesThroughADay(t *testing.T) {
	log := newReadLog(t)
	for _, p := range protocols {
		t.Run(p.name, func(t *testing.T) {
			c := newClient(t, log.url, p)
			var seen []string
			var sizes []int
			token := ""
			for {
				resp, err := list(c, &releasecontrollerv1.ListReleasesRequest{Day: middleDay, PageSize: 100, PageToken: token})
				if err != nil {
					t.Fatalf("page %d: %v", len(sizes)+1, err)
				}
				if resp.Day != middleDay || resp.Total != 250 || resp.PreviousDay != oldDay || resp.NextDay != latestDay {
					t.Fatalf("page %d: day %q total %d previous %q next %q, want %s 250 %s %s",
						len(sizes)+1, resp.Day, resp.Total, resp.PreviousDay, resp.NextDay, middleDay, oldDay, latestDay)
				}
				sizes = append(sizes, len(resp.Releases))
				for _, r := range resp.Releases {
					seen = append(seen, r.Version)
				}
				if resp.NextPageToken == "" {
					break
				}
				if len(sizes) > 3 {
					t.Fatalf("more pages than 250 entries make: tokens do not advance")
				}
				token = resp.NextPageToken
			}
			if !slices.Equal(sizes, []int{100, 100, 50}) {
				t.Errorf("page sizes %v, want [100 100 50]", sizes)
			}
			// Every entry once, in time order: nothing lost, nothing twice.
			if !slices.Equal(seen, log.middle) {
				t.Errorf("paged %d entries, want the day's 250 in order; first %v, last %v", len(seen), seen[:3], seen[len(seen)-3:])
			}
		})
	}
}

func TestListReleasesEntryFields(t *testing.T) {
	log := newReadLog(t)
	c := newClient(t, log.url, protocols[0])
	resp, err := list(c, &releasecontrollerv1.ListReleasesRequest{Day: middleDay, PageSize: 2})
	if err != nil {
		t.Fatal(err)
	}
	r := resp.Releases[1]
	want := time.Date(2026, 3, 10, 0, 0, 1, 0, time.UTC)
	if r.Type != "release" || r.Version != middleDay+".00001" || r.Origin != "ci" || !r.Date.AsTime().Equal(want) ||
		r.Author != "builder" || r.Message != "entry "+r.Version || r.Link != "/releases/"+r.Version || !r.Verified {
		t.Errorf("entry %v, want the second entry of %s as stored", r, middleDay)
	}
	// An entry that is not verified (written directly into the ReleaseLog) says so.
	if r := resp.Releases[0]; r.Author != "unverified: builder" || r.Verified {
		t.Errorf("entry %v, want its author shown as unverified", r)
	}
}

func TestListReleasesDefaultsToTheLatestDay(t *testing.T) {
	log := newReadLog(t)
	for _, p := range protocols {
		t.Run(p.name, func(t *testing.T) {
			c := newClient(t, log.url, p)
			first, err := list(c, &releasecontrollerv1.ListReleasesRequest{PageSize: 2})
			if err != nil {
				t.Fatal(err)
			}
			if first.Day != latestDay || first.Total != 3 || len(first.Releases) != 2 || first.PreviousDay != middleDay || first.NextDay != "" {
				t.Fatalf("got day %q total %d with %d entries, previous %q next %q; want %s, 3, 2, %s and none",
					first.Day, first.Total, len(first.Releases), first.PreviousDay, first.NextDay, latestDay, middleDay)
			}
			// Without a day, the token carries on with the day it was made for.
			second, err := list(c, &releasecontrollerv1.ListReleasesRequest{PageSize: 2, PageToken: first.NextPageToken})
			if err != nil {
				t.Fatal(err)
			}
			if second.Day != latestDay || len(second.Releases) != 1 || second.NextPageToken != "" || second.Releases[0].Version != latestDay+".00002" {
				t.Errorf("second page: day %q, %d entries, token %q; want the last entry of %s and no token", second.Day, len(second.Releases), second.NextPageToken, latestDay)
			}
		})
	}
}

func TestListReleasesOldestDayHasNoPrevious(t *testing.T) {
	log := newReadLog(t)
	resp, err := list(newClient(t, log.url, protocols[0]), &releasecontrollerv1.ListReleasesRequest{Day: oldDay})
	if err != nil {
		t.Fatal(err)
	}
	if resp.PreviousDay != "" || resp.NextDay != middleDay || len(resp.Releases) != 2 || resp.NextPageToken != "" {
		t.Errorf("previous %q next %q, %d entries, token %q; want none, %s, 2 and no token", resp.PreviousDay, resp.NextDay, len(resp.Releases), resp.NextPageToken, middleDay)
	}
}

func TestListReleasesPageSize(t *testing.T) {
	log := newReadLog(t)
	c := newClient(t, log.url, protocols[0])
	for _, tc := range []struct {
		size int32
		want int
	}{{0, 100}, {1, 1}, {1000, 250}} {
		resp, err := list(c, &releasecontrollerv1.ListReleasesRequest{Day: middleDay, PageSize: tc.size})
		if err != nil {
			t.Fatalf("page size %d: %v", tc.size, err)
		}
		if len(resp.Releases) != tc.want {
			t.Errorf("page size %d gave %d entries, want %d", tc.size, len(resp.Releases), tc.want)
		}
	}
}

func TestListReleasesRefusesBadRequests(t *testing.T) {
	log := newReadLog(t)
	for _, p := range protocols {
		t.Run(p.name, func(t *testing.T) {
			c := newClient(t, log.url, p)
			// A real token, of the middle day.
			first, err := list(c, &releasecontrollerv1.ListReleasesRequest{Day: middleDay})
			if err != nil {
				t.Fatal(err)
			}
			token := first.NextPageToken
			for _, tc := range []struct {
				name string
				req  *releasecontrollerv1.ListReleasesRequest
				code connect.Code
			}{
				{"negative page size", &releasecontrollerv1.ListReleasesRequest{PageSize: -1}, connect.CodeInvalidArgument},
				{"page size over 1000", &releasecontrollerv1.ListReleasesRequest{PageSize: 1001}, connect.CodeInvalidArgument},
				{"malformed token", &releasecontrollerv1.ListReleasesRequest{PageToken: "not a token"}, connect.CodeInvalidArgument},
				{"token of nothing", &releasecontrollerv1.ListReleasesRequest{PageToken: "Zm9v"}, connect.CodeInvalidArgument},
				{"token of another day", &releasecontrollerv1.ListReleasesRequest{Day: latestDay, PageToken: token}, connect.CodeInvalidArgument},
				{"not a date", &releasecontrollerv1.ListReleasesRequest{Day: "yesterday"}, connect.CodeInvalidArgument},
				{"no such month", &releasecontrollerv1.ListReleasesRequest{Day: "2026-13-01"}, connect.CodeInvalidArgument},
				{"no such day", &releasecontrollerv1.ListReleasesRequest{Day: "2026-02-30"}, connect.CodeInvalidArgument},
				{"short form", &releasecontrollerv1.ListReleasesRequest{Day: "2026-3-10"}, connect.CodeInvalidArgument},
				{"day without entries", &releasecontrollerv1.ListReleasesRequest{Day: "2026-03-11"}, connect.CodeNotFound},
			} {
				_, err := list(c, tc.req)
				t.Logf("%s: %v", tc.name, err)
				expectCode(t, err, tc.code)
			}
		})
	}
}

func TestListReleasesOfAnEmptyLog(t *testing.T) {
	parts := storeOnly(t, releaselog.Options{})
	url := serve(t, parts)
	for _, p := range protocols {
		t.Run(p.name, func(t *testing.T) {
			c := newClient(t, url, p)
			resp, err := list(c, &releasecontrollerv1.ListReleasesRequest{})
			if err != nil {
				t.Fatalf("an empty log must list as empty, got %v", err)
			}
			if resp.Day != "" || len(resp.Releases) != 0 || resp.Total != 0 || resp.NextPageToken != "" || resp.PreviousDay != "" || resp.NextDay != "" {
				t.Errorf("got %v, want an empty response", resp)
			}
			days, err := c.ListReleaseDays(context.Background(), connect.NewRequest(&releasecontrollerv1.ListReleaseDaysRequest{}))
			if err != nil {
				t.Fatal(err)
			}
			if len(days.Msg.Days) != 0 || len(days.Msg.Types) != 0 || days.Msg.TtlDays != 30 {
				t.Errorf("got %v, want no days, no types (all allowed) and the default 30 days", days.Msg)
			}
		})
	}
}

func TestListReleaseDays(t *testing.T) {
	parts := storeOnly(t, releaselog.Options{TTL: 7 * 24 * time.Hour, Types: releaselog.DefaultTypes()})
	for _, day := range []string{middleDay, oldDay, latestDay} {
		fill(t, parts.Store, day, 1)
	}
	url := serve(t, parts)
	for _, p := range protocols {
		t.Run(p.name, func(t *testing.T) {
			resp, err := newClient(t, url, p).ListReleaseDays(context.Background(), connect.NewRequest(&releasecontrollerv1.ListReleaseDaysRequest{}))
			if err != nil {
				t.Fatal(err)
			}
			if want := []string{latestDay, middleDay, oldDay}; !slices.Equal(resp.Msg.Days, want) {
				t.Errorf("days %v, want %v (newest first)", resp.Msg.Days, want)
			}
			if resp.Msg.TtlDays != 7 {
				t.Errorf("ttl_days %d, want 7", resp.Msg.TtlDays)
			}
			var got []releaselog.TypeConfig
			for _, ty := range resp.Msg.Types {
				got = append(got, releaselog.TypeConfig{Name: ty.Name, Color: ty.Color})
			}
			if !slices.Equal(got, releaselog.DefaultTypes()) {
				t.Errorf("types %v, want %v", got, releaselog.DefaultTypes())
			}
		})
	}
}
