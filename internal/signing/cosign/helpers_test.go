package cosign

import (
	"context"
	"io"
	"log"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
	attestationv1 "github.com/in-toto/attestation/go/v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/release-controller/release-controller/internal/devenv/registry"
)

// testRegistry is a real registry the tests push to.
type testRegistry struct {
	name string
	host string
	// referrersAPI: the registry answers GET /v2/<repo>/referrers/<digest>; without it the
	// bundles go to the referrers tag.
	referrersAPI bool
}

// registries starts go-containerregistry's registry with the referrers API and the embedded
// distribution registry (internal/devenv/registry), which has none.
func registries(t testing.TB) []testRegistry {
	t.Helper()
	withAPI := httptest.NewServer(ggcrregistry.New(
		ggcrregistry.WithReferrersSupport(true),
		ggcrregistry.Logger(log.New(io.Discard, "", 0)),
	))
	t.Cleanup(withAPI.Close)
	dist, err := registry.Start(context.Background(), registry.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = dist.Close() })
	return []testRegistry{
		{name: "referrers API", host: strings.TrimPrefix(withAPI.URL, "http://"), referrersAPI: true},
		{name: "referrers tag", host: dist.Addr()},
	}
}

func testSigner(t testing.TB) *Signer {
	t.Helper()
	priv, err := GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	s, err := LoadSigner(priv, nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// The predicates the controller attests (internal/attestation's constants; repeated here so
// that this package's tests do not depend on the builders).
const (
	predicateSLSAProvenance      = "https://slsa.dev/provenance/v1"
	predicateTestResult          = "https://in-toto.io/attestation/test-result/v0.1"
	predicateVerificationSummary = "https://slsa.dev/verification_summary/v1"
)

// statement is a small in-toto statement of predicateType about image, with predicate.
func statement(t testing.TB, image name.Digest, predicateType string, predicate map[string]any) []byte {
	t.Helper()
	p, err := structpb.NewStruct(predicate)
	if err != nil {
		t.Fatal(err)
	}
	_, hexDigest, _ := splitDigest(image)
	st := &attestationv1.Statement{
		Type:          attestationv1.StatementTypeUri,
		Subject:       []*attestationv1.ResourceDescriptor{{Name: image.Repository.Name(), Digest: map[string]string{"sha256": hexDigest}}},
		PredicateType: predicateType,
		Predicate:     p,
	}
	b, err := protojson.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// statements are one of each predicate the controller attests, about image.
func statements(t testing.TB, image name.Digest) map[string][]byte {
	t.Helper()
	return map[string][]byte{
		predicateSLSAProvenance: statement(t, image, predicateSLSAProvenance, map[string]any{
			"buildDefinition": map[string]any{
				"buildType":          "https://release-controller.dev/payload/v1",
				"externalParameters": map[string]any{"stream": "4.22"},
			},
			"runDetails": map[string]any{"builder": map[string]any{"id": "https://release-controller.dev/controller"}},
		}),
		predicateTestResult: statement(t, image, predicateTestResult, map[string]any{
			"result":        "PASSED",
			"configuration": []any{map[string]any{"name": "e2e-aws"}},
		}),
		predicateVerificationSummary: statement(t, image, predicateVerificationSummary, map[string]any{
			"verifier":           map[string]any{"id": "https://release-controller.dev/controller"},
			"verificationResult": "PASSED",
		}),
	}
}
