package store

import (
	"context"
	"fmt"
)

// PublicKeysKey is where the store keeps the armored public keys that verify its signatures,
// written by the controller that signs, read by the servers that publish them.
const PublicKeysKey = "pubkey.asc"

// PutPublicKeys replaces the published public keys, when they changed.
func (s *Store) PutPublicKeys(ctx context.Context, armored []byte) error {
	if current, err := s.read(ctx, PublicKeysKey); err == nil && string(current) == string(armored) {
		return nil
	}
	if err := s.bucket.WriteAll(ctx, PublicKeysKey, armored, nil); err != nil {
		return fmt.Errorf("writing %s: %w", PublicKeysKey, err)
	}
	return nil
}

// PublicKeys returns the published public keys; an error wrapping ErrNotFound when none are.
func (s *Store) PublicKeys(ctx context.Context) ([]byte, error) {
	return s.read(ctx, PublicKeysKey)
}
