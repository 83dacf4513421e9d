package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/release-controller/release-controller/internal/signing"
	"github.com/release-controller/release-controller/internal/signing/signingtest"
)

// testKey returns test key i (0 or 1).
func testKey(t *testing.T, i int) *signing.Key { return signingtest.Key(t, i) }

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

const (
	digestA = "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	digestB = "sha256:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
)

// openDir opens a file:// store in dir.
func openDir(t *testing.T, dir string) *Store {
	t.Helper()
	s, err := Open(context.Background(), "file://"+dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func TestSignatureIndices(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "signatures") // Open creates it
	s := openDir(t, dir)

	sigs, err := s.Signatures(ctx, digestA)
	if err != nil || len(sigs) != 0 {
		t.Fatalf("an empty store: %d signatures, %v", len(sigs), err)
	}
	for i, content := range []string{"one", "two", "three"} {
		n, err := s.AddSignature(ctx, digestA, []byte(content))
		if err != nil {
			t.Fatal(err)
		}
		if n != i+1 {
			t.Errorf("signature %q got index %d, want %d", content, n, i+1)
		}
	}
	if n, err := s.AddSignature(ctx, digestB, []byte("b")); err != nil || n != 1 {
		t.Errorf("another digest starts at 1: %d, %v", n, err)
	}
	sigs, err = s.Signatures(ctx, digestA)
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprintf("%s", sigs); got != "[one two three]" {
		t.Errorf("signatures %s", got)
	}
	if sig, err := s.Signature(ctx, digestA, 2); err != nil || string(sig) != "two" {
		t.Errorf("signature 2: %q, %v", sig, err)
	}
	if _, err := s.Signature(ctx, digestA, 4); !errors.Is(err, ErrNotFound) {
		t.Errorf("signature 4: %v, want ErrNotFound", err)
	}

	// The contract's layout, and nothing else on disk (no metadata sidecar files).
	var files []string
	err = filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(dir, path)
			files = append(files, rel)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	hexA, hexB := strings.TrimPrefix(digestA, "sha256:"), strings.TrimPrefix(digestB, "sha256:")
	want := []string{"sha256=" + hexA + "/signature-1", "sha256=" + hexA + "/signature-2", "sha256=" + hexA + "/signature-3", "sha256=" + hexB + "/signature-1"}
	slices.Sort(files)
	if !slices.Equal(files, want) {
		t.Errorf("files:\n%s\nwant:\n%s", strings.Join(files, "\n"), strings.Join(want, "\n"))
	}

	// A gap ends the list: readers stop at the first missing index, as OpenShift's do.
	if err := os.Remove(filepath.Join(dir, "sha256="+hexA, "signature-2")); err != nil {
		t.Fatal(err)
	}
	if sigs, _ := s.Signatures(ctx, digestA); len(sigs) != 1 {
		t.Errorf("after a gap: %d signatures, want 1", len(sigs))
	}
	// A new signature fills the gap rather than going past the end.
	if n, err := s.AddSignature(ctx, digestA, []byte("again")); err != nil || n != 2 {
		t.Errorf("adding after a gap: %d, %v; want 2", n, err)
	}
	if sig, _ := s.Signature(ctx, digestA, 3); string(sig) != "three" {
		t.Errorf("signature-3 was overwritten: %q", sig)
	}

	for _, bad := range []string{"", "sha256:abc", "sha512:" + hexA, "sha256:" + strings.ToUpper(hexA), "sha256=" + hexA, "sha256:../../" + hexA[6:]} {
		if _, err := s.Signatures(ctx, bad); err == nil || !strings.Contains(err.Error(), "invalid manifest digest") {
			t.Errorf("Signatures(%q): %v", bad, err)
		}
		if _, err := s.AddSignature(ctx, bad, []byte("x")); err == nil {
			t.Errorf("AddSignature(%q) succeeded", bad)
		}
	}
	if _, err := s.AddSignature(ctx, digestA, nil); err == nil {
		t.Error("an empty signature was added")
	}
}

// TestAddSignatureRace: two writers adding at once never overwrite each other.
func TestAddSignatureRace(t *testing.T) {
	ctx := context.Background()
	s := openDir(t, t.TempDir())
	const perWriter = 15
	var wg sync.WaitGroup
	indices := make([][]int, 2)
	errs := make([]error, 2)
	for w := range 2 {
		wg.Go(func() {
			for i := range perWriter {
				n, err := s.AddSignature(ctx, digestA, fmt.Appendf(nil, "writer %d signature %d", w, i))
				if err != nil {
					errs[w] = err
					return
				}
				indices[w] = append(indices[w], n)
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	all := slices.Sorted(slices.Values(append(slices.Clone(indices[0]), indices[1]...)))
	for i, n := range all {
		if n != i+1 {
			t.Fatalf("indices %v, want 1..%d each once", all, 2*perWriter)
		}
	}
	sigs, err := s.Signatures(ctx, digestA)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, sig := range sigs {
		seen[string(sig)] = true
	}
	if len(sigs) != 2*perWriter || len(seen) != 2*perWriter {
		t.Errorf("%d signatures, %d distinct; want %d of each", len(sigs), len(seen), 2*perWriter)
	}
}

func TestEnsureSigned(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	key, rotated := testKey(t, 0), testKey(t, 1)
	claims := signing.Claims{DockerReference: "registry.example.com/product/release:4.15.0", ManifestDigest: digestA, Creator: "test", Timestamp: time.Now()}

	s := openDir(t, dir)
	n, created, err := EnsureSigned(ctx, s, key, claims)
	if err != nil || n != 1 || !created {
		t.Fatalf("first: %d, %v, %v; want 1, created", n, created, err)
	}
	if n, created, err := EnsureSigned(ctx, s, key, claims); err != nil || n != 1 || created {
		t.Errorf("again: %d, %v, %v; want 1, not created", n, created, err)
	}

	// A restart: a new store on the same folder finds the signature.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openDir(t, dir)
	if n, created, err := EnsureSigned(ctx, s, key, claims); err != nil || n != 1 || created {
		t.Errorf("after a restart: %d, %v, %v; want 1, not created", n, created, err)
	}

	// The same digest under another name is another signature.
	other := claims
	other.DockerReference = "registry.example.com/product/release:4.15.0-rc.1"
	if n, created, err := EnsureSigned(ctx, s, key, other); err != nil || n != 2 || !created {
		t.Errorf("another reference: %d, %v, %v; want 2, created", n, created, err)
	}

	// A rotated key signs anew; the old key's signatures stay.
	if n, created, err := EnsureSigned(ctx, s, rotated, claims); err != nil || n != 3 || !created {
		t.Errorf("rotated key: %d, %v, %v; want 3, created", n, created, err)
	}
	if n, created, err := EnsureSigned(ctx, s, rotated, claims); err != nil || n != 3 || created {
		t.Errorf("rotated key again: %d, %v, %v; want 3, not created", n, created, err)
	}
	sigs, err := s.Signatures(ctx, digestA)
	if err != nil || len(sigs) != 3 {
		t.Fatalf("%d signatures, %v; want 3", len(sigs), err)
	}
	for i, want := range []struct {
		key *signing.Key
		ref string
	}{{key, claims.DockerReference}, {key, other.DockerReference}, {rotated, claims.DockerReference}} {
		c, keyID, err := signing.Verify(want.key.Keyring(), sigs[i])
		if err != nil || keyID != want.key.ID() || c.DockerReference != want.ref || c.ManifestDigest != digestA {
			t.Errorf("signature-%d: %+v by %s, %v; want %s by %s", i+1, c, keyID, err, want.ref, want.key.ID())
		}
	}

	// A foreign object in the sequence is skipped, not fatal.
	foreign := claims
	foreign.ManifestDigest = digestB
	if _, err := s.AddSignature(ctx, digestB, []byte("not a signature")); err != nil {
		t.Fatal(err)
	}
	if n, created, err := EnsureSigned(ctx, s, key, foreign); err != nil || n != 2 || !created {
		t.Errorf("after a foreign object: %d, %v, %v; want 2, created", n, created, err)
	}
}

func TestAudit(t *testing.T) {
	ctx := context.Background()
	s := openDir(t, t.TempDir())
	if _, err := s.Audit(ctx, digestA); !errors.Is(err, ErrNotFound) {
		t.Fatalf("missing audit record: %v, want ErrNotFound", err)
	}
	for _, record := range []string{`{"result":"failed"}`, `{"result":"passed"}`} {
		if err := s.PutAudit(ctx, digestA, []byte(record)); err != nil {
			t.Fatal(err)
		}
		got, err := s.Audit(ctx, digestA)
		if err != nil || string(got) != record {
			t.Errorf("audit record %q, %v; want %q (a record is replaced)", got, err, record)
		}
	}
	if err := s.PutAudit(ctx, "sha256:nope", []byte("{}")); err == nil {
		t.Error("PutAudit accepted an invalid digest")
	}
	// The audit record is not a signature.
	if sigs, err := s.Signatures(ctx, digestA); err != nil || len(sigs) != 0 {
		t.Errorf("signatures next to an audit record: %d, %v", len(sigs), err)
	}
}

// TestFailingBucket: a store whose storage fails returns errors (which the caller retries),
// and works again once the storage does. The fault is real: the digest's folder is a file,
// so every read and write below it fails with ENOTDIR, as a broken mount would (the tests run
// as root, so permissions would not stop anything).
func TestFailingBucket(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := openDir(t, dir)
	key := testKey(t, 0)
	claims := signing.Claims{DockerReference: "registry.example.com/product/release:1.0.0", ManifestDigest: digestA, Timestamp: time.Now()}
	blocker := filepath.Join(dir, "sha256="+strings.TrimPrefix(digestA, "sha256:"))
	if err := os.WriteFile(blocker, []byte("in the way"), 0o644); err != nil {
		t.Fatal(err)
	}

	_, err := s.Signatures(ctx, digestA)
	if err == nil || errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "signature store") {
		t.Errorf("Signatures: %v, want a store error", err)
	}
	if _, err := s.AddSignature(ctx, digestA, []byte("sig")); err == nil {
		t.Error("AddSignature succeeded on a failing bucket")
	}
	if _, _, err := EnsureSigned(ctx, s, key, claims); err == nil {
		t.Error("EnsureSigned succeeded on a failing bucket")
	}
	if err := s.PutAudit(ctx, digestA, []byte("{}")); err == nil {
		t.Error("PutAudit succeeded on a failing bucket")
	}
	if _, err := s.Audit(ctx, digestA); err == nil || errors.Is(err, ErrNotFound) {
		t.Errorf("Audit: %v, want an error that is not ErrNotFound", err)
	}

	// The storage recovers; the retry succeeds and signs once.
	if err := os.Remove(blocker); err != nil {
		t.Fatal(err)
	}
	if n, created, err := EnsureSigned(ctx, s, key, claims); err != nil || n != 1 || !created {
		t.Errorf("after recovery: %d, %v, %v", n, created, err)
	}
	if sigs, err := s.Signatures(ctx, digestA); err != nil || len(sigs) != 1 {
		t.Errorf("after recovery: %d signatures, %v", len(sigs), err)
	}
}

// TestUnreachableS3: an s3:// store whose endpoint does not answer (a closed port on
// loopback) fails with errors, not panics. Anonymous credentials: nothing looks for a
// credential service.
func TestUnreachableS3(t *testing.T) {
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_MAX_ATTEMPTS", "1")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := Open(ctx, "s3://signatures?endpoint=http://"+closedAddr(t)+"&region=us-east-1&anonymous=true&use_path_style=true")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Signatures(ctx, digestA); err == nil || errors.Is(err, ErrNotFound) {
		t.Errorf("Signatures: %v, want an error", err)
	}
	if _, err := s.AddSignature(ctx, digestA, []byte("sig")); err == nil {
		t.Error("AddSignature succeeded")
	}
	if _, err := s.Audit(ctx, digestA); err == nil || errors.Is(err, ErrNotFound) {
		t.Errorf("Audit: %v, want an error that is not ErrNotFound", err)
	}
}

func TestOpenErrors(t *testing.T) {
	ctx := context.Background()
	for _, url := range []string{"nope://bucket", "file:///" + t.TempDir() + "?metadata=bogus", "::"} {
		if s, err := Open(ctx, url); err == nil {
			_ = s.Close()
			t.Errorf("Open(%q) succeeded", url)
		}
	}
	// Explicit file:// options win over the defaults.
	dir := t.TempDir()
	s, err := Open(ctx, "file://"+dir+"?metadata=")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.AddSignature(ctx, digestA, []byte("sig")); err != nil {
		t.Fatal(err)
	}
	if matches, _ := filepath.Glob(filepath.Join(dir, "*", "*.attrs")); len(matches) != 1 {
		t.Errorf("with metadata= the sidecar files are written: %v", matches)
	}
	if sig, err := s.Signature(ctx, digestA, 1); err != nil || !bytes.Equal(sig, []byte("sig")) {
		t.Errorf("%q, %v", sig, err)
	}
}

// TestFileStoreWritesBesideItsFiles: a file:// store writes its temporary files next to the
// final ones, not in $TMPDIR, from which the rename fails when the store is another
// filesystem (a pod's volume): with a $TMPDIR that cannot be written, writes still land.
func TestFileStoreWritesBesideItsFiles(t *testing.T) {
	t.Setenv("TMPDIR", filepath.Join(t.TempDir(), "missing"))
	ctx := context.Background()
	dir := t.TempDir()
	s, err := Open(ctx, "file://"+dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.AddSignature(ctx, digestA, []byte("sig")); err != nil {
		t.Fatalf("writing with an unwritable TMPDIR: %v", err)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "*", "*.tmp")); len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
}
