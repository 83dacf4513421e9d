package changelog

import (
	"context"

	"github.com/release-controller/release-controller/api/v1alpha1"
)

// PayloadChangeLogs computes changelogs between two payloads, reading what each payload's
// image records about its components (source repository and revision).
type PayloadChangeLogs interface {
	// Cached returns the changelog of the pair when it was computed before, without waiting.
	Cached(from, to *v1alpha1.ReleasePayload) (*ChangeLog, bool)
	// ChangeLog computes the changelog (or returns the cached one); concurrent calls for one
	// pair compute it once.
	ChangeLog(ctx context.Context, from, to *v1alpha1.ReleasePayload) (*ChangeLog, error)
}
