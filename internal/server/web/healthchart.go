package web

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/release-controller/release-controller/internal/server/catalog"
)

// The health page's charts: one value per day, drawn by the server as SVG (template
// "chart-svg"), with a title per bar and point for tooltips. The page's table of days
// carries the same figures for readers that do not see the drawing.

// chart is one drawing.
type chart struct {
	ID, Title, Caption        string
	Width, Height             int
	Left, Top, Right, Bottom  int // the plot area
	YTicks                    []chartTick
	XLabels                   []chartTick
	Bars                      []chartBar
	Lines                     []chartLine
	Legend                    []chartLegend
	AxisColor, GridColor, Ink string
}

type chartTick struct {
	Pos   int
	Label string
}

type chartBar struct {
	X, Y, W, H int
	Fill       string
	Title      string
	// Link, when set, is where the bar leads.
	Link string
}

type chartLine struct {
	Points string
	Stroke string
	Dots   []chartDot
}

type chartDot struct {
	X, Y  int
	Title string
}

type chartLegend struct {
	Color, Label       string
	X, Y, TextX, TextY int
}

// Geometry of the charts, in pixels.
const (
	chartWidth   = 640
	chartHeight  = 220
	chartLeft    = 64
	chartRight   = chartWidth - 16
	chartTop     = 16
	chartBottom  = chartHeight - 36
	chartXLabels = 8
	colorP90     = "#9a3412"
	colorGrid    = "#e5e7eb"
)

func newChart(id, title, caption string) chart {
	return chart{ID: id, Title: title, Caption: caption, Width: chartWidth, Height: chartHeight,
		Left: chartLeft, Top: chartTop, Right: chartRight, Bottom: chartBottom,
		AxisColor: colorMuted, GridColor: colorGrid, Ink: colorText}
}

// slot is where day i of n sits on the x axis: its left edge and width.
func slot(i, n int) (left, width int) {
	w := float64(chartRight-chartLeft) / float64(n)
	return chartLeft + int(float64(i)*w), max(1, int(w))
}

// yOf maps v of 0..top onto the plot, top up.
func yOf(v, top float64) int {
	if top <= 0 {
		return chartBottom
	}
	return chartBottom - int(v/top*float64(chartBottom-chartTop)+0.5)
}

// xLabels labels the days of a health report (dayLabels).
func xLabels(days []catalog.HealthDay) []chartTick {
	names := make([]string, len(days))
	for i, d := range days {
		names[i] = d.Day
	}
	return dayLabels(names)
}

// dayLabels labels at most chartXLabels of the days (YYYY-MM-DD), evenly spread, as MM-DD.
func dayLabels(days []string) []chartTick {
	step := (len(days) + chartXLabels - 1) / chartXLabels
	var out []chartTick
	for i := 0; i < len(days); i += max(step, 1) {
		left, w := slot(i, len(days))
		out = append(out, chartTick{Pos: left + w/2, Label: days[i][min(5, len(days[i])):]})
	}
	return out
}

// acceptanceChart draws each day's acceptance rate as a bar; a day without a verdict has
// none.
func acceptanceChart(days []catalog.HealthDay) chart {
	c := newChart("acceptance-chart", "Acceptance rate per day",
		"Share of each day's verdicts that accepted the payload (days by creation, UTC).")
	for _, pct := range []int{0, 25, 50, 75, 100} {
		c.YTicks = append(c.YTicks, chartTick{Pos: yOf(float64(pct), 100), Label: strconv.Itoa(pct) + "%"})
	}
	c.XLabels = xLabels(days)
	for i, d := range days {
		if d.Verdicts == 0 {
			continue
		}
		left, w := slot(i, len(days))
		bw := barWidth(w)
		y := yOf(d.AcceptanceRate*100, 100)
		c.Bars = append(c.Bars, chartBar{X: left + (w-bw)/2, Y: y, W: bw, H: chartBottom - y, Fill: colorSuccess,
			Title: fmt.Sprintf("%s: %d of %d verdicts accepted (%s)", d.Day, d.Accepted, d.Verdicts, percent(d.AcceptanceRate, d.Verdicts))})
	}
	return c
}

// verdictTimeChart draws each day's median and 90th percentile time to verdict as two
// lines over the days with verdicts.
func verdictTimeChart(days []catalog.HealthDay) chart {
	c := newChart("verdict-time-chart", "Time from creation to verdict per day",
		"Median (p50) and 90th percentile (p90) of the time from a payload's creation to its verdict, per day of creation.")
	top := 0.0
	for _, d := range days {
		if d.Verdicts > 0 {
			top = max(top, d.VerdictP90, d.VerdictP50)
		}
	}
	step := tickStep(top)
	top = step * 4
	for i := range 5 {
		v := step * float64(i)
		c.YTicks = append(c.YTicks, chartTick{Pos: yOf(v, top), Label: seconds(v)})
	}
	c.XLabels = xLabels(days)
	for _, s := range []struct {
		color, name string
		value       func(catalog.HealthDay) float64
	}{
		{colorPending, "p50", func(d catalog.HealthDay) float64 { return d.VerdictP50 }},
		{colorP90, "p90", func(d catalog.HealthDay) float64 { return d.VerdictP90 }},
	} {
		line := chartLine{Stroke: s.color}
		var points []string
		for i, d := range days {
			if d.Verdicts == 0 {
				continue
			}
			left, w := slot(i, len(days))
			x, y := left+w/2, yOf(s.value(d), top)
			points = append(points, fmt.Sprintf("%d,%d", x, y))
			line.Dots = append(line.Dots, chartDot{X: x, Y: y, Title: fmt.Sprintf("%s: %s %s", d.Day, s.name, seconds(s.value(d)))})
		}
		line.Points = strings.Join(points, " ")
		c.Lines = append(c.Lines, line)
		x := chartLeft + len(c.Legend)*64
		c.Legend = append(c.Legend, chartLegend{Color: s.color, Label: s.name, X: x, Y: chartHeight - 14, TextX: x + 14, TextY: chartHeight - 5})
	}
	return c
}

// tickSteps are the steps of a duration axis, in seconds: the first whose four steps reach
// the largest value is used.
var tickSteps = []float64{15, 60, 5 * 60, 15 * 60, 30 * 60, 3600, 2 * 3600, 6 * 3600, 12 * 3600, 86400, 2 * 86400, 7 * 86400, 30 * 86400}

func tickStep(top float64) float64 {
	for _, s := range tickSteps {
		if s*4 >= top {
			return s
		}
	}
	return tickSteps[len(tickSteps)-1] * float64(int(top/(4*tickSteps[len(tickSteps)-1]))+1)
}

// maxBarWidth keeps a chart of few days from drawing slabs.
const maxBarWidth = 48

// barWidth is the width of a bar in a slot of width w.
func barWidth(w int) int { return min(max(1, w*7/10), maxBarWidth) }
