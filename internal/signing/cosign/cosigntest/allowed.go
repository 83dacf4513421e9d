//go:build containers_image_openpgp

// go.podman.io/image's signature package verifies OpenPGP with gpgme (cgo) unless
// containers_image_openpgp selects its pure-Go mechanism. `make test` sets it.

package cosigntest

import (
	"context"
	"testing"

	"go.podman.io/image/v5/docker"
	"go.podman.io/image/v5/image"
	"go.podman.io/image/v5/signature"
	"go.podman.io/image/v5/types"
)

// Allowed asks containers/image, configured by sys (its policy at sys.SignaturePolicyPath),
// whether it runs ref ("<repository>:<tag>" or "<repository>@<digest>"), as podman and CRI-O do.
func Allowed(ctx context.Context, t testing.TB, sys *types.SystemContext, ref string) (bool, error) {
	t.Helper()
	pol, err := signature.NewPolicyFromFile(sys.SignaturePolicyPath)
	if err != nil {
		t.Fatal(err)
	}
	pc, err := signature.NewPolicyContext(pol)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = pc.Destroy() }()
	r, err := docker.ParseReference("//" + ref)
	if err != nil {
		t.Fatal(err)
	}
	src, err := r.NewImageSource(ctx, sys)
	if err != nil {
		t.Fatalf("opening %s: %v", ref, err)
	}
	defer func() { _ = src.Close() }()
	return pc.IsRunningImageAllowed(ctx, image.UnparsedInstance(src, nil))
}
