package osrc_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	prowv1 "github.com/release-controller/release-controller/api/prow/v1"
	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/server"
	"github.com/release-controller/release-controller/internal/server/catalog"
	"github.com/release-controller/release-controller/internal/server/osrc"
	"github.com/release-controller/release-controller/internal/upgradegraph"
	"github.com/release-controller/release-controller/internal/verdict/verdicttest"
)

// Tags of the fixture's nightly stream, oldest first.
const (
	nightly = "4.17.0-0.nightly"
	n1      = "4.17.0-0.nightly-2026-01-01-000000"
	n2      = "4.17.0-0.nightly-2026-01-02-000000"
	n3      = "4.17.0-0.nightly-2026-01-03-000000"
	n4      = "4.17.0-0.nightly-2026-01-04-000000"
	n5      = "4.17.0-0.nightly-2026-01-05-000000"

	artifacts = "https://artifacts.example/releases/"
	digest3   = "sha256:3333333333333333333333333333333333333333333333333333333333333333"
)

func at(day, hour int) *metav1.Time {
	t := metav1.NewTime(time.Date(2026, 1, day, hour, 0, 0, 0, time.UTC))
	return &t
}

func prow(job string) *v1alpha1.ProwJobBackend {
	return &v1alpha1.ProwJobBackend{Spec: prowv1.ProwJobSpec{Job: job}}
}

func newStream(ns, name, prefix, repo string, verifications ...v1alpha1.Verification) *v1alpha1.ReleaseStream {
	return &v1alpha1.ReleaseStream{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.ReleaseStreamSpec{
			Components:        []v1alpha1.ComponentSource{{Name: "cli", Image: "registry.example/ocp/cli:latest"}},
			TagPrefix:         prefix,
			PayloadRepository: repo,
			Verification:      verifications,
		},
	}
}

func newPayload(s *v1alpha1.ReleaseStream, tag string, phase v1alpha1.PayloadPhase, vs ...v1alpha1.VerificationStatus) *v1alpha1.ReleasePayload {
	p := &v1alpha1.ReleasePayload{
		ObjectMeta: metav1.ObjectMeta{Namespace: s.Namespace, Name: tag},
		Spec: v1alpha1.ReleasePayloadSpec{
			PayloadCoordinates:        v1alpha1.PayloadCoordinates{Stream: s.Name, Tag: tag},
			PayloadCreationConfig:     v1alpha1.PayloadCreationConfig{Repository: s.Spec.PayloadRepository},
			PayloadVerificationConfig: v1alpha1.PayloadVerificationConfig{Verifications: s.Spec.Verification},
		},
		Status: v1alpha1.ReleasePayloadStatus{Phase: phase, Verifications: vs},
	}
	return p
}

// setPayload adds p to the catalog once its status holds the evidence of its phase
// (verdicttest.Earn), as the payload controller writes it.
func setPayload(cat *catalog.Catalog, p *v1alpha1.ReleasePayload) {
	verdicttest.Earn(p, p.Status.Phase)
	cat.SetPayload(p)
}

func run(name string, attempt int32, state v1alpha1.JobState, url string, done *metav1.Time) v1alpha1.JobRun {
	return v1alpha1.JobRun{Kind: v1alpha1.RunKindProwJob, Namespace: "ci", Name: name, Attempt: attempt, State: state, URL: url, CompletionTime: done}
}

func upgradeRun(name string, attempt int32, from string, state v1alpha1.JobState, url string, done *metav1.Time) v1alpha1.JobRun {
	r := run(name, attempt, state, url, done)
	r.UpgradeFrom = from
	return r
}

func graphMap(ns, name string, edges ...upgradegraph.Edge) *corev1.ConfigMap {
	data, err := json.Marshal(upgradegraph.Graph{Edges: edges})
	if err != nil {
		panic(err)
	}
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: upgradegraph.ConfigMapName(name), Labels: map[string]string{v1alpha1.LabelStream: name}},
		Data:       map[string]string{upgradegraph.Key: string(data)},
	}
}

func edge(from, to, runName string, state v1alpha1.JobState, url string) upgradegraph.Edge {
	return upgradegraph.Edge{From: from, To: to, Verification: "upgrade", Run: runName, State: state, URL: url}
}

// fixture is the catalog the contract tests read:
//
//	ocp/4.17.0-0.nightly  n5 Pending, n4 Rejected, n3 Accepted, n2 Ready, n1 Accepted
//	ocp/4-stable          4.17.1, 4.17.0, 4.17.0-rc.1, 4.16.5 Accepted, 4.16.4 Rejected, 4.16.3 Accepted
//	ocp/empty             no payloads
//	a/dup, b/dup          1.0.0 Accepted in a, 2.0.0 Rejected in b
func fixture() *catalog.Catalog {
	cat := catalog.New()

	nightlyStream := newStream("ocp", nightly, nightly, "registry.example/ocp/release",
		v1alpha1.Verification{Name: "e2e", Type: v1alpha1.Blocking, ProwJob: prow("periodic-ci-e2e")},
		v1alpha1.Verification{Name: "upgrade", Type: v1alpha1.Blocking, UpgradeFrom: v1alpha1.UpgradeFromPrevious, MaxRetries: 2, ProwJob: prow("periodic-ci-upgrade")},
		v1alpha1.Verification{Name: "perf", Type: v1alpha1.Informing, Aggregation: &v1alpha1.Aggregation{Runs: 3, PassRatio: 0.6}, ProwJob: prow("periodic-ci-perf")},
	)
	cat.SetStream(nightlyStream)
	// n1 was created before the stream had verifications.
	p1 := newPayload(nightlyStream, n1, v1alpha1.PhaseAccepted)
	p1.Spec.PayloadVerificationConfig = v1alpha1.PayloadVerificationConfig{}
	setPayload(cat, p1)
	setPayload(cat, newPayload(nightlyStream, n2, v1alpha1.PhaseReady,
		v1alpha1.VerificationStatus{Name: "e2e", Type: v1alpha1.Blocking, State: v1alpha1.JobPending,
			Runs: []v1alpha1.JobRun{run("e2e-2", 1, v1alpha1.JobPending, "https://prow.example/e2e-2", nil)}},
		v1alpha1.VerificationStatus{Name: "upgrade", Type: v1alpha1.Blocking, State: v1alpha1.JobSkipped},
	))
	p3 := newPayload(nightlyStream, n3, v1alpha1.PhaseAccepted,
		v1alpha1.VerificationStatus{Name: "e2e", Type: v1alpha1.Blocking, State: v1alpha1.JobSuccess,
			Runs: []v1alpha1.JobRun{run("e2e-3", 1, v1alpha1.JobSuccess, "https://prow.example/e2e-3", at(3, 2))}},
		v1alpha1.VerificationStatus{Name: "upgrade", Type: v1alpha1.Blocking, UpgradeFrom: v1alpha1.UpgradeFromPrevious, State: v1alpha1.JobSuccess,
			Runs: []v1alpha1.JobRun{
				upgradeRun("up-3-1", 1, n1, v1alpha1.JobFailure, "https://prow.example/up-3-1", at(3, 3)),
				upgradeRun("up-3-2", 2, n1, v1alpha1.JobSuccess, "https://prow.example/up-3-2", at(3, 5)),
			}},
		v1alpha1.VerificationStatus{Name: "perf", Type: v1alpha1.Informing, State: v1alpha1.JobSuccess,
			Runs: []v1alpha1.JobRun{
				run("perf-3-1", 1, v1alpha1.JobSuccess, "https://prow.example/perf-3-1", at(3, 4)),
				run("perf-3-2", 2, v1alpha1.JobFailure, "https://prow.example/perf-3-2", at(3, 4)),
				run("perf-3-3", 3, v1alpha1.JobSuccess, "https://prow.example/perf-3-3", at(3, 6)),
			}},
	)
	p3.Status.PayloadImage = "registry.example/ocp/release@" + digest3
	setPayload(cat, p3)
	setPayload(cat, newPayload(nightlyStream, n4, v1alpha1.PhaseRejected,
		v1alpha1.VerificationStatus{Name: "e2e", Type: v1alpha1.Blocking, State: v1alpha1.JobUnknown},
		v1alpha1.VerificationStatus{Name: "upgrade", Type: v1alpha1.Blocking, UpgradeFrom: v1alpha1.UpgradeFromPrevious, State: v1alpha1.JobFailure,
			Runs: []v1alpha1.JobRun{
				upgradeRun("up-4-1", 1, n3, v1alpha1.JobFailure, "https://prow.example/up-4-1", at(4, 1)),
				upgradeRun("up-4-2", 2, n3, v1alpha1.JobFailure, "https://prow.example/up-4-2", at(4, 2)),
				upgradeRun("up-4-3", 3, n3, v1alpha1.JobFailure, "https://prow.example/up-4-3", at(4, 3)),
			}},
	))
	setPayload(cat, newPayload(nightlyStream, n5, v1alpha1.PhasePending))
	// The graph holds n1→n3 runs already in n3's status (counted once) and an older n1→n2
	// run of a payload whose status no longer has it.
	cat.SetGraph(graphMap("ocp", nightly,
		edge(n1, n3, "up-3-1", v1alpha1.JobFailure, "https://prow.example/up-3-1"),
		edge(n1, n3, "up-3-2", v1alpha1.JobSuccess, "https://prow.example/up-3-2"),
		edge(n1, n2, "up-2-1", v1alpha1.JobSuccess, ""),
	))

	stable := newStream("ocp", "4-stable", "4.17.0", "registry.example/ocp/stable")
	cat.SetStream(stable)
	for tag, phase := range map[string]v1alpha1.PayloadPhase{
		"4.17.1": v1alpha1.PhaseAccepted, "4.17.0": v1alpha1.PhaseAccepted, "4.17.0-rc.1": v1alpha1.PhaseAccepted,
		"4.16.5": v1alpha1.PhaseAccepted, "4.16.4": v1alpha1.PhaseRejected, "4.16.3": v1alpha1.PhaseAccepted,
	} {
		setPayload(cat, newPayload(stable, tag, phase))
	}
	cat.SetGraph(graphMap("ocp", "4-stable",
		edge("4.17.0", "4.17.1", "s1", v1alpha1.JobSuccess, "https://prow.example/s1"),
		edge("4.16.5", "4.17.0", "s2", v1alpha1.JobSuccess, "https://prow.example/s2"),
		edge("4.17.0-rc.1", "4.17.0", "s3", v1alpha1.JobFailure, "https://prow.example/s3"),
		edge("4.16.3", "4.16.5", "s4", v1alpha1.JobSuccess, "https://prow.example/s4"),
		edge("4.16.4", "4.16.5", "s5", v1alpha1.JobPending, "https://prow.example/s5"),
		edge(n3, "4.17.0", "s6", v1alpha1.JobSuccess, "https://prow.example/s6"),
		edge("4.15.9", "4.16.3", "s7", v1alpha1.JobSuccess, "https://prow.example/s7"),
		edge("4.16.3", "4.16.4", "s8", v1alpha1.JobSuccess, "https://prow.example/s8"),
	))

	cat.SetStream(newStream("ocp", "empty", "1.0.0", "registry.example/ocp/empty"))

	dupA := newStream("a", "dup", "1.0.0", "registry.example/a/dup")
	dupB := newStream("b", "dup", "2.0.0", "registry.example/b/dup")
	cat.SetStream(dupA)
	cat.SetStream(dupB)
	setPayload(cat, newPayload(dupA, "1.0.0", v1alpha1.PhaseAccepted))
	setPayload(cat, newPayload(dupB, "2.0.0", v1alpha1.PhaseRejected))
	return cat
}

// serve runs the real server with the routes over loopback.
func serve(t testing.TB, cat *catalog.Catalog, opts osrc.Options) string {
	t.Helper()
	s := server.New()
	osrc.Register(s, cat, opts)
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	return ts.URL
}

// client neither follows redirects nor decompresses: tests see what the server sends.
var client = &http.Client{
	Transport: &http.Transport{DisableCompression: true},
	CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	},
}

type response struct {
	code   int
	header http.Header
	body   string
}

func do(t testing.TB, method, url string) response {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	return send(t, req)
}

// send sends req and reads the answer.
func send(t testing.TB, req *http.Request) response {
	t.Helper()
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return response{code: resp.StatusCode, header: resp.Header, body: string(body)}
}

// text is an expected plain-text answer: http.Error's body ends with a newline.
func text(s string) string { return s + "\n" }

// lines joins lines with newlines and ends with one: an expected JSON document.
func lines(ls ...string) string { return strings.Join(ls, "\n") + "\n" }
