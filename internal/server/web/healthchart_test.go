package web

import (
	"net/url"
	"testing"

	"github.com/release-controller/release-controller/internal/server/catalog"
)

func TestParseHealthQuery(t *testing.T) {
	for _, tc := range []struct {
		query   string
		want    healthQuery
		wantErr bool
	}{
		{"", healthQuery{Payloads: catalog.DefaultHealthPayloads, Days: catalog.DefaultHealthDays}, false},
		{"payloads=10&days=3&format=json", healthQuery{Payloads: 10, Days: 3, JSON: true}, false},
		{"format=html&payloads=10000&days=365", healthQuery{Payloads: 10000, Days: 365}, false},
		{"payloads=10001", healthQuery{}, true},
		{"days=366", healthQuery{}, true},
		{"days=-1", healthQuery{}, true},
		{"payloads=1e3", healthQuery{}, true},
		{"format=csv", healthQuery{}, true},
	} {
		q, _ := url.ParseQuery(tc.query)
		got, err := parseHealthQuery(q)
		if (err != nil) != tc.wantErr || (!tc.wantErr && got != tc.want) {
			t.Errorf("%q: got %+v, %v; want %+v (error %v)", tc.query, got, err, tc.want, tc.wantErr)
		}
	}
}

func TestTickStep(t *testing.T) {
	for _, tc := range []struct{ top, want float64 }{
		{0, 15},
		{60, 15},
		{61, 60},
		{3 * 3600, 3600},
		{5 * 3600, 2 * 3600},
		{400 * 86400, 30 * 86400 * 4},
	} {
		if got := tickStep(tc.top); got != tc.want {
			t.Errorf("tickStep(%v) = %v, want %v", tc.top, got, tc.want)
		}
	}
}

func TestAcceptanceChart(t *testing.T) {
	days := []catalog.HealthDay{
		{Day: "2026-11-20", Payloads: 2, Verdicts: 2, Accepted: 2, AcceptanceRate: 1},
		{Day: "2026-11-21", Payloads: 1},
		{Day: "2026-11-22", Payloads: 4, Verdicts: 4, Accepted: 1, AcceptanceRate: 0.25},
	}
	c := acceptanceChart(days)
	if len(c.Bars) != 2 {
		t.Fatalf("bars %+v: want one per day with verdicts", c.Bars)
	}
	full, quarter := c.Bars[0], c.Bars[1]
	if full.Y != chartTop || full.Y+full.H != chartBottom {
		t.Errorf("100%%: y %d..%d, want %d..%d", full.Y, full.Y+full.H, chartTop, chartBottom)
	}
	if want := (chartBottom - chartTop) / 4; quarter.H != want || quarter.Y+quarter.H != chartBottom {
		t.Errorf("25%%: height %d, want %d", quarter.H, want)
	}
	if quarter.X <= full.X {
		t.Errorf("days go left to right: %d then %d", full.X, quarter.X)
	}
	if len(c.XLabels) != 3 || c.XLabels[0].Label != "11-20" {
		t.Errorf("x labels %+v", c.XLabels)
	}
	if quarter.Title != "2026-11-22: 1 of 4 verdicts accepted (25%)" {
		t.Errorf("title %q", quarter.Title)
	}
}

func TestVerdictTimeChart(t *testing.T) {
	days := []catalog.HealthDay{
		{Day: "2026-11-20", Verdicts: 1, VerdictP50: 3600, VerdictP90: 4 * 3600},
		{Day: "2026-11-21"},
		{Day: "2026-11-22", Verdicts: 3, VerdictP50: 2 * 3600, VerdictP90: 2 * 3600},
	}
	c := verdictTimeChart(days)
	if len(c.Lines) != 2 || len(c.Lines[0].Dots) != 2 || len(c.Lines[1].Dots) != 2 {
		t.Fatalf("lines %+v: want p50 and p90 over the two days with verdicts", c.Lines)
	}
	// The axis goes to 4h: p90's 4h is at the top, p50's 1h a quarter up.
	if got := c.Lines[1].Dots[0].Y; got != chartTop {
		t.Errorf("4h at y %d, want %d", got, chartTop)
	}
	if got, want := c.Lines[0].Dots[0].Y, chartBottom-(chartBottom-chartTop)/4; got != want {
		t.Errorf("1h at y %d, want %d", got, want)
	}
	if c.YTicks[4].Label != "4h 0m" {
		t.Errorf("top tick %q", c.YTicks[4].Label)
	}
}
