//go:build !unit

package policies

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// publicKeyPEM is a fresh ECDSA P-256 public key, what the controller's Sigstore key is.
func publicKeyPEM(t *testing.T) []byte {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKIXPublicKey(&k.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
}

// dryRunCreate creates obj with a server-side dry run and strict field validation: the API
// server checks every field against the CRD's schema and refuses one it does not know.
func dryRunCreate(obj *unstructured.Unstructured) error {
	return admin.Create(context.Background(), obj, client.DryRunAll, client.FieldValidation("Strict"))
}

// TestSamplePolicies: each admission policy sample, filled in, is valid for its project's
// CRD; a copy broken in one field is refused, which shows the check reads that field.
func TestSamplePolicies(t *testing.T) {
	key := publicKeyPEM(t)
	tests := []struct{ file, kind string }{
		{file: "kyverno-clusterpolicy.yaml", kind: "ClusterPolicy"},
		{file: "policy-controller-clusterimagepolicy.yaml", kind: "ClusterImagePolicy"},
	}
	// Copies broken in one field each: edit changes the sample's text, and the API server
	// must refuse the result naming want.
	broken := map[string][]struct {
		name string
		edit func(string) string
		want string
	}{
		"kyverno-clusterpolicy.yaml": {
			{"unknown field", func(s string) string {
				return strings.Replace(s, "mutateDigest: true", "mutateDigest: true\n          verifyAttestations: true", 1)
			}, `unknown field "spec.rules[0].verifyImages[0].verifyAttestations"`},
			{"value outside the enum", func(s string) string {
				return strings.Replace(s, "failureAction: Enforce", "failureAction: Block", 1)
			}, "failureAction"},
			{"wrong type", func(s string) string {
				return strings.Replace(s, "ignoreTlog: true", "ignoreTlog: [yes]", 1)
			}, "ignoreTlog"},
		},
		"policy-controller-clusterimagepolicy.yaml": {
			{"unknown field", func(s string) string {
				return strings.Replace(s, "hashAlgorithm: sha256", "hashAlgorithm: sha256\n        ignoreTlog: true", 1)
			}, `unknown field "spec.authorities[0].key.ignoreTlog"`},
			{"wrong type", func(s string) string {
				return strings.Replace(s, "mode: enforce", "mode: [enforce]", 1)
			}, "spec.mode"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			text, err := sample(tt.file, "registry.example.com/product/release", "team", "nightly", key)
			if err != nil {
				t.Fatal(err)
			}
			obj := decode(t, string(text))
			if obj.GetKind() != tt.kind {
				t.Fatalf("kind %q, want %q", obj.GetKind(), tt.kind)
			}
			if err := dryRunCreate(obj); err != nil {
				t.Fatalf("the API server refuses the sample: %v", err)
			}
			cases := broken[tt.file]
			if len(cases) == 0 {
				t.Fatal("no broken copy to show the check bites")
			}
			for _, b := range cases {
				t.Run("broken: "+b.name, func(t *testing.T) {
					edited := b.edit(string(text))
					if edited == string(text) {
						t.Fatal("the edit changed nothing: the sample no longer has what it replaces")
					}
					err := dryRunCreate(decode(t, edited))
					if err == nil {
						t.Fatal("the API server accepts the broken copy")
					}
					if !apierrors.IsInvalid(err) && !apierrors.IsBadRequest(err) {
						t.Errorf("refused for another reason: %v", err)
					}
					if !strings.Contains(err.Error(), b.want) {
						t.Errorf("error %q does not name %q", err, b.want)
					}
				})
			}
		})
	}
}

func decode(t *testing.T, text string) *unstructured.Unstructured {
	t.Helper()
	obj := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(text), &obj.Object); err != nil {
		t.Fatalf("the sample is not YAML: %v", err)
	}
	return obj
}
