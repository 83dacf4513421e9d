package osrc_test

import (
	"fmt"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/server/catalog"
	"github.com/release-controller/release-controller/internal/server/osrc"
	"github.com/release-controller/release-controller/internal/verdict/verdicttest"
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
				// A rejected payload failed its upgrade (the first blocking verification).
				state := v1alpha1.JobSuccess
				if v == 0 && phase == v1alpha1.PhaseRejected {
					state = v1alpha1.JobFailure
				}
				r := run(fmt.Sprintf("%s-%d", tag, v), 1, state, fmt.Sprintf("https://prow.example/%s/%d", tag, v), &done)
				if v == 0 && previous != "" {
					r.UpgradeFrom = previous
				}
				statuses = append(statuses, v1alpha1.VerificationStatus{Name: ver.Name, Type: ver.Type, State: state, Runs: []v1alpha1.JobRun{r}})
			}
			p := newPayload(s, tag, phase, statuses...)
			p.Status.PayloadImage = "registry.example/bench/release@sha256:" + fmt.Sprintf("%064d", i*benchPerStream+j)
			// Its verdict an hour after its creation (what channel membership reads).
			verdicttest.Earn(p, phase)
			for k := range p.Status.Conditions {
				p.Status.Conditions[k].LastTransitionTime = done
			}
			cat.SetPayload(p)
			streamTags = append(streamTags, tag)
			previous = tag
		}
		tags = append(tags, streamTags)
	}
	return cat, names, tags
}

// benchGet requests paths in turn over loopback and reports the 99th percentile latency.
func benchGet(b *testing.B, base string, paths []string) {
	benchTimed(b, base, paths, nil)
}

// benchTimed is benchGet with before(i) run ahead of the i-th request, outside its time.
func benchTimed(b *testing.B, base string, paths []string, before func(i int)) {
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
		if before != nil {
			b.StopTimer()
			before(i)
			b.StartTimer()
		}
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

const benchRisks = 1000

// benchUpdateService gives the bench catalog's streams the update service at its scale: 20
// declared channels (candidate, every Accepted payload, and fast, fed from it after a day, in
// every stream; stable-4.N, fed from fast after three days, in every stream; eus-4.N, fed
// from stable after a week and filtered, in eight of them) and 1,000 UpgradeRisks: 600 into a
// payload by its version and 400 by a pattern, a third of each with a PromQL then an Always
// rule, a third Always, a third without rules (blocking), half from every version and half
// from a pattern. It returns the time membership is read at.
func benchUpdateService(cat *catalog.Catalog, names []string, tags [][]string) time.Time {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	now := start.Add((benchPerStream + 12) * time.Hour)
	for i, name := range names {
		s, err := cat.Stream(name)
		if err != nil {
			panic(err)
		}
		spec := s.Object.DeepCopy()
		minor := fmt.Sprintf("4.%d", 10+i)
		channels := []v1alpha1.UpdateChannel{
			{Name: "candidate", Versions: `^` + regexp.QuoteMeta(minor) + `\..*$`},
			{Name: "fast", Feeders: []v1alpha1.ChannelFeeder{{From: "candidate", Delay: metav1.Duration{Duration: 24 * time.Hour}}}},
			{Name: "stable-" + minor, Feeders: []v1alpha1.ChannelFeeder{{From: "fast", Delay: metav1.Duration{Duration: 72 * time.Hour}}}},
		}
		if i < 8 {
			channels = append(channels, v1alpha1.UpdateChannel{Name: "eus-" + minor,
				Feeders: []v1alpha1.ChannelFeeder{{From: "stable-" + minor, Delay: metav1.Duration{Duration: 7 * 24 * time.Hour}, Filter: `^.*-0[1-5]-[0-9]{6}$`}}})
		}
		spec.Spec.UpdateService = &v1alpha1.UpdateService{Channels: channels}
		cat.SetStream(spec)
	}
	promql := &v1alpha1.PromQLRule{PromQL: `topk(1, cluster_infrastructure_provider{type=~"AWS|GCP"}) or 0 * group(cluster_version)`}
	for r := range benchRisks {
		i := r % benchStreams
		j := (r * 7) % benchPerStream
		spec := v1alpha1.UpgradeRiskSpec{Name: fmt.Sprintf("BenchRisk%d", r), Message: "A risk of the benchmark.", URL: fmt.Sprintf("https://issues.example/%d", r)}
		if r%2 == 0 {
			spec.Stream = names[i]
		}
		if r < 600 {
			spec.To = tags[i][j]
		} else {
			// Every payload of one day of the stream.
			day := tags[i][j][:len(tags[i][j])-len("-150405")]
			spec.To = "^" + regexp.QuoteMeta(day) + "-.*$"
		}
		if r%4 == 1 {
			spec.From = "^" + regexp.QuoteMeta(names[i]) + "-2026-01-0[1-3]-.*$"
		}
		switch r % 3 {
		case 0:
			spec.MatchingRules = []v1alpha1.MatchingRule{{Type: v1alpha1.MatchingRulePromQL, PromQL: promql}, {Type: v1alpha1.MatchingRuleAlways}}
		case 1:
			spec.MatchingRules = []v1alpha1.MatchingRule{{Type: v1alpha1.MatchingRuleAlways}}
		}
		cat.SetRisk(&v1alpha1.UpgradeRisk{
			ObjectMeta: metav1.ObjectMeta{Namespace: "bench", Name: fmt.Sprintf("risk-%04d", r), CreationTimestamp: metav1.NewTime(start.Add(time.Duration(j) * time.Hour))},
			Spec:       spec,
		})
	}
	return now
}

// serveUpdateBench serves the bench catalog with the update service's channels and risks,
// read at a fixed time.
func serveUpdateBench(b *testing.B) (string, *catalog.Catalog, []string) {
	cat, names, tags := benchCatalog()
	now := benchUpdateService(cat, names, tags)
	base := serve(b, cat, osrc.Options{ArtifactsURL: artifacts, PublicURL: "https://release.example.com", Clock: clocktesting.NewFakePassiveClock(now)})
	return base, cat, names
}

// BenchmarkGraphUpdateService reads /graph from the cache with 10,000 payloads, 1,000 risks
// and 20 declared channels: every declared channel in turn (candidate holds the 9,000 Accepted
// payloads), and an architecture's view of it.
//
//	go test ./internal/server/osrc/ -run '^$' -bench BenchmarkGraphUpdateService -benchtime 2000x
func BenchmarkGraphUpdateService(b *testing.B) {
	base, _, names := serveUpdateBench(b)
	paths := []string{"/graph?channel=candidate", "/graph?channel=fast", "/graph?channel=candidate&arch=amd64"}
	for i, name := range names {
		minor := strings.TrimSuffix(name, ".0-0.nightly")
		paths = append(paths, "/graph?channel=stable-"+minor)
		if i < 8 {
			paths = append(paths, "/graph?channel=eus-"+minor)
		}
	}
	benchGet(b, base, paths)
}

// BenchmarkGraphRebuild declares a risk, then reads /graph?channel=candidate: the whole
// answer computed again (the model of 10,000 payloads, 1,000 risks and 20 channels, the plan
// and the encoding), which is how long a risk takes to reach clusters.
//
//	go test ./internal/server/osrc/ -run '^$' -bench BenchmarkGraphRebuild -benchtime 20x
func BenchmarkGraphRebuild(b *testing.B) {
	base, cat, names := serveUpdateBench(b)
	benchTimed(b, base, []string{"/graph?channel=candidate"}, func(i int) {
		cat.SetRisk(&v1alpha1.UpgradeRisk{
			ObjectMeta: metav1.ObjectMeta{Namespace: "bench", Name: fmt.Sprintf("declared-%d", i)},
			Spec: v1alpha1.UpgradeRiskSpec{Stream: names[i%len(names)], To: "^" + regexp.QuoteMeta(names[i%len(names)]) + "-2026-01-1.*$",
				Name: "Declared", Message: "Declared during the benchmark.", URL: "https://issues.example/declared",
				MatchingRules: []v1alpha1.MatchingRule{{Type: v1alpha1.MatchingRuleAlways}}},
		})
	})
}
