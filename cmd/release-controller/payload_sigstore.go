package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/release-controller/release-controller/internal/attestation"
	"github.com/release-controller/release-controller/internal/registryclient"
	"github.com/release-controller/release-controller/internal/signing/cosign"
)

// The formats of `payload verify`.
const (
	formatOpenPGP     = "openpgp"
	formatSigstore    = "sigstore"
	formatAttestation = "attestation"
)

// defaultPredicateTypes are what --format attestation checks without --predicate-type: every
// predicate the controller attests an accepted payload with.
var defaultPredicateTypes = []string{attestation.PredicateSLSAProvenance, attestation.PredicateTestResult, attestation.PredicateVerificationSummary}

// verifyPlan is what `payload verify` checks, decided from its flags before anything is read.
type verifyPlan struct {
	Format string
	// PredicateTypes are the attestations --format attestation requires, in this order.
	PredicateTypes []string
}

// planVerify checks the flags of `payload verify` against each other: --store belongs to
// openpgp (whose signatures live in a store) and --predicate-type to attestation; sigstore
// signatures and attestations are read from the image's registry.
func planVerify(format, store string, predicateTypes []string) (verifyPlan, error) {
	switch format {
	case formatOpenPGP:
		if store == "" {
			return verifyPlan{}, fmt.Errorf("--format openpgp needs --store: the signature store URL or the signatures server's base URL")
		}
	case formatSigstore, formatAttestation:
		if store != "" {
			return verifyPlan{}, fmt.Errorf("--store is for --format openpgp: %s signatures are read from the image's registry", format)
		}
	default:
		return verifyPlan{}, fmt.Errorf("--format must be openpgp, sigstore or attestation, got %q", format)
	}
	plan := verifyPlan{Format: format}
	if len(predicateTypes) > 0 && format != formatAttestation {
		return verifyPlan{}, fmt.Errorf("--predicate-type is for --format attestation, not %s", format)
	}
	if format != formatAttestation {
		return plan, nil
	}
	for _, p := range predicateTypes {
		p = strings.TrimSpace(p)
		if p == "" {
			return verifyPlan{}, fmt.Errorf("--predicate-type is empty")
		}
		if !slices.Contains(plan.PredicateTypes, p) {
			plan.PredicateTypes = append(plan.PredicateTypes, p)
		}
	}
	if len(plan.PredicateTypes) == 0 {
		plan.PredicateTypes = slices.Clone(defaultPredicateTypes)
	}
	return plan, nil
}

// maxKeyBytes bounds a --key: a file of public keys is a few kilobytes.
const maxKeyBytes = 1 << 20

// keyFetchTimeout bounds fetching a --key given by URL.
const keyFetchTimeout = 30 * time.Second

// readKey reads --key: a file, or an http(s) URL such as the server's
// /signatures/cosign.pub; at most maxKeyBytes either way.
func readKey(ctx context.Context, ref string) ([]byte, error) {
	if !strings.HasPrefix(ref, "http://") && !strings.HasPrefix(ref, "https://") {
		f, err := os.Open(ref)
		if err != nil {
			return nil, fmt.Errorf("reading --key: %w", err)
		}
		defer f.Close()
		return readBounded(f, ref)
	}
	ctx, cancel := context.WithTimeout(ctx, keyFetchTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, ref, nil)
	if err != nil {
		return nil, fmt.Errorf("--key %s: %w", ref, err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("fetching --key: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		// The server says why (e.g. that it has no Sigstore key): its first line, bounded.
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		why, _, _ := strings.Cut(strings.TrimSpace(string(body)), "\n")
		return nil, fmt.Errorf("fetching --key %s: %s: %q", ref, resp.Status, why)
	}
	return readBounded(resp.Body, ref)
}

func readBounded(r io.Reader, ref string) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxKeyBytes+1))
	if err != nil {
		return nil, fmt.Errorf("reading --key %s: %w", ref, err)
	}
	if len(data) > maxKeyBytes {
		return nil, fmt.Errorf("--key %s is larger than %d bytes: not a public key", ref, maxKeyBytes)
	}
	return data, nil
}

// resolveImage pins pullSpec by digest: the platform's image of an index with --platform, the
// image the tag names for a pull spec by tag (saying so on note, since the verification is of
// that digest, not of whatever the tag names later), else the digest given.
func resolveImage(ctx context.Context, reg *registryclient.Client, pullSpec, platform string, note io.Writer) (name.Digest, error) {
	ref, err := name.ParseReference(pullSpec)
	if err != nil {
		return name.Digest{}, fmt.Errorf("parsing image reference %q: %w", pullSpec, err)
	}
	resolved := ""
	switch d, byDigest := ref.(name.Digest); {
	case platform != "":
		if resolved, err = reg.ResolvePlatform(ctx, pullSpec, platform); err != nil {
			return name.Digest{}, err
		}
	case byDigest:
		return d, nil
	default:
		if resolved, err = reg.Resolve(ctx, pullSpec); err != nil {
			return name.Digest{}, err
		}
	}
	fmt.Fprintf(note, "%s is %s: verifying that digest\n", pullSpec, resolved)
	return name.NewDigest(resolved)
}

// verifySigstore verifies the Sigstore signatures (--format sigstore) or attestations
// (--format attestation) of image with the PEM public key pemKey and prints a line for each
// one verified (one of each signature or attestation where it was found: the tag and the
// referrers).
func verifySigstore(ctx context.Context, out io.Writer, plan verifyPlan, image name.Digest, pemKey []byte, keyRef string, reg *registryclient.Client) error {
	pub, err := cosign.ParsePublicKey(pemKey)
	if err != nil {
		return fmt.Errorf("--key %s: %w", keyRef, err)
	}
	keyID, err := cosign.PublicKeyID(pub)
	if err != nil {
		return fmt.Errorf("--key %s: %w", keyRef, err)
	}
	if plan.Format == formatSigstore {
		sigs, err := cosign.VerifySignatures(ctx, image, pub, reg.Options(ctx)...)
		if err != nil {
			return fmt.Errorf("%s: %w", image, err)
		}
		for _, s := range sigs {
			if _, err := fmt.Fprintf(out, "verified: %s signed by %s for %s (%s)\n", image, keyID, s.Identity, s.Where); err != nil {
				return err
			}
		}
		return nil
	}
	for _, predicateType := range plan.PredicateTypes {
		atts, err := cosign.VerifyAttestations(ctx, image, pub, predicateType, reg.Options(ctx)...)
		if err != nil {
			return fmt.Errorf("%s: attestation %s: %w", image, predicateType, err)
		}
		for _, a := range atts {
			line := fmt.Sprintf("verified: %s attestation %s signed by %s (%s)", image, a.PredicateType, keyID, a.Where)
			summary, err := attestationSummary(a.PredicateType, a.Statement)
			if err != nil {
				return fmt.Errorf("%s: attestation %s: %w", image, a.PredicateType, err)
			}
			if summary != "" {
				line += ": " + summary
			}
			if _, err := fmt.Fprintln(out, line); err != nil {
				return err
			}
		}
	}
	return nil
}

// attestationSummary is what a line of --format attestation adds about a statement: the
// verification summary's verificationResult, a test result's verification and result; nothing
// for other predicates. A summary or test result without them is an error: it says nothing.
func attestationSummary(predicateType string, statement []byte) (string, error) {
	var s struct {
		Predicate struct {
			VerificationResult string `json:"verificationResult"`
			Result             string `json:"result"`
			Configuration      []struct {
				Name string `json:"name"`
			} `json:"configuration"`
		} `json:"predicate"`
	}
	switch predicateType {
	case attestation.PredicateVerificationSummary, attestation.PredicateTestResult:
	default:
		return "", nil
	}
	if err := json.Unmarshal(statement, &s); err != nil {
		return "", fmt.Errorf("reading the statement: %w", err)
	}
	p := s.Predicate
	if predicateType == attestation.PredicateVerificationSummary {
		if p.VerificationResult == "" {
			return "", fmt.Errorf("the verification summary has no verificationResult")
		}
		return "verificationResult " + p.VerificationResult, nil
	}
	if p.Result == "" || len(p.Configuration) == 0 || p.Configuration[0].Name == "" {
		return "", fmt.Errorf("the test result names no verification or no result")
	}
	return "verification " + p.Configuration[0].Name + " " + p.Result, nil
}
