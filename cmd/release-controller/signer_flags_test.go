package main

import (
	"context"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/types"

	"github.com/release-controller/release-controller/internal/audit"
)

func TestSignerFlags(t *testing.T) {
	for _, tc := range []struct {
		name  string
		flags signerFlags
		want  audit.Options // the key fields only
		err   string
	}{
		{name: "nothing", flags: signerFlags{}},
		{name: "sigstore secret alone", flags: signerFlags{sigstoreKeySecret: "rc/cosign"},
			want: audit.Options{SigstoreKeySecret: types.NamespacedName{Namespace: "rc", Name: "cosign"}}},
		{name: "sigstore kms", flags: signerFlags{sigstoreKMSKey: "hashivault://release"}, want: audit.Options{SigstoreKMSKey: "hashivault://release"}},
		{name: "both sigstore keys", flags: signerFlags{sigstoreKeySecret: "rc/cosign", sigstoreKMSKey: "hashivault://release"}, err: "give one"},
		{name: "sigstore secret without namespace outside a pod", flags: signerFlags{sigstoreKeySecret: "cosign"}, err: `--sigstore-key-secret "cosign": want NAMESPACE/NAME`},
		{name: "sigstore secret with a bad name", flags: signerFlags{sigstoreKeySecret: "rc/Cosign_Key"}, err: "--sigstore-key-secret"},
		{name: "sigstore secret with a bad namespace", flags: signerFlags{sigstoreKeySecret: "a.b/cosign"}, err: "--sigstore-key-secret"},
		{name: "openpgp key without a store", flags: signerFlags{keySecret: "rc/key"}, err: "needs --signature-store"},
		{name: "openpgp with a bad name", flags: signerFlags{keySecret: "rc/", store: "file:///nonexistent"}, err: "--signing-key-secret"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("POD_NAMESPACE", "")
			t.Setenv("POD_NAME", "")
			tc.flags.burst, tc.flags.interval = audit.DefaultBurst, audit.DefaultInterval
			got, err := tc.flags.options(context.Background())
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("options: %v, want an error with %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.SigstoreKeySecret != tc.want.SigstoreKeySecret || got.SigstoreKMSKey != tc.want.SigstoreKMSKey || got.KeySecret != tc.want.KeySecret {
				t.Errorf("options = %+v, want %+v", got, tc.want)
			}
		})
	}
}
