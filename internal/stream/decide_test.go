package stream

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/releaseimage"
	"github.com/release-controller/release-controller/internal/verdict/verdicttest"
)

var now = time.Date(2026, 11, 22, 9, 30, 0, 0, time.UTC)

// payloadAt is a payload created ago before now, in phase.
func payloadAt(name string, ago time.Duration, phase v1alpha1.PayloadPhase, annotations ...string) v1alpha1.ReleasePayload {
	p := v1alpha1.ReleasePayload{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(now.Add(-ago)), Annotations: map[string]string{}}}
	p.Status.Phase = phase
	for i := 0; i+1 < len(annotations); i += 2 {
		p.Annotations[annotations[i]] = annotations[i+1]
	}
	if phase == v1alpha1.PhaseAccepted {
		p.Status.PayloadImage = "registry/release@sha256:" + name
	}
	if phase != v1alpha1.PhasePending {
		p.Status.ReleaseCreationJobResult.Status = v1alpha1.CreationJobSuccess
	}
	verdicttest.Earn(&p, phase)
	return p
}

func TestReleaseTag(t *testing.T) {
	got := ReleaseTag("4.15.0-0.nightly", time.Date(2026, 11, 22, 9, 30, 5, 0, time.FixedZone("CET", 3600)))
	if got != "4.15.0-0.nightly-2026-11-22-083005" {
		t.Errorf("ReleaseTag() = %q", got)
	}
}

func TestComponentsHash(t *testing.T) {
	a := v1alpha1.PinnedComponent{Name: "api", Image: "r/api@sha256:1"}
	b := v1alpha1.PinnedComponent{Name: "web", Image: "r/web@sha256:2"}
	if ComponentsHash([]v1alpha1.PinnedComponent{a, b}) != ComponentsHash([]v1alpha1.PinnedComponent{b, a}) {
		t.Error("hash depends on order")
	}
	b2 := b
	b2.Image = "r/web@sha256:3"
	if ComponentsHash([]v1alpha1.PinnedComponent{a, b}) == ComponentsHash([]v1alpha1.PinnedComponent{a, b2}) {
		t.Error("hash ignores a changed digest")
	}
	if b.Source = "r/web:latest"; ComponentsHash([]v1alpha1.PinnedComponent{a, b}) != ComponentsHash([]v1alpha1.PinnedComponent{a, {Name: "web", Image: "r/web@sha256:2"}}) {
		t.Error("hash depends on the source tag")
	}
}

// handWritten is payloadAt whose blocking run still goes, with phase written by hand.
func handWritten(name string, ago time.Duration, phase v1alpha1.PayloadPhase, annotations ...string) v1alpha1.ReleasePayload {
	p := verdicttest.HandWritten("", "s", name, phase)
	p.CreationTimestamp = metav1.NewTime(now.Add(-ago))
	p.Annotations = map[string]string{}
	for i := 0; i+1 < len(annotations); i += 2 {
		p.Annotations[annotations[i]] = annotations[i+1]
	}
	return *p
}

func TestDecideCreate(t *testing.T) {
	hash := "h2"
	interval := &metav1.Duration{Duration: 10 * time.Minute}
	hashOf := func(h string) []string { return []string{v1alpha1.AnnotationComponentsHash, h} }
	tests := []struct {
		name     string
		spec     v1alpha1.ReleaseStreamSpec
		payloads []v1alpha1.ReleasePayload
		create   bool
		reason   string
		requeue  time.Duration
	}{
		{"first payload", v1alpha1.ReleaseStreamSpec{MaxUnreadyReleases: 1}, nil, true, v1alpha1.ReasonPayloadCreated, 0},
		{"unchanged components", v1alpha1.ReleaseStreamSpec{MaxUnreadyReleases: 1},
			[]v1alpha1.ReleasePayload{payloadAt("p1", time.Hour, v1alpha1.PhaseAccepted, hashOf("h2")...)}, false, v1alpha1.ReasonUpToDate, 0},
		{"changed components", v1alpha1.ReleaseStreamSpec{MaxUnreadyReleases: 1},
			[]v1alpha1.ReleasePayload{payloadAt("p1", time.Hour, v1alpha1.PhaseAccepted, hashOf("h1")...)}, true, v1alpha1.ReasonPayloadCreated, 0},
		{"too many unready", v1alpha1.ReleaseStreamSpec{MaxUnreadyReleases: 1},
			[]v1alpha1.ReleasePayload{payloadAt("p1", time.Hour, v1alpha1.PhaseReady, hashOf("h1")...)}, false, v1alpha1.ReasonTooManyUnready, 0},
		{"room for another unready", v1alpha1.ReleaseStreamSpec{MaxUnreadyReleases: 2},
			[]v1alpha1.ReleasePayload{payloadAt("p1", time.Hour, v1alpha1.PhaseReady, hashOf("h1")...)}, true, v1alpha1.ReasonPayloadCreated, 0},
		{"aborted payloads do not count", v1alpha1.ReleaseStreamSpec{MaxUnreadyReleases: 1},
			[]v1alpha1.ReleasePayload{payloadAt("p1", time.Hour, v1alpha1.PhasePending, append(hashOf("h1"), v1alpha1.AnnotationAborted, "superseded")...)}, true, v1alpha1.ReasonPayloadCreated, 0},
		{"an Accepted written by hand is still unready", v1alpha1.ReleaseStreamSpec{MaxUnreadyReleases: 1},
			[]v1alpha1.ReleasePayload{handWritten("p1", time.Hour, v1alpha1.PhaseAccepted, hashOf("h1")...)}, false, v1alpha1.ReasonTooManyUnready, 0},
		{"interval not passed", v1alpha1.ReleaseStreamSpec{MaxUnreadyReleases: 1, MinCreationInterval: interval},
			[]v1alpha1.ReleasePayload{payloadAt("p1", 4*time.Minute, v1alpha1.PhaseAccepted, hashOf("h1")...)}, false, v1alpha1.ReasonCreationInterval, 6 * time.Minute},
		{"interval passed", v1alpha1.ReleaseStreamSpec{MaxUnreadyReleases: 1, MinCreationInterval: interval},
			[]v1alpha1.ReleasePayload{payloadAt("p1", 10*time.Minute, v1alpha1.PhaseAccepted, hashOf("h1")...)}, true, v1alpha1.ReasonPayloadCreated, 0},
		{"per-platform names clash", v1alpha1.ReleaseStreamSpec{MaxUnreadyReleases: 1, Verification: []v1alpha1.Verification{
			{Name: "e2e", Platforms: []string{"linux/amd64", "linux/arm64"}}, {Name: "e2e-arm64"}}}, nil, false, v1alpha1.ReasonVerificationNameClash, 0},
		{"per-platform names apart", v1alpha1.ReleaseStreamSpec{MaxUnreadyReleases: 1, Verification: []v1alpha1.Verification{
			{Name: "e2e", Platforms: []string{"linux/amd64", "linux/arm64"}}, {Name: "e2e-arm"}}}, nil, true, v1alpha1.ReasonPayloadCreated, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := DecideCreate(&tt.spec, hash, tt.payloads, now)
			if d.Create != tt.create || d.Reason != tt.reason || d.RequeueAfter != tt.requeue {
				t.Errorf("DecideCreate() = %+v; want create=%v reason=%s requeue=%s", d, tt.create, tt.reason, tt.requeue)
			}
			if !d.Create && d.Message == "" {
				t.Error("no message says why")
			}
		})
	}
}

func TestToAbort(t *testing.T) {
	payloads := []v1alpha1.ReleasePayload{
		payloadAt("p4", time.Minute, v1alpha1.PhasePending),
		payloadAt("p3", 2*time.Minute, v1alpha1.PhasePending),
		payloadAt("p2", 3*time.Minute, v1alpha1.PhaseReady),
		payloadAt("p1", 4*time.Minute, v1alpha1.PhasePending, v1alpha1.AnnotationAborted, "superseded"),
		payloadAt("p0", 5*time.Minute, v1alpha1.PhaseFailed),
	}
	got := ToAbort(payloads)
	if len(got) != 1 || got[0].Name != "p3" {
		t.Errorf("ToAbort() = %v, want [p3]", names(got))
	}
}

func names(ps []*v1alpha1.ReleasePayload) []string {
	var n []string
	for _, p := range ps {
		n = append(n, p.Name)
	}
	return n
}

func TestCollect(t *testing.T) {
	day := 24 * time.Hour
	keep := []string{v1alpha1.AnnotationKeep, ""}
	payloads := []v1alpha1.ReleasePayload{
		payloadAt("a6", 1*day, v1alpha1.PhaseReady),
		payloadAt("a5", 2*day, v1alpha1.PhaseAccepted),
		payloadAt("r5", 3*day, v1alpha1.PhaseRejected),
		payloadAt("a4", 4*day, v1alpha1.PhaseAccepted),
		payloadAt("f4", 5*day, v1alpha1.PhaseFailed),
		payloadAt("a3", 6*day, v1alpha1.PhaseAccepted),
		payloadAt("r3", 7*day, v1alpha1.PhaseRejected),
		payloadAt("r2", 8*day, v1alpha1.PhaseRejected, keep...),
		payloadAt("a2", 9*day, v1alpha1.PhaseAccepted, keep...),
		payloadAt("a1", 10*day, v1alpha1.PhaseAccepted),
		payloadAt("p1", 11*day, v1alpha1.PhasePending),
	}
	none := ptr.To[int32](0)
	week := &metav1.Duration{Duration: 7 * day}
	tests := []struct {
		name      string
		retention v1alpha1.Retention
		payloads  []v1alpha1.ReleasePayload // the list above when nil
		want      []string
	}{
		{"keep two accepted, no rejected by count", v1alpha1.Retention{KeepAccepted: 2, KeepRejected: none}, nil, []string{"a3", "a1", "f4", "r3"}},
		{"keep two, or younger than a week", v1alpha1.Retention{KeepAccepted: 2, AcceptedMaxAge: week, KeepRejected: none}, nil, []string{"a1", "r3"}},
		{"keep everything by default", v1alpha1.Retention{}, nil, nil},
		{"the newest five rejected stay by default", v1alpha1.Retention{KeepAccepted: 2}, nil, []string{"a3", "a1"}},
		{"failed payloads count with rejected ones", v1alpha1.Retention{KeepAccepted: 2, KeepRejected: ptr.To[int32](2)}, nil, []string{"a3", "a1", "r3"}},
		{"rejected payloads newer than the kept accepted ones use up keepRejected", v1alpha1.Retention{KeepAccepted: 2, KeepRejected: ptr.To[int32](1)}, nil,
			[]string{"a3", "a1", "f4", "r3"}},
		{"rejected younger than rejectedMaxAge stay", v1alpha1.Retention{KeepAccepted: 2, KeepRejected: none, RejectedMaxAge: &metav1.Duration{Duration: 6 * day}}, nil,
			[]string{"a3", "a1", "r3"}},
		{"a rejected payload survives a newer acceptance", v1alpha1.Retention{KeepAccepted: 1}, []v1alpha1.ReleasePayload{
			payloadAt("a2", 1*day, v1alpha1.PhaseAccepted),
			payloadAt("r1", 2*day, v1alpha1.PhaseRejected),
		}, nil},
		{"beyond keepRejected and rejectedMaxAge, old rejected payloads go", v1alpha1.Retention{KeepAccepted: 1, KeepRejected: ptr.To[int32](2), RejectedMaxAge: week}, []v1alpha1.ReleasePayload{
			payloadAt("a5", 1*day, v1alpha1.PhaseAccepted),
			payloadAt("r4", 8*day, v1alpha1.PhaseRejected),
			payloadAt("f3", 9*day, v1alpha1.PhaseFailed),
			payloadAt("r2", 10*day, v1alpha1.PhaseRejected),
			payloadAt("f1", 11*day, v1alpha1.PhaseFailed, keep...),
			payloadAt("r0", 12*day, v1alpha1.PhaseRejected),
		}, []string{"r2", "r0"}},
		{"a negative keepRejected keeps none by count", v1alpha1.Retention{KeepAccepted: 1, KeepRejected: ptr.To[int32](-1)}, []v1alpha1.ReleasePayload{
			payloadAt("a2", 1*day, v1alpha1.PhaseAccepted),
			payloadAt("r1", 2*day, v1alpha1.PhaseRejected),
		}, []string{"r1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			list := tt.payloads
			if list == nil {
				list = payloads
			}
			got := names(Collect(tt.retention, list, now))
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("Collect() = %v, want %v", got, tt.want)
			}
		})
	}
	if got := Collect(v1alpha1.Retention{KeepAccepted: 1, KeepRejected: none}, []v1alpha1.ReleasePayload{payloadAt("r1", day, v1alpha1.PhaseRejected)}, now); len(got) != 0 {
		t.Errorf("rejected payloads were collected without any accepted one: %v", names(got))
	}
}

func TestJobsToCollect(t *testing.T) {
	ttl := time.Hour
	jobs := []JobInfo{
		{Name: "orphan-running", PayloadKey: "ns/gone"},
		{Name: "old", PayloadKey: "ns/p", FinishedAt: now.Add(-2 * time.Hour), Recorded: true},
		{Name: "old-unrecorded", PayloadKey: "ns/p", FinishedAt: now.Add(-2 * time.Hour)},
		{Name: "recent", PayloadKey: "ns/p", FinishedAt: now.Add(-40 * time.Minute), Recorded: true},
		{Name: "running", PayloadKey: "ns/p"},
	}
	exists := func(key string) bool { return key == "ns/p" }
	got, next := JobsToCollect(jobs, exists, &ttl, now)
	var gotNames []string
	for _, j := range got {
		gotNames = append(gotNames, j.Name)
	}
	if fmt.Sprint(gotNames) != "[orphan-running old]" || next != 20*time.Minute {
		t.Errorf("JobsToCollect() = %v, next %s", gotNames, next)
	}
	if got, _ := JobsToCollect(jobs, exists, nil, now); len(got) != 1 {
		t.Errorf("without a TTL only orphans go: %v", got)
	}
}

func TestNewestAccepted(t *testing.T) {
	payloads := []v1alpha1.ReleasePayload{
		payloadAt("4.16.0-2026-11-22-000000", time.Hour, v1alpha1.PhaseRejected),
		payloadAt("4.15.10-2026-11-20-000000", 2*time.Hour, v1alpha1.PhaseAccepted),
		payloadAt("4.15.9-2026-11-21-000000", 3*time.Hour, v1alpha1.PhaseAccepted),
		handWritten("4.15.11-2026-11-22-000000", time.Hour, v1alpha1.PhaseAccepted),
	}
	if got := NewestAccepted(payloads); got == nil || got.Name != "4.15.10-2026-11-20-000000" {
		t.Errorf("NewestAccepted() = %v", got)
	}
	if got := Counts(payloads); got.Accepted != 2 || got.Rejected != 1 || got.Ready != 1 {
		t.Errorf("Counts() = %+v", got)
	}
}

func TestPerPlatform(t *testing.T) {
	in := []v1alpha1.Verification{
		{Name: "unit"},
		{Name: "smoke", Platforms: []string{"linux/arm64"}},
		{Name: "e2e", MaxRetries: 2, Platforms: []string{"linux/amd64", "linux/arm64/v8"}},
	}
	got := PerPlatform(in)
	want := []struct{ name, platform string }{{"unit", ""}, {"smoke", "linux/arm64"}, {"e2e-amd64", "linux/amd64"}, {"e2e-arm64-v8", "linux/arm64/v8"}}
	if len(got) != len(want) {
		t.Fatalf("PerPlatform() = %d verifications, want %d", len(got), len(want))
	}
	for i, w := range want {
		if got[i].Name != w.name || got[i].Platform() != w.platform {
			t.Errorf("verification %d = %s (%q), want %s (%q)", i, got[i].Name, got[i].Platform(), w.name, w.platform)
		}
	}
	if got[2].MaxRetries != 2 {
		t.Error("a per-platform copy lost the verification's settings")
	}
	got[2].Platforms[0] = "changed"
	if in[2].Platforms[0] != "linux/amd64" {
		t.Error("PerPlatform shares memory with the stream's spec")
	}
}

func TestPlatformImages(t *testing.T) {
	amd, arm := v1.Hash{Algorithm: "sha256", Hex: strings.Repeat("a", 64)}, v1.Hash{Algorithm: "sha256", Hex: strings.Repeat("b", 64)}
	images := []releaseimage.PlatformImage{{Platform: "linux/amd64", Digest: amd}, {Platform: "linux/arm64/v8", Digest: arm}}
	got, err := PlatformImages("registry.example.com/release@sha256:"+strings.Repeat("c", 64), images, []string{"linux/arm64", "linux/amd64"})
	if err != nil {
		t.Fatal(err)
	}
	want := []v1alpha1.PlatformImage{
		{Platform: "linux/arm64", Image: "registry.example.com/release@" + arm.String()},
		{Platform: "linux/amd64", Image: "registry.example.com/release@" + amd.String()},
	}
	if !slices.Equal(got, want) {
		t.Errorf("PlatformImages() = %v, want %v", got, want)
	}
	if _, err := PlatformImages("registry.example.com/release@sha256:c", images, []string{"linux/s390x"}); err == nil || !strings.Contains(err.Error(), "has no image of linux/s390x (it has linux/amd64, linux/arm64/v8)") {
		t.Errorf("a platform the index lacks: %v", err)
	}
}
