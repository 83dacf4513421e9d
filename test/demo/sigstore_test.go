//go:build !unit

package demo

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/release-controller/release-controller/internal/attestation"
	"github.com/release-controller/release-controller/internal/signing/cosign"
	"github.com/release-controller/release-controller/internal/signing/cosign/cosigntest"
	"github.com/release-controller/release-controller/internal/testbinary"
	"github.com/release-controller/release-controller/internal/testbrowser"
)

// keyFlag is the --key argument of a cosign command.
var keyFlag = regexp.MustCompile(`--key (\S+)`)

// checkSigstore checks the Sigstore signature and attestations of the accepted payload
// pullSpec (by digest) — the newest accepted one — as a consumer would, with the cosign CLI:
// the release page says it is signed once PayloadSigstoreSigned is True; then the cosign
// commands dev printed succeed (cosign verify, and verify-attestation of the provenance, the
// test results and the verification summary, which says PASSED), and fail with another key;
// and the commands the page shows succeed from the data directory, where dev wrote cosign.pub.
func checkSigstore(t *testing.T, ctx context.Context, dev *testbinary.Process, binary, dataDir, pullSpec string) {
	t.Helper()
	cosignCLI, err := filepath.Abs(cosigntest.Cosign(t))
	if err != nil {
		t.Fatal(err)
	}
	testbrowser.Do(t, ctx, "waiting for the Sigstore signature", chromedp.WaitVisible(chromedp.CSS(`p.sigstore`)))
	pageLine := testbrowser.Eval[string](t, ctx, `document.querySelector("p.sigstore").innerText`)
	if !strings.Contains(pageLine, "signed by sha256:") || !strings.Contains(pageLine, "attestations") {
		t.Errorf("the release page says of the Sigstore signature: %q", pageLine)
	}
	_, digest, _ := strings.Cut(pullSpec, "@")

	verify, verifyAttestation := cosignCommands(t, dev)
	verify = strings.Replace(verify, "bin/cosign", cosignCLI, 1)
	verifyAttestation = strings.Replace(verifyAttestation, "bin/cosign", cosignCLI, 1)

	out, err := paste(binary, verify)
	t.Logf("$ %s\n%s", verify, out)
	if err != nil {
		t.Fatalf("the cosign verify command dev printed failed: %v\n%s", err, out)
	}
	// cosign v3 lists every bundle among the referrers it verified, the attestations' too: one
	// of them must be the signature itself, of this digest.
	if !signedBy(t, out, digest) {
		t.Errorf("cosign verify found no signature (type %s) of %s:\n%s", cosign.SignPredicateType, digest, out)
	}

	// Each attestation, by cosign's name of its type or by the URI.
	for _, predicateType := range []string{"slsaprovenance1", attestation.PredicateTestResult, attestation.PredicateVerificationSummary} {
		command := strings.Replace(verifyAttestation, "--type slsaprovenance1", "--type "+predicateType, 1)
		out, err := paste(binary, command)
		t.Logf("$ %s\n%s", command, out)
		if err != nil {
			t.Fatalf("cosign verify-attestation --type %s failed: %v\n%s", predicateType, err, out)
		}
		statements := attestedStatements(t, out)
		if len(statements) == 0 {
			t.Fatalf("cosign verify-attestation --type %s printed no statement:\n%s", predicateType, out)
		}
		for _, s := range statements {
			if s.Subject[0].Digest["sha256"] != strings.TrimPrefix(digest, "sha256:") {
				t.Errorf("a statement of --type %s is about %v, not %s", predicateType, s.Subject, digest)
			}
			if predicateType == attestation.PredicateVerificationSummary && s.Predicate.VerificationResult != "PASSED" {
				t.Errorf("the verification summary says %q, want PASSED", s.Predicate.VerificationResult)
			}
		}
	}

	// Another key: cosign refuses both.
	other := otherKey(t, cosignCLI)
	for _, command := range []string{verify, verifyAttestation} {
		command = keyFlag.ReplaceAllString(command, "--key "+other)
		out, err := paste(binary, command)
		t.Logf("$ %s (another key)\n%s", command, out)
		if err == nil {
			t.Errorf("%s verified with another key:\n%s", command, out)
		}
	}

	// The page's commands, run where dev wrote cosign.pub.
	for _, id := range []string{"cosign-verify", "cosign-verify-attestation", "sigstore-payload-verify"} {
		command := testbrowser.Eval[string](t, ctx, `document.getElementById("`+id+`").innerText`)
		cmd := exec.Command("sh", "-c", command)
		cmd.Dir = dataDir
		cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(binary)+string(os.PathListSeparator)+filepath.Dir(cosignCLI)+string(os.PathListSeparator)+os.Getenv("PATH"))
		out, err := cmd.CombinedOutput()
		t.Logf("$ %s (the page's command, in the data directory)\n%s", command, out)
		if err != nil {
			t.Errorf("the page's %s failed: %v\n%s", command, err, out)
		}
	}
}

// cosignCommands are the cosign verify and verify-attestation commands dev printed.
func cosignCommands(t *testing.T, dev *testbinary.Process) (verify, verifyAttestation string) {
	t.Helper()
	log, err := os.ReadFile(dev.LogPath)
	if err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(strings.NewReader(string(log)))
	lines.Buffer(nil, 1<<20)
	for lines.Scan() {
		line := strings.TrimSpace(lines.Text())
		switch {
		case verify == "" && strings.HasPrefix(line, "bin/cosign verify --key "):
			verify = line
		case verifyAttestation == "" && strings.HasPrefix(line, "bin/cosign verify-attestation --key ") && strings.Contains(line, "--type slsaprovenance1 "):
			verifyAttestation = line
		}
	}
	if verify == "" || verifyAttestation == "" {
		t.Fatalf("dev printed no cosign commands: verify %q, verify-attestation %q", verify, verifyAttestation)
	}
	return verify, verifyAttestation
}

// signedBy says whether cosign verify's output lists a signature (not an attestation) of digest.
func signedBy(t *testing.T, out []byte, digest string) bool {
	t.Helper()
	for _, line := range strings.Split(string(out), "\n") {
		if !strings.HasPrefix(line, "[") {
			continue
		}
		var verified []struct {
			Critical struct {
				Image struct {
					Digest string `json:"docker-manifest-digest"`
				} `json:"image"`
				Type string `json:"type"`
			} `json:"critical"`
		}
		if err := json.Unmarshal([]byte(line), &verified); err != nil {
			t.Fatalf("cosign verify printed a list that is not its JSON: %v\n%s", err, line)
		}
		for _, v := range verified {
			if v.Critical.Type == cosign.SignPredicateType && v.Critical.Image.Digest == digest {
				return true
			}
		}
	}
	return false
}

// statement is what the test reads of an in-toto statement.
type statement struct {
	PredicateType string `json:"predicateType"`
	Subject       []struct {
		Name   string            `json:"name"`
		Digest map[string]string `json:"digest"`
	} `json:"subject"`
	Predicate struct {
		VerificationResult string `json:"verificationResult"`
	} `json:"predicate"`
}

// attestedStatements are the statements of the DSSE envelopes cosign verify-attestation
// printed, one JSON object a line.
func attestedStatements(t *testing.T, out []byte) []statement {
	t.Helper()
	var statements []statement
	for _, line := range strings.Split(string(out), "\n") {
		if !strings.HasPrefix(line, "{") {
			continue
		}
		var envelope struct {
			PayloadType string `json:"payloadType"`
			Payload     string `json:"payload"`
		}
		if err := json.Unmarshal([]byte(line), &envelope); err != nil || envelope.PayloadType != "application/vnd.in-toto+json" {
			continue
		}
		data, err := base64.StdEncoding.DecodeString(envelope.Payload)
		if err != nil {
			t.Fatalf("a DSSE payload is not base64: %v", err)
		}
		var s statement
		if err := json.Unmarshal(data, &s); err != nil {
			t.Fatalf("a DSSE payload is not an in-toto statement: %v\n%s", err, data)
		}
		if len(s.Subject) == 0 {
			t.Fatalf("a statement has no subject:\n%s", data)
		}
		statements = append(statements, s)
	}
	return statements
}

// otherKey makes another key pair with cosign itself (no password) and returns its public
// key's path.
func otherKey(t *testing.T, cosignCLI string) string {
	t.Helper()
	dir := t.TempDir()
	cmd := exec.Command(cosignCLI, "generate-key-pair")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "COSIGN_PASSWORD=")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("cosign generate-key-pair: %v\n%s", err, out)
	}
	return filepath.Join(dir, "cosign.pub")
}
