package bench

import (
	"testing"
	"time"
)

func TestParseAPIServerLog(t *testing.T) {
	from := time.Date(2026, 11, 27, 1, 22, 40, 0, time.UTC)
	to := from.Add(time.Minute)
	lines := []string{
		// Before the window: left out.
		`I1127 01:20:33.493078   17057 cache_watcher.go:214] Forcing jobs.batch watcher close due to unresponsiveness: key: "/jobs/", labels: "release-controller.dev/job-type", fields: "". len(c.input) = 10, len(c.result) = 10, graceful = false`,
		// A short queue: not worth a note.
		`I1127 01:22:41.000100   17057 cacher.go:899] cacher (jobs.batch): 12 objects queued in incoming channel.`,
		// One note per resource and second, at its highest.
		`I1127 01:22:46.923420   17057 cacher.go:899] cacher (jobs.batch): 97 objects queued in incoming channel.`,
		`I1127 01:22:46.923460   17057 cacher.go:899] cacher (jobs.batch): 100 objects queued in incoming channel.`,
		`I1127 01:22:46.923500   17057 cacher.go:899] cacher (releasepayloads.release-controller.dev): 60 objects queued in incoming channel.`,
		`I1127 01:22:58.100000   17057 checker.go:97] "Cache consistency check passed" group="batch" resource="jobs" resourceVersion="212004" digest="e3b0c44298fc1c14"`,
		`E1127 01:22:59.100000   17057 checker.go:103] "Cache consistency check failed" group="" resource="configmaps" resourceVersion="1" etcdDigest="a" cacheDigest="b" diffDetail=null`,
		// A resource not asked for.
		`I1127 01:22:59.200000   17057 checker.go:97] "Cache consistency check passed" group="" resource="serviceaccounts" resourceVersion="212004" digest="e3b0c44298fc1c14"`,
		`I1127 01:23:03.289010   17057 cache_watcher.go:214] Forcing jobs.batch watcher close due to unresponsiveness: key: "/jobs/", labels: "", fields: "". len(c.input) = 10, len(c.result) = 10, graceful = false`,
		// Not a klog line, and after the window.
		`gc 94 @360.636s 13%: 0.58+3425+0.022 ms clock`,
		`I1127 01:23:41.000000   17057 cache_watcher.go:214] Forcing jobs.batch watcher close due to unresponsiveness: key: "/jobs/"`,
	}
	want := []string{
		"+6.9s jobs.batch incoming queue at 100 (its highest yet)",
		"+6.9s releasepayloads.release-controller.dev incoming queue at 60 (its highest yet)",
		"+18.1s consistency check of jobs passed",
		"+19.1s consistency check of configmaps failed",
		"+23.3s jobs.batch watcher closed as unresponsive",
	}
	notes := parseAPIServerLog(lines, from, to, []string{"jobs", "configmaps"})
	if len(notes) != len(want) {
		t.Fatalf("got %d notes %v, want %d", len(notes), notes, len(want))
	}
	for i, n := range notes {
		if got := "+" + n.at.Sub(from).Round(100*time.Millisecond).String() + " " + n.what; got != want[i] {
			t.Errorf("note %d = %q, want %q", i, got, want[i])
		}
	}
}
