package buildinput_test

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/buildinput"
	"github.com/release-controller/release-controller/internal/clusters"
	"github.com/release-controller/release-controller/internal/verdict/verdicttest"
)

func TestPreviousReleases(t *testing.T) {
	payload := func(stream, tag string, phase v1alpha1.PayloadPhase) v1alpha1.ReleasePayload {
		p := v1alpha1.ReleasePayload{
			Spec: v1alpha1.ReleasePayloadSpec{PayloadCoordinates: v1alpha1.PayloadCoordinates{Stream: stream, Tag: tag}},
		}
		verdicttest.Earn(&p, phase)
		return p
	}
	accepted := func(stream, tag string) v1alpha1.ReleasePayload { return payload(stream, tag, v1alpha1.PhaseAccepted) }
	current := v1alpha1.PayloadCoordinates{Stream: "s", Tag: "4.15.0-0.nightly-2026-11-22-093000"}
	for _, tc := range []struct {
		name     string
		payloads []v1alpha1.ReleasePayload
		want     []string
	}{
		{"none", nil, []string{}},
		{"at most five, newest first", []v1alpha1.ReleasePayload{
			accepted("s", "4.15.0-0.nightly-2026-11-16-093000"),
			accepted("s", "4.15.0-0.nightly-2026-11-21-093000"),
			accepted("s", "4.15.0-0.nightly-2026-11-17-093000"),
			accepted("s", "4.14.9"),
			accepted("s", "4.15.0-0.nightly-2026-11-20-093000"),
			accepted("s", "4.15.0-0.nightly-2026-11-19-093000"),
			accepted("s", "4.15.0-0.nightly-2026-11-18-093000"),
		}, []string{
			"4.15.0-0.nightly-2026-11-21-093000", "4.15.0-0.nightly-2026-11-20-093000", "4.15.0-0.nightly-2026-11-19-093000",
			"4.15.0-0.nightly-2026-11-18-093000", "4.15.0-0.nightly-2026-11-17-093000",
		}},
		{"an earlier minor counts", []v1alpha1.ReleasePayload{accepted("s", "4.14.9")}, []string{"4.14.9"}},
		{"the release 4.15.0 is later than its pre-releases", []v1alpha1.ReleasePayload{accepted("s", "4.15.0"), accepted("s", "4.15.0-0.ci-2026-11-23-093000")},
			[]string{"4.15.0-0.ci-2026-11-23-093000"}},
		{"itself, later, other streams, not accepted, accepted by hand and bad tags do not", []v1alpha1.ReleasePayload{
			accepted("s", current.Tag),
			accepted("s", "4.15.1"),
			accepted("other", "4.14.0"),
			payload("s", "4.14.1", v1alpha1.PhaseRejected),
			payload("s", "4.14.2", v1alpha1.PhaseReady),
			*verdicttest.HandWritten("ns", "s", "4.14.3", v1alpha1.PhaseAccepted),
			accepted("s", "v4.14"),
		}, []string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := buildinput.PreviousReleases(current, tc.payloads)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("previous = %q, want %q", got, tc.want)
			}
		})
	}
	if _, err := buildinput.PreviousReleases(v1alpha1.PayloadCoordinates{Stream: "s", Tag: "latest"}, nil); err == nil {
		t.Error("a tag that is not a semantic version was accepted")
	}
}

// TestOf: the input carries the payload's coordinates, components in order, platforms, base
// component, creation time and earlier releases; Parse reads its JSON back the same, and
// refuses unknown fields and an input without what a build needs.
func TestOf(t *testing.T) {
	created := time.Date(2026, 11, 22, 9, 30, 0, 0, time.FixedZone("CET", 3600))
	p := &v1alpha1.ReleasePayload{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "1.0.0-2026-11-22-083000", CreationTimestamp: metav1.NewTime(created)},
		Spec: v1alpha1.ReleasePayloadSpec{
			PayloadCoordinates: v1alpha1.PayloadCoordinates{Stream: "s", Tag: "1.0.0-2026-11-22-083000"},
			Components:         []v1alpha1.PinnedComponent{{Name: "web", Image: "r/web@sha256:2"}, {Name: "api", Image: "r/api@sha256:1"}},
			PayloadCreationConfig: v1alpha1.PayloadCreationConfig{
				Repository: "r/release", Platforms: []string{"linux/amd64", "linux/arm64"}, BaseComponent: "api",
			},
		},
	}
	earlier := v1alpha1.ReleasePayload{Spec: v1alpha1.ReleasePayloadSpec{PayloadCoordinates: v1alpha1.PayloadCoordinates{Stream: "s", Tag: "1.0.0-2026-11-21-083000"}}}
	verdicttest.Earn(&earlier, v1alpha1.PhaseAccepted)
	in, err := buildinput.Of(p, []v1alpha1.ReleasePayload{earlier, *p})
	if err != nil {
		t.Fatal(err)
	}
	want := buildinput.Input{
		Namespace: "ns", Payload: p.Name, Tag: p.Name, Stream: "s", Repository: "r/release",
		Components: []buildinput.Component{{Name: "web", Image: "r/web@sha256:2"}, {Name: "api", Image: "r/api@sha256:1"}},
		Platforms:  []string{"linux/amd64", "linux/arm64"}, BaseComponent: "api",
		Previous: []string{"1.0.0-2026-11-21-083000"}, Created: created.UTC(),
	}
	if !reflect.DeepEqual(in, want) {
		t.Errorf("input\n%+v\nwant\n%+v", in, want)
	}
	data, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	back, err := buildinput.Parse(data)
	if err != nil || !reflect.DeepEqual(back, want) {
		t.Errorf("parsed back %+v, %v", back, err)
	}
	opts := back.BuildOptions()
	if opts.Tag != p.Name || opts.Stream != "s" || opts.Repository != "r/release" || len(opts.Components) != 2 || opts.Components[0].Name != "web" ||
		opts.BaseComponent != "api" || !opts.Created.Equal(created) || !reflect.DeepEqual(opts.Previous, want.Previous) || !reflect.DeepEqual(opts.Platforms, want.Platforms) {
		t.Errorf("build options %+v", opts)
	}
	for _, tc := range []struct{ json, want string }{
		{`{"tag": "t", "stream": "s", "repository": "r", "components": [{"name": "a", "image": "i"}], "extra": 1}`, `unknown field "extra"`},
		{`{"tag": "t", "components": []}`, "the build input has no components, repository, stream"},
		{`not json`, "reading the build input"},
	} {
		if _, err := buildinput.Parse([]byte(tc.json)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse(%s) = %v, want an error saying %q", tc.json, err, tc.want)
		}
	}
}

// TestClusterOf: the creation cluster's key is the Secret in the payload's namespace; its
// namespace there defaults to the payload's.
func TestClusterOf(t *testing.T) {
	p := func(c *v1alpha1.VerificationCluster) *v1alpha1.ReleasePayload {
		return &v1alpha1.ReleasePayload{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "t"},
			Spec:       v1alpha1.ReleasePayloadSpec{PayloadCreationConfig: v1alpha1.PayloadCreationConfig{Cluster: c}},
		}
	}
	for _, tc := range []struct {
		name    string
		cluster *v1alpha1.VerificationCluster
		ok      bool
		ns      string
	}{
		{"none", nil, false, ""},
		{"no secret", &v1alpha1.VerificationCluster{}, false, ""},
		{"default namespace", &v1alpha1.VerificationCluster{SecretRef: "farm"}, true, "ns"},
		{"named namespace", &v1alpha1.VerificationCluster{SecretRef: "farm", Namespace: "builds"}, true, "builds"},
	} {
		key, ns, ok := buildinput.ClusterOf(p(tc.cluster))
		if ok != tc.ok || ns != tc.ns || (ok && key != (clusters.Key{Namespace: "ns", Secret: "farm"})) {
			t.Errorf("%s: ClusterOf = %v %q %v", tc.name, key, ns, ok)
		}
		used := buildinput.AddCluster(map[clusters.Key][]string{{Namespace: "ns", Secret: "farm"}: {"ns"}}, p(tc.cluster))
		if tc.ok && !reflect.DeepEqual(used[key], slices.Compact([]string{"ns", tc.ns})) {
			t.Errorf("%s: AddCluster = %v", tc.name, used)
		}
	}
}
