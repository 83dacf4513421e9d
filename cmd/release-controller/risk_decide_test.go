package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/release-controller/release-controller/api/v1alpha1"
)

const riskTag = "4.15.0-0.nightly-2026-11-22-093000"

// rejectedPayload records a failed blocking upgrade (two runs, the first with a URL) and a
// failed informing conformance run, beside a passing e2e.
func rejectedPayload() *v1alpha1.ReleasePayload {
	return &v1alpha1.ReleasePayload{
		ObjectMeta: metav1.ObjectMeta{Namespace: "releases", Name: riskTag},
		Spec:       v1alpha1.ReleasePayloadSpec{PayloadCoordinates: v1alpha1.PayloadCoordinates{Stream: "nightly", Tag: riskTag}},
		Status: v1alpha1.ReleasePayloadStatus{Verifications: []v1alpha1.VerificationStatus{
			{Name: "e2e", Type: v1alpha1.Blocking, State: v1alpha1.JobSuccess, Runs: []v1alpha1.JobRun{{Name: "e2e-1", State: v1alpha1.JobSuccess, URL: "https://ci.example.com/e2e-1"}}},
			{Name: "upgrade", Type: v1alpha1.Blocking, State: v1alpha1.JobFailure, Runs: []v1alpha1.JobRun{
				{Name: "upgrade-1", State: v1alpha1.JobFailure, UpgradeFrom: "4.15.0-0.nightly-2026-11-21-093000", URL: "https://ci.example.com/upgrade-1"},
				{Name: "upgrade-2", State: v1alpha1.JobFailure, UpgradeFrom: "4.15.0-0.nightly-2026-11-21-093000"},
			}},
			{Name: "conformance", Type: v1alpha1.Informing, State: v1alpha1.JobFailure, Runs: []v1alpha1.JobRun{{Name: "conformance-1", State: v1alpha1.JobFailure}}},
		}},
	}
}

func TestDeclaredRisk(t *testing.T) {
	accepted := rejectedPayload()
	accepted.Status.Verifications = accepted.Status.Verifications[:1]
	noURL := rejectedPayload()
	noURL.Status.Verifications[1].Runs[0].URL = ""
	const failures = "Verifications failed on " + riskTag + ": blocking upgrade failed in upgrade-1 (upgrading from 4.15.0-0.nightly-2026-11-21-093000), " +
		"upgrade-2 (upgrading from 4.15.0-0.nightly-2026-11-21-093000); informing conformance failed in conformance-1."
	tests := []struct {
		name    string
		payload *v1alpha1.ReleasePayload
		req     riskRequest
		want    v1alpha1.UpgradeRiskSpec
		wantErr string
	}{
		{name: "everything from the payload: blocked, linking the failed run",
			payload: rejectedPayload(), req: riskRequest{Name: "upgrade-loses-etcd"},
			want: v1alpha1.UpgradeRiskSpec{Stream: "nightly", To: riskTag, Name: "UpgradeLosesEtcd", Message: failures, URL: "https://ci.example.com/upgrade-1"}},
		{name: "with --server: the payload's page",
			payload: rejectedPayload(), req: riskRequest{Name: "etcd", Server: "https://release.example.com/"},
			want: v1alpha1.UpgradeRiskSpec{Stream: "nightly", To: riskTag, Name: "Etcd", Message: failures,
				URL: "https://release.example.com/namespaces/releases/releasestream/nightly/release/" + riskTag}},
		{name: "rules in order, Always last, and every flag",
			payload: rejectedPayload(), req: riskRequest{Name: "etcd", Stream: "nightly", From: `^4\.15\..*$`, RiskName: "AWSOldBootImages",
				Message: "Clusters on AWS with old boot images fail to boot.", URL: "https://issues.example.com/OCPBUGS-1", FixedIn: "4.15.3",
				PromQL: []string{`topk(1, cluster_infrastructure_provider{type="AWS"})`, "vector(0)"}, Always: true},
			want: v1alpha1.UpgradeRiskSpec{Stream: "nightly", To: riskTag, From: `^4\.15\..*$`, Name: "AWSOldBootImages",
				Message: "Clusters on AWS with old boot images fail to boot.", URL: "https://issues.example.com/OCPBUGS-1", FixedIn: "4.15.3",
				MatchingRules: []v1alpha1.MatchingRule{
					{Type: v1alpha1.MatchingRulePromQL, PromQL: &v1alpha1.PromQLRule{PromQL: `topk(1, cluster_infrastructure_provider{type="AWS"})`}},
					{Type: v1alpha1.MatchingRulePromQL, PromQL: &v1alpha1.PromQLRule{PromQL: "vector(0)"}},
					{Type: v1alpha1.MatchingRuleAlways},
				}}},
		{name: "no failure and no --message: refused", payload: accepted, req: riskRequest{Name: "etcd", URL: "https://issues.example.com/1"},
			wantErr: "records no failed verification to describe the risk: give --message"},
		{name: "a message given for a payload without failures", payload: accepted,
			req:  riskRequest{Name: "etcd", Message: "Loses etcd data.", URL: "https://issues.example.com/1"},
			want: v1alpha1.UpgradeRiskSpec{Stream: "nightly", To: riskTag, Name: "Etcd", Message: "Loses etcd data.", URL: "https://issues.example.com/1"}},
		{name: "no link anywhere", payload: noURL, req: riskRequest{Name: "etcd"}, wantErr: "give --url, or --server"},
		{name: "another stream", payload: rejectedPayload(), req: riskRequest{Name: "etcd", Stream: "stable"},
			wantErr: "payload " + riskTag + " belongs to stream nightly, not stable"},
		{name: "a name that makes no risk name", payload: rejectedPayload(), req: riskRequest{Name: "4-15-etcd"}, wantErr: "give --risk-name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := declaredRisk(tt.payload, tt.req)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one saying %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Namespace != "releases" || got.Name != tt.req.Name || got.Kind != "UpgradeRisk" || got.APIVersion != v1alpha1.GroupVersion.String() {
				t.Errorf("object %s %s/%s (%s)", got.Kind, got.Namespace, got.Name, got.APIVersion)
			}
			if !equality.Semantic.DeepEqual(got.Spec, tt.want) {
				t.Errorf("spec\n%+v\nwant\n%+v", got.Spec, tt.want)
			}
		})
	}
}

func TestDeclaredRiskMessageIsBounded(t *testing.T) {
	p := rejectedPayload()
	for i := range 200 {
		p.Status.Verifications[1].Runs = append(p.Status.Verifications[1].Runs, v1alpha1.JobRun{Name: "upgrade-retry-" + strings.Repeat("x", i%7), State: v1alpha1.JobFailure})
	}
	risk, err := declaredRisk(p, riskRequest{Name: "etcd"})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(risk.Spec.Message); n > maxRiskMessage || !strings.HasSuffix(risk.Spec.Message, "more bytes]") {
		t.Errorf("message of %d bytes: …%s", n, risk.Spec.Message[max(0, n-40):])
	}
}

func TestCheckRiskRequest(t *testing.T) {
	tests := []struct {
		name    string
		req     riskRequest
		wantErr string
	}{
		{"fine", riskRequest{Name: "etcd", From: `^4\.14\..*$`, RiskName: "Etcd", URL: "https://x.example.com", PromQL: []string{"vector(1)"}}, ""},
		{"from not anchored", riskRequest{Name: "etcd", From: `4\.14\..*`}, `--from "4\\.14\\..*" is not anchored`},
		{"from anchored at one end", riskRequest{Name: "etcd", From: `^4\.14`}, "is not anchored"},
		{"from that does not compile", riskRequest{Name: "etcd", From: `^4\.14(.*$`}, "does not compile"},
		{"a lower-case risk name", riskRequest{Name: "etcd", RiskName: "etcdLoss"}, "--risk-name \"etcdLoss\" must be CamelCase"},
		{"an object name with capitals", riskRequest{Name: "Etcd"}, "NAME \"Etcd\" is no object name"},
		{"a relative url", riskRequest{Name: "etcd", URL: "/issues/1"}, "--url: \"/issues/1\" is not an absolute http or https URL"},
		{"a server without scheme", riskRequest{Name: "etcd", Server: "release.example.com"}, "--server:"},
		{"an empty query", riskRequest{Name: "etcd", PromQL: []string{"vector(1)", " "}}, "--promql #2"},
		{"a message too long", riskRequest{Name: "etcd", Message: strings.Repeat("m", maxRiskMessage+1)}, "--message is 1025 bytes"},
		{"too many rules", riskRequest{Name: "etcd", PromQL: make([]string, maxRiskRules), Always: true}, "17 matching rules"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := checkRiskRequest(tt.req)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("error %v, want one saying %q", err, tt.wantErr)
			}
		})
	}
}

func TestPrintRisks(t *testing.T) {
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	risk := func(ns, name, stream string, rules ...v1alpha1.MatchingRule) v1alpha1.UpgradeRisk {
		return v1alpha1.UpgradeRisk{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, CreationTimestamp: metav1.NewTime(now.Add(-3 * time.Hour))},
			Spec:       v1alpha1.UpgradeRiskSpec{Stream: stream, To: riskTag, Name: camelCase(name), MatchingRules: rules},
		}
	}
	promql := v1alpha1.MatchingRule{Type: v1alpha1.MatchingRulePromQL, PromQL: &v1alpha1.PromQLRule{PromQL: "vector(1)"}}
	always := v1alpha1.MatchingRule{Type: v1alpha1.MatchingRuleAlways}
	risks := []v1alpha1.UpgradeRisk{risk("b", "etcd", "nightly", promql, always), risk("a", "dns", ""), risk("a", "other", "stable")}

	var out bytes.Buffer
	if err := printRisks(&out, risks, "nightly", true, now); err != nil {
		t.Fatal(err)
	}
	want := "NAMESPACE  NAME  RISK  TO                                  FROM  STREAM   RULES          AGE\n" +
		"a          dns   Dns   " + riskTag + "  *     *        blocked        3h\n" +
		"b          etcd  Etcd  " + riskTag + "  *     nightly  PromQL,Always  3h\n"
	if out.String() != want {
		t.Errorf("printed\n%s\nwant\n%s", out.String(), want)
	}
	out.Reset()
	if err := printRisks(&out, risks, "weekly", false, now); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out.String(), "NAME  RISK") || strings.Contains(out.String(), "etcd") {
		t.Errorf("risks of stream weekly:\n%s", out.String())
	}
	out.Reset()
	if err := printRisks(&out, nil, "", false, now); err != nil || out.String() != "no upgrade risks\n" {
		t.Errorf("no risks printed %q, %v", out.String(), err)
	}
}
