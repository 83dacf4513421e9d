//go:build !unit

package releaseapi_test

import (
	"context"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/release-controller/release-controller/api/v1alpha1"
	releasecontrollerv1 "github.com/release-controller/release-controller/internal/gen/releasecontroller/v1"
	"github.com/release-controller/release-controller/internal/releaselog"
	"github.com/release-controller/release-controller/internal/server/releaseapi"
)

// BenchmarkListReleases measures reads through the real handler over HTTP on loopback, with
// the store as large as the log gets: 365 days, the latest holding 10,000 entries (the most a
// day holds). The store is filled directly: the API server could not hold 10,000 entries in
// one object, and reads never touch it anyway.
//
//	go test -run '^$' -bench BenchmarkListReleases ./internal/server/releaseapi/
func BenchmarkListReleases(b *testing.B) {
	parts := storeOnly(b, releaselog.Options{Types: releaselog.DefaultTypes()})
	last := time.Date(2026, 12, 31, 0, 0, 0, 0, time.UTC)
	var latest string
	for i := range 365 {
		day := releaselog.DayOf(last.AddDate(0, 0, -i))
		n := 100
		if i == 0 {
			latest, n = day, v1alpha1.MaxReleaseLogEntries
		}
		fill(b, parts.Store, day, n)
	}
	url := serve(b, parts)
	ctx := context.Background()

	// Clients ask for gzip by default, and on loopback compressing a page costs more than
	// serving it: the uncompressed run shows the handler's own cost.
	uncompressed := protocol{name: "connect-proto-uncompressed", opts: []connect.ClientOption{connect.WithAcceptCompression("gzip", nil, nil)}}
	for _, p := range []protocol{protocols[0], uncompressed, protocols[1], protocols[2]} {
		c := newClient(b, url, p)
		// The token of the page at entry 5,000, reached by paging as a client does.
		middle := ""
		for range 5 {
			resp, err := c.ListReleases(ctx, connect.NewRequest(&releasecontrollerv1.ListReleasesRequest{Day: latest, PageSize: 1000, PageToken: middle}))
			if err != nil {
				b.Fatal(err)
			}
			middle = resp.Msg.NextPageToken
		}
		for _, bc := range []struct {
			name string
			req  *releasecontrollerv1.ListReleasesRequest
		}{
			{"first-page", &releasecontrollerv1.ListReleasesRequest{}},
			{"middle-page", &releasecontrollerv1.ListReleasesRequest{Day: latest, PageToken: middle}},
		} {
			b.Run(p.name+"/"+bc.name, func(b *testing.B) {
				for b.Loop() {
					resp, err := c.ListReleases(ctx, connect.NewRequest(bc.req))
					if err != nil {
						b.Fatal(err)
					}
					if len(resp.Msg.Releases) != releaseapi.DefaultPageSize || resp.Msg.Total != int32(v1alpha1.MaxReleaseLogEntries) {
						b.Fatalf("got %d of %d entries", len(resp.Msg.Releases), resp.Msg.Total)
					}
				}
			})
		}
		b.Run(p.name+"/list-release-days", func(b *testing.B) {
			for b.Loop() {
				resp, err := c.ListReleaseDays(ctx, connect.NewRequest(&releasecontrollerv1.ListReleaseDaysRequest{}))
				if err != nil {
					b.Fatal(err)
				}
				if len(resp.Msg.Days) != 365 {
					b.Fatalf("got %d days", len(resp.Msg.Days))
				}
			}
		})
	}
}
