package signatures

import (
	"context"
	"net"
	"sync"
	"testing"

	"github.com/release-controller/release-controller/internal/signing"
	"github.com/release-controller/release-controller/internal/signing/sigstore"
)

const (
	digestA = "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	digestB = "sha256:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
)

// openDir opens a file:// store in dir.
func openDir(t *testing.T, dir string) *sigstore.Store {
	t.Helper()
	s, err := sigstore.Open(context.Background(), "file://"+dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// closedAddr is a loopback address on which nothing listens.
func closedAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return addr
}

var (
	keysOnce sync.Once
	keys     [2]*signing.Key
	keysErr  error
)

// testKey returns test key i (0 or 1); RSA keys take a moment, so each binary makes two.
func testKey(t *testing.T, i int) *signing.Key {
	t.Helper()
	keysOnce.Do(func() {
		for j := range keys {
			armored, err := signing.GenerateKey("Release Controller Test", "signer@example.com")
			if err != nil {
				keysErr = err
				return
			}
			if keys[j], keysErr = signing.ParsePrivateKey(armored, nil); keysErr != nil {
				return
			}
		}
	})
	if keysErr != nil {
		t.Fatal(keysErr)
	}
	return keys[i]
}
