// Package signingtest gives tests two OpenPGP signing keys, made once per test binary: RSA
// keys take a moment to generate.
package signingtest

import (
	"sync"
	"testing"
	"time"

	"github.com/release-controller/release-controller/internal/signing"
)

var (
	once sync.Once
	keys [2]*signing.Key
	err  error
)

// Key returns test key i (0 or 1).
func Key(t testing.TB, i int) *signing.Key {
	t.Helper()
	once.Do(func() {
		for j := range keys {
			armored, genErr := signing.GenerateKey("Release Controller Test", "signer@example.com")
			if genErr != nil {
				err = genErr
				return
			}
			if keys[j], err = signing.ParsePrivateKey(armored, nil, time.Now()); err != nil {
				return
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	return keys[i]
}
