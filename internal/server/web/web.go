// Package web serves the server-rendered pages: the Releases page, one day of the release
// log with day navigation (Register), and the pages of streams, payloads and pipelines read
// from the catalog (RegisterPages, pages.go). Every page is one html/template set
// (templates/pages: one layout), one stylesheet and one script; every page that changes is
// live over one server-sent-events loop (serveLive), which sends its parts rendered anew. The
// upgrade graph is SVG written by a template too. The assets are embedded, so the binary
// serves everything itself, and the pages work without JavaScript.
package web

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/release-controller/release-controller/internal/releaselog"
	"github.com/release-controller/release-controller/internal/server"
)

// Paths the package serves.
const (
	ReleasesPath = "/releases"
	EventsPath   = "/releases/events"
	// TypesStylesheetPath is the stylesheet of the entry types' colours: the configured
	// colours as rules, so the pages need no inline style (the server's
	// Content-Security-Policy allows none).
	TypesStylesheetPath = "/releases/types.css"
	StaticPrefix        = "/static/"
)

//go:embed templates static
var files embed.FS

// Register serves the Releases page, its event stream and the static assets on s.
func Register(s *server.Server, store *releaselog.Store, opts releaselog.Options) {
	p := newPages(store, opts)
	s.Handle("GET "+ReleasesPath, http.HandlerFunc(p.releases))
	s.Handle("GET "+EventsPath, http.HandlerFunc(p.events), server.EventStream())
	s.Handle("GET "+TypesStylesheetPath, p.typesStylesheet())
	s.Handle("GET "+StaticPrefix, staticHandler())
}

type pages struct {
	store *releaselog.Store
	opts  releaselog.Options
	// colorClass maps an entry type to the class of its colour in the types stylesheet.
	colorClass map[string]string
	// typesCSS is the types stylesheet.
	typesCSS []byte
}

func newPages(store *releaselog.Store, opts releaselog.Options) *pages {
	opts = opts.WithDefaults("")
	colors := map[string]string{}
	// The usual types keep their colours when the configuration has no list (which allows
	// every type); configured colours win.
	for _, types := range [][]releaselog.TypeConfig{releaselog.DefaultTypes(), opts.Types} {
		for _, t := range types {
			colors[t.Name] = t.Color
		}
	}
	p := &pages{store: store, opts: opts, colorClass: map[string]string{}}
	var css bytes.Buffer
	css.WriteString("/* The colours of the release log's entry types (--log-type). */\n")
	for i, name := range slices.Sorted(maps.Keys(colors)) {
		if !ValidColor(colors[name]) {
			continue // refused by the flags; never written into a stylesheet
		}
		class := "type-" + strconv.Itoa(i)
		p.colorClass[name] = class
		fmt.Fprintf(&css, ".badge.%s { --type-color: %s; }\n", class, colors[name])
	}
	p.typesCSS = css.Bytes()
	return p
}

// colorPattern is what a type's colour may hold: CSS colour names, #hex, and colour functions
// such as rgb(...) or hsl(... / 50%) — nothing that could end a declaration or a rule.
var (
	colorPattern   = regexp.MustCompile(`^[A-Za-z0-9#(),.%/ +-]{1,64}$`)
	colorFunction  = regexp.MustCompile(`([A-Za-z-]*)\(`)
	colorFunctions = []string{"rgb", "rgba", "hsl", "hsla", "hwb", "lab", "lch", "oklab", "oklch", "color", "color-mix"}
)

// ValidColor reports whether color may be written into the types stylesheet: a CSS colour
// name, #hex, or a colour function such as rgb(...) or hsl(...).
func ValidColor(color string) bool {
	if !colorPattern.MatchString(color) || strings.Count(color, "(") != strings.Count(color, ")") {
		return false
	}
	for _, m := range colorFunction.FindAllStringSubmatch(color, -1) {
		if !slices.Contains(colorFunctions, strings.ToLower(m[1])) {
			return false
		}
	}
	return true
}

// typesStylesheet serves the types stylesheet, revalidated like the static assets.
func (p *pages) typesStylesheet() http.Handler {
	sum := sha256.Sum256(p.typesCSS)
	etag := `"` + hex.EncodeToString(sum[:8]) + `"`
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/css; charset=utf-8")
		w.Header().Set("ETag", etag)
		w.Header().Set("Cache-Control", "no-cache")
		http.ServeContent(w, r, "types.css", time.Time{}, bytes.NewReader(p.typesCSS))
	})
}

// pageData is what the Releases page's templates render.
type pageData struct {
	pageBase
	// View is the day shown (the releases template).
	View dayView
	// Error explains a bad request (the error template).
	Error string
	// MinDay and MaxDay bound the date picker.
	MinDay, MaxDay string
	TTLDays        int
	// Filter is the filter applied; Types and Streams are offered to pick from.
	Filter         logFilter
	Types, Streams []string
}

func (p *pages) releases(w http.ResponseWriter, r *http.Request) {
	now := p.opts.Clock.Now()
	data := pageData{pageBase: pageBase{TypeColors: true}, TTLDays: int(p.opts.TTL / (24 * time.Hour))}
	data.MinDay, data.MaxDay = p.pickerRange(now)

	f, err := parseLogFilter(r.URL.Query())
	if err != nil {
		data.Title = "Bad filter"
		data.Error = err.Error() + "."
		renderPage(w, http.StatusBadRequest, "releases-error", data)
		return
	}
	data.Filter = f
	day := r.URL.Query().Get("day")
	if day == "" {
		// The latest day with entries; today when the log is empty, so the page can show
		// today's first entries as they come.
		latest, ok := p.store.Latest()
		if !ok {
			latest = releaselog.DayOf(now)
		}
		day = latest
	} else if _, err := releaselog.ParseDay(day); err != nil {
		data.Title = "Not a day"
		data.Error = "“" + day + "” is not a day. Pick one below, or give it as YYYY-MM-DD, e.g. " + releaselog.DayOf(now) + "."
		renderPage(w, http.StatusBadRequest, "releases-error", data)
		return
	}
	view, err := p.dayView(day, f, data.MinDay, data.MaxDay)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	data.Types, data.Streams = p.filterOptions()
	data.Title = "Releases on " + day
	data.Events = EventsPath + "?day=" + day + f.query()
	data.View = view
	renderPage(w, http.StatusOK, "releases", data)
}

// filterOptions are the types and streams the filter form offers: the configured types and
// those of the kept entries, and the streams their payload links name.
func (p *pages) filterOptions() (types, streams []string) {
	seenType, seenStream := map[string]bool{}, map[string]bool{}
	for _, t := range p.opts.Types {
		seenType[t.Name] = true
	}
	for _, day := range p.store.Days() {
		for _, e := range p.store.Entries(day) {
			seenType[e.Type] = true
			if _, s, ok := streamOfLink(e.Link); ok {
				seenStream[s] = true
			}
		}
	}
	return slices.Sorted(maps.Keys(seenType)), slices.Sorted(maps.Keys(seenStream))
}

// pickerRange is the range of the date picker and of the counts per day (DayRange).
func (p *pages) pickerRange(now time.Time) (minDay, maxDay string) {
	var oldest, newest string
	if days := p.store.Days(); len(days) > 0 {
		oldest, newest = days[len(days)-1], days[0]
	}
	return DayRange(now, p.opts.TTL, oldest, newest)
}

// MaxPageDays bounds the days the Releases page counts and draws, whatever days exist.
const MaxPageDays = 400

// DayRange is the range of days the Releases page offers and draws a bar for: from the oldest
// day the log keeps (ttl) to today, widened to the oldest and newest days the store holds
// (empty when it holds none: a day not yet expired by the controller, an entry dated a little
// in the future), but never beyond tomorrow and never more than MaxPageDays days. Without the
// bounds a day named release-9999-12-31 made the page draw a bar for every day until then.
func DayRange(now time.Time, ttl time.Duration, oldest, newest string) (first, last string) {
	const day = 24 * time.Hour
	today := now.UTC().Truncate(day)
	// A day is kept while its start plus the TTL is after now.
	start := now.Add(-ttl).Add(day).UTC().Truncate(day)
	end := today
	if t, err := releaselog.ParseDay(oldest); err == nil && t.Before(start) {
		start = t
	}
	if t, err := releaselog.ParseDay(newest); err == nil && t.After(end) {
		end = t
	}
	if tomorrow := today.Add(day); end.After(tomorrow) {
		end = tomorrow
	}
	if start.After(end) {
		start = end // a TTL under a day: today alone
	}
	if earliest := end.Add(-(MaxPageDays - 1) * day); start.Before(earliest) {
		start = earliest
	}
	return releaselog.DayOf(start), releaselog.DayOf(end)
}

// staticHandler serves the embedded assets. They are revalidated on every use and answered
// with 304 while unchanged (the ETag is their content hash), so a new build's assets are
// picked up at once.
func staticHandler() http.Handler {
	static, err := fs.Sub(files, "static")
	if err != nil {
		panic(err)
	}
	etags := map[string]string{}
	err = fs.WalkDir(static, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		content, err := fs.ReadFile(static, path)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(content)
		etags[path] = `"` + hex.EncodeToString(sum[:8]) + `"`
		return nil
	})
	if err != nil {
		panic(err)
	}
	serve := http.StripPrefix(StaticPrefix, http.FileServerFS(static))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := strings.TrimPrefix(r.URL.Path, StaticPrefix)
		etag, ok := etags[name]
		if !ok {
			// Only the files themselves: no directory listings.
			http.NotFound(w, r)
			return
		}
		w.Header().Set("ETag", etag)
		w.Header().Set("Cache-Control", "no-cache")
		serve.ServeHTTP(w, r)
	})
}
