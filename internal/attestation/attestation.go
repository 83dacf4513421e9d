// Package attestation builds the in-toto statements the controller attests about a payload:
// the SLSA provenance of its build, a test result per verification, and, once accepted, a
// SLSA verification summary. They are pure functions of the ReleasePayload: the same payload
// gives the same bytes (every time comes from its status, never from the clock), so signing
// them again after a restart finds the attestation already there.
package attestation

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"

	intoto "github.com/in-toto/attestation/go/v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/release-controller/release-controller/api/v1alpha1"
)

// Predicate types of the statements.
const (
	PredicateSLSAProvenance      = "https://slsa.dev/provenance/v1"
	PredicateTestResult          = "https://in-toto.io/attestation/test-result/v0.1"
	PredicateVerificationSummary = "https://slsa.dev/verification_summary/v1"
)

// BuildType is the provenance's buildType: what externalParameters mean and how the
// payload image is made from its components.
const BuildType = "https://release-controller.dev/payload/v1"

// PolicyURIPrefix starts the verification summary's policy URI, followed by
// <namespace>/<stream>: an identifier of the stream whose verification list was applied.
const PolicyURIPrefix = "https://release-controller.dev/streams/"

// Test results (the test-result predicate's result field).
const (
	ResultPassed = "PASSED"
	ResultWarned = "WARNED"
	ResultFailed = "FAILED"
)

// Statement is one in-toto statement about a payload image.
type Statement struct {
	PredicateType string
	// Name says what it is about: "provenance", "test-result <verification>" or
	// "verification-summary".
	Name string
	// JSON is the statement (in-toto Statement v1), compact and deterministic.
	JSON []byte
}

// Statements are every statement the controller attests for p: the provenance, one test
// result per finished verification (a pending one has no result yet), and the verification
// summary, only for an accepted payload. The subject of each is the payload image, named
// <repository>:<tag>, by digest. builderID identifies this controller and its version (e.g.
// "https://release-controller.dev/controller@v1.2.3"); it is the provenance's builder and the
// summary's verifier.
//
// stream may be nil. The statements use the payload's own copy of the stream's verification
// list (the stream may have been edited since the payload was created); a stream given must
// be the payload's.
func Statements(p *v1alpha1.ReleasePayload, stream *v1alpha1.ReleaseStream, builderID string) ([]Statement, error) {
	if p == nil {
		return nil, errors.New("no payload")
	}
	if builderID == "" {
		return nil, errors.New("no builder id")
	}
	if stream != nil && (stream.Namespace != p.Namespace || stream.Name != p.Spec.PayloadCoordinates.Stream) {
		return nil, fmt.Errorf("stream %s/%s is not payload %s/%s's stream %q",
			stream.Namespace, stream.Name, p.Namespace, p.Name, p.Spec.PayloadCoordinates.Stream)
	}
	subject, err := payloadSubject(p)
	if err != nil {
		return nil, err
	}

	var out []Statement
	add := func(predicateType, name string, predicate proto.Message) error {
		data, err := statementJSON(subject, predicateType, predicate)
		if err != nil {
			return fmt.Errorf("%s of payload %s/%s: %w", name, p.Namespace, p.Name, err)
		}
		out = append(out, Statement{PredicateType: predicateType, Name: name, JSON: data})
		return nil
	}

	prov, err := provenance(p, builderID)
	if err != nil {
		return nil, err
	}
	if err := add(PredicateSLSAProvenance, "provenance", prov); err != nil {
		return nil, err
	}
	for i := range p.Status.Verifications {
		v := &p.Status.Verifications[i]
		tr, ok := testResult(v)
		if !ok {
			continue
		}
		if err := add(PredicateTestResult, "test-result "+v.Name, tr); err != nil {
			return nil, err
		}
	}
	if vsa, ok, err := verificationSummary(p, builderID); err != nil {
		return nil, err
	} else if ok {
		if err := add(PredicateVerificationSummary, "verification-summary", vsa); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// payloadSubject is the payload image as the statements' subject.
func payloadSubject(p *v1alpha1.ReleasePayload) (*intoto.ResourceDescriptor, error) {
	if p.Status.PayloadImage == "" {
		return nil, fmt.Errorf("payload %s/%s has no image yet (status.payloadImage is empty)", p.Namespace, p.Name)
	}
	_, hexDigest, err := splitDigest(p.Status.PayloadImage)
	if err != nil {
		return nil, fmt.Errorf("payload %s/%s status.payloadImage: %w", p.Namespace, p.Name, err)
	}
	return &intoto.ResourceDescriptor{
		Name:   p.Spec.PayloadCreationConfig.Repository + ":" + p.Spec.PayloadCoordinates.Tag,
		Digest: map[string]string{"sha256": hexDigest},
	}, nil
}

// splitDigest splits a pull spec by digest, repository@sha256:<hex>.
func splitDigest(pullSpec string) (repository, hexDigest string, err error) {
	repository, hexDigest, ok := strings.Cut(pullSpec, "@sha256:")
	if !ok || repository == "" {
		return "", "", fmt.Errorf("%q is not a pull spec by sha256 digest (repository@sha256:<hex>)", pullSpec)
	}
	if len(hexDigest) != 2*sha256.Size || strings.ToLower(hexDigest) != hexDigest {
		return "", "", fmt.Errorf("%q: the digest is not 64 lowercase hex digits", pullSpec)
	}
	if _, err := hex.DecodeString(hexDigest); err != nil {
		return "", "", fmt.Errorf("%q: the digest is not 64 lowercase hex digits", pullSpec)
	}
	return repository, hexDigest, nil
}

// statementJSON is the in-toto statement of predicate about subject, as compact JSON.
func statementJSON(subject *intoto.ResourceDescriptor, predicateType string, predicate proto.Message) ([]byte, error) {
	predicateStruct, err := toStruct(predicate)
	if err != nil {
		return nil, err
	}
	st := &intoto.Statement{
		Type:          intoto.StatementTypeUri,
		Subject:       []*intoto.ResourceDescriptor{subject},
		PredicateType: predicateType,
		Predicate:     predicateStruct,
	}
	if err := st.Validate(); err != nil {
		return nil, fmt.Errorf("invalid statement: %w", err)
	}
	return canonicalJSON(st)
}

// toStruct converts a predicate message to the Struct a statement carries, through its
// JSON form, so that field names are the predicate's JSON names (buildDefinition, ...).
func toStruct(m proto.Message) (*structpb.Struct, error) {
	data, err := protojson.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("encoding the predicate: %w", err)
	}
	s := &structpb.Struct{}
	if err := protojson.Unmarshal(data, s); err != nil {
		return nil, fmt.Errorf("decoding the predicate: %w", err)
	}
	return s, nil
}

// canonicalJSON is protojson's encoding without the whitespace protojson adds at random
// (on purpose, to keep callers from relying on its bytes): protojson orders fields by
// number and map and Struct keys by name, so what is left is the same for the same message.
func canonicalJSON(m proto.Message) ([]byte, error) {
	data, err := protojson.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("encoding the statement: %w", err)
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, data); err != nil {
		return nil, fmt.Errorf("compacting the statement: %w", err)
	}
	return buf.Bytes(), nil
}

// conditionTime is the last transition time of condition t when it is True.
func conditionTime(p *v1alpha1.ReleasePayload, t string) (metav1.Time, bool) {
	c := meta.FindStatusCondition(p.Status.Conditions, t)
	if c == nil || c.Status != metav1.ConditionTrue || c.LastTransitionTime.IsZero() {
		return metav1.Time{}, false
	}
	return c.LastTransitionTime, true
}

// httpURL is u when it is an absolute http or https URL, else "": run URLs come from job
// backends and end up as links wherever the attestation is shown.
func httpURL(u string) string {
	parsed, err := url.Parse(u)
	if err != nil || (parsed.Scheme != "http" && parsed.Scheme != "https") || parsed.Host == "" {
		return ""
	}
	return u
}
