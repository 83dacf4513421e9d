//go:build !unit

package scale

import (
	"context"
	"fmt"
	"sort"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/attestation"
	"github.com/release-controller/release-controller/internal/audit"
	"github.com/release-controller/release-controller/internal/signing/cosign"
)

// sigstoreFlags makes the fleet's controller attach Sigstore signatures and attestations too:
// a new key in a Secret of the fleet's namespace, whose signer it returns through signer.
func sigstoreFlags(t testing.TB, signer **cosign.Signer) func(f *fleet) []string {
	return func(f *fleet) []string {
		t.Helper()
		pem, err := cosign.GenerateKey()
		if err != nil {
			t.Fatal(err)
		}
		if *signer, err = cosign.LoadSigner(pem, nil); err != nil {
			t.Fatal(err)
		}
		secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "sigstore-key"}, Data: map[string][]byte{audit.SecretKeyCosign: pem}}
		if err := env.Client.Create(context.Background(), secret); err != nil {
			t.Fatal(err)
		}
		return []string{"--sigstore-key-secret", f.ns + "/sigstore-key"}
	}
}

// waitSigstoreOnce waits until every accepted payload of the fleet says PayloadSigstoreSigned,
// restarting the controller whenever it exits, then checks each in the registry with the
// signer's public key: exactly one signature, and exactly one of each statement that
// attestation.Statements makes of the payload now, each in cosign's tag layout and as a
// referrer. It returns how many payloads were checked.
func (f *fleet) waitSigstoreOnce(t testing.TB, c *faultController, signer *cosign.Signer) int {
	t.Helper()
	var accepted []v1alpha1.ReleasePayload
	waitFor(t, "every accepted payload has its Sigstore signatures and attestations", convergeTimeout, nil, func(ctx context.Context) (bool, string, error) {
		c.keepRunning()
		s, err := f.progress(ctx)
		if err != nil {
			return false, "", err
		}
		accepted = nil
		var missing []string
		for _, list := range s.payloads {
			for _, p := range list {
				if p.Status.Phase != v1alpha1.PhaseAccepted {
					continue
				}
				accepted = append(accepted, p)
				if !meta.IsStatusConditionTrue(p.Status.Conditions, v1alpha1.ConditionPayloadSigstoreSigned) {
					missing = append(missing, p.Name)
				}
			}
		}
		sort.Strings(missing)
		return len(missing) == 0, fmt.Sprintf("not signed with Sigstore yet: %v", missing[:min(len(missing), 5)]), nil
	})
	for i := range accepted {
		for _, problem := range sigstoreAttached(context.Background(), &accepted[i], signer) {
			t.Errorf("payload %s: %s", accepted[i].Name, problem)
		}
	}
	return len(accepted)
}

// sigstoreAttached lists what is wrong with the Sigstore signatures and attestations of p's
// image: none is "exactly one of each, in both layouts".
func sigstoreAttached(ctx context.Context, p *v1alpha1.ReleasePayload, signer *cosign.Signer) []string {
	image, err := name.NewDigest(p.Status.PayloadImage)
	if err != nil {
		return []string{err.Error()}
	}
	var problems []string
	sigs, err := cosign.VerifySignatures(ctx, image, signer.PublicKey())
	if err != nil {
		return []string{err.Error()}
	}
	where := map[string]int{}
	for _, s := range sigs {
		where[s.Where]++
	}
	if len(sigs) != 2 || where[cosign.FoundInTag] != 1 || where[cosign.FoundInReferrer] != 1 {
		problems = append(problems, fmt.Sprintf("signatures %v, want one in the tag and one referrer", where))
	}
	statements, err := attestation.Statements(p, nil, audit.BuilderID())
	if err != nil {
		return append(problems, err.Error())
	}
	want := map[string]map[string]bool{} // by predicate type, the statements
	for _, st := range statements {
		if want[st.PredicateType] == nil {
			want[st.PredicateType] = map[string]bool{}
		}
		want[st.PredicateType][string(st.JSON)] = true
	}
	for _, typ := range []string{attestation.PredicateSLSAProvenance, attestation.PredicateTestResult, attestation.PredicateVerificationSummary} {
		atts, err := cosign.VerifyAttestations(ctx, image, signer.PublicKey(), typ)
		if err != nil && len(want[typ]) > 0 {
			problems = append(problems, err.Error())
			continue
		}
		seen := map[string]map[string]int{} // by statement, by where
		for _, a := range atts {
			if seen[string(a.Statement)] == nil {
				seen[string(a.Statement)] = map[string]int{}
			}
			seen[string(a.Statement)][a.Where]++
		}
		for st := range want[typ] {
			if got := seen[st]; got[cosign.FoundInTag] != 1 || got[cosign.FoundInReferrer] != 1 {
				problems = append(problems, fmt.Sprintf("attestation %s attached %v times, want once in the tag and once as a referrer", typ, got))
			}
		}
		if len(seen) != len(want[typ]) {
			problems = append(problems, fmt.Sprintf("%d distinct %s attestations, want %d", len(seen), typ, len(want[typ])))
		}
	}
	return problems
}
