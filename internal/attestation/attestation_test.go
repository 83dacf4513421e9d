package attestation

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	intoto "github.com/in-toto/attestation/go/v1"
	"google.golang.org/protobuf/encoding/protojson"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/stream"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

const (
	builder    = "https://release-controller.dev/controller@v1.2.3"
	payloadHex = "1111111111111111111111111111111111111111111111111111111111111111"
	apiHex     = "2222222222222222222222222222222222222222222222222222222222222222"
	cliHex     = "3333333333333333333333333333333333333333333333333333333333333333"
	amdHex     = "4444444444444444444444444444444444444444444444444444444444444444"
	armHex     = "5555555555555555555555555555555555555555555555555555555555555555"
	policyHex  = "6666666666666666666666666666666666666666666666666666666666666666"
)

func at(s string) metav1.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return metav1.NewTime(t)
}

// accepted is a multi-platform payload accepted after a retried blocking verification, with
// a failed informing one and a skipped upgrade.
func accepted() *v1alpha1.ReleasePayload {
	return &v1alpha1.ReleasePayload{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: "team", Name: "4.15.0-0.nightly-2026-11-28-100000",
			CreationTimestamp: at("2026-11-28T10:00:00Z"),
		},
		Spec: v1alpha1.ReleasePayloadSpec{
			PayloadCoordinates: v1alpha1.PayloadCoordinates{Stream: "nightly", Tag: "4.15.0-0.nightly-2026-11-28-100000"},
			// Not sorted by name: the provenance sorts them.
			Components: []v1alpha1.PinnedComponent{
				{Name: "cli", Image: "registry.example.com/product/cli@sha256:" + cliHex},
				{Name: "api", Image: "registry.example.com/product/api@sha256:" + apiHex, Source: "registry.example.com/product/api:latest"},
			},
			PayloadCreationConfig: v1alpha1.PayloadCreationConfig{
				Repository: "registry.example.com/product/release", Platforms: []string{"linux/amd64", "linux/arm64"}, BaseComponent: "cli",
			},
			PayloadVerificationConfig: v1alpha1.PayloadVerificationConfig{
				Verifications: []v1alpha1.Verification{{Name: "e2e"}, {Name: "perf", Type: v1alpha1.Informing}, {Name: "upgrade", UpgradeFrom: v1alpha1.UpgradeFromPrevious}, {Name: "slow", Type: v1alpha1.Informing}},
				TemplatesFrom: &v1alpha1.VerificationTemplates{ConfigMap: "nightly-verifications-666", Digest: "sha256:" + policyHex},
			},
		},
		Status: v1alpha1.ReleasePayloadStatus{
			Phase: v1alpha1.PhaseAccepted,
			Conditions: []metav1.Condition{
				{Type: v1alpha1.ConditionPayloadCreated, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonCreationJobSucceeded, LastTransitionTime: at("2026-11-28T10:05:00Z")},
				{Type: v1alpha1.ConditionPayloadAccepted, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonBlockingJobsSucceeded, LastTransitionTime: at("2026-11-28T11:30:00Z")},
			},
			ReleaseCreationJobResult: v1alpha1.ReleaseCreationJobResult{Namespace: "team", Name: "nightly-create-abc", Status: v1alpha1.CreationJobSuccess},
			PayloadImage:             "registry.example.com/product/release@sha256:" + payloadHex,
			PlatformImages: []v1alpha1.PlatformImage{
				{Platform: "linux/amd64", Image: "registry.example.com/product/release@sha256:" + amdHex},
				{Platform: "linux/arm64", Image: "registry.example.com/product/release@sha256:" + armHex},
			},
			Verifications: []v1alpha1.VerificationStatus{
				{Name: "e2e", Type: v1alpha1.Blocking, State: v1alpha1.JobSuccess, Runs: []v1alpha1.JobRun{
					{Kind: v1alpha1.RunKindJob, Namespace: "team", Name: "e2e-1", Attempt: 1, State: v1alpha1.JobFailure, URL: "https://ci.example.com/e2e/1"},
					{Kind: v1alpha1.RunKindJob, Namespace: "team", Name: "e2e-2", Attempt: 2, State: v1alpha1.JobSuccess, URL: "https://ci.example.com/e2e/2"},
				}},
				{Name: "perf", Type: v1alpha1.Informing, State: v1alpha1.JobFailure, Runs: []v1alpha1.JobRun{
					// A hostile link is left out, the run is not.
					{Kind: v1alpha1.RunKindProwJob, Namespace: "ci", Name: "perf-1", Attempt: 1, State: v1alpha1.JobFailure, URL: "javascript:alert(1)"},
				}},
				{Name: "upgrade", Type: v1alpha1.Blocking, UpgradeFrom: v1alpha1.UpgradeFromPrevious, State: v1alpha1.JobSkipped},
				// Still running: no result yet, so no statement.
				{Name: "slow", Type: v1alpha1.Informing, State: v1alpha1.JobPending, Runs: []v1alpha1.JobRun{
					{Kind: v1alpha1.RunKindJob, Namespace: "team", Name: "slow-1", Attempt: 1, State: v1alpha1.JobPending},
				}},
			},
		},
	}
}

// rejected is a single-platform payload rejected by its blocking verification, with the
// verification list inline.
func rejected() *v1alpha1.ReleasePayload {
	return &v1alpha1.ReleasePayload{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "1.0.0-1", CreationTimestamp: at("2026-11-28T09:00:00Z")},
		Spec: v1alpha1.ReleasePayloadSpec{
			PayloadCoordinates:    v1alpha1.PayloadCoordinates{Stream: "dev", Tag: "1.0.0-1"},
			Components:            []v1alpha1.PinnedComponent{{Name: "api", Image: "registry.example.com/product/api@sha256:" + apiHex}},
			PayloadCreationConfig: v1alpha1.PayloadCreationConfig{Repository: "registry.example.com/product/dev"},
			PayloadVerificationConfig: v1alpha1.PayloadVerificationConfig{
				Verifications: []v1alpha1.Verification{{Name: "unit", Type: v1alpha1.Blocking}},
			},
		},
		Status: v1alpha1.ReleasePayloadStatus{
			Conditions: []metav1.Condition{
				{Type: v1alpha1.ConditionPayloadCreated, Status: metav1.ConditionTrue, LastTransitionTime: at("2026-11-28T09:01:00Z")},
				{Type: v1alpha1.ConditionPayloadAccepted, Status: metav1.ConditionFalse, LastTransitionTime: at("2026-11-28T09:09:00Z")},
				{Type: v1alpha1.ConditionPayloadRejected, Status: metav1.ConditionTrue, LastTransitionTime: at("2026-11-28T09:09:00Z")},
			},
			ReleaseCreationJobResult: v1alpha1.ReleaseCreationJobResult{Namespace: "team", Name: "dev-create-1", Status: v1alpha1.CreationJobSuccess},
			PayloadImage:             "registry.example.com/product/dev@sha256:" + payloadHex,
			Verifications: []v1alpha1.VerificationStatus{
				{Name: "unit", Type: v1alpha1.Blocking, State: v1alpha1.JobFailure, Runs: []v1alpha1.JobRun{
					{Kind: v1alpha1.RunKindJob, Namespace: "team", Name: "unit-1", Attempt: 1, State: v1alpha1.JobFailure, URL: "http://ci.example.com/unit/1"},
				}},
			},
		},
	}
}

// decoded is a statement's JSON decoded, for comparing fields, not bytes.
func decoded(t *testing.T, data []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatalf("statement is not JSON: %v\n%s", err, data)
	}
	return m
}

func TestStatements(t *testing.T) {
	subject := func(name string) string {
		return `"_type": "https://in-toto.io/Statement/v1",
		"subject": [{"name": "` + name + `", "digest": {"sha256": "` + payloadHex + `"}}]`
	}
	acceptedSubject := subject("registry.example.com/product/release:4.15.0-0.nightly-2026-11-28-100000")
	rejectedSubject := subject("registry.example.com/product/dev:1.0.0-1")
	// rejected()'s provenance, with metadata (the creation job and times) as given.
	rejectedProvenance := func(metadata string) string {
		return `{` + rejectedSubject + `,
			"predicateType": "https://slsa.dev/provenance/v1",
			"predicate": {
				"buildDefinition": {
					"buildType": "https://release-controller.dev/payload/v1",
					"externalParameters": {"namespace": "team", "stream": "dev", "tag": "1.0.0-1", "repository": "registry.example.com/product/dev"},
					"resolvedDependencies": [{"name": "api", "uri": "registry.example.com/product/api@sha256:` + apiHex + `", "digest": {"sha256": "` + apiHex + `"}}]
				},
				"runDetails": {"builder": {"id": "` + builder + `"}, ` + metadata + `}
			}}`
	}
	inlineDigest, err := PolicyDigest(rejected())
	if err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name    string
		payload *v1alpha1.ReleasePayload
		stream  *v1alpha1.ReleaseStream
		want    map[string]string // statement name: its JSON
		order   []string
	}{{
		name:    "accepted multi-platform payload",
		payload: accepted(),
		stream:  &v1alpha1.ReleaseStream{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "nightly"}},
		order:   []string{"provenance", "test-result e2e", "test-result perf", "test-result upgrade", "verification-summary"},
		want: map[string]string{
			"provenance": `{` + acceptedSubject + `,
				"predicateType": "https://slsa.dev/provenance/v1",
				"predicate": {
					"buildDefinition": {
						"buildType": "https://release-controller.dev/payload/v1",
						"externalParameters": {"namespace": "team", "stream": "nightly", "tag": "4.15.0-0.nightly-2026-11-28-100000",
							"repository": "registry.example.com/product/release", "platforms": ["linux/amd64", "linux/arm64"], "baseComponent": "cli"},
						"resolvedDependencies": [
							{"name": "api", "uri": "registry.example.com/product/api@sha256:` + apiHex + `", "digest": {"sha256": "` + apiHex + `"}},
							{"name": "cli", "uri": "registry.example.com/product/cli@sha256:` + cliHex + `", "digest": {"sha256": "` + cliHex + `"}}
						]
					},
					"runDetails": {
						"builder": {"id": "` + builder + `"},
						"metadata": {"invocationId": "team/nightly-create-abc", "startedOn": "2026-11-28T10:00:00Z", "finishedOn": "2026-11-28T10:05:00Z"},
						"byproducts": [
							{"name": "linux/amd64", "uri": "registry.example.com/product/release@sha256:` + amdHex + `", "digest": {"sha256": "` + amdHex + `"}},
							{"name": "linux/arm64", "uri": "registry.example.com/product/release@sha256:` + armHex + `", "digest": {"sha256": "` + armHex + `"}}
						]
					}
				}}`,
			"test-result e2e": `{` + acceptedSubject + `,
				"predicateType": "https://in-toto.io/attestation/test-result/v0.1",
				"predicate": {
					"result": "WARNED",
					"configuration": [
						{"name": "e2e", "annotations": {"type": "Blocking", "state": "Success"}},
						{"name": "team/e2e-1", "uri": "https://ci.example.com/e2e/1", "annotations": {"kind": "Job", "state": "Failure", "attempt": 1}},
						{"name": "team/e2e-2", "uri": "https://ci.example.com/e2e/2", "annotations": {"kind": "Job", "state": "Success", "attempt": 2}}
					],
					"url": "https://ci.example.com/e2e/2",
					"passedTests": ["team/e2e-2"],
					"failedTests": ["team/e2e-1"]
				}}`,
			"test-result perf": `{` + acceptedSubject + `,
				"predicateType": "https://in-toto.io/attestation/test-result/v0.1",
				"predicate": {
					"result": "FAILED",
					"configuration": [
						{"name": "perf", "annotations": {"type": "Informing", "state": "Failure"}},
						{"name": "ci/perf-1", "annotations": {"kind": "ProwJob", "state": "Failure", "attempt": 1}}
					],
					"failedTests": ["ci/perf-1"]
				}}`,
			"test-result upgrade": `{` + acceptedSubject + `,
				"predicateType": "https://in-toto.io/attestation/test-result/v0.1",
				"predicate": {
					"result": "WARNED",
					"configuration": [{"name": "upgrade", "annotations": {"type": "Blocking", "state": "Skipped", "upgradeFrom": "Previous"}}]
				}}`,
			"verification-summary": `{` + acceptedSubject + `,
				"predicateType": "https://slsa.dev/verification_summary/v1",
				"predicate": {
					"verifier": {"id": "` + builder + `"},
					"timeVerified": "2026-11-28T11:30:00Z",
					"resourceUri": "registry.example.com/product/release@sha256:` + payloadHex + `",
					"policy": {"uri": "https://release-controller.dev/streams/team/nightly", "digest": {"sha256": "` + policyHex + `"}},
					"verificationResult": "PASSED",
					"verifiedLevels": ["SLSA_BUILD_LEVEL_1"],
					"slsaVersion": "1.0"
				}}`,
		},
	}, {
		name:    "rejected payload: no verification summary",
		payload: rejected(),
		order:   []string{"provenance", "test-result unit"},
		want: map[string]string{
			"provenance": rejectedProvenance(`"metadata": {"invocationId": "team/dev-create-1", "startedOn": "2026-11-28T09:00:00Z", "finishedOn": "2026-11-28T09:01:00Z"}`),
			"test-result unit": `{` + rejectedSubject + `,
				"predicateType": "https://in-toto.io/attestation/test-result/v0.1",
				"predicate": {
					"result": "FAILED",
					"configuration": [
						{"name": "unit", "annotations": {"type": "Blocking", "state": "Failure"}},
						{"name": "team/unit-1", "uri": "http://ci.example.com/unit/1", "annotations": {"kind": "Job", "state": "Failure", "attempt": 1}}
					],
					"url": "http://ci.example.com/unit/1",
					"failedTests": ["team/unit-1"]
				}}`,
		},
	}, {
		name: "accepted by override, inline verification list",
		payload: func() *v1alpha1.ReleasePayload {
			p := rejected()
			p.Status.Conditions = []metav1.Condition{
				{Type: v1alpha1.ConditionPayloadAccepted, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonManualOverride, LastTransitionTime: at("2026-11-28T12:00:00Z")},
			}
			p.Status.ReleaseCreationJobResult = v1alpha1.ReleaseCreationJobResult{}
			p.Status.Verifications = nil
			return p
		}(),
		order: []string{"provenance", "verification-summary"},
		want: map[string]string{
			// Without a creation job or a created time, the metadata says when the payload began only.
			"provenance": rejectedProvenance(`"metadata": {"startedOn": "2026-11-28T09:00:00Z"}`),
			"verification-summary": `{` + rejectedSubject + `,
				"predicateType": "https://slsa.dev/verification_summary/v1",
				"predicate": {
					"verifier": {"id": "` + builder + `"},
					"timeVerified": "2026-11-28T12:00:00Z",
					"resourceUri": "registry.example.com/product/dev@sha256:` + payloadHex + `",
					"policy": {"uri": "https://release-controller.dev/streams/team/dev", "digest": {"sha256": "` + inlineDigest + `"}},
					"verificationResult": "PASSED",
					"verifiedLevels": ["SLSA_BUILD_LEVEL_1"],
					"slsaVersion": "1.0"
				}}`,
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Statements(tt.payload, tt.stream, builder)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, st := range got {
				names = append(names, st.Name)
				want, ok := tt.want[st.Name]
				if !ok {
					continue
				}
				if diff := cmp.Diff(decoded(t, []byte(want)), decoded(t, st.JSON)); diff != "" {
					t.Errorf("%s (-want +got):\n%s", st.Name, diff)
				}
				if wantType := decoded(t, []byte(want))["predicateType"]; st.PredicateType != wantType {
					t.Errorf("%s: PredicateType %q, the statement says %q", st.Name, st.PredicateType, wantType)
				}
				// The in-toto library reads it back as a valid statement.
				var parsed intoto.Statement
				if err := protojson.Unmarshal(st.JSON, &parsed); err != nil {
					t.Errorf("%s: in-toto cannot read the statement: %v", st.Name, err)
				} else if err := parsed.Validate(); err != nil {
					t.Errorf("%s: in-toto finds the statement invalid: %v", st.Name, err)
				}
			}
			if diff := cmp.Diff(tt.order, names); diff != "" {
				t.Errorf("statements (-want +got):\n%s", diff)
			}
		})
	}
}

// TestStatementsDeterministic: the same payload gives the same bytes, whatever the order of
// its components and however often it is built, and the bytes are the ones of the golden
// files (so another build of the binary, whose protojson spaces differently, agrees).
func TestStatementsDeterministic(t *testing.T) {
	first, err := Statements(accepted(), nil, builder)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 20; i++ {
		p := accepted()
		p.Spec.Components[0], p.Spec.Components[1] = p.Spec.Components[1], p.Spec.Components[0]
		again, err := Statements(p, nil, builder)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(first, again); diff != "" {
			t.Fatalf("build %d differs (-first +again):\n%s", i, diff)
		}
	}
	for _, st := range first {
		path := filepath.Join("testdata", strings.ReplaceAll(st.Name, " ", "-")+".json")
		if *update {
			if err := os.WriteFile(path, append(st.JSON, '\n'), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		golden, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (go test -run TestStatementsDeterministic -update writes it)", err)
		}
		if !bytes.Equal(bytes.TrimSuffix(golden, []byte("\n")), st.JSON) {
			t.Errorf("%s differs from %s:\n got %s\nwant %s", st.Name, path, st.JSON, golden)
		}
	}
}

func TestStatementsRefuse(t *testing.T) {
	tests := []struct {
		name    string
		mutate  func(p *v1alpha1.ReleasePayload)
		stream  *v1alpha1.ReleaseStream
		builder string
		want    string
	}{{
		name:   "no payload image yet",
		mutate: func(p *v1alpha1.ReleasePayload) { p.Status.PayloadImage = "" },
		want:   "status.payloadImage is empty",
	}, {
		name: "payload image by tag",
		mutate: func(p *v1alpha1.ReleasePayload) {
			p.Status.PayloadImage = "registry.example.com/product/release:latest"
		},
		want: "status.payloadImage: \"registry.example.com/product/release:latest\" is not a pull spec by sha256 digest",
	}, {
		name: "component digest too short",
		mutate: func(p *v1alpha1.ReleasePayload) {
			p.Spec.Components[0].Image = "registry.example.com/product/cli@sha256:abc"
		},
		want: `component "cli"`,
	}, {
		name: "component digest in capitals",
		mutate: func(p *v1alpha1.ReleasePayload) {
			p.Spec.Components[1].Image = "registry.example.com/product/api@sha256:" + strings.Repeat("A", 64)
		},
		want: "64 lowercase hex digits",
	}, {
		name: "platform image not by digest",
		mutate: func(p *v1alpha1.ReleasePayload) {
			p.Status.PlatformImages[1].Image = "registry.example.com/product/release"
		},
		want: `platform image "linux/arm64"`,
	}, {
		name: "templates digest not sha256",
		mutate: func(p *v1alpha1.ReleasePayload) {
			p.Spec.PayloadVerificationConfig.TemplatesFrom.Digest = "md5:abc"
		},
		want: "templatesFrom.digest \"md5:abc\"",
	}, {
		name:   "another stream",
		stream: &v1alpha1.ReleaseStream{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "stable"}},
		want:   `stream team/stable is not payload`,
	}, {
		name:   "the stream of another namespace",
		stream: &v1alpha1.ReleaseStream{ObjectMeta: metav1.ObjectMeta{Namespace: "other", Name: "nightly"}},
		want:   `stream other/nightly is not payload`,
	}, {
		name:    "no builder id",
		builder: "-",
		want:    "no builder id",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := accepted()
			if tt.mutate != nil {
				tt.mutate(p)
			}
			b := builder
			if tt.builder == "-" {
				b = ""
			}
			got, err := Statements(p, tt.stream, b)
			if err == nil {
				t.Fatalf("built %d statements, want an error", len(got))
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not say %q", err, tt.want)
			}
		})
	}
}

func TestResult(t *testing.T) {
	tests := []struct {
		state  v1alpha1.JobState
		failed int
		want   string
	}{
		{v1alpha1.JobSuccess, 0, ResultPassed},
		{v1alpha1.JobSuccess, 2, ResultWarned},
		{v1alpha1.JobSkipped, 0, ResultWarned},
		{v1alpha1.JobFailure, 1, ResultFailed},
		{v1alpha1.JobFailure, 0, ResultFailed},
		{v1alpha1.JobUnknown, 1, ResultFailed},
	}
	for _, tt := range tests {
		if got := result(tt.state, tt.failed); got != tt.want {
			t.Errorf("result(%s, %d) = %s, want %s", tt.state, tt.failed, got, tt.want)
		}
	}
}

// TestPolicyDigestAgrees: a payload with its list inline and one pointing at the stream
// controller's templates ConfigMap of the same list have one policy digest.
func TestPolicyDigestAgrees(t *testing.T) {
	verifications := []v1alpha1.Verification{
		{Name: "e2e", Type: v1alpha1.Blocking, MaxRetries: 2},
		{Name: "upgrade", Type: v1alpha1.Informing, UpgradeFrom: v1alpha1.UpgradeFromPreviousMinor},
	}
	s := &v1alpha1.ReleaseStream{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "nightly"}}
	_, ref, err := stream.VerificationTemplates(s, verifications)
	if err != nil {
		t.Fatal(err)
	}
	inline := rejected()
	inline.Spec.PayloadVerificationConfig = v1alpha1.PayloadVerificationConfig{Verifications: verifications}
	viaConfigMap := rejected()
	viaConfigMap.Spec.PayloadVerificationConfig = v1alpha1.PayloadVerificationConfig{
		Verifications: stream.WithoutBackends(verifications), TemplatesFrom: ref,
	}
	a, err := PolicyDigest(inline)
	if err != nil {
		t.Fatal(err)
	}
	b, err := PolicyDigest(viaConfigMap)
	if err != nil {
		t.Fatal(err)
	}
	if a != b || "sha256:"+a != ref.Digest {
		t.Errorf("inline %s, via ConfigMap %s, ConfigMap's %s: want one digest", a, b, ref.Digest)
	}
	other := rejected()
	other.Spec.PayloadVerificationConfig.Verifications = verifications[:1]
	if c, err := PolicyDigest(other); err != nil || c == a {
		t.Errorf("another list has digest %s (err %v), the same as %s", c, err, a)
	}
}
