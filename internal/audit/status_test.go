package audit

import (
	"errors"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/attestation"
	"github.com/release-controller/release-controller/internal/releaseimage"
	"github.com/release-controller/release-controller/internal/verdict"
	"github.com/release-controller/release-controller/internal/verdict/verdicttest"
)

const (
	digestA = "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	digestB = "sha256:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
	digestC = "sha256:cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc"
	digestP = "sha256:1111111111111111111111111111111111111111111111111111111111111111"
	digestQ = "sha256:2222222222222222222222222222222222222222222222222222222222222222"
	tag     = "4.15.0-0.nightly-2026-11-23-100000"
)

func payload() *v1alpha1.ReleasePayload {
	p := &v1alpha1.ReleasePayload{}
	p.Namespace, p.Name = "ocp", tag
	p.Spec.PayloadCoordinates = v1alpha1.PayloadCoordinates{Stream: "nightly", Tag: tag}
	p.Spec.PayloadCreationConfig.Repository = "registry.example.com/ocp/release"
	p.Spec.Components = []v1alpha1.PinnedComponent{
		{Name: "api", Image: "registry.example.com/ocp/api@" + digestA},
		{Name: "ui", Image: "registry.example.com/ocp/ui@" + digestB},
	}
	p.Status.PayloadImage = "registry.example.com/ocp/release@" + digestP
	return p
}

func goodInfo() *releaseimage.PayloadInfo {
	return &releaseimage.PayloadInfo{
		Image: "registry.example.com/ocp/release@" + digestP,
		References: releaseimage.ImageReferences{Tag: tag, Components: []releaseimage.ComponentReference{
			{Name: "api", Image: "mirror.example.com/ocp/api@" + digestA}, // mirrored: same digest
			{Name: "ui", Image: "registry.example.com/ocp/ui@" + digestB},
		}},
		Metadata: releaseimage.ReleaseMetadata{Version: tag},
	}
}

func TestEvaluate(t *testing.T) {
	at := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name       string
		mutate     func(*v1alpha1.ReleasePayload, *Observation)
		failed     string // the first failed check; "" when the audit passes
		inMessage  string
		lastChecks int
	}{
		{name: "passes", mutate: func(*v1alpha1.ReleasePayload, *Observation) {}, lastChecks: 6},
		{name: "no image recorded", mutate: func(p *v1alpha1.ReleasePayload, _ *Observation) { p.Status.PayloadImage = "" },
			failed: CheckImageRecorded, inMessage: "no image by digest"},
		{name: "re-tagged", mutate: func(_ *v1alpha1.ReleasePayload, o *Observation) { o.TagDigest = digestQ },
			failed: CheckTagDigest, inMessage: "re-tagged"},
		{name: "tag deleted", mutate: func(_ *v1alpha1.ReleasePayload, o *Observation) { o.TagDigest = "" },
			failed: CheckTagDigest, inMessage: "no longer exists"},
		{name: "not a payload image", mutate: func(_ *v1alpha1.ReleasePayload, o *Observation) {
			o.Info, o.InfoError = nil, "its configuration has no release label"
		}, failed: CheckReadable, inMessage: "no release label"},
		{name: "metadata of another version", mutate: func(_ *v1alpha1.ReleasePayload, o *Observation) {
			o.Info.Metadata.Version = "4.15.0-0.nightly-2026-11-22-100000"
		}, failed: CheckVersion, inMessage: "release metadata is for"},
		{name: "references of another tag", mutate: func(_ *v1alpha1.ReleasePayload, o *Observation) {
			o.Info.References.Tag = "4.15.0-0.nightly-2026-11-22-100000"
		}, failed: CheckVersion, inMessage: "image-references are for"},
		{name: "component missing from image-references", mutate: func(_ *v1alpha1.ReleasePayload, o *Observation) {
			o.Info.References.Components = o.Info.References.Components[:1]
		}, failed: CheckComponents, inMessage: "lacks ui"},
		{name: "component with another digest", mutate: func(_ *v1alpha1.ReleasePayload, o *Observation) {
			o.Info.References.Components[1].Image = "registry.example.com/ocp/ui@" + digestC
		}, failed: CheckComponents, inMessage: "ui is " + digestC},
		{name: "extra component", mutate: func(_ *v1alpha1.ReleasePayload, o *Observation) {
			o.Info.References.Components = append(o.Info.References.Components,
				releaseimage.ComponentReference{Name: "extra", Image: "registry.example.com/ocp/extra@" + digestC})
		}, failed: CheckComponents, inMessage: "does not: extra"},
		{name: "component not in the registry", mutate: func(_ *v1alpha1.ReleasePayload, o *Observation) {
			o.Missing = map[string]string{"ui": "MANIFEST_UNKNOWN"}
		}, failed: CheckPresent, inMessage: "ui (MANIFEST_UNKNOWN)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := payload()
			obs := Observation{TagDigest: digestP, Info: goodInfo()}
			tc.mutate(p, &obs)
			rec := Evaluate(p, obs, at, "release-controller test")
			if rec.Passed != (tc.failed == "") {
				t.Fatalf("Passed = %v, checks %+v", rec.Passed, rec.Checks)
			}
			if rec.Payload != tag || rec.Namespace != "ocp" || rec.Stream != "nightly" || !rec.AuditedAt.Equal(at) {
				t.Errorf("record identity = %+v", rec)
			}
			failed := rec.Failed()
			if tc.failed == "" {
				if failed != nil || len(rec.Checks) != tc.lastChecks {
					t.Errorf("checks = %+v, want %d passed", rec.Checks, tc.lastChecks)
				}
				return
			}
			if failed == nil || failed.Name != tc.failed || !strings.Contains(failed.Message, tc.inMessage) {
				t.Fatalf("first failure = %+v, want %s containing %q", failed, tc.failed, tc.inMessage)
			}
			if last := rec.Checks[len(rec.Checks)-1]; last.Name != tc.failed {
				t.Errorf("checks went on after the failure: %+v", rec.Checks)
			}
			c := AuditedCondition(rec)
			if c.Status != metav1.ConditionFalse || c.Reason != v1alpha1.ReasonAuditFailed || !strings.Contains(c.Message, tc.inMessage) {
				t.Errorf("condition = %+v", c)
			}
		})
	}
}

func TestEvaluateListsAFewOfManyMissingComponents(t *testing.T) {
	p := payload()
	obs := Observation{TagDigest: digestP, Info: goodInfo(), Missing: map[string]string{}}
	for _, n := range []string{"a", "b", "c", "d", "e", "f", "g"} {
		obs.Missing[n] = "gone"
	}
	rec := Evaluate(p, obs, time.Now(), "t")
	msg := rec.Failed().Message
	if !strings.Contains(msg, "a (gone), b (gone), c (gone), d (gone), e (gone) and 2 more") {
		t.Errorf("message = %q", msg)
	}
}

// withConditions is payload() with the conditions cs, and the evidence of the verdict they
// give (verdicttest.Earn) as the payload controller records it.
func withConditions(cs ...metav1.Condition) *v1alpha1.ReleasePayload {
	p := payload()
	p.Status.Conditions = cs
	verdicttest.Earn(p, verdict.Phase(cs))
	return p
}

func cond(typ string, status metav1.ConditionStatus, reason string) metav1.Condition {
	return metav1.Condition{Type: typ, Status: status, Reason: reason}
}

func TestDecide(t *testing.T) {
	accepted := cond(v1alpha1.ConditionPayloadAccepted, metav1.ConditionTrue, v1alpha1.ReasonPayloadAccepted)
	passed := cond(v1alpha1.ConditionPayloadAudited, metav1.ConditionTrue, v1alpha1.ReasonAuditPassed)
	failed := cond(v1alpha1.ConditionPayloadAudited, metav1.ConditionFalse, v1alpha1.ReasonAuditFailed)
	auditError := cond(v1alpha1.ConditionPayloadAudited, metav1.ConditionFalse, v1alpha1.ReasonAuditError)
	signed := cond(v1alpha1.ConditionPayloadSigned, metav1.ConditionTrue, v1alpha1.ReasonSigned)
	noKey := cond(v1alpha1.ConditionPayloadSigned, metav1.ConditionFalse, v1alpha1.ReasonNoSigningKey)
	storeError := cond(v1alpha1.ConditionPayloadSigned, metav1.ConditionFalse, v1alpha1.ReasonSignatureStoreError)
	notSigned := cond(v1alpha1.ConditionPayloadSigned, metav1.ConditionFalse, v1alpha1.ReasonNotSignedAuditFailed)
	// sigstoreSigned is True with the message of what the payload of withConditions attests.
	statements, err := attestation.Statements(withConditions(accepted), nil, BuilderID())
	if err != nil {
		t.Fatal(err)
	}
	sigstoreSigned := SigstoreSignedCondition("sha256:ab", statements)
	// informingDone is p with an informing verification that finished after sigstoreSigned.
	informingDone := func(p *v1alpha1.ReleasePayload) *v1alpha1.ReleasePayload {
		p.Status.Verifications = append(p.Status.Verifications, v1alpha1.VerificationStatus{
			Name: "conformance", Type: v1alpha1.Informing, State: v1alpha1.JobSuccess})
		return p
	}
	informingRunning := func(p *v1alpha1.ReleasePayload) *v1alpha1.ReleasePayload {
		p.Status.Verifications = append(p.Status.Verifications, v1alpha1.VerificationStatus{
			Name: "conformance", Type: v1alpha1.Informing, State: v1alpha1.JobPending})
		return p
	}
	sigstoreRegistry := cond(v1alpha1.ConditionPayloadSigstoreSigned, metav1.ConditionFalse, v1alpha1.ReasonRegistryError)
	sigstoreNoKey := cond(v1alpha1.ConditionPayloadSigstoreSigned, metav1.ConditionFalse, v1alpha1.ReasonNoSigningKey)
	sigstoreNotSigned := cond(v1alpha1.ConditionPayloadSigstoreSigned, metav1.ConditionFalse, v1alpha1.ReasonNotSignedAuditFailed)
	openpgp := Signers{OpenPGP: true}
	none := Signers{}
	sigstore := Signers{Sigstore: true}
	both := Signers{OpenPGP: true, Sigstore: true}
	for _, tc := range []struct {
		name    string
		p       *v1alpha1.ReleasePayload
		signers Signers
		want    Step
	}{
		{"not accepted", withConditions(cond(v1alpha1.ConditionPayloadAccepted, metav1.ConditionFalse, v1alpha1.ReasonBlockingJobsPending)), both, Step{}},
		{"rejected", withConditions(cond(v1alpha1.ConditionPayloadRejected, metav1.ConditionTrue, v1alpha1.ReasonPayloadRejected)), both, Step{}},
		{"accepted, with a key", withConditions(accepted), openpgp, Step{Audit: true, Sign: true}},
		{"accepted, without a key", withConditions(accepted), none, Step{Audit: true, NoKey: true}},
		{"audit could not run", withConditions(accepted, auditError), openpgp, Step{Audit: true, Sign: true}},
		{"audit failed", withConditions(accepted, failed), openpgp, Step{AuditFailed: true}},
		{"audit failed, recorded", withConditions(accepted, failed, notSigned), openpgp, Step{}},
		{"passed, signed", withConditions(accepted, passed, signed), openpgp, Step{}},
		{"passed, signed, key gone", withConditions(accepted, passed, signed), none, Step{}},
		{"passed, store failed", withConditions(accepted, passed, storeError), openpgp, Step{Sign: true}},
		{"passed, store failed, key gone", withConditions(accepted, passed, storeError), none, Step{NoKey: true}},
		{"passed, no key then", withConditions(accepted, passed, noKey), openpgp, Step{Sign: true}},
		{"passed, no key still", withConditions(accepted, passed, noKey), none, Step{}},
		{"accepted by hand", verdicttest.HandWritten("ns", "nightly", "4.15.0", v1alpha1.PhaseAccepted), both, Step{}},

		// Sigstore, alone or beside OpenPGP: decided apart from the OpenPGP signature.
		{"sigstore: accepted", withConditions(accepted), sigstore, Step{Audit: true, NoKey: true, SigstoreSign: true}},
		{"both: accepted", withConditions(accepted), both, Step{Audit: true, Sign: true, SigstoreSign: true}},
		{"both: audit could not run", withConditions(accepted, auditError, sigstoreRegistry), both, Step{Audit: true, Sign: true, SigstoreSign: true}},
		{"sigstore: audit failed", withConditions(accepted, failed, notSigned), sigstore, Step{SigstoreAuditFailed: true}},
		{"both: audit failed", withConditions(accepted, failed), both, Step{AuditFailed: true, SigstoreAuditFailed: true}},
		{"both: audit failed, recorded", withConditions(accepted, failed, notSigned, sigstoreNotSigned), both, Step{}},
		{"openpgp only: audit failed, no sigstore condition", withConditions(accepted, failed, notSigned), openpgp, Step{}},
		{"both: openpgp signed, sigstore not yet", withConditions(accepted, passed, signed), both, Step{SigstoreSign: true}},
		{"both: sigstore signed, openpgp store failed", withConditions(accepted, passed, storeError, sigstoreSigned), both, Step{Sign: true}},
		{"both: done", withConditions(accepted, passed, signed, sigstoreSigned), both, Step{}},
		{"sigstore: registry failed", withConditions(accepted, passed, noKey, sigstoreRegistry), sigstore, Step{SigstoreSign: true}},
		{"sigstore: key unusable, retried", withConditions(accepted, passed, noKey, sigstoreNoKey), sigstore, Step{SigstoreSign: true}},
		{"sigstore: signed, key gone", withConditions(accepted, passed, noKey, sigstoreSigned), none, Step{}},
		{"sigstore configured later", withConditions(accepted, passed, noKey), sigstore, Step{SigstoreSign: true}},
		{"sigstore: signed, an informing verification still running", informingRunning(withConditions(accepted, passed, noKey, sigstoreSigned)), sigstore, Step{}},
		{"sigstore: signed, an informing verification finished since: its test result", informingDone(withConditions(accepted, passed, noKey, sigstoreSigned)), sigstore, Step{SigstoreSign: true}},
		{"sigstore: signed, a finished verification, key gone", informingDone(withConditions(accepted, passed, noKey, sigstoreSigned)), none, Step{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Decide(tc.p, tc.signers); got != tc.want {
				t.Errorf("Decide = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestSigstoreSignedCondition(t *testing.T) {
	st := func(predicateType string) attestation.Statement {
		return attestation.Statement{PredicateType: predicateType}
	}
	for _, tc := range []struct {
		name       string
		statements []attestation.Statement
		want       string
	}{
		{"every kind", []attestation.Statement{st(attestation.PredicateSLSAProvenance), st(attestation.PredicateTestResult),
			st(attestation.PredicateTestResult), st(attestation.PredicateTestResult), st(attestation.PredicateVerificationSummary)},
			"signed by sha256:ab: signature and 5 attestations (slsaprovenance1, test-result ×3, verification-summary)"},
		{"one test result", []attestation.Statement{st(attestation.PredicateSLSAProvenance), st(attestation.PredicateTestResult), st(attestation.PredicateVerificationSummary)},
			"signed by sha256:ab: signature and 3 attestations (slsaprovenance1, test-result, verification-summary)"},
		{"no verifications", []attestation.Statement{st(attestation.PredicateSLSAProvenance), st(attestation.PredicateVerificationSummary)},
			"signed by sha256:ab: signature and 2 attestations (slsaprovenance1, verification-summary)"},
		{"one", []attestation.Statement{st(attestation.PredicateSLSAProvenance)}, "signed by sha256:ab: signature and 1 attestation (slsaprovenance1)"},
		{"another predicate", []attestation.Statement{st("https://example.com/p/v1")}, "signed by sha256:ab: signature and 1 attestation (https://example.com/p/v1)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := SigstoreSignedCondition("sha256:ab", tc.statements)
			if c.Type != v1alpha1.ConditionPayloadSigstoreSigned || c.Status != metav1.ConditionTrue || c.Reason != v1alpha1.ReasonSigned || c.Message != tc.want {
				t.Errorf("condition = %+v, want message %q", c, tc.want)
			}
		})
	}
}

func TestConditions(t *testing.T) {
	rec := Evaluate(payload(), Observation{TagDigest: digestP, Info: goodInfo()}, time.Now(), "t")
	if c := AuditedCondition(rec); c.Status != metav1.ConditionTrue || c.Reason != v1alpha1.ReasonAuditPassed {
		t.Errorf("passed: %+v", c)
	}
	if c := SignedCondition("0123456789ABCDEF", 2); !strings.HasPrefix(c.Message, "signed by 0123456789ABCDEF") || c.Status != metav1.ConditionTrue {
		t.Errorf("signed: %+v", c)
	}
	if c := StoreErrorCondition(errors.New("bucket down")); c.Reason != v1alpha1.ReasonSignatureStoreError || !strings.Contains(c.Message, "bucket down") {
		t.Errorf("store error: %+v", c)
	}
	if c := AuditErrorCondition(errors.New("registry down")); c.Reason != v1alpha1.ReasonAuditError || c.Status != metav1.ConditionFalse {
		t.Errorf("audit error: %+v", c)
	}
	if c := RegistryErrorCondition(errors.New("502 Bad Gateway")); c.Type != v1alpha1.ConditionPayloadSigstoreSigned || c.Reason != v1alpha1.ReasonRegistryError ||
		c.Status != metav1.ConditionFalse || !strings.Contains(c.Message, "502 Bad Gateway") {
		t.Errorf("registry error: %+v", c)
	}
	if c := SigstoreNoKeyCondition("the Secret ns/k has no cosign.key"); c.Reason != v1alpha1.ReasonNoSigningKey || !strings.Contains(c.Message, "no cosign.key") {
		t.Errorf("sigstore no key: %+v", c)
	}
}
