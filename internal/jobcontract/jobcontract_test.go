package jobcontract

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/release-controller/release-controller/api/v1alpha1"
)

func TestObjectName(t *testing.T) {
	long := "4.15.0-0.nightly-multi-arch-priv-2026-11-22-093000"
	tests := []struct {
		parts []string
		want  string
	}{
		{[]string{"4.15.0-2026-11-22-093000", "e2e", "1"}, "4.15.0-2026-11-22-093000-e2e-1"},
		{[]string{"4.15.0-2026-11-22-093000", "Build"}, "4.15.0-2026-11-22-093000-build"},
		{[]string{long, "e2e-aws-ovn-upgrade-from-previous", "2"}, "4.15.0-0.nightly-multi-arch-priv-2026-11-22-093000-e-18b11c77e3"},
	}
	for _, tt := range tests {
		got := ObjectName(tt.parts...)
		if got != tt.want {
			t.Errorf("ObjectName(%q) = %q, want %q", tt.parts, got, tt.want)
		}
		if len(got) > MaxNameLength || len(validation.IsDNS1123Subdomain(got)) > 0 || len(validation.IsValidLabelValue(got)) > 0 {
			t.Errorf("ObjectName(%q) = %q is not a valid name and label value", tt.parts, got)
		}
	}
	if RunName(long, "e2e-aws-ovn-upgrade-from-previous", 2) == RunName(long, "e2e-aws-ovn-upgrade-from-previous", 3) {
		t.Error("long names of different runs collide")
	}
}

func payload(namespace, tag string) *v1alpha1.ReleasePayload {
	return &v1alpha1.ReleasePayload{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: tag, UID: "uid-1"},
		Spec:       v1alpha1.ReleasePayloadSpec{PayloadCoordinates: v1alpha1.PayloadCoordinates{Stream: "nightly", Tag: tag}},
	}
}

// TestJobRoundTrip: what the controller writes on a job is what it reads back, in the job's
// namespace and in another one (ProwJobs in Prow's namespace).
func TestJobRoundTrip(t *testing.T) {
	const tag = "4.15.0-0.nightly-2026-11-22-093000"
	p := payload("release", tag)
	tests := []struct {
		name            string
		job             Job
		namespace       string
		wantName        string
		wantLabels      map[string]string
		wantAnnotations map[string]string
	}{
		{
			name: "creation job", job: CreationJob(p), namespace: "release",
			wantName: tag + "-build",
			wantLabels: map[string]string{
				v1alpha1.LabelStream: "nightly", v1alpha1.LabelPayload: tag, v1alpha1.LabelJobType: v1alpha1.JobTypeCreation,
			},
		},
		{
			name: "first run", job: VerificationRun(p, "e2e", 1, ""), namespace: "release",
			wantName: tag + "-e2e-1",
			wantLabels: map[string]string{
				v1alpha1.LabelStream: "nightly", v1alpha1.LabelPayload: tag, v1alpha1.LabelJobType: v1alpha1.JobTypeVerification,
				v1alpha1.LabelVerify: "e2e",
			},
			wantAnnotations: map[string]string{v1alpha1.AnnotationAttempt: "1"},
		},
		{
			name: "upgrade retry in Prow's namespace", job: VerificationRun(p, "upgrade", 3, "4.14.0-0.nightly-2026-11-01-000000"), namespace: "ci",
			wantName: tag + "-upgrade-3",
			wantLabels: map[string]string{
				v1alpha1.LabelStream: "nightly", v1alpha1.LabelPayload: tag, v1alpha1.LabelJobType: v1alpha1.JobTypeVerification,
				v1alpha1.LabelVerify: "upgrade", v1alpha1.LabelPayloadNamespace: "release",
			},
			wantAnnotations: map[string]string{v1alpha1.AnnotationAttempt: "3", v1alpha1.AnnotationUpgradeFrom: "4.14.0-0.nightly-2026-11-01-000000"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.job.Name(); got != tt.wantName {
				t.Errorf("Name() = %q, want %q", got, tt.wantName)
			}
			if diff := cmp.Diff(tt.wantLabels, tt.job.Labels(tt.namespace)); diff != "" {
				t.Errorf("Labels (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantAnnotations, tt.job.Annotations()); diff != "" {
				t.Errorf("Annotations (-want +got):\n%s", diff)
			}
			obj := &metav1.ObjectMeta{Namespace: tt.namespace, Name: tt.job.Name(), Labels: tt.job.Labels(tt.namespace), Annotations: tt.job.Annotations()}
			back, ok := Parse(obj)
			want := tt.job
			if want.Type == v1alpha1.JobTypeCreation {
				want.Attempt = 1 // a creation job has no attempt annotation: the first
			}
			if !ok || back != want {
				t.Errorf("Parse() = %+v, %v; want %+v", back, ok, want)
			}
			if got := PayloadKeyOf(obj); got != "release/"+tag {
				t.Errorf("PayloadKeyOf() = %q", got)
			}
			if back.StreamKey() != "release/nightly" {
				t.Errorf("StreamKey() = %q", back.StreamKey())
			}
			if !Selector().Matches(labels.Set(obj.Labels)) {
				t.Errorf("Selector() does not select the job's labels %v", obj.Labels)
			}
		})
	}
}

func TestParseOtherObjects(t *testing.T) {
	for name, l := range map[string]map[string]string{
		"no labels":         nil,
		"no job type":       {v1alpha1.LabelPayload: "4.15.0"},
		"no payload":        {v1alpha1.LabelJobType: v1alpha1.JobTypeCreation},
		"stream label only": {v1alpha1.LabelStream: "nightly"},
	} {
		obj := &metav1.ObjectMeta{Namespace: "ns", Name: "x", Labels: l}
		if _, ok := Parse(obj); ok {
			t.Errorf("%s: parsed as a job", name)
		}
		if key := PayloadKeyOf(obj); key != "" {
			t.Errorf("%s: payload key %q", name, key)
		}
	}
	if Selector().Matches(labels.Set{v1alpha1.LabelStream: "nightly"}) {
		t.Error("Selector() selects an object without a job type")
	}
}

func TestParseAttempt(t *testing.T) {
	for in, want := range map[string]int32{"": 1, "1": 1, "7": 7, "0": 1, "-2": 1, "two": 1, "99999999999": 1} {
		if got := ParseAttempt(in); got != want {
			t.Errorf("ParseAttempt(%q) = %d, want %d", in, got, want)
		}
	}
}

func TestPayloadKey(t *testing.T) {
	key := PayloadKey("release", "4.15.0-2026-11-22-093000")
	if ns, tag := SplitPayloadKey(key); key != "release/4.15.0-2026-11-22-093000" || ns != "release" || tag != "4.15.0-2026-11-22-093000" {
		t.Errorf("PayloadKey = %q, split %q %q", key, ns, tag)
	}
}

func TestOwnerReference(t *testing.T) {
	ref := OwnerReference(payload("release", "4.15.0"))
	if ref.Kind != "ReleasePayload" || ref.Name != "4.15.0" || ref.UID != "uid-1" || ref.APIVersion != v1alpha1.GroupVersion.String() || ref.BlockOwnerDeletion != nil {
		t.Errorf("OwnerReference() = %+v", ref)
	}
}

func TestMaxRuns(t *testing.T) {
	for retries, want := range map[int32]int32{0: 2, 1: 4, 20: 42} {
		if got := MaxRuns(v1alpha1.Verification{MaxRetries: retries}); got != want {
			t.Errorf("MaxRuns(maxRetries %d) = %d, want %d", retries, got, want)
		}
	}
}

func TestReleases(t *testing.T) {
	tests := []struct {
		name   string
		tags   []string
		want   []string
		newest string
	}{
		{"none", nil, []string{}, ""},
		{"not semver", []string{"latest", "garbage"}, []string{}, ""},
		{
			"by version, not by string",
			[]string{"4.15.9-2026-11-21-000000", "4.15.10-2026-11-20-000000", "4.16.0-0.nightly-2026-11-22-000000", "not-semver"},
			[]string{"4.16.0-0.nightly-2026-11-22-000000", "4.15.10-2026-11-20-000000", "4.15.9-2026-11-21-000000"},
			"4.16.0-0.nightly-2026-11-22-000000",
		},
		{
			"a prerelease is older than its release; timestamps order nightlies",
			[]string{"4.15.0", "4.15.0-0.nightly-2026-11-22-093000", "4.15.0-0.nightly-2026-11-23-000000"},
			[]string{"4.15.0", "4.15.0-0.nightly-2026-11-23-000000", "4.15.0-0.nightly-2026-11-22-093000"},
			"4.15.0",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := []string{}
			for _, r := range Releases(tt.tags) {
				got = append(got, r.Tag)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Releases (-want +got):\n%s", diff)
			}
			newest, ok := Newest(tt.tags)
			if newest != tt.newest || ok != (tt.newest != "") {
				t.Errorf("Newest() = %q, %v; want %q", newest, ok, tt.newest)
			}
		})
	}
}
