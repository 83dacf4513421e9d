package signatures

import (
	"context"
	"net"
	"testing"

	"github.com/release-controller/release-controller/internal/signing"
	"github.com/release-controller/release-controller/internal/signing/signingtest"
	signstore "github.com/release-controller/release-controller/internal/signing/store"
)

const (
	digestA = "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	digestB = "sha256:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
)

// openDir opens a file:// store in dir.
func openDir(t *testing.T, dir string) *signstore.Store {
	t.Helper()
	s, err := signstore.Open(context.Background(), "file://"+dir)
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

// testKey returns test key i (0 or 1).
func testKey(t *testing.T, i int) *signing.Key { return signingtest.Key(t, i) }
