package bench

import (
	"bufio"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// What the API server's log says about its watch caches, read back after a run so that slow
// verdicts can be put next to it: the cache consistency checks it finished (each lists the
// whole resource from etcd: at 110,000 Jobs that takes both cores for tens of seconds), the
// watchers it closed for not keeping up, and a cache's incoming queue reaching a new high (the
// API server logs only new highs; a full queue of 100 holds back every watch of that resource).
var (
	klogLine     = regexp.MustCompile(`^[IWE](\d{4}) (\d{2}:\d{2}:\d{2}\.\d{6})\s+\d+ \S+\] (.*)$`)
	checkEnded   = regexp.MustCompile(`^"Cache consistency check (passed|failed)".* resource="([^"]+)"`)
	watcherClose = regexp.MustCompile(`^Forcing (\S+) watcher close due to unresponsiveness`)
	queueFilling = regexp.MustCompile(`^cacher \((\S+)\): (\d+) objects queued in incoming channel`)
)

// queueNoted is the incoming queue length worth a note: half of the cacher's 100.
const queueNoted = 50

// apiServerNote is one thing the API server logged, at a time.
type apiServerNote struct {
	at   time.Time
	what string
}

// parseAPIServerLog returns the notes of the log's lines between from and to, in order: the
// consistency checks of the resources checked names (the API server checks every resource;
// those of a few objects take no time), every watcher closed, every queue at a new high of
// queueNoted or more, once per resource and second at its highest. klog writes month, day and
// time of day in the machine's zone; the year is from's.
func parseAPIServerLog(lines []string, from, to time.Time, checked []string) []apiServerNote {
	var notes []apiServerNote
	queued := map[string]int{} // resource and second → index in notes
	for _, line := range lines {
		m := klogLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		at, err := time.ParseInLocation("2006 0102 15:04:05.000000", strconv.Itoa(from.Year())+" "+m[1]+" "+m[2], from.Location())
		if err != nil || at.Before(from) || at.After(to) {
			continue
		}
		msg := m[3]
		if c := checkEnded.FindStringSubmatch(msg); c != nil {
			if slices.Contains(checked, c[2]) {
				notes = append(notes, apiServerNote{at, "consistency check of " + c[2] + " " + c[1]})
			}
			continue
		}
		if c := watcherClose.FindStringSubmatch(msg); c != nil {
			notes = append(notes, apiServerNote{at, c[1] + " watcher closed as unresponsive"})
			continue
		}
		q := queueFilling.FindStringSubmatch(msg)
		if q == nil {
			continue
		}
		n, _ := strconv.Atoi(q[2])
		if n < queueNoted {
			continue
		}
		what := fmt.Sprintf("%s incoming queue at %d (its highest yet)", q[1], n)
		key := q[1] + at.Truncate(time.Second).String()
		if i, ok := queued[key]; ok {
			notes[i].what = what
			continue
		}
		queued[key] = len(notes)
		notes = append(notes, apiServerNote{at, what})
	}
	return notes
}

// apiServerWatchNotes reads the API server's log at path and describes its notes between from
// and to as "+t what", t counted from from; "none" when there are none. Consistency checks are
// noted for the resources checked names.
func apiServerWatchNotes(path string, from, to time.Time, checked ...string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	var lines []string
	scanner := bufio.NewScanner(f)
	scanner.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for scanner.Scan() {
		line := scanner.Text()
		if strings.Contains(line, "consistency check") || strings.Contains(line, "unresponsiveness") || strings.Contains(line, "incoming channel") {
			lines = append(lines, line)
		}
	}
	if err := scanner.Err(); err != nil {
		return "", err
	}
	notes := parseAPIServerLog(lines, from, to, checked)
	if len(notes) == 0 {
		return "none", nil
	}
	parts := make([]string, len(notes))
	for i, n := range notes {
		parts[i] = fmt.Sprintf("+%s %s", n.at.Sub(from).Round(100*time.Millisecond), n.what)
	}
	return strings.Join(parts, "; "), nil
}
