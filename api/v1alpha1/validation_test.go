//go:build !unit

package v1alpha1_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	prowv1 "github.com/release-controller/release-controller/api/prow/v1"
	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/testbinary"
	"github.com/release-controller/release-controller/internal/testenv"
)

// These tests check admission: the CRDs' OpenAPI and CEL rules, and the ReleasePayload spec's
// rules in their admission policy (config/crd/policies), evaluated by a real API server.

var env *testenv.Env

func TestMain(m *testing.M) {
	testenv.Main(m, &env, nil)
}

const tag = "4.15.0-0.nightly-2026-11-22-093000"

func digest(name string) string {
	return "registry.example.com/product/" + name + "@sha256:" + fmt.Sprintf("%064x", len(name))
}

func jobBackend() *v1alpha1.JobBackend {
	return &v1alpha1.JobBackend{Template: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
		RestartPolicy: corev1.RestartPolicyNever,
		Containers:    []corev1.Container{{Name: "e2e", Image: "registry.example.com/tests:latest"}},
	}}}}}
}

func validPayload(ns string) *v1alpha1.ReleasePayload {
	return &v1alpha1.ReleasePayload{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: tag},
		Spec: v1alpha1.ReleasePayloadSpec{
			PayloadCoordinates:    v1alpha1.PayloadCoordinates{Stream: "nightly", Tag: tag},
			Components:            []v1alpha1.PinnedComponent{{Name: "api", Image: digest("api")}},
			PayloadCreationConfig: v1alpha1.PayloadCreationConfig{Repository: "registry.example.com/product/release"},
			PayloadVerificationConfig: v1alpha1.PayloadVerificationConfig{Verifications: []v1alpha1.Verification{
				{Name: "e2e", Job: jobBackend()},
			}},
		},
	}
}

func validStream(ns string) *v1alpha1.ReleaseStream {
	return &v1alpha1.ReleaseStream{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "nightly"},
		Spec: v1alpha1.ReleaseStreamSpec{
			TagPrefix:         "4.15.0-0.nightly",
			PayloadRepository: "registry.example.com/product/release",
			Components:        []v1alpha1.ComponentSource{{Name: "api", Image: "registry.example.com/product/api:latest"}},
			Verification:      []v1alpha1.Verification{{Name: "e2e", Job: jobBackend()}},
		},
	}
}

func TestValidObjectsAreAdmittedWithDefaults(t *testing.T) {
	ns := env.Namespace(t)
	ctx := context.Background()
	s := validStream(ns)
	if err := env.Client.Create(ctx, s); err != nil {
		t.Fatalf("creating a valid stream: %v", err)
	}
	if s.Spec.MaxUnreadyReleases != 1 || s.Spec.Retention.KeepAccepted != 10 || s.Spec.Verification[0].Type != v1alpha1.Blocking {
		t.Errorf("defaults not applied: maxUnreadyReleases=%d keepAccepted=%d type=%q", s.Spec.MaxUnreadyReleases, s.Spec.Retention.KeepAccepted, s.Spec.Verification[0].Type)
	}
	if s.Spec.Retention.KeepRejected == nil || *s.Spec.Retention.KeepRejected != 5 {
		t.Errorf("keepRejected not defaulted to 5: %v", s.Spec.Retention.KeepRejected)
	}
	// keepRejected 0 is a choice (keep none by count), not "unset".
	none := validStream(ns)
	none.Name = "none-kept"
	none.Spec.Retention.KeepRejected = ptr.To[int32](0)
	none.Spec.Retention.RejectedMaxAge = &metav1.Duration{Duration: 7 * 24 * time.Hour}
	if err := env.Client.Create(ctx, none); err != nil {
		t.Fatalf("creating a stream with keepRejected 0: %v", err)
	}
	if got := none.Spec.Retention.KeepRejected; got == nil || *got != 0 {
		t.Errorf("keepRejected 0 became %v", got)
	}
	p := validPayload(ns)
	if err := env.Client.Create(ctx, p); err != nil {
		t.Fatalf("creating a valid payload: %v", err)
	}
	// The override is the one part of the spec that may change.
	p.Spec.PayloadOverride = &v1alpha1.PayloadOverride{Override: v1alpha1.OverrideAccepted, Reason: "known flake"}
	if err := env.Client.Update(ctx, p); err != nil {
		t.Errorf("setting the override: %v", err)
	}
	// Templates kept in a ConfigMap: the verifications name no backend.
	withTemplates := validPayload(ns)
	withTemplates.Name += "-templates"
	withTemplates.Spec.PayloadCoordinates.Tag = withTemplates.Name
	withTemplates.Spec.PayloadVerificationConfig.Verifications[0].Job = nil
	withTemplates.Spec.PayloadVerificationConfig.TemplatesFrom = &v1alpha1.VerificationTemplates{ConfigMap: "nightly-verifications-0123456789abcdef", Digest: "sha256:" + strings.Repeat("a", 64)}
	if err := env.Client.Create(ctx, withTemplates); err != nil {
		t.Errorf("creating a payload whose templates are in a ConfigMap: %v", err)
	}
	// A verification that was not run is Skipped.
	p.Status.ReleaseCreationJobResult.Status = v1alpha1.CreationJobSuccess
	p.Status.Verifications = []v1alpha1.VerificationStatus{{Name: "e2e", Type: v1alpha1.Blocking, State: v1alpha1.JobSkipped, Message: "skipped"}}
	if err := env.Client.Status().Update(ctx, p); err != nil {
		t.Errorf("recording a skipped verification: %v", err)
	}
}

func TestSamplesAreValid(t *testing.T) {
	ns := env.Namespace(t)
	files, err := filepath.Glob("../../config/samples/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no samples found: %v", err)
	}
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var obj client.Object
		kind := regexp.MustCompile(`(?m)^kind: *(\w+) *$`).FindStringSubmatch(string(data))
		if kind == nil {
			t.Fatalf("%s: no top-level kind", file)
		}
		switch kind[1] {
		case "ReleaseStream":
			obj = &v1alpha1.ReleaseStream{}
		case "ReleasePayload":
			obj = &v1alpha1.ReleasePayload{}
		case "ReleaseLog":
			obj = &v1alpha1.ReleaseLog{}
		case "Pipeline":
			obj = &v1alpha1.Pipeline{}
		case "UpgradeRisk":
			obj = &v1alpha1.UpgradeRisk{}
		default:
			t.Fatalf("%s: unknown kind %s", file, kind[1])
		}
		if err := yaml.UnmarshalStrict(data, obj); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		obj.SetNamespace(ns)
		if l, ok := obj.(*v1alpha1.ReleaseLog); ok {
			moveToToday(l) // its day is long past; the date is what the sample tells to change
		}
		if err := env.Client.Create(context.Background(), obj); err != nil {
			t.Errorf("%s is not admitted: %v", file, err)
		}
	}
}

func TestInvalidPayloadsAreRejected(t *testing.T) {
	ns := env.Namespace(t)
	tests := []struct {
		name   string
		mutate func(p *v1alpha1.ReleasePayload)
		want   string
	}{
		{"name differs from tag", func(p *v1alpha1.ReleasePayload) { p.Name = "4.15.0-other" },
			"metadata.name must equal spec.payloadCoordinates.tag"},
		{"tag is not semver", func(p *v1alpha1.ReleasePayload) { p.Name = "nightly-1"; p.Spec.PayloadCoordinates.Tag = "nightly-1" },
			"tag must be a lowercase semantic version"},
		// Found by internal/catalog's FuzzAdmittedTagsAreSemver: tags the semver parser refuses.
		{"tag with a leading zero in a pre-release number", func(p *v1alpha1.ReleasePayload) {
			p.Name = "4.15.0-rc.01"
			p.Spec.PayloadCoordinates.Tag = p.Name
		}, "tag must be a lowercase semantic version"},
		{"tag with a number beyond 64 bits", func(p *v1alpha1.ReleasePayload) {
			p.Name = "99999999999999999999.0.0"
			p.Spec.PayloadCoordinates.Tag = p.Name
		}, "tag must be a lowercase semantic version"},
		{"no stream", func(p *v1alpha1.ReleasePayload) { p.Spec.PayloadCoordinates.Stream = "" },
			"spec.payloadCoordinates.stream"},
		{"component not pinned", func(p *v1alpha1.ReleasePayload) {
			p.Spec.Components[0].Image = "registry.example.com/product/api:latest"
		},
			"component image must be pinned by digest"},
		// Found by internal/releaseimage's FuzzAdmittedImageReferences: images payload build refuses.
		{"component image in capitals", func(p *v1alpha1.ReleasePayload) {
			p.Spec.Components[0].Image = "Registry.example.com/product/API@sha256:" + strings.Repeat("0", 64)
		},
			"component image must be pinned by digest"},
		{"component image of a registry", func(p *v1alpha1.ReleasePayload) {
			p.Spec.Components[0].Image = "registry.example.com:5000@sha256:" + strings.Repeat("0", 64)
		},
			"component image must be pinned by digest"},
		{"no components", func(p *v1alpha1.ReleasePayload) { p.Spec.Components = nil },
			"spec.components: Required value"},
		{"duplicate components", func(p *v1alpha1.ReleasePayload) { p.Spec.Components = append(p.Spec.Components, p.Spec.Components[0]) },
			"Duplicate value"},
		{"duplicate verifications", func(p *v1alpha1.ReleasePayload) {
			v := v1alpha1.Verification{Name: "e2e", Job: &v1alpha1.JobBackend{}}
			p.Spec.PayloadVerificationConfig.Verifications = []v1alpha1.Verification{v, v}
		},
			"verification names must be unique"},
		{"unknown override", func(p *v1alpha1.ReleasePayload) {
			p.Spec.PayloadOverride = &v1alpha1.PayloadOverride{Override: "Maybe", Reason: "unsure"}
		}, `spec.payloadOverride.override: Unsupported value: "Maybe": supported values: "Accepted", "Rejected"`},
		{"override without reason", func(p *v1alpha1.ReleasePayload) {
			p.Spec.PayloadOverride = &v1alpha1.PayloadOverride{Override: v1alpha1.OverrideAccepted}
		}, "spec.payloadOverride.reason"},
		{"both backends", func(p *v1alpha1.ReleasePayload) {
			p.Spec.PayloadVerificationConfig.Verifications[0].ProwJob = &v1alpha1.ProwJobBackend{Spec: prowv1.ProwJobSpec{Job: "e2e"}}
		}, "exactly one of job or prowJob must be set"},
		{"no backend", func(p *v1alpha1.ReleasePayload) { p.Spec.PayloadVerificationConfig.Verifications[0].Job = nil },
			"exactly one of job or prowJob must be set"},
		{"templates in a ConfigMap and inline", func(p *v1alpha1.ReleasePayload) {
			p.Spec.PayloadVerificationConfig.TemplatesFrom = &v1alpha1.VerificationTemplates{ConfigMap: "t", Digest: "sha256:" + strings.Repeat("0", 64)}
		}, "with templatesFrom, no verification sets job or prowJob"},
		{"templates digest that is no digest", func(p *v1alpha1.ReleasePayload) {
			p.Spec.PayloadVerificationConfig.Verifications[0].Job = nil
			p.Spec.PayloadVerificationConfig.TemplatesFrom = &v1alpha1.VerificationTemplates{ConfigMap: "t", Digest: "latest"}
		}, "digest must be sha256:<64 hex digits>"},
		{"negative retries", func(p *v1alpha1.ReleasePayload) { p.Spec.PayloadVerificationConfig.Verifications[0].MaxRetries = -1 },
			"maxRetries: Invalid value: -1: spec.payloadVerificationConfig.verifications[0].maxRetries in body should be greater than or equal to 0"},
		{"zero aggregated runs", func(p *v1alpha1.ReleasePayload) {
			p.Spec.PayloadVerificationConfig.Verifications[0].Aggregation = &v1alpha1.Aggregation{Runs: 0, PassRatio: 0.5}
		}, "runs in body should be greater than or equal to 1"},
		{"zero pass ratio", func(p *v1alpha1.ReleasePayload) {
			p.Spec.PayloadVerificationConfig.Verifications[0].Aggregation = &v1alpha1.Aggregation{Runs: 5, PassRatio: 0}
		}, "passRatio must be greater than 0 and at most 1"},
		{"pass ratio above 1", func(p *v1alpha1.ReleasePayload) {
			p.Spec.PayloadVerificationConfig.Verifications[0].Aggregation = &v1alpha1.Aggregation{Runs: 5, PassRatio: 1.5}
		}, "passRatio must be greater than 0 and at most 1"},
		{"aggregation with retries", func(p *v1alpha1.ReleasePayload) {
			p.Spec.PayloadVerificationConfig.Verifications[0].Aggregation = &v1alpha1.Aggregation{Runs: 5, PassRatio: 0.8}
			p.Spec.PayloadVerificationConfig.Verifications[0].MaxRetries = 2
		}, "maxRetries cannot be combined with aggregation"},
		{"unknown upgrade source", func(p *v1alpha1.ReleasePayload) {
			p.Spec.PayloadVerificationConfig.Verifications[0].UpgradeFrom = "Yesterday"
		},
			`Unsupported value: "Yesterday": supported values: "Previous", "PreviousMinus1", "PreviousMinor", "PreviousPatch"`},
		{"unknown verification type", func(p *v1alpha1.ReleasePayload) { p.Spec.PayloadVerificationConfig.Verifications[0].Type = "Optional" },
			`Unsupported value: "Optional": supported values: "Blocking", "Informing"`},
		{"bad verification name", func(p *v1alpha1.ReleasePayload) { p.Spec.PayloadVerificationConfig.Verifications[0].Name = "E2E_AWS" },
			"name must be lowercase letters, digits and '-'"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := validPayload(ns)
			tt.mutate(p)
			expectRejected(t, env.Client.Create(context.Background(), p), tt.want)
		})
	}
}

func TestPayloadSpecIsImmutable(t *testing.T) {
	ns := env.Namespace(t)
	ctx := context.Background()
	tests := []struct {
		name   string
		mutate func(p *v1alpha1.ReleasePayload)
		want   string
	}{
		{"components", func(p *v1alpha1.ReleasePayload) { p.Spec.Components[0].Image = digest("other") }, "components are immutable"},
		{"coordinates", func(p *v1alpha1.ReleasePayload) { p.Spec.PayloadCoordinates.Stream = "other" }, "payloadCoordinates are immutable"},
		{"creation config", func(p *v1alpha1.ReleasePayload) {
			p.Spec.PayloadCreationConfig.Repository = "registry.example.com/other"
		}, "payloadCreationConfig is immutable"},
		{"verification config", func(p *v1alpha1.ReleasePayload) { p.Spec.PayloadVerificationConfig.Verifications[0].MaxRetries = 3 }, "payloadVerificationConfig is immutable"},
	}
	p := validPayload(ns)
	if err := env.Client.Create(ctx, p); err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			changed := p.DeepCopy()
			tt.mutate(changed)
			expectRejected(t, env.Client.Update(ctx, changed), tt.want)
		})
	}
}

// TestPayloadStatusWritesRunNoCEL counts the API server's CEL validations of custom resources
// (apiserver_cel_evaluation_duration_seconds, one per validated object that has rules): a
// payload's status write and a metadata-only write run none, since the spec's rules moved
// into the admission policy (which matches no status writes and skips writes that leave the
// spec as it was); a stream's status write, whose CRD keeps its rules, runs them.
func TestPayloadStatusWritesRunNoCEL(t *testing.T) {
	ns := env.Namespace(t)
	ctx := context.Background()
	evaluations := func() uint64 {
		t.Helper()
		metrics, err := testbinary.ScrapeAPIServer(env.Config)
		if err != nil {
			t.Fatal(err)
		}
		_, n := metrics.HistogramSum("apiserver_cel_evaluation_duration_seconds", nil)
		return n
	}
	p := validPayload(ns)
	if err := env.Client.Create(ctx, p); err != nil {
		t.Fatal(err)
	}
	before := evaluations()
	p.Status.Phase = v1alpha1.PhaseReady
	p.Status.ReleaseCreationJobResult.Status = v1alpha1.CreationJobUnknown
	if err := env.Client.Status().Update(ctx, p); err != nil {
		t.Fatal(err)
	}
	p.Labels = map[string]string{"example": "yes"}
	if err := env.Client.Update(ctx, p); err != nil {
		t.Fatal(err)
	}
	if n := evaluations(); n != before {
		t.Errorf("a payload's status write and metadata-only write ran %d CEL validations", n-before)
	}
	s := validStream(ns)
	if err := env.Client.Create(ctx, s); err != nil {
		t.Fatal(err)
	}
	before = evaluations()
	s.Status.ObservedGeneration = s.Generation
	if err := env.Client.Status().Update(ctx, s); err != nil {
		t.Fatal(err)
	}
	if n := evaluations(); n == before {
		t.Errorf("a stream's status write ran no CEL validation: the metric does not count what this test needs")
	}
}

func TestInvalidStreamsAreRejected(t *testing.T) {
	ns := env.Namespace(t)
	tests := []struct {
		name   string
		mutate func(s *v1alpha1.ReleaseStream)
		want   string
	}{
		{"tag prefix is not semver", func(s *v1alpha1.ReleaseStream) { s.Spec.TagPrefix = "4.15" }, "tagPrefix must be a lowercase semantic version"},
		{"tag prefix with build metadata", func(s *v1alpha1.ReleaseStream) { s.Spec.TagPrefix = "4.15.0+build" }, "tagPrefix must be a lowercase semantic version"},
		{"tag prefix in capitals", func(s *v1alpha1.ReleaseStream) { s.Spec.TagPrefix = "4.15.0-0.Nightly" }, "tagPrefix must be a lowercase semantic version"},
		{"tag prefix with a number beyond 64 bits", func(s *v1alpha1.ReleaseStream) { s.Spec.TagPrefix = "4.15.99999999999999999999" }, "tagPrefix must be a lowercase semantic version"},
		{"tag prefix too long for a label", func(s *v1alpha1.ReleaseStream) { s.Spec.TagPrefix = "4.15.0-" + strings.Repeat("a", 40) },
			"spec.tagPrefix: Too long: may not be more than 45"},
		{"component without tag or digest", func(s *v1alpha1.ReleaseStream) { s.Spec.Components[0].Image = "registry.example.com/product/api" },
			"image must be a pull spec with a tag or a sha256 digest"},
		{"no components", func(s *v1alpha1.ReleaseStream) { s.Spec.Components = []v1alpha1.ComponentSource{} },
			"spec.components: Invalid value: 0: spec.components in body should have at least 1 items"},
		{"payload repository with tag", func(s *v1alpha1.ReleaseStream) { s.Spec.PayloadRepository = "registry.example.com/release:latest" },
			"payloadRepository must be a repository without tag or digest"},
		// Found by internal/releaseimage's FuzzAdmittedImageReferences: a registry is no repository.
		{"payload repository that is a registry", func(s *v1alpha1.ReleaseStream) { s.Spec.PayloadRepository = "registry.example.com:5000" },
			"payloadRepository must be a repository without tag or digest"},
		{"invalid publish tag", func(s *v1alpha1.ReleaseStream) { s.Spec.PublishTags = []string{"latest", "not a tag"} },
			"publish tags must be valid image tags"},
		{"negative unready releases", func(s *v1alpha1.ReleaseStream) { s.Spec.MaxUnreadyReleases = -1 },
			"maxUnreadyReleases in body should be greater than or equal to 1"},
		{"duplicate verification", func(s *v1alpha1.ReleaseStream) {
			s.Spec.Verification = append(s.Spec.Verification, s.Spec.Verification[0])
		},
			"Duplicate value"},
		{"platform without an architecture", func(s *v1alpha1.ReleaseStream) { s.Spec.Platforms = []string{"linux"} },
			"a platform is os/arch or os/arch/variant"},
		{"a verification on a platform the stream lacks", func(s *v1alpha1.ReleaseStream) {
			s.Spec.Platforms = []string{"linux/amd64"}
			s.Spec.Verification[0].Platforms = []string{"linux/arm64"}
		},
			"a verification's platforms must be platforms of the stream"},
		{"a verification on platforms of a stream without any", func(s *v1alpha1.ReleaseStream) {
			s.Spec.Verification[0].Platforms = []string{"linux/amd64"}
		},
			"a verification's platforms must be platforms of the stream"},
		{"per-platform verification name too long", func(s *v1alpha1.ReleaseStream) {
			s.Spec.Platforms = []string{"linux/amd64", "linux/arm64"}
			s.Spec.Verification[0].Name = strings.Repeat("v", 55)
			s.Spec.Verification[0].Platforms = []string{"linux/amd64", "linux/arm64"}
		},
			"name is too long for one verification per platform"},
		{"name too long for a label", func(s *v1alpha1.ReleaseStream) { s.Name = strings.Repeat("n", 64) },
			"a stream's name is at most 63 characters"},
		{"bad retention", func(s *v1alpha1.ReleaseStream) { s.Spec.Retention.KeepAccepted = -2 },
			"keepAccepted in body should be greater than or equal to 1"},
		{"negative keepRejected", func(s *v1alpha1.ReleaseStream) { s.Spec.Retention.KeepRejected = ptr.To[int32](-1) },
			"keepRejected in body should be greater than or equal to 0"},
		{"negative rejectedMaxAge", func(s *v1alpha1.ReleaseStream) {
			s.Spec.Retention.RejectedMaxAge = &metav1.Duration{Duration: -time.Hour}
		},
			"rejectedMaxAge must be a non-negative duration"},
		{"negative minCreationInterval", func(s *v1alpha1.ReleaseStream) {
			s.Spec.MinCreationInterval = &metav1.Duration{Duration: -time.Minute}
		},
			"minCreationInterval must be a non-negative duration"},
		{"an upgrade source stream without upgradeFrom", func(s *v1alpha1.ReleaseStream) {
			s.Spec.Verification[0].From = &v1alpha1.UpgradeSourceStream{Stream: "4.14-stable"}
			s.Spec.Verification[0].UpgradeFrom = ""
		},
			"from needs upgradeFrom"},
		{"a verification cluster without a Secret", func(s *v1alpha1.ReleaseStream) {
			s.Spec.Verification[0].Cluster = &v1alpha1.VerificationCluster{}
		},
			"spec.verification[0].cluster.secretRef"},
		{"a verification cluster Secret that is no name", func(s *v1alpha1.ReleaseStream) {
			s.Spec.Verification[0].Cluster = &v1alpha1.VerificationCluster{SecretRef: "Build Farm"}
		},
			"secretRef must be a Secret's name"},
		{"a verification cluster namespace that is no label", func(s *v1alpha1.ReleaseStream) {
			s.Spec.Verification[0].Cluster = &v1alpha1.VerificationCluster{SecretRef: "farm", Namespace: "CI_jobs"}
		},
			"namespace must be a DNS label"},
		{"a creation cluster without a Secret", func(s *v1alpha1.ReleaseStream) {
			s.Spec.CreationCluster = &v1alpha1.VerificationCluster{}
		},
			"spec.creationCluster.secretRef"},
		{"a creation cluster namespace that is no label", func(s *v1alpha1.ReleaseStream) {
			s.Spec.CreationCluster = &v1alpha1.VerificationCluster{SecretRef: "farm", Namespace: "CI_jobs"}
		},
			"namespace must be a DNS label"},
		{"a verification with no backend", func(s *v1alpha1.ReleaseStream) { s.Spec.Verification[0].Job = nil },
			"spec.verification: Invalid value: exactly one of job or prowJob must be set"},
		{"a ProwJob verification on a cluster", func(s *v1alpha1.ReleaseStream) {
			s.Spec.Verification[0].Job = nil
			s.Spec.Verification[0].ProwJob = &v1alpha1.ProwJobBackend{Spec: prowv1.ProwJobSpec{Job: "e2e"}}
			s.Spec.Verification[0].Cluster = &v1alpha1.VerificationCluster{SecretRef: "farm"}
		},
			"cluster runs job backends only"},
		{"payload base that is no component", func(s *v1alpha1.ReleaseStream) { s.Spec.PayloadBaseComponent = "cvo" },
			"payloadBaseComponent must name one of the stream's components"},
		{"jira URL that is no URL", func(s *v1alpha1.ReleaseStream) { s.Spec.Jira = validJira(); s.Spec.Jira.URL = "issues" },
			"url must be an http or https URL"},
		{"jira URL of another scheme", func(s *v1alpha1.ReleaseStream) {
			s.Spec.Jira = validJira()
			s.Spec.Jira.URL = "ftp://issues.example.com"
		},
			"url must be an http or https URL"},
		{"jira project in lower case", func(s *v1alpha1.ReleaseStream) { s.Spec.Jira = validJira(); s.Spec.Jira.Projects = []string{"ocpbugs"} },
			"spec.jira.projects[0] in body should match"},
		{"jira without projects", func(s *v1alpha1.ReleaseStream) { s.Spec.Jira = validJira(); s.Spec.Jira.Projects = nil },
			"spec.jira.projects: Required value"},
		{"jira without token", func(s *v1alpha1.ReleaseStream) { s.Spec.Jira = validJira(); s.Spec.Jira.TokenSecret = "" },
			"spec.jira.tokenSecret"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := validStream(ns)
			tt.mutate(s)
			expectRejected(t, env.Client.Create(context.Background(), s), tt.want)
		})
	}
}

func validJira() *v1alpha1.JiraConfig {
	return &v1alpha1.JiraConfig{URL: "https://issues.example.com", Projects: []string{"OCPBUGS"}, TokenSecret: "jira-token"}
}

func TestJiraConfigDefaults(t *testing.T) {
	s := validStream(env.Namespace(t))
	s.Spec.Jira = validJira()
	if err := env.Client.Create(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	if got := s.Spec.Jira.TargetStatus; got != "VERIFIED" {
		t.Errorf("targetStatus defaulted to %q, want VERIFIED", got)
	}
}

func expectRejected(t *testing.T, err error, want string) {
	t.Helper()
	if err == nil {
		t.Fatalf("admitted; want an error containing %q", want)
	}
	if !strings.Contains(err.Error(), want) {
		t.Errorf("error %q\ndoes not contain %q", err, want)
	}
}
