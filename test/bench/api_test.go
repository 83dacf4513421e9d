//go:build !unit

package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/devenv/registry"
	"github.com/release-controller/release-controller/internal/jobcontract"
	"github.com/release-controller/release-controller/internal/releaselog"
	"github.com/release-controller/release-controller/internal/upgradegraph"
)

// The read side's workload: streams × payloads per stream, each payload with this many
// finished verifications, one of them an upgrade from the previous payload.
const (
	readStreams          = 10
	readVerifications    = 10
	readNamespace        = "releases"
	readRequestsPerRoute = 1000
	readPageRequests     = 200
)

// BenchmarkShippedAPI measures `release-controller api --kubeconfig FILE --changelog-cache-dir
// DIR --git-source-allow file://REPO` as shipped, serving 10,000 payloads in 10 streams (BENCH_API_PAYLOADS sets the total)
// from its informer caches: latency of the REST routes scripts call most and of the stream,
// release and stream health pages, over loopback, one request at a time; the memory its caches hold per payload;
// and the latency of a cached changelog (release info with it, /changelog as JSON, the payload
// page with it) between two consecutive accepted payloads of the first stream (its two newest
// at the default size), whose payload images are built into the embedded registry from
// components of a local git repository.
func BenchmarkShippedAPI(b *testing.B) {
	n := envInt(b, "BENCH_API_PAYLOADS", 10000)
	binary := releaseControllerBinary(b)
	for b.Loop() {
		runShippedAPI(b, binary, n)
	}
}

func runShippedAPI(b *testing.B, binary string, n int) {
	ctx := context.Background()
	dir := runDir(b)
	perStream := max(1, n/readStreams)
	n = perStream * readStreams
	progressf("shipped api: %d streams x %d payloads x %d verifications; binary %s", readStreams, perStream, readVerifications, binary)

	reg, err := registry.Start(ctx, registry.Options{Dir: filepath.Join(dir, "registry")})
	if err != nil {
		b.Fatal(err)
	}
	defer reg.Close()
	env, kubeconfig := startAPIServer(b, dir)
	defer stopAPIServer(env)
	createNamespace(b, env, releaselog.DefaultNamespace)
	createNamespace(b, env, readNamespace)

	listen := freeAddr(b)
	api := startProcess(b, binary, filepath.Join(dir, "api.log"), "api", "--kubeconfig", kubeconfig, "--listen", listen,
		"--changelog-cache-dir", filepath.Join(dir, "changelog-cache"),
		"--git-source-allow", "file://"+filepath.Join(dir, sourceRepoDir)) // the repository of buildChangeLogPayloads
	defer api.stop()
	base := "http://" + listen
	waitServing(b, api, base+"/healthz")
	// Let it settle with empty caches, then take its size without payloads.
	time.Sleep(2 * time.Second)
	rssBefore := rssKB(api.Pid())

	setupStart := time.Now()
	streams := make([]string, readStreams)
	for i := range streams {
		streams[i] = fmt.Sprintf("4.%d.0-0.nightly", 10+i)
		s := &v1alpha1.ReleaseStream{
			ObjectMeta: metav1.ObjectMeta{Namespace: readNamespace, Name: streams[i]},
			Spec: v1alpha1.ReleaseStreamSpec{
				TagPrefix:         streams[i],
				PayloadRepository: "registry.example.com/ocp/release",
				Components:        []v1alpha1.ComponentSource{{Name: "api", Image: "registry.example.com/ocp/api:latest"}},
			},
		}
		if err := env.Client.Create(ctx, s); err != nil {
			b.Fatalf("creating stream %s: %v", s.Name, err)
		}
	}
	tags := make([]string, n)
	for i := range tags {
		tags[i] = fmt.Sprintf("%s-2026-11-%02d-%06d", streams[i%readStreams], 1+(i/readStreams)/100, (i/readStreams)%100)
	}
	// The payloads of the changelog: two of the first stream, the newer one's previous
	// accepted payload the older one.
	olderIndex, newerIndex := changeLogPair(b, perStream)
	olderTag, newerTag := tags[olderIndex*readStreams], tags[newerIndex*readStreams]
	fixture := buildChangeLogPayloads(b, reg.Addr(), dir, streams[0], olderTag, newerTag)
	built := map[string]*builtPayload{olderTag: &fixture.older, newerTag: &fixture.newer}
	parallel(b, api, n, setupWorkers, func(i int) error {
		streamName, index := streams[i%readStreams], i/readStreams
		previous := ""
		if index > 0 {
			previous = tags[i-readStreams]
		}
		return createReadPayload(ctx, env.Client, streamName, tags[i], previous, index, built[tags[i]])
	})
	for i, s := range streams {
		if err := createUpgradeGraph(ctx, env.Client, s, tags, i); err != nil {
			b.Fatal(err)
		}
	}
	progressf("created %d payloads with their status in %s", n, time.Since(setupStart).Round(time.Second))

	// The caches hold everything once every stream lists all its tags.
	waitAllTags(b, api, base, streams, perStream)
	time.Sleep(2 * time.Second)
	rssAfter := rssKB(api.Pid())
	progressf("api serves all %d payloads %s after the first was created", n, time.Since(setupStart).Round(time.Second))

	client := &http.Client{Timeout: time.Minute}
	mid := func(i int) string { return tags[(perStream/2)*readStreams+i%readStreams] }
	type route struct {
		name     string
		requests int
		path     func(i int) string
	}
	fields := []any{"payloads", n, "streams", readStreams, "verifications", readVerifications}
	measure := func(routes []route) {
		for _, r := range routes {
			durations := make([]time.Duration, r.requests)
			for i := range r.requests {
				start := time.Now()
				status, err := fetch(client, base+r.path(i))
				durations[i] = time.Since(start)
				if err != nil || status != http.StatusOK {
					b.Fatalf("GET %s: %d %v; the end of the api log:\n%s", r.path(i), status, err, api.Tail(20))
				}
			}
			slices.Sort(durations)
			fields = append(fields, r.name+"_p50_ms", ms(percentile(durations, 50)), r.name+"_p99_ms", ms(percentile(durations, 99)))
			b.ReportMetric(float64(percentile(durations, 99).Microseconds())/1000, r.name+"-p99-ms")
		}
	}
	measure([]route{
		{"latest", readRequestsPerRoute, func(i int) string {
			return "/api/v1/releasestream/" + streams[i%readStreams] + "/latest"
		}},
		{"latest_in", readRequestsPerRoute, func(i int) string {
			s := streams[i%readStreams]
			return "/api/v1/releasestream/" + s + "/latest?in=" + url.QueryEscape(">"+strings.TrimSuffix(s, "-0.nightly")+"-0 <9.0.0") + "&rel=3"
		}},
		{"tags", readRequestsPerRoute, func(i int) string {
			return "/api/v1/releasestream/" + streams[i%readStreams] + "/tags"
		}},
		{"release_info_short", readRequestsPerRoute, func(i int) string {
			return "/api/v1/releasestream/" + streams[i%readStreams] + "/release/" + mid(i) + "?format=short"
		}},
		{"stream_page", readPageRequests, func(i int) string {
			return "/releasestream/" + streams[i%readStreams]
		}},
		{"release_page", readPageRequests, func(i int) string {
			return "/releasestream/" + streams[i%readStreams] + "/release/" + mid(i)
		}},
		{"stream_health", readPageRequests, func(i int) string {
			return "/releasestream/" + streams[i%readStreams] + "/health?payloads=10000&days=365"
		}},
		{"stream_health_json", readPageRequests, func(i int) string {
			return "/releasestream/" + streams[i%readStreams] + "/health?payloads=10000&days=365&format=json"
		}},
	})

	// The changelog: computed once (cloning the repository, reading both payload images),
	// then served from the api's cache.
	first := warmChangeLog(b, api, client, base, streams[0], newerTag, fixture)
	progressf("the first changelog of %s took %s", newerTag, first.Round(time.Millisecond))
	releasePage := "/releasestream/" + streams[0] + "/release/" + newerTag
	checkChangeLogPage(b, client, base+releasePage)
	measure([]route{
		{"release_info_changelog", readRequestsPerRoute, func(int) string {
			return "/api/v1/releasestream/" + streams[0] + "/release/" + newerTag
		}},
		{"changelog_json", readRequestsPerRoute, func(int) string {
			return "/changelog?from=" + url.QueryEscape(olderTag) + "&to=" + url.QueryEscape(newerTag) + "&format=json"
		}},
		{"release_page_changelog", readPageRequests, func(int) string { return releasePage }},
	})
	fields = append(fields, "changelog_first_ms", first.Milliseconds())
	perPayloadKB := float64(rssAfter-rssBefore) / float64(n)
	fields = append(fields, "rss_mb", rssAfter/1024, "kb_per_payload", fmt.Sprintf("%.1f", perPayloadKB))
	benchLine("shipped-api", fields...)
}

// ms formats a duration in milliseconds with two decimals.
func ms(d time.Duration) string { return fmt.Sprintf("%.2f", float64(d.Microseconds())/1000) }

// fetch GETs url and reads the whole body.
func fetch(client *http.Client, url string) (int, error) {
	resp, err := client.Get(url)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, err = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, err
}

// waitServing polls url until it answers 200.
func waitServing(b *testing.B, p *process, url string) {
	b.Helper()
	client := &http.Client{Timeout: 2 * time.Second}
	limit := time.Now().Add(2 * time.Minute)
	for {
		p.checkAlive(b)
		if status, err := fetch(client, url); err == nil && status == http.StatusOK {
			return
		}
		if time.Now().After(limit) {
			b.Fatalf("%s did not answer 200 within 2 minutes; the end of the log:\n%s", url, p.Tail(40))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitAllTags polls releasestreams/all until every stream lists perStream tags.
func waitAllTags(b *testing.B, p *process, base string, streams []string, perStream int) {
	b.Helper()
	client := &http.Client{Timeout: 30 * time.Second}
	limit := deadline()
	for {
		p.checkAlive(b)
		resp, err := client.Get(base + "/api/v1/releasestreams/all")
		if err == nil {
			var all map[string][]string
			decodeErr := json.NewDecoder(resp.Body).Decode(&all)
			resp.Body.Close()
			complete := decodeErr == nil
			for _, s := range streams {
				complete = complete && len(all[s]) == perStream
			}
			if complete {
				return
			}
		}
		if time.Now().After(limit) {
			b.Fatalf("the api did not list every payload before the deadline (last error %v); the end of its log:\n%s", err, p.Tail(40))
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// createReadPayload creates a payload and gives it a finished status: created, verified by
// readVerifications runs (the first an upgrade from previous), accepted or (every seventh)
// rejected. A payload built (not nil) has its components and its payload image.
func createReadPayload(ctx context.Context, c client.Client, streamName, tag, previous string, index int, built *builtPayload) error {
	verifications := make([]v1alpha1.Verification, readVerifications)
	for j := range verifications {
		verifications[j] = jobVerification(fmt.Sprintf("e2e-%d", j))
	}
	p := newPayload(readNamespace, tag, verifications...)
	p.Labels = map[string]string{v1alpha1.LabelStream: streamName}
	p.Spec.PayloadCoordinates.Stream = streamName
	if built != nil {
		p.Spec.Components = built.components
		p.Spec.PayloadCreationConfig.Repository = built.repository
	}
	if err := c.Create(ctx, p); err != nil {
		return fmt.Errorf("creating payload %s: %w", tag, err)
	}
	now := metav1.Now()
	phase, verdict := v1alpha1.PhaseAccepted, v1alpha1.ConditionPayloadAccepted
	if index%7 == 3 {
		phase, verdict = v1alpha1.PhaseRejected, v1alpha1.ConditionPayloadRejected
	}
	p.Status = v1alpha1.ReleasePayloadStatus{
		Phase: phase,
		Conditions: []metav1.Condition{
			{Type: v1alpha1.ConditionPayloadCreated, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonCreationJobSucceeded, LastTransitionTime: now},
			{Type: verdict, Status: metav1.ConditionTrue, Reason: string(phase), Message: "verifications finished", LastTransitionTime: now},
		},
		ReleaseCreationJobResult: v1alpha1.ReleaseCreationJobResult{Namespace: readNamespace, Name: jobcontract.CreationJobName(tag), Status: v1alpha1.CreationJobSuccess},
	}
	if built != nil {
		p.Status.PayloadImage = built.image
	}
	for j, v := range verifications {
		state := v1alpha1.JobSuccess
		if phase == v1alpha1.PhaseRejected && j == 1 {
			state = v1alpha1.JobFailure
		}
		run := v1alpha1.JobRun{
			Kind: v1alpha1.RunKindJob, Namespace: readNamespace, Name: fmt.Sprintf("%s-%s", tag, v.Name), Attempt: 1, State: state,
			URL: fmt.Sprintf("https://ci.example.com/logs/%s/%s", tag, v.Name), StartTime: &now, CompletionTime: &now,
		}
		if j == 0 && previous != "" {
			run.UpgradeFrom = previous
		}
		p.Status.Verifications = append(p.Status.Verifications, v1alpha1.VerificationStatus{
			Name: v.Name, Type: v1alpha1.Blocking, State: state, Runs: []v1alpha1.JobRun{run},
		})
	}
	if err := c.Status().Update(ctx, p); err != nil {
		return fmt.Errorf("writing the status of payload %s: %w", tag, err)
	}
	return nil
}

// createUpgradeGraph writes a stream's upgrade-graph ConfigMap with the upgrades between its
// consecutive payloads, as the stream controller records them.
func createUpgradeGraph(ctx context.Context, c client.Client, streamName string, tags []string, streamIndex int) error {
	var g upgradegraph.Graph
	for i := streamIndex + readStreams; i < len(tags) && len(g.Edges) < upgradegraph.MaxEdges; i += readStreams {
		g.Edges = append(g.Edges, upgradegraph.Edge{
			From: tags[i-readStreams], To: tags[i], Verification: "e2e-0", Run: tags[i] + "-e2e-0",
			State: v1alpha1.JobSuccess, URL: "https://ci.example.com/logs/" + tags[i] + "/e2e-0",
		})
	}
	data, err := json.Marshal(g)
	if err != nil {
		return err
	}
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: readNamespace, Name: upgradegraph.ConfigMapName(streamName), Labels: map[string]string{v1alpha1.LabelStream: streamName}},
		Data:       map[string]string{upgradegraph.Key: string(data)},
	}
	if err := c.Create(ctx, cm); err != nil {
		return fmt.Errorf("creating the upgrade graph of %s: %w", streamName, err)
	}
	return nil
}
