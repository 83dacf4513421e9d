package osrc_test

import (
	"fmt"
	"io"
	"net/http"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/server/catalog"
	"github.com/release-controller/release-controller/internal/server/osrc"
)

const (
	benchStreams       = 10
	benchPerStream     = 1000
	benchVerifications = 10
)

// benchCatalog holds 10,000 payloads in 10 streams, each payload with 10 verifications (the
// first an upgrade from the payload before it) of one finished run each; one payload in ten
// is rejected. It returns the stream names and, per stream, its tags.
func benchCatalog() (*catalog.Catalog, []string, [][]string) {
	cat := catalog.New()
	var names []string
	var tags [][]string
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range benchStreams {
		name := fmt.Sprintf("4.%d.0-0.nightly", 10+i)
		var vs []v1alpha1.Verification
		for v := range benchVerifications {
			ver := v1alpha1.Verification{Name: fmt.Sprintf("verify-%d", v), ProwJob: prow(fmt.Sprintf("periodic-%d", v))}
			if v == 0 {
				ver.UpgradeFrom = v1alpha1.UpgradeFromPrevious
			}
			if v >= 7 {
				ver.Type = v1alpha1.Informing
			}
			vs = append(vs, ver)
		}
		s := newStream("bench", name, name, "registry.example/bench/release", vs...)
		cat.SetStream(s)
		names = append(names, name)
		var streamTags []string
		previous := ""
		for j := range benchPerStream {
			created := start.Add(time.Duration(j) * time.Hour)
			tag := name + "-" + created.Format("2006-01-02-150405")
			phase := v1alpha1.PhaseAccepted
			if j%10 == 9 {
				phase = v1alpha1.PhaseRejected
			}
			var statuses []v1alpha1.VerificationStatus
			done := metav1.NewTime(created.Add(time.Hour))
			for v, ver := range vs {
				r := run(fmt.Sprintf("%s-%d", tag, v), 1, v1alpha1.JobSuccess, fmt.Sprintf("https://prow.example/%s/%d", tag, v), &done)
				if v == 0 && previous != "" {
					r.UpgradeFrom = previous
				}
				statuses = append(statuses, v1alpha1.VerificationStatus{Name: ver.Name, Type: ver.Type, State: v1alpha1.JobSuccess, Runs: []v1alpha1.JobRun{r}})
			}
			p := newPayload(s, tag, phase, statuses...)
			p.Status.PayloadImage = "registry.example/bench/release@sha256:" + fmt.Sprintf("%064d", i*benchPerStream+j)
			setPayload(cat, p)
			streamTags = append(streamTags, tag)
			previous = tag
		}
		tags = append(tags, streamTags)
	}
	return cat, names, tags
}

// benchGet requests paths in turn over loopback and reports the 99th percentile latency.
func benchGet(b *testing.B, base string, paths []string) {
	c := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	get := func(path string) {
		resp, err := c.Get(base + path)
		if err != nil {
			b.Fatal(err)
		}
		n, err := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK || n == 0 {
			b.Fatalf("GET %s: %d, %d bytes, %v", path, resp.StatusCode, n, err)
		}
	}
	// Warm up: the first read of a snapshot indexes its upgrades.
	for _, p := range paths {
		get(p)
	}
	var durations []time.Duration
	i := 0
	for b.Loop() {
		start := time.Now()
		get(paths[i%len(paths)])
		durations = append(durations, time.Since(start))
		i++
	}
	slices.Sort(durations)
	p99 := durations[min(len(durations)-1, len(durations)*99/100)]
	b.ReportMetric(float64(p99.Nanoseconds())/1e6, "p99-ms")
	b.ReportMetric(float64(durations[len(durations)/2].Nanoseconds())/1e6, "p50-ms")
}

func serveBench(b *testing.B) (string, []string, [][]string) {
	cat, names, tags := benchCatalog()
	return serve(b, cat, osrc.Options{ArtifactsURL: artifacts}), names, tags
}

// BenchmarkLatest asks each stream for its latest accepted tag, in turn, half of the
// requests with a range and a relative index.
//
//	go test ./internal/server/osrc/ -bench . -run '^$' -benchtime 2000x
func BenchmarkLatest(b *testing.B) {
	base, names, _ := serveBench(b)
	var paths []string
	for _, n := range names {
		paths = append(paths, "/api/v1/releasestream/"+n+"/latest", "/api/v1/releasestream/"+n+"/latest?in="+q(">4.0.0-0")+"&rel=20")
	}
	benchGet(b, base, paths)
}

// BenchmarkTags lists the 1,000 tags of each stream in turn, and the accepted ones.
func BenchmarkTags(b *testing.B) {
	base, names, _ := serveBench(b)
	var paths []string
	for _, n := range names {
		paths = append(paths, "/api/v1/releasestream/"+n+"/tags", "/api/v1/releasestream/"+n+"/tags?phase=Accepted")
	}
	benchGet(b, base, paths)
}

// BenchmarkReleaseInfoShort reads release info (format=short) of tags spread over every
// stream.
func BenchmarkReleaseInfoShort(b *testing.B) {
	base, names, tags := serveBench(b)
	var paths []string
	for i, n := range names {
		for j := 0; j < benchPerStream; j += 97 {
			paths = append(paths, "/api/v1/releasestream/"+n+"/release/"+tags[i][j]+"?format=short")
		}
	}
	benchGet(b, base, paths)
}

// BenchmarkGraph reads the Cincinnati graph of all 10,000 payloads (and about as many
// upgrades), default and prerelease channels in turn.
func BenchmarkGraph(b *testing.B) {
	base, _, _ := serveBench(b)
	benchGet(b, base, []string{"/graph", "/graph?channel=prerelease"})
}
