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

// CosignPublicKeyKey is where the store keeps the PEM public key that verifies the Sigstore
// signatures and attestations the controller attaches to payload images (`cosign verify --key`).
const CosignPublicKeyKey = "cosign.pub"

// PutCosignPublicKey replaces the published Sigstore public key, when it changed.
func (s *Store) PutCosignPublicKey(ctx context.Context, pemBytes []byte) error {
	if current, err := s.read(ctx, CosignPublicKeyKey); err == nil && string(current) == string(pemBytes) {
		return nil
	}
	if err := s.bucket.WriteAll(ctx, CosignPublicKeyKey, pemBytes, nil); err != nil {
		return fmt.Errorf("writing %s: %w", CosignPublicKeyKey, err)
	}
	return nil
}

// CosignPublicKey returns the published Sigstore public key; an error wrapping ErrNotFound
// when none is.
func (s *Store) CosignPublicKey(ctx context.Context) ([]byte, error) {
	return s.read(ctx, CosignPublicKeyKey)
}
