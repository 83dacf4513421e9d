package web_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/changelog"
	"github.com/release-controller/release-controller/internal/server"
	"github.com/release-controller/release-controller/internal/server/catalog"
	"github.com/release-controller/release-controller/internal/server/web"
	"github.com/release-controller/release-controller/internal/upgradegraph"
	"github.com/release-controller/release-controller/internal/verdict/verdicttest"
)

// The fixture: the stream demo/nightly with five payloads in every phase, upgrades between
// them (recorded in the upgrade graph and running in a payload's status), an empty stream,
// and the stream name "ci" in two namespaces whose payloads share a tag.
const (
	prefix = "4.15.0-0.nightly"
	tag1   = prefix + "-2026-11-21-090000" // Failed: its creation job failed
	tag2   = prefix + "-2026-11-21-150000" // Accepted by a manual override
	tag3   = prefix + "-2026-11-22-090000" // Rejected: e2e failed three times
	tag4   = prefix + "-2026-11-22-120000" // Accepted
	tag5   = prefix + "-2026-11-22-150000" // Ready: verifying
	// collected was upgraded from before garbage collection removed it.
	collected = prefix + "-2026-11-20-090000"
	ciTag     = "4.16.0-0.ci-2026-11-22-100000"
)

func sha(c byte) string { return strings.Repeat(string(c), 64) }

// digestOf is the pull spec by digest of a fixture payload.
func digestOf(tag string) string {
	sum := sha256.Sum256([]byte(tag))
	return "registry.example.com/ocp/release@sha256:" + hex.EncodeToString(sum[:])
}

func mt(s string) *metav1.Time {
	t := metav1.NewTime(at(s))
	return &t
}

func newReleaseStream(ns, name, tagPrefix string, maxUnready int32) *v1alpha1.ReleaseStream {
	return &v1alpha1.ReleaseStream{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.ReleaseStreamSpec{
			TagPrefix: tagPrefix, PayloadRepository: "registry.example.com/ocp/release", MaxUnreadyReleases: maxUnready,
			Components: []v1alpha1.ComponentSource{{Name: "api", Image: "registry.example.com/ocp/api:latest"}},
		},
	}
}

var verificationConfig = []v1alpha1.Verification{
	{Name: "e2e", Type: v1alpha1.Blocking, MaxRetries: 2},
	{Name: "upgrade", Type: v1alpha1.Blocking, UpgradeFrom: v1alpha1.UpgradeFromPrevious},
	{Name: "lint", Type: v1alpha1.Informing},
}

func cond(typ string, status metav1.ConditionStatus, reason, message, when string) metav1.Condition {
	return metav1.Condition{Type: typ, Status: status, Reason: reason, Message: message, LastTransitionTime: metav1.NewTime(at(when))}
}

// newPayload returns a built payload of demo/nightly in phase, created at created.
func newPayload(ns, streamName, tag string, phase v1alpha1.PayloadPhase, created string) *v1alpha1.ReleasePayload {
	p := &v1alpha1.ReleasePayload{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: tag, CreationTimestamp: metav1.NewTime(at(created))},
		Spec: v1alpha1.ReleasePayloadSpec{
			PayloadCoordinates: v1alpha1.PayloadCoordinates{Stream: streamName, Tag: tag},
			Components: []v1alpha1.PinnedComponent{
				{Name: "api", Image: "registry.example.com/ocp/api@sha256:" + sha('a'), Source: "registry.example.com/ocp/api:latest"},
				{Name: "installer", Image: "registry.example.com/ocp/installer@sha256:" + sha('b')},
			},
			PayloadCreationConfig:     v1alpha1.PayloadCreationConfig{Repository: "registry.example.com/ocp/release"},
			PayloadVerificationConfig: v1alpha1.PayloadVerificationConfig{Verifications: verificationConfig},
		},
		Status: v1alpha1.ReleasePayloadStatus{
			Phase:                    phase,
			ReleaseCreationJobResult: v1alpha1.ReleaseCreationJobResult{Namespace: ns, Name: "create-" + tag[len(tag)-6:], Status: v1alpha1.CreationJobSuccess},
			PayloadImage:             digestOf(tag),
			Conditions: []metav1.Condition{
				cond(v1alpha1.ConditionPayloadCreated, metav1.ConditionTrue, v1alpha1.ReasonCreationJobSucceeded, "the payload image was built", created),
			},
		},
	}
	return p
}

// setPayload adds p to the catalog once its status holds the evidence of its phase
// (verdicttest.Earn), as the payload controller writes it.
func setPayload(cat *catalog.Catalog, p *v1alpha1.ReleasePayload) {
	verdicttest.Earn(p, p.Status.Phase)
	cat.SetPayload(p)
}

func run(name string, attempt int32, state v1alpha1.JobState, start, end string) v1alpha1.JobRun {
	r := v1alpha1.JobRun{Kind: v1alpha1.RunKindJob, Namespace: "demo", Name: name, Attempt: attempt, State: state,
		URL: "https://ci.example.com/" + name, StartTime: mt(start)}
	if end != "" {
		r.CompletionTime = mt(end)
	}
	return r
}

func succeeded(p *v1alpha1.ReleasePayload, upgradeFrom string) {
	created := p.CreationTimestamp.UTC().Format(time.RFC3339)
	up := run(p.Name[len(p.Name)-6:]+"-upgrade-1", 1, v1alpha1.JobSuccess, created, created)
	up.UpgradeFrom = upgradeFrom
	p.Status.Verifications = []v1alpha1.VerificationStatus{
		{Name: "e2e", Type: v1alpha1.Blocking, State: v1alpha1.JobSuccess, Runs: []v1alpha1.JobRun{run(p.Name[len(p.Name)-6:]+"-e2e-1", 1, v1alpha1.JobSuccess, created, created)}},
		{Name: "upgrade", Type: v1alpha1.Blocking, UpgradeFrom: v1alpha1.UpgradeFromPrevious, State: v1alpha1.JobSuccess, Runs: []v1alpha1.JobRun{up}},
		{Name: "lint", Type: v1alpha1.Informing, State: v1alpha1.JobSuccess, Runs: []v1alpha1.JobRun{run(p.Name[len(p.Name)-6:]+"-lint-1", 1, v1alpha1.JobSuccess, created, created)}},
	}
}

// fixturePayloads are demo/nightly's payloads.
func fixturePayloads() []*v1alpha1.ReleasePayload {
	p1 := newPayload("demo", "nightly", tag1, v1alpha1.PhaseFailed, "2026-11-21T09:00:00Z")
	p1.Status.PayloadImage = ""
	p1.Status.ReleaseCreationJobResult = v1alpha1.ReleaseCreationJobResult{Namespace: "demo", Name: "create-090000", Status: v1alpha1.CreationJobFailed, Message: "pushing the payload image: manifest unknown"}
	p1.Status.Conditions = []metav1.Condition{
		cond(v1alpha1.ConditionPayloadCreated, metav1.ConditionFalse, v1alpha1.ReasonCreationJobFailed, "the creation job failed", "2026-11-21T09:05:00Z"),
		cond(v1alpha1.ConditionPayloadFailed, metav1.ConditionTrue, v1alpha1.ReasonCreationJobFailed, "creation job demo/create-090000 failed: pushing the payload image: manifest unknown", "2026-11-21T09:05:00Z"),
	}

	p2 := newPayload("demo", "nightly", tag2, v1alpha1.PhaseAccepted, "2026-11-21T15:00:00Z")
	succeeded(p2, collected)
	p2.Spec.PayloadOverride = &v1alpha1.PayloadOverride{Override: v1alpha1.OverrideAccepted, Reason: "e2e flaked on a known <infra> issue"}
	p2.Status.Conditions = append(p2.Status.Conditions, cond(v1alpha1.ConditionPayloadAccepted, metav1.ConditionTrue, v1alpha1.ReasonManualOverride, "accepted by hand", "2026-11-21T16:00:00Z"),
		cond(v1alpha1.ConditionPayloadAudited, metav1.ConditionFalse, v1alpha1.ReasonAuditFailed, "check tag-digest failed: the tag was <re-tagged>", "2026-11-21T16:01:00Z"),
		cond(v1alpha1.ConditionPayloadSigned, metav1.ConditionFalse, v1alpha1.ReasonNotSignedAuditFailed, "not signed: the payload failed its audit", "2026-11-21T16:01:00Z"))

	p3 := newPayload("demo", "nightly", tag3, v1alpha1.PhaseRejected, "2026-11-22T09:00:00Z")
	p3.Status.Verifications = []v1alpha1.VerificationStatus{
		{Name: "e2e", Type: v1alpha1.Blocking, State: v1alpha1.JobFailure, Message: "3 of 3 runs failed", Runs: []v1alpha1.JobRun{
			run("090000-e2e-1", 1, v1alpha1.JobFailure, "2026-11-22T09:10:00Z", "2026-11-22T09:40:00Z"),
			run("090000-e2e-2", 2, v1alpha1.JobFailure, "2026-11-22T09:41:00Z", "2026-11-22T10:10:00Z"),
			run("090000-e2e-3", 3, v1alpha1.JobFailure, "2026-11-22T10:11:00Z", "2026-11-22T10:42:05Z"),
		}},
	}
	p3.Status.Conditions = append(p3.Status.Conditions, cond(v1alpha1.ConditionPayloadRejected, metav1.ConditionTrue, v1alpha1.ReasonBlockingJobFailed, "blocking job e2e failed", "2026-11-22T10:42:05Z"))

	p4 := newPayload("demo", "nightly", tag4, v1alpha1.PhaseAccepted, "2026-11-22T12:00:00Z")
	succeeded(p4, tag2)
	p4.Annotations = map[string]string{v1alpha1.AnnotationKeep: "true"}
	// Built for two platforms: its image is an index of one image per platform.
	p4.Spec.PayloadCreationConfig.Platforms = []string{"linux/amd64", "linux/arm64"}
	p4.Status.PlatformImages = []v1alpha1.PlatformImage{
		{Platform: "linux/amd64", Image: "registry.example.com/ocp/release@sha256:" + sha('d')},
		{Platform: "linux/arm64", Image: "registry.example.com/ocp/release@sha256:" + sha('e')},
	}
	p4.Status.Conditions = append(p4.Status.Conditions, cond(v1alpha1.ConditionPayloadAccepted, metav1.ConditionTrue, v1alpha1.ReasonBlockingJobsSucceeded, "all blocking jobs succeeded", "2026-11-22T13:00:00Z"),
		cond(v1alpha1.ConditionPayloadAudited, metav1.ConditionTrue, v1alpha1.ReasonAuditPassed, "6 checks passed", "2026-11-22T13:00:01Z"),
		cond(v1alpha1.ConditionPayloadSigned, metav1.ConditionTrue, v1alpha1.ReasonSigned, "signed by 0123456789ABCDEF (signature-1)", "2026-11-22T13:00:01Z"),
		cond(v1alpha1.ConditionPayloadSigstoreSigned, metav1.ConditionTrue, v1alpha1.ReasonSigned, sigstoreSignedMessage, "2026-11-22T13:00:02Z"))

	p5 := newPayload("demo", "nightly", tag5, v1alpha1.PhaseReady, "2026-11-22T15:00:00Z")
	up := run("150000-upgrade-1", 1, v1alpha1.JobPending, "2026-11-22T15:10:00Z", "")
	up.UpgradeFrom = tag4
	p5.Status.Verifications = []v1alpha1.VerificationStatus{
		{Name: "e2e", Type: v1alpha1.Blocking, State: v1alpha1.JobPending, Runs: []v1alpha1.JobRun{run("150000-e2e-1", 1, v1alpha1.JobPending, "2026-11-22T15:10:00Z", "")}},
		{Name: "upgrade", Type: v1alpha1.Blocking, UpgradeFrom: v1alpha1.UpgradeFromPrevious, State: v1alpha1.JobPending, Runs: []v1alpha1.JobRun{up}},
		{Name: "lint", Type: v1alpha1.Informing, State: v1alpha1.JobFailure, Message: "1 of 1 runs failed", Runs: []v1alpha1.JobRun{run("150000-lint-1", 1, v1alpha1.JobFailure, "2026-11-22T15:05:00Z", "2026-11-22T15:06:30Z")}},
	}
	p5.Status.Conditions = append(p5.Status.Conditions, cond(v1alpha1.ConditionPayloadAccepted, metav1.ConditionFalse, v1alpha1.ReasonBlockingJobsPending, "waiting for e2e, upgrade", "2026-11-22T15:01:00Z"))
	return []*v1alpha1.ReleasePayload{p1, p2, p3, p4, p5}
}

// graphConfigMap is demo/nightly's upgrade graph: what the stream controller recorded of
// ended upgrade runs, including ones of a payload since collected.
func graphConfigMap(ns, streamName string, edges ...upgradegraph.Edge) *corev1.ConfigMap {
	data, err := json.Marshal(upgradegraph.Graph{Edges: edges})
	if err != nil {
		panic(err)
	}
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: upgradegraph.ConfigMapName(streamName), Labels: map[string]string{v1alpha1.LabelStream: streamName}},
		Data:       map[string]string{upgradegraph.Key: string(data)},
	}
}

func fixtureGraph() *corev1.ConfigMap {
	return graphConfigMap("demo", "nightly",
		upgradegraph.Edge{From: collected, To: tag2, Verification: "upgrade", Run: "150000-upgrade-1", State: v1alpha1.JobSuccess, URL: "https://ci.example.com/150000-upgrade-1"},
		upgradegraph.Edge{From: tag2, To: tag3, Verification: "upgrade", Run: "090000-upgrade-1", State: v1alpha1.JobFailure, URL: "https://ci.example.com/090000-upgrade-1"},
		upgradegraph.Edge{From: tag2, To: tag3, Verification: "upgrade", Run: "090000-upgrade-2", State: v1alpha1.JobFailure, URL: "https://ci.example.com/090000-upgrade-2"},
		upgradegraph.Edge{From: tag2, To: tag4, Verification: "upgrade", Run: "120000-upgrade-1", State: v1alpha1.JobSuccess, URL: "https://ci.example.com/120000-upgrade-1"},
		upgradegraph.Edge{From: tag2, To: tag4, Verification: "upgrade", Run: "120000-upgrade-0", State: v1alpha1.JobFailure, URL: "https://ci.example.com/120000-upgrade-0"},
	)
}

// fixture fills a catalog through its real inputs.
func fixture() *catalog.Catalog {
	cat := catalog.New()
	nightly := newReleaseStream("demo", "nightly", prefix, 1)
	nightly.Status.Conditions = []metav1.Condition{
		cond(v1alpha1.ConditionImported, metav1.ConditionFalse, v1alpha1.ReasonComponentsUnresolved, "installer: manifest unknown", "2026-11-22T15:30:00Z"),
		cond(v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonTooManyUnready, "1 payload is not verified yet", "2026-11-22T15:00:00Z"),
	}
	cat.SetStream(nightly)
	for _, p := range fixturePayloads() {
		setPayload(cat, p)
	}
	cat.SetGraph(fixtureGraph())
	cat.SetStream(newReleaseStream("demo", "empty", "4.16.0-0.empty", 1))
	for _, ns := range []string{"demo", "team"} {
		cat.SetStream(newReleaseStream(ns, "ci", "4.16.0-0.ci", 2))
		setPayload(cat, newPayload(ns, "ci", ciTag, v1alpha1.PhaseAccepted, "2026-11-22T10:00:00Z"))
	}
	return cat
}

// fakeChangeLogs is a test double of changelog.PayloadChangeLogs: it answers with fixed
// ChangeLog values built from the real types. A pair in cached is a cache hit; otherwise
// ChangeLog waits for release (when set) or its context, then returns result or err.
type fakeChangeLogs struct {
	mu      sync.Mutex
	cached  map[string]*changelog.ChangeLog
	result  func(from, to *v1alpha1.ReleasePayload) *changelog.ChangeLog
	err     error
	release chan struct{}
	// started receives each pair ChangeLog is asked for, when set.
	started chan string
	calls   int
}

func pairKey(from, to string) string { return from + ".." + to }

func (f *fakeChangeLogs) Cached(from, to *v1alpha1.ReleasePayload) (*changelog.ChangeLog, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	cl, ok := f.cached[pairKey(from.Name, to.Name)]
	return cl, ok
}

func (f *fakeChangeLogs) ChangeLog(ctx context.Context, from, to *v1alpha1.ReleasePayload) (*changelog.ChangeLog, error) {
	f.mu.Lock()
	f.calls++
	cl, ok := f.cached[pairKey(from.Name, to.Name)]
	f.mu.Unlock()
	if ok {
		return cl, nil
	}
	if f.started != nil {
		f.started <- pairKey(from.Name, to.Name)
	}
	if f.release != nil {
		select {
		case <-f.release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if f.err != nil {
		return nil, f.err
	}
	return f.result(from, to), nil
}

const (
	revOld = "1111111111111111111111111111111111111111"
	revNew = "2222222222222222222222222222222222222222"
)

// sampleChangeLog is a changelog between two fixture payloads: an updated component with a
// pull request and an issue, one whose repository could not be read, and a new one.
func sampleChangeLog(from, to *v1alpha1.ReleasePayload) *changelog.ChangeLog {
	return &changelog.ChangeLog{
		From:           changelog.ReleaseInfo{Name: from.Name, Created: from.CreationTimestamp.Time, Digest: "sha256:" + sha('1')},
		To:             changelog.ReleaseInfo{Name: to.Name, Created: to.CreationTimestamp.Time, Digest: "sha256:" + sha('2')},
		IssueURLPrefix: "https://issues.example.com/browse/",
		NewImages: []changelog.ImageChange{
			{Name: "metrics", Source: "https://github.com/example/metrics.git", Image: "registry.example.com/ocp/metrics@sha256:" + sha('m'), Revision: revNew},
		},
		UpdatedImages: []changelog.ImageChange{
			{Name: "api", Source: "https://github.com/example/api.git", Image: "registry.example.com/ocp/api@sha256:" + sha('c'), FromImage: "registry.example.com/ocp/api@sha256:" + sha('a'),
				Revision: revNew, FromRevision: revOld, MergeBase: revOld,
				Commits: []changelog.Commit{{
					SHA: "3333333333333333333333333333333333333333", Subject: "Merge pull request #42 from dev/fix", Title: "Fix the <widget> race",
					Author: "Dev One", Time: at("2026-11-22T11:00:00Z"), PullRequest: 42, Merge: true, Issues: []string{"OCPBUGS-7"},
					URL: "https://github.com/example/api/commit/3333333333333333333333333333333333333333", PullURL: "https://github.com/example/api/pull/42",
				}}},
			{Name: "installer", Source: "https://git.example.com/example/installer", Image: "registry.example.com/ocp/installer@sha256:" + sha('d'),
				FromImage: "registry.example.com/ocp/installer@sha256:" + sha('b'), Revision: revNew, FromRevision: revOld,
				Error: "the repository could not be fetched (refused: address is private)"},
		},
	}
}

// startPages serves the stream pages (and the release log's page, for its link) on a
// loopback port and returns the base URL.
func startPages(t testing.TB, cat *catalog.Catalog, opts web.PageOptions) string {
	t.Helper()
	if opts.Clock == nil {
		opts.Clock = clocktesting.NewFakePassiveClock(now)
	}
	s := server.New()
	web.RegisterPages(s, cat, opts)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- s.Serve(ctx, l, 20*time.Second) }()
	t.Cleanup(func() {
		stop()
		if err := <-served; err != nil {
			t.Errorf("server shutdown: %v", err)
		}
	})
	return "http://" + l.Addr().String()
}

func releaseURL(ns, streamName, tag string) string {
	return fmt.Sprintf("/namespaces/%s/releasestream/%s/release/%s", ns, streamName, tag)
}

// fakeWithReleases is fakeChangeLogs that also reads payload images, as changelog.Payloads
// does: every image holds components (or reading fails with err).
type fakeWithReleases struct {
	*fakeChangeLogs
	components []changelog.Component
	err        error
	read       string
}

func (f *fakeWithReleases) Release(_ context.Context, pullSpec string) (changelog.Release, error) {
	f.mu.Lock()
	f.read = pullSpec
	f.mu.Unlock()
	if f.err != nil {
		return changelog.Release{}, f.err
	}
	return changelog.Release{Name: pullSpec, Components: f.components}, nil
}

// sigstoreSignedMessage is the PayloadSigstoreSigned message of the signed payload tag4.
const sigstoreSignedMessage = "signed by sha256:" + "5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e" +
	": signature and 4 attestations (slsaprovenance1, test-result ×2, verification-summary)"
