package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/release-controller/release-controller/internal/attestation"
)

func TestPlanVerify(t *testing.T) {
	all := []string{attestation.PredicateSLSAProvenance, attestation.PredicateTestResult, attestation.PredicateVerificationSummary}
	for _, tc := range []struct {
		name           string
		format, store  string
		predicateTypes []string
		want           verifyPlan
		wantErr        string
	}{
		{name: "openpgp", format: "openpgp", store: "file:///sigs", want: verifyPlan{Format: "openpgp"}},
		{name: "openpgp without a store", format: "openpgp", wantErr: "--format openpgp needs --store"},
		{name: "sigstore", format: "sigstore", want: verifyPlan{Format: "sigstore"}},
		{name: "sigstore with a store", format: "sigstore", store: "file:///sigs", wantErr: "--store is for --format openpgp: sigstore signatures are read from the image's registry"},
		{name: "attestation: every predicate by default", format: "attestation", want: verifyPlan{Format: "attestation", PredicateTypes: all}},
		{name: "attestation: the types given, once each", format: "attestation", predicateTypes: []string{attestation.PredicateVerificationSummary, " " + attestation.PredicateVerificationSummary, "https://example.com/custom/v1"},
			want: verifyPlan{Format: "attestation", PredicateTypes: []string{attestation.PredicateVerificationSummary, "https://example.com/custom/v1"}}},
		{name: "attestation: an empty type", format: "attestation", predicateTypes: []string{""}, wantErr: "--predicate-type is empty"},
		{name: "attestation with a store", format: "attestation", store: "http://127.0.0.1/signatures", wantErr: "--store is for --format openpgp"},
		{name: "predicate type of sigstore", format: "sigstore", predicateTypes: []string{attestation.PredicateTestResult}, wantErr: "--predicate-type is for --format attestation, not sigstore"},
		{name: "predicate type of openpgp", format: "openpgp", store: "file:///sigs", predicateTypes: []string{attestation.PredicateTestResult}, wantErr: "--predicate-type is for --format attestation, not openpgp"},
		{name: "unknown format", format: "cosign", wantErr: `--format must be openpgp, sigstore or attestation, got "cosign"`},
		{name: "format in capitals", format: "SIGSTORE", wantErr: `got "SIGSTORE"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := planVerify(tc.format, tc.store, tc.predicateTypes)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("planVerify = %+v, %v; want an error with %q", got, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Format != tc.want.Format || !slices.Equal(got.PredicateTypes, tc.want.PredicateTypes) {
				t.Errorf("planVerify = %+v, want %+v", got, tc.want)
			}
		})
	}
	// The default list is the plan's own copy: a caller that appends to it cannot change it.
	p, _ := planVerify("attestation", "", nil)
	p.PredicateTypes[0] = "changed"
	if defaultPredicateTypes[0] != attestation.PredicateSLSAProvenance {
		t.Error("planVerify handed out defaultPredicateTypes itself")
	}
}

func TestAttestationSummary(t *testing.T) {
	vsa, tr := attestation.PredicateVerificationSummary, attestation.PredicateTestResult
	for _, tc := range []struct {
		name, predicateType, statement, want, wantErr string
	}{
		{"summary passed", vsa, `{"_type":"https://in-toto.io/Statement/v1","predicateType":"https://slsa.dev/verification_summary/v1","predicate":{"verificationResult":"PASSED","verifier":{"id":"x"}}}`, "verificationResult PASSED", ""},
		{"summary failed", vsa, `{"predicate":{"verificationResult":"FAILED"}}`, "verificationResult FAILED", ""},
		{"summary without a result", vsa, `{"predicate":{"verifier":{"id":"x"}}}`, "", "has no verificationResult"},
		{"test result", tr, `{"predicate":{"configuration":[{"name":"e2e","annotations":{"type":"Blocking"}},{"name":"team/e2e-1"}],"result":"WARNED"}}`, "verification e2e WARNED", ""},
		{"test result without a verification", tr, `{"predicate":{"configuration":[],"result":"PASSED"}}`, "", "names no verification or no result"},
		{"test result without a result", tr, `{"predicate":{"configuration":[{"name":"e2e"}]}}`, "", "names no verification or no result"},
		{"provenance: nothing to add", attestation.PredicateSLSAProvenance, `{"predicate":{}}`, "", ""},
		{"another predicate, not even read", "https://example.com/other/v1", `not json`, "", ""},
		{"not JSON", vsa, `not json`, "", "reading the statement"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := attestationSummary(tc.predicateType, []byte(tc.statement))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("attestationSummary = %q, %v; want an error with %q", got, err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("attestationSummary = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}
