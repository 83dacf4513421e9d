package audit

import (
	"errors"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/release-controller/release-controller/api/v1alpha1"
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
	for _, tc := range []struct {
		name    string
		p       *v1alpha1.ReleasePayload
		canSign bool
		want    Step
	}{
		{"not accepted", withConditions(cond(v1alpha1.ConditionPayloadAccepted, metav1.ConditionFalse, v1alpha1.ReasonBlockingJobsPending)), true, Step{}},
		{"rejected", withConditions(cond(v1alpha1.ConditionPayloadRejected, metav1.ConditionTrue, v1alpha1.ReasonPayloadRejected)), true, Step{}},
		{"accepted, with a key", withConditions(accepted), true, Step{Audit: true, Sign: true}},
		{"accepted, without a key", withConditions(accepted), false, Step{Audit: true, NoKey: true}},
		{"audit could not run", withConditions(accepted, auditError), true, Step{Audit: true, Sign: true}},
		{"audit failed", withConditions(accepted, failed), true, Step{AuditFailed: true}},
		{"audit failed, recorded", withConditions(accepted, failed, notSigned), true, Step{}},
		{"passed, signed", withConditions(accepted, passed, signed), true, Step{}},
		{"passed, signed, key gone", withConditions(accepted, passed, signed), false, Step{}},
		{"passed, store failed", withConditions(accepted, passed, storeError), true, Step{Sign: true}},
		{"passed, store failed, key gone", withConditions(accepted, passed, storeError), false, Step{NoKey: true}},
		{"passed, no key then", withConditions(accepted, passed, noKey), true, Step{Sign: true}},
		{"passed, no key still", withConditions(accepted, passed, noKey), false, Step{}},
		{"accepted by hand", verdicttest.HandWritten("ns", "nightly", "4.15.0", v1alpha1.PhaseAccepted), true, Step{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Decide(tc.p, tc.canSign); got != tc.want {
				t.Errorf("Decide = %+v, want %+v", got, tc.want)
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
}
