package web_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/changelog"
	"github.com/release-controller/release-controller/internal/server"
	"github.com/release-controller/release-controller/internal/server/catalog"
	"github.com/release-controller/release-controller/internal/server/web"
	"github.com/release-controller/release-controller/internal/upgradegraph"
)

// The scale of the page benchmarks: 10 streams of 1,000 payloads with 10 verifications each.
const (
	benchStreams       = 10
	benchPayloads      = 1000
	benchVerifications = 10
)

type benchData struct {
	cat  *catalog.Catalog
	tags [][]string // per stream, newest first
	logs *fakeChangeLogs
}

var benchOnce = sync.OnceValue(func() benchData {
	d := benchData{cat: catalog.New(), logs: &fakeChangeLogs{result: sampleChangeLog, cached: map[string]*changelog.ChangeLog{}}}
	start := at("2026-10-01T00:00:00Z")
	phases := []v1alpha1.PayloadPhase{v1alpha1.PhaseAccepted, v1alpha1.PhaseAccepted, v1alpha1.PhaseRejected, v1alpha1.PhaseAccepted, v1alpha1.PhaseFailed}
	for s := range benchStreams {
		name := fmt.Sprintf("bench-%d", s)
		tagPrefix := fmt.Sprintf("4.%d.0-0.nightly", 10+s)
		d.cat.SetStream(newReleaseStream("bench", name, tagPrefix, 3))
		var tags []string
		var edges []upgradegraph.Edge
		var prevAccepted string
		for i := range benchPayloads {
			created := start.Add(time.Duration(i) * 30 * time.Minute)
			tag := tagPrefix + "-" + created.Format("2006-01-02-150405")
			phase := phases[i%len(phases)]
			if i >= benchPayloads-2 {
				phase = v1alpha1.PhaseReady
			}
			p := newPayload("bench", name, tag, phase, created.Format(time.RFC3339))
			var verifications []v1alpha1.Verification
			for v := range benchVerifications {
				vname := fmt.Sprintf("verify-%d", v)
				cfg := v1alpha1.Verification{Name: vname, Type: v1alpha1.Blocking, MaxRetries: 1}
				if v >= 7 {
					cfg.Type = v1alpha1.Informing
				}
				r := v1alpha1.JobRun{Kind: v1alpha1.RunKindJob, Namespace: "bench", Name: tag[len(tag)-17:] + "-" + vname, Attempt: 1,
					State: v1alpha1.JobSuccess, URL: "https://ci.example.com/" + tag + "/" + vname,
					StartTime: &metav1.Time{Time: created.Add(time.Minute)}, CompletionTime: &metav1.Time{Time: created.Add(20 * time.Minute)}}
				st := v1alpha1.VerificationStatus{Name: vname, Type: cfg.Type, State: v1alpha1.JobSuccess, Runs: []v1alpha1.JobRun{r}}
				switch {
				case phase == v1alpha1.PhaseRejected && v == 2:
					st.State, st.Runs[0].State = v1alpha1.JobFailure, v1alpha1.JobFailure
				case phase == v1alpha1.PhaseReady && v%2 == 0:
					st.State, st.Runs[0].State, st.Runs[0].CompletionTime = v1alpha1.JobPending, v1alpha1.JobPending, nil
				}
				if v == 9 && prevAccepted != "" {
					cfg.UpgradeFrom, st.UpgradeFrom, st.Runs[0].UpgradeFrom = v1alpha1.UpgradeFromPrevious, v1alpha1.UpgradeFromPrevious, prevAccepted
					if st.Runs[0].State.IsTerminal() {
						edges = append(edges, upgradegraph.Edge{From: prevAccepted, To: tag, Verification: vname, Run: st.Runs[0].Name, State: st.Runs[0].State, URL: st.Runs[0].URL})
					}
				}
				verifications = append(verifications, cfg)
				if phase != v1alpha1.PhaseFailed {
					p.Status.Verifications = append(p.Status.Verifications, st)
				}
			}
			p.Spec.PayloadVerificationConfig.Verifications = verifications
			if phase == v1alpha1.PhaseFailed {
				p.Status.PayloadImage = ""
			}
			setPayload(d.cat, p)
			if phase == v1alpha1.PhaseAccepted {
				prevAccepted = tag
			}
			tags = append(tags, tag)
		}
		if len(edges) > upgradegraph.MaxEdges {
			edges = edges[len(edges)-upgradegraph.MaxEdges:]
		}
		d.cat.SetGraph(graphConfigMap("bench", name, edges...))
		slices.Reverse(tags)
		d.tags = append(d.tags, tags)
	}
	// Every payload page's changelog was computed before: the benchmark measures the page.
	for s, tags := range d.tags {
		st, _ := d.cat.StreamIn("bench", fmt.Sprintf("bench-%d", s))
		for _, tag := range tags {
			e, _ := st.Entry(tag)
			if prev, ok := st.Previous(tag); ok {
				d.logs.cached[pairKey(prev.Tag(), tag)] = sampleChangeLog(prev.Payload, e.Payload)
			}
		}
	}
	return d
})

// benchPages measures GETs of the paths over loopback and reports the latency percentiles.
// With fresh set, each request follows a change of the stream it reads (a new catalog
// snapshot, made outside the measured time): nothing of the page is cached, and the
// snapshot's upgrade index is built by the request. Without, the paths are requested once
// before, and the requests are those of many viewers of unchanged streams.
func benchPages(b *testing.B, paths []string, streams []string, fresh bool) {
	d := benchOnce()
	benchPagesOf(b, d.cat, d.logs, at("2026-11-22T16:00:00Z"), paths, streams, fresh)
}

// benchPagesOf is benchPages on a catalog of its own, with the pages' clock at now.
func benchPagesOf(b *testing.B, cat *catalog.Catalog, logs changelog.PayloadChangeLogs, now time.Time, paths []string, streams []string, fresh bool) {
	s := server.New()
	web.RegisterPages(s, cat, web.PageOptions{ChangeLogs: logs, Clock: clocktesting.NewFakePassiveClock(now)})
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	client := srv.Client()
	get := func(path string) int {
		resp, err := client.Get(srv.URL + path)
		if err != nil {
			b.Fatal(err)
		}
		n, _ := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b.Fatalf("%s: status %d", path, resp.StatusCode)
		}
		return int(n)
	}
	size := 0
	for _, path := range paths {
		size = max(size, get(path))
	}
	objects := map[string]*v1alpha1.ReleaseStream{}
	for _, name := range streams {
		st, _ := cat.StreamIn("bench", name)
		objects[name] = st.Object
	}
	latencies := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if fresh {
			cat.SetStream(objects[streams[i%len(streams)]])
		}
		start := time.Now()
		get(paths[i%len(paths)])
		latencies = append(latencies, time.Since(start))
	}
	b.StopTimer()
	slices.Sort(latencies)
	pct := func(p float64) float64 {
		return float64(latencies[min(len(latencies)-1, int(float64(len(latencies))*p))].Microseconds()) / 1000
	}
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
	b.ReportMetric(float64(size)/1024, "max-KiB/page")
}

func streamPagePaths() (paths, streams []string) {
	for s := range benchStreams {
		paths = append(paths, fmt.Sprintf("/releasestream/bench-%d", s))
		streams = append(streams, fmt.Sprintf("bench-%d", s))
	}
	return paths, streams
}

// releasePagePaths are five payloads of each stream, each of its stream in turn.
func releasePagePaths() (paths, streams []string) {
	d := benchOnce()
	for _, i := range []int{0, 1, 5, 500, 998} {
		for s := range benchStreams {
			paths = append(paths, releaseURL("bench", fmt.Sprintf("bench-%d", s), d.tags[s][i]))
			streams = append(streams, fmt.Sprintf("bench-%d", s))
		}
	}
	return paths, streams
}

// BenchmarkStreamPage serves the first page (50 payloads, with their upgrades) of streams
// of 1,000 payloads, each request after a change of its stream.
func BenchmarkStreamPage(b *testing.B) {
	paths, streams := streamPagePaths()
	benchPages(b, paths, streams, true)
}

// BenchmarkStreamPageCached is BenchmarkStreamPage for unchanged streams.
func BenchmarkStreamPageCached(b *testing.B) {
	paths, streams := streamPagePaths()
	benchPages(b, paths, streams, false)
}

// BenchmarkReleasePage serves payload pages (10 verifications, upgrades both ways, the
// choice of base, and a changelog computed before) of streams of 1,000 payloads, each
// request after a change of its stream.
func BenchmarkReleasePage(b *testing.B) {
	paths, streams := releasePagePaths()
	benchPages(b, paths, streams, true)
}

// BenchmarkReleasePageCached is BenchmarkReleasePage for unchanged streams.
func BenchmarkReleasePageCached(b *testing.B) {
	paths, streams := releasePagePaths()
	benchPages(b, paths, streams, false)
}

// BenchmarkIndexPage serves the index of the 10 streams, each request after a change of
// one of them.
func BenchmarkIndexPage(b *testing.B) {
	_, streams := streamPagePaths()
	benchPages(b, []string{"/"}, streams, true)
}
