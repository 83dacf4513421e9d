package attestation

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	provenancev1 "github.com/in-toto/attestation/go/predicates/provenance/v1"
	testresultv0 "github.com/in-toto/attestation/go/predicates/test_result/v0"
	vsav1 "github.com/in-toto/attestation/go/predicates/vsa/v1"
	intoto "github.com/in-toto/attestation/go/v1"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/release-controller/release-controller/api/v1alpha1"
)

// provenance is the SLSA provenance of the payload's build: the stream's parameters, every
// component by digest, the creation Job, and when the build ran.
func provenance(p *v1alpha1.ReleasePayload, builderID string) (*provenancev1.Provenance, error) {
	cfg := p.Spec.PayloadCreationConfig
	params := map[string]any{
		"namespace":  p.Namespace,
		"stream":     p.Spec.PayloadCoordinates.Stream,
		"tag":        p.Spec.PayloadCoordinates.Tag,
		"repository": cfg.Repository,
	}
	if len(cfg.Platforms) > 0 {
		platforms := make([]any, len(cfg.Platforms))
		for i, pl := range cfg.Platforms {
			platforms[i] = pl
		}
		params["platforms"] = platforms
	}
	if cfg.BaseComponent != "" {
		params["baseComponent"] = cfg.BaseComponent
	}
	external, err := structpb.NewStruct(params)
	if err != nil {
		return nil, fmt.Errorf("provenance of payload %s/%s: %w", p.Namespace, p.Name, err)
	}

	components := append([]v1alpha1.PinnedComponent(nil), p.Spec.Components...)
	sort.Slice(components, func(i, j int) bool { return components[i].Name < components[j].Name })
	deps := make([]*intoto.ResourceDescriptor, 0, len(components))
	for _, c := range components {
		d, err := byDigest(c.Name, c.Image)
		if err != nil {
			return nil, fmt.Errorf("payload %s/%s component %q: %w", p.Namespace, p.Name, c.Name, err)
		}
		deps = append(deps, d)
	}

	var byproducts []*intoto.ResourceDescriptor
	for _, pi := range p.Status.PlatformImages {
		d, err := byDigest(pi.Platform, pi.Image)
		if err != nil {
			return nil, fmt.Errorf("payload %s/%s platform image %q: %w", p.Namespace, p.Name, pi.Platform, err)
		}
		byproducts = append(byproducts, d)
	}

	metadata := &provenancev1.BuildMetadata{}
	if job := p.Status.ReleaseCreationJobResult; job.Name != "" {
		metadata.InvocationId = job.Namespace + "/" + job.Name
	}
	if !p.CreationTimestamp.IsZero() {
		metadata.StartedOn = timestamppb.New(p.CreationTimestamp.Time)
	}
	if created, ok := conditionTime(p, v1alpha1.ConditionPayloadCreated); ok {
		metadata.FinishedOn = timestamppb.New(created.Time)
	}

	return &provenancev1.Provenance{
		BuildDefinition: &provenancev1.BuildDefinition{
			BuildType:            BuildType,
			ExternalParameters:   external,
			ResolvedDependencies: deps,
		},
		RunDetails: &provenancev1.RunDetails{
			Builder:    &provenancev1.Builder{Id: builderID},
			Metadata:   metadata,
			Byproducts: byproducts,
		},
	}, nil
}

// byDigest describes an image by its pull spec and digest.
func byDigest(name, pullSpec string) (*intoto.ResourceDescriptor, error) {
	_, hexDigest, err := splitDigest(pullSpec)
	if err != nil {
		return nil, err
	}
	return &intoto.ResourceDescriptor{Name: name, Uri: pullSpec, Digest: map[string]string{"sha256": hexDigest}}, nil
}

// testResult is the test result of one verification; false while it has no result.
//
// The verification is the first configuration entry (annotated with its type, Blocking or
// Informing, and its state), each run one more (uri: the run's link); passedTests and
// failedTests name the runs. url is the newest run's link. The result is PASSED for a
// verification that succeeded with every finished run passing, WARNED for one that succeeded
// after failed runs (retried or aggregated) or was skipped (an upgrade with nothing earlier to
// start from), FAILED for one that failed or whose run disappeared: a blocking FAILED
// rejects the payload, an informing one does not.
func testResult(v *v1alpha1.VerificationStatus) (*testresultv0.TestResult, bool) {
	if !v.State.IsTerminal() {
		return nil, false
	}
	annotations := map[string]*structpb.Value{
		"type":  structpb.NewStringValue(string(v.Type)),
		"state": structpb.NewStringValue(string(v.State)),
	}
	if v.UpgradeFrom != "" {
		annotations["upgradeFrom"] = structpb.NewStringValue(string(v.UpgradeFrom))
	}
	tr := &testresultv0.TestResult{
		Configuration: []*intoto.ResourceDescriptor{{
			Name:        v.Name,
			Annotations: &structpb.Struct{Fields: annotations},
		}},
	}
	for _, run := range v.Runs {
		name := runName(run)
		runAnnotations := map[string]*structpb.Value{
			"kind":  structpb.NewStringValue(string(run.Kind)),
			"state": structpb.NewStringValue(string(run.State)),
		}
		if run.Attempt > 0 {
			runAnnotations["attempt"] = structpb.NewNumberValue(float64(run.Attempt))
		}
		if run.UpgradeFrom != "" {
			runAnnotations["upgradeFrom"] = structpb.NewStringValue(run.UpgradeFrom)
		}
		link := httpURL(run.URL)
		tr.Configuration = append(tr.Configuration, &intoto.ResourceDescriptor{
			Name:        name,
			Uri:         link,
			Annotations: &structpb.Struct{Fields: runAnnotations},
		})
		if link != "" {
			tr.Url = link
		}
		switch run.State {
		case v1alpha1.JobSuccess:
			tr.PassedTests = append(tr.PassedTests, name)
		case v1alpha1.JobFailure, v1alpha1.JobUnknown:
			tr.FailedTests = append(tr.FailedTests, name)
		}
	}
	tr.Result = result(v.State, len(tr.FailedTests))
	return tr, true
}

// result is the test result of a finished verification in state with failedRuns failed runs.
func result(state v1alpha1.JobState, failedRuns int) string {
	switch {
	case state == v1alpha1.JobSuccess && failedRuns == 0:
		return ResultPassed
	case state == v1alpha1.JobSuccess, state == v1alpha1.JobSkipped:
		return ResultWarned
	default:
		return ResultFailed
	}
}

// runName names a run in the test result: its object, <namespace>/<name>.
func runName(run v1alpha1.JobRun) string {
	return run.Namespace + "/" + run.Name
}

// verificationSummary is the VSA of an accepted payload (false for any other): this
// controller verified the payload image against the stream's verification list, as it was
// when the payload was created, and accepted it. A payload accepted by a person's override
// counts: it is as accepted as any other (published, served to clusters), and its test
// results show what failed.
func verificationSummary(p *v1alpha1.ReleasePayload, builderID string) (*vsav1.VerificationSummary, bool, error) {
	accepted, ok := conditionTime(p, v1alpha1.ConditionPayloadAccepted)
	if !ok {
		return nil, false, nil
	}
	policyDigest, err := PolicyDigest(p)
	if err != nil {
		return nil, false, err
	}
	return &vsav1.VerificationSummary{
		Verifier:     &vsav1.VerificationSummary_Verifier{Id: builderID},
		TimeVerified: timestamppb.New(accepted.Time),
		ResourceUri:  p.Status.PayloadImage,
		Policy: &vsav1.VerificationSummary_Policy{
			Uri:    PolicyURIPrefix + p.Namespace + "/" + p.Spec.PayloadCoordinates.Stream,
			Digest: map[string]string{"sha256": policyDigest},
		},
		VerificationResult: ResultPassed,
		// Build level 1 asks for provenance, made by the build platform, that says how the
		// artifact was built; the controller makes it for every payload and the audit checked
		// the image against it (components by digest) before acceptance. Level 2 would need
		// the provenance signed by a hosted build platform apart from the tenant's control;
		// the controller signs with a key of its own deployment, so it claims level 1 only.
		VerifiedLevels: []string{"SLSA_BUILD_LEVEL_1"},
		SlsaVersion:    "1.0",
	}, true, nil
}

// PolicyDigest is the hex sha256 of the payload's verification list, with job templates:
// the digest its templates ConfigMap records (the sha256 of its JSON), or the same digest of
// the inline list. Both are encoding/json's encoding of []Verification, fields in
// declaration order and map keys sorted, so one list has one digest either way.
func PolicyDigest(p *v1alpha1.ReleasePayload) (string, error) {
	cfg := p.Spec.PayloadVerificationConfig
	if cfg.TemplatesFrom != nil {
		hexDigest, ok := strings.CutPrefix(cfg.TemplatesFrom.Digest, "sha256:")
		if _, err := hex.DecodeString(hexDigest); !ok || err != nil || len(hexDigest) != 2*sha256.Size {
			return "", fmt.Errorf("payload %s/%s spec.payloadVerificationConfig.templatesFrom.digest %q is not sha256:<64 hex digits>",
				p.Namespace, p.Name, cfg.TemplatesFrom.Digest)
		}
		return strings.ToLower(hexDigest), nil
	}
	verifications := cfg.Verifications
	if verifications == nil {
		verifications = []v1alpha1.Verification{}
	}
	data, err := json.Marshal(verifications)
	if err != nil {
		return "", fmt.Errorf("payload %s/%s verification list: %w", p.Namespace, p.Name, err)
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:]), nil
}
