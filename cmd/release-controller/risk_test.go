//go:build !unit

package main

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	prowv1 "github.com/release-controller/release-controller/api/prow/v1"
	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/verdict/verdicttest"
)

// apiComponent is the one component of the payloads of these tests.
var apiComponent = v1alpha1.PinnedComponent{Name: "api", Image: "registry.example.com/api@sha256:" + strings.Repeat("1", 64)}

// rejectedUpgrade creates a payload of stream nightly rejected by its upgrade from previous,
// whose failed run links its logs, as the payload controller records it.
func rejectedUpgrade(t *testing.T, ns, tag, from string) {
	t.Helper()
	ctx := context.Background()
	p := &v1alpha1.ReleasePayload{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: tag},
		Spec: v1alpha1.ReleasePayloadSpec{
			PayloadCoordinates:    v1alpha1.PayloadCoordinates{Stream: "nightly", Tag: tag},
			Components:            []v1alpha1.PinnedComponent{apiComponent},
			PayloadCreationConfig: v1alpha1.PayloadCreationConfig{Repository: "registry.example.com/release"},
			PayloadVerificationConfig: v1alpha1.PayloadVerificationConfig{Verifications: []v1alpha1.Verification{{Name: "upgrade", UpgradeFrom: v1alpha1.UpgradeFromPrevious,
				ProwJob: &v1alpha1.ProwJobBackend{Spec: prowv1.ProwJobSpec{Job: "periodic-upgrade"}}}}},
		},
	}
	if err := env.Client.Create(ctx, p); err != nil {
		t.Fatal(err)
	}
	p.Status.Verifications = []v1alpha1.VerificationStatus{{Name: "upgrade", Type: v1alpha1.Blocking, Runs: []v1alpha1.JobRun{{
		Kind: v1alpha1.RunKindJob, Namespace: ns, Name: tag + "-upgrade-1", Attempt: 1, State: v1alpha1.JobFailure,
		UpgradeFrom: from, URL: "https://ci.example.com/logs/" + tag + "-upgrade-1",
	}}}}
	verdicttest.Earn(p, v1alpha1.PhaseRejected)
	if err := env.Client.Status().Update(ctx, p); err != nil {
		t.Fatal(err)
	}
}

// TestRiskDeclareAndList declares risks with `release-controller risk declare` against the API
// server, as a release engineer does from a payload's page, and lists them.
func TestRiskDeclareAndList(t *testing.T) {
	ns := env.Namespace(t)
	kubeconfig := writeKubeconfig(t)
	ctx := context.Background()
	const from, tag, good = "4.15.0-0.nightly-2026-11-21-093000", "4.15.0-0.nightly-2026-11-22-093000", "4.15.0-0.nightly-2026-11-23-093000"
	rejectedUpgrade(t, ns, tag, from)
	createPayload(t, ns, "nightly", good, "registry.example.com/release", v1alpha1.PhaseAccepted, apiComponent)

	// --dry-run prints what would be created, and creates nothing.
	out, err := run(t, "risk", "declare", "etcd-upgrade", "--payload", tag, "-n", ns, "--kubeconfig", kubeconfig, "--dry-run")
	if err != nil {
		t.Fatalf("risk declare --dry-run: %v\n%s", err, out)
	}
	var printed v1alpha1.UpgradeRisk
	if err := yaml.UnmarshalStrict([]byte(out), &printed); err != nil {
		t.Fatalf("--dry-run printed no UpgradeRisk: %v\n%s", err, out)
	}
	want := v1alpha1.UpgradeRiskSpec{Stream: "nightly", To: tag, Name: "EtcdUpgrade", URL: "https://ci.example.com/logs/" + tag + "-upgrade-1",
		Message: "Verifications failed on " + tag + ": blocking upgrade failed in " + tag + "-upgrade-1 (upgrading from " + from + ")."}
	if printed.Kind != "UpgradeRisk" || printed.Namespace != ns || printed.Name != "etcd-upgrade" || printed.Spec.Message != want.Message ||
		printed.Spec.URL != want.URL || printed.Spec.To != tag || printed.Spec.Name != want.Name || printed.Spec.Stream != "nightly" {
		t.Errorf("--dry-run printed %+v", printed)
	}
	var risks v1alpha1.UpgradeRiskList
	if err := env.Client.List(ctx, &risks, client.InNamespace(ns)); err != nil || len(risks.Items) != 0 {
		t.Fatalf("--dry-run created %d risks (%v)", len(risks.Items), err)
	}

	// Declared: blocked, the payload's facts in it, the API server's admission passed.
	out, err = run(t, "risk", "declare", "etcd-upgrade", "--payload", tag, "-n", ns, "--kubeconfig", kubeconfig)
	if err != nil || !strings.Contains(out, "upgrade risk "+ns+"/etcd-upgrade declared: EtcdUpgrade") || !strings.Contains(out, "leaves these upgrades out for every cluster") {
		t.Fatalf("risk declare: %v\n%s", err, out)
	}
	var risk v1alpha1.UpgradeRisk
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "etcd-upgrade"}, &risk); err != nil {
		t.Fatal(err)
	}
	if risk.Spec.Message != want.Message || risk.Spec.URL != want.URL || len(risk.Spec.MatchingRules) != 0 {
		t.Errorf("declared %+v", risk.Spec)
	}
	if out, err := run(t, "risk", "declare", "etcd-upgrade", "--payload", tag, "-n", ns, "--kubeconfig", kubeconfig); err == nil || !strings.Contains(err.Error(), "exists") {
		t.Errorf("declaring it again: %v\n%s", err, out)
	}

	// Conditional, linking the payload's page on the server, from 4.15 versions only.
	out, err = run(t, "risk", "declare", ns+"/aws-boot", "--payload", tag, "--kubeconfig", kubeconfig, "--server", "https://release.example.com",
		"--from", `^4\.15\..*$`, "--risk-name", "AWSOldBootImages", "--promql", `topk(1, cluster_infrastructure_provider{type="AWS"})`, "--always", "--fixed-in", "4.15.3")
	if err != nil || !strings.Contains(out, "clusters evaluate PromQL,Always") {
		t.Fatalf("risk declare with rules: %v\n%s", err, out)
	}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "aws-boot"}, &risk); err != nil {
		t.Fatal(err)
	}
	if risk.Spec.URL != "https://release.example.com/namespaces/"+ns+"/releasestream/nightly/release/"+tag || risk.Spec.From != `^4\.15\..*$` ||
		len(risk.Spec.MatchingRules) != 2 || risk.Spec.MatchingRules[0].PromQL == nil || risk.Spec.FixedIn != "4.15.3" {
		t.Errorf("declared %+v", risk.Spec)
	}

	// Refusals, each saying why.
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"a payload without failures and no message", []string{"--payload", good}, "records no failed verification to describe the risk: give --message"},
		{"an unanchored from", []string{"--payload", tag, "--from", "4.14"}, `--from "4.14" is not anchored`},
		{"a missing payload", []string{"--payload", "4.15.0-missing"}, "release payload " + ns + "/4.15.0-missing not found"},
		{"the wrong stream", []string{"--payload", tag, "--stream", "stable"}, "belongs to stream nightly, not stable"},
	} {
		args := append([]string{"risk", "declare", "another", "-n", ns, "--kubeconfig", kubeconfig}, tc.args...)
		if out, err := run(t, args...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v\n%s", tc.name, err, out)
		}
	}

	out, err = run(t, "risk", "list", "-n", ns, "--kubeconfig", kubeconfig)
	if err != nil {
		t.Fatalf("risk list: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "NAME") ||
		!strings.Contains(lines[1], "aws-boot") || !strings.Contains(lines[1], "PromQL,Always") ||
		!strings.Contains(lines[2], "etcd-upgrade") || !strings.Contains(lines[2], "blocked") {
		t.Errorf("risk list printed:\n%s", out)
	}
}

// TestPayloadTombstone tombstones a payload with `release-controller payload tombstone`, changes
// its reason and brings it back.
func TestPayloadTombstone(t *testing.T) {
	ns := env.Namespace(t)
	kubeconfig := writeKubeconfig(t)
	const tag = "4.15.0-0.nightly-2026-11-22-093000"
	createPayload(t, ns, "nightly", tag, "registry.example.com/release", v1alpha1.PhaseAccepted, apiComponent)
	annotation := func() (string, bool) {
		var p v1alpha1.ReleasePayload
		if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: tag}, &p); err != nil {
			t.Fatal(err)
		}
		v, ok := p.Annotations[v1alpha1.AnnotationTombstone]
		return v, ok
	}

	out, err := run(t, "payload", "tombstone", tag, "-n", ns, "--kubeconfig", kubeconfig, "--reason", "loses etcd data on upgrade")
	if err != nil || !strings.Contains(out, "payload "+ns+"/"+tag+" tombstoned: loses etcd data on upgrade") {
		t.Fatalf("tombstone: %v\n%s", err, out)
	}
	if v, ok := annotation(); !ok || v != "loses etcd data on upgrade" {
		t.Errorf("annotation %q (%v)", v, ok)
	}
	out, err = run(t, "payload", "tombstone", ns+"/"+tag, "--kubeconfig", kubeconfig, "--reason", `loses "etcd" data`)
	if err != nil || !strings.Contains(out, "stays tombstoned, now because: loses \"etcd\" data") {
		t.Fatalf("a new reason: %v\n%s", err, out)
	}
	if v, _ := annotation(); v != `loses "etcd" data` {
		t.Errorf("annotation %q", v)
	}
	out, err = run(t, "payload", "tombstone", tag, "-n", ns, "--kubeconfig", kubeconfig, "--undo")
	if err != nil || !strings.Contains(out, "no longer tombstoned") {
		t.Fatalf("undo: %v\n%s", err, out)
	}
	if v, ok := annotation(); ok {
		t.Errorf("annotation %q left after --undo", v)
	}
	if out, err := run(t, "payload", "tombstone", tag, "-n", ns, "--kubeconfig", kubeconfig, "--undo"); err != nil || !strings.Contains(out, "is not tombstoned") {
		t.Errorf("undo again: %v\n%s", err, out)
	}

	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"neither reason nor undo", []string{tag}, "give --reason"},
		{"a blank reason", []string{tag, "--reason", "  "}, "give --reason"},
		{"both", []string{tag, "--reason", "x", "--undo"}, "give --reason saying why the payload is withdrawn, or --undo"},
		{"a missing payload", []string{"4.15.0-missing", "--reason", "x"}, "release payload " + ns + "/4.15.0-missing not found"},
	} {
		args := append([]string{"payload", "tombstone", "-n", ns, "--kubeconfig", kubeconfig}, tc.args...)
		if out, err := run(t, args...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v\n%s", tc.name, err, out)
		}
	}
}
