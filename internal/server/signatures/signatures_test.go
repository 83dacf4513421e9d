package signatures

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/release-controller/release-controller/internal/server"
	signstore "github.com/release-controller/release-controller/internal/signing/store"
)

// serve runs the project's HTTP server with the signature routes on a loopback port and
// returns its base URL.
func serve(t *testing.T, store *signstore.Store) string {
	t.Helper()
	srv := server.New()
	Register(srv, store)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, l, time.Second) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("server: %v", err)
		}
	})
	return "http://" + l.Addr().String()
}

type response struct {
	status int
	header http.Header
	body   string
}

func do(t *testing.T, method, url string) response {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return response{resp.StatusCode, resp.Header, string(body)}
}

func TestServeSignatures(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := openDir(t, dir)
	for _, sig := range []string{"first", "second"} {
		if _, err := s.AddSignature(ctx, digestA, []byte(sig)); err != nil {
			t.Fatal(err)
		}
	}
	key := testKey(t, 0)
	pub, err := key.ArmoredPublicKey()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.PutPublicKeys(context.Background(), pub); err != nil {
		t.Fatal(err)
	}
	base := serve(t, s)
	hexA := strings.TrimPrefix(digestA, "sha256:")

	for _, tc := range []struct {
		path, body string
	}{
		{"/signatures/sha256=" + hexA + "/signature-1", "first"},
		{"/signatures/sha256=" + hexA + "/signature-2", "second"},
		{"/signatures/product/release@sha256=" + hexA + "/signature-2", "second"},
		{"/signatures/release@sha256=" + hexA + "/signature-1", "first"},
		{"/signatures/openshift-release-dev/ocp-release_x.y/a-b__c@sha256=" + hexA + "/signature-1", "first"},
	} {
		r := do(t, http.MethodGet, base+tc.path)
		if r.status != http.StatusOK || r.body != tc.body {
			t.Errorf("GET %s: %d %q, want 200 %q", tc.path, r.status, r.body, tc.body)
			continue
		}
		if ct := r.header.Get("Content-Type"); ct != "application/octet-stream" {
			t.Errorf("GET %s: Content-Type %q", tc.path, ct)
		}
		if cc := r.header.Get("Cache-Control"); !strings.Contains(cc, "immutable") {
			t.Errorf("GET %s: Cache-Control %q, want immutable", tc.path, cc)
		}
	}

	for _, tc := range []struct {
		path   string
		status int
		body   string
	}{
		{"/signatures/sha256=" + hexA + "/signature-3", http.StatusNotFound, "signature-3 of " + digestA + " does not exist"},
		{"/signatures/product/release@sha256=" + digestB[7:] + "/signature-1", http.StatusNotFound, "does not exist"},
		{"/signatures/sha256=" + hexA + "/signature-0", http.StatusBadRequest, "not a signature name"},
		{"/signatures/sha256=" + hexA + "/signature-01", http.StatusBadRequest, "not a signature name"},
		{"/signatures/sha256=" + hexA + "/audit.json", http.StatusBadRequest, "not a signature name"},
		{"/signatures/sha256=" + hexA, http.StatusBadRequest, "not a signature path"},
		{"/signatures/sha256=abc/signature-1", http.StatusBadRequest, "not a digest folder"},
		{"/signatures/sha512=" + hexA + "/signature-1", http.StatusBadRequest, "not a digest folder"},
		{"/signatures/sha256:" + hexA + "/signature-1", http.StatusBadRequest, "not a digest folder"},
		{"/signatures/Product/Release@sha256=" + hexA + "/signature-1", http.StatusBadRequest, "not a repository path"},
		{"/signatures/@sha256=" + hexA + "/signature-1", http.StatusBadRequest, "not a repository path"},
		{"/signatures/product/release/sha256=" + hexA + "/signature-1", http.StatusBadRequest, "not a digest folder"},
	} {
		r := do(t, http.MethodGet, base+tc.path)
		if r.status != tc.status || !strings.Contains(r.body, tc.body) {
			t.Errorf("GET %s: %d %q, want %d with %q", tc.path, r.status, r.body, tc.status, tc.body)
		}
		if r.status == http.StatusNotFound && strings.Contains(r.header.Get("Cache-Control"), "immutable") {
			t.Errorf("GET %s: a 404 is cached as immutable", tc.path)
		}
	}

	// Read-only.
	for _, method := range []string{http.MethodPost, http.MethodPut, http.MethodDelete} {
		if r := do(t, method, base+"/signatures/sha256="+hexA+"/signature-3"); r.status != http.StatusMethodNotAllowed {
			t.Errorf("%s: %d, want 405", method, r.status)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "sha256="+hexA, "signature-3")); !os.IsNotExist(err) {
		t.Errorf("a write request wrote: %v", err)
	}

	// The public key, read on every request.
	r := do(t, http.MethodGet, base+"/signatures/pubkey.asc")
	if r.status != http.StatusOK || r.body != string(pub) || r.header.Get("Content-Type") != "application/pgp-keys" {
		t.Errorf("pubkey.asc: %d %q %q", r.status, r.header.Get("Content-Type"), r.body)
	}
	if strings.Contains(r.header.Get("Cache-Control"), "immutable") {
		t.Error("pubkey.asc is cached as immutable; it changes when keys rotate")
	}
	rotated, err := testKey(t, 1).ArmoredPublicKey()
	if err != nil {
		t.Fatal(err)
	}
	both := append(append([]byte{}, pub...), rotated...)
	if err := s.PutPublicKeys(context.Background(), both); err != nil {
		t.Fatal(err)
	}
	if r := do(t, http.MethodGet, base+"/signatures/pubkey.asc"); r.body != string(both) {
		t.Error("pubkey.asc does not serve the keys the store holds now")
	}
	// Unreadable (its attributes are garbage): 503, which clients retry, not "no key".
	attrs := filepath.Join(dir, signstore.PublicKeysKey+".attrs")
	if err := os.WriteFile(attrs, []byte("not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := do(t, http.MethodGet, base+"/signatures/pubkey.asc"); r.status != http.StatusServiceUnavailable || !strings.Contains(r.body, "reading the public keys") {
		t.Errorf("pubkey.asc from an unreadable store: %d %q, want 503", r.status, r.body)
	}
	if err := os.Remove(attrs); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, signstore.PublicKeysKey)); err != nil {
		t.Fatal(err)
	}
	if r := do(t, http.MethodGet, base+"/signatures/pubkey.asc"); r.status != http.StatusNotFound || !strings.Contains(r.body, "no signing key is configured") {
		t.Errorf("pubkey.asc without a key: %d %q", r.status, r.body)
	}

	// A failing store answers 503, which clients retry; it does not look like a missing signature.
	if err := os.WriteFile(filepath.Join(dir, "sha256="+digestB[7:]), []byte("in the way"), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := do(t, http.MethodGet, base+"/signatures/sha256="+digestB[7:]+"/signature-1"); r.status != http.StatusServiceUnavailable {
		t.Errorf("failing store: %d %q, want 503", r.status, r.body)
	}
}

// TestServeCosignPublicKey: the Sigstore public key the audit controller publishes in the store
// is served as cosign.pub, read on every request; none is a 404 saying so.
func TestServeCosignPublicKey(t *testing.T) {
	s := openDir(t, t.TempDir())
	base := serve(t, s)
	if r := do(t, http.MethodGet, base+"/signatures/cosign.pub"); r.status != http.StatusNotFound || !strings.Contains(r.body, "no Sigstore key is configured") {
		t.Errorf("cosign.pub without a key: %d %q", r.status, r.body)
	}
	for _, pem := range []string{"-----BEGIN PUBLIC KEY-----\nfirst\n-----END PUBLIC KEY-----\n", "-----BEGIN PUBLIC KEY-----\nrotated\n-----END PUBLIC KEY-----\n"} {
		if err := s.PutCosignPublicKey(context.Background(), []byte(pem)); err != nil {
			t.Fatal(err)
		}
		r := do(t, http.MethodGet, base+"/signatures/cosign.pub")
		if r.status != http.StatusOK || r.body != pem || r.header.Get("Content-Type") != "application/x-pem-file" || r.header.Get("Cache-Control") != cacheRevalidate {
			t.Errorf("cosign.pub: %d %q %q %q, want 200 %q", r.status, r.header.Get("Content-Type"), r.header.Get("Cache-Control"), r.body, pem)
		}
	}
}

// TestHTTPSource reads signatures back from the server as `payload verify` does.
func TestHTTPSource(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := openDir(t, dir)
	for _, sig := range []string{"first", "second"} {
		if _, err := s.AddSignature(ctx, digestA, []byte(sig)); err != nil {
			t.Fatal(err)
		}
	}
	base := serve(t, s)
	src, err := signstore.OpenSource(ctx, base+"/signatures/")
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	sigs, err := src.Signatures(ctx, digestA)
	if err != nil || len(sigs) != 2 || string(sigs[0]) != "first" || string(sigs[1]) != "second" {
		t.Errorf("signatures %q, %v", sigs, err)
	}
	if sigs, err := src.Signatures(ctx, digestB); err != nil || len(sigs) != 0 {
		t.Errorf("no signatures: %q, %v", sigs, err)
	}
	if _, err := src.Signatures(ctx, "sha256:x"); err == nil {
		t.Error("an invalid digest was asked for")
	}

	// A server that fails is an error, not "no signatures".
	blocker := filepath.Join(dir, "sha256="+digestB[7:])
	if err := os.WriteFile(blocker, []byte("in the way"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := src.Signatures(ctx, digestB); err == nil || !strings.Contains(err.Error(), "503 Service Unavailable") {
		t.Errorf("failing server: %v", err)
	}
	down, err := signstore.OpenSource(ctx, "http://"+closedAddr(t)+"/signatures")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := down.Signatures(ctx, digestA); err == nil || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("unreachable server: %v", err)
	}
	if _, err := signstore.OpenSource(ctx, "http:///signatures"); err == nil {
		t.Error("a URL without a host was accepted")
	}
	// A gocloud URL opens a Store.
	if src, err := signstore.OpenSource(ctx, "file://"+t.TempDir()); err != nil {
		t.Error(err)
	} else {
		_ = src.Close()
	}
}
