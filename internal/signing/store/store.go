// Package store is the signature store of DESIGN.md section 12: simple signing signatures
// and audit records in object storage (gocloud.dev/blob: file://, s3://, gs://, azblob://),
// laid out as OpenShift's update clients read them:
//
//	sha256=<hex>/signature-<n>   n from 1, never overwritten
//	sha256=<hex>/audit.json      the audit record of the payload with that digest
//
// and served read-only over HTTP (Register).
package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"regexp"
	"strconv"
	"sync"

	"gocloud.dev/blob"
	"gocloud.dev/gcerrors"

	// The drivers of the URLs Open accepts.
	_ "gocloud.dev/blob/azureblob"
	_ "gocloud.dev/blob/fileblob"
	_ "gocloud.dev/blob/gcsblob"
	_ "gocloud.dev/blob/s3blob"

	"github.com/release-controller/release-controller/internal/signing"
)

// ErrNotFound is wrapped by the errors of the store's reads when there is nothing to read.
var ErrNotFound = errors.New("not found")

// maxObjectBytes bounds what the store reads of one object: a signature is a few hundred
// bytes, an audit record a few kilobytes.
const maxObjectBytes = 4 << 20

// maxAddAttempts bounds AddSignature's search for a free index, against a bucket that answers
// every conditional write with "already exists".
const maxAddAttempts = 100

var digestPattern = regexp.MustCompile(`^sha256:([0-9a-f]{64})$`)

// Store reads and writes signatures and audit records in a bucket.
type Store struct {
	bucket *blob.Bucket
	// adding serializes AddSignature within the process: fileblob checks IfNotExist when a
	// write starts and creates the file when it ends, so two writers of one process could
	// both take an index. Object stores check on the server.
	adding sync.Mutex
}

// Open opens the store at a gocloud.dev blob URL: file:///path, s3://bucket?region=…,
// gs://bucket, azblob://container (a prefix=dir/ query parameter keeps the store in a folder
// of the bucket). For file:// URLs the folder is created when missing, no metadata sidecar
// files are written next to the signatures, and a write goes to a temporary file beside its
// final name (not in $TMPDIR, from which the rename fails when the store is another
// filesystem, such as a pod's volume), unless the URL says otherwise (create_dir, metadata,
// no_tmp_dir=).
func Open(ctx context.Context, urlstr string) (*Store, error) {
	u, err := url.Parse(urlstr)
	if err != nil {
		return nil, fmt.Errorf("signature store URL %q: %w", urlstr, err)
	}
	if u.Scheme == "file" {
		q := u.Query()
		if !q.Has("create_dir") {
			q.Set("create_dir", "true")
		}
		if !q.Has("metadata") {
			q.Set("metadata", "skip")
		}
		if !q.Has("no_tmp_dir") {
			q.Set("no_tmp_dir", "true")
		}
		u.RawQuery = q.Encode()
	}
	bucket, err := blob.OpenBucket(ctx, u.String())
	if err != nil {
		return nil, fmt.Errorf("opening the signature store %s: %w", urlstr, err)
	}
	return New(bucket), nil
}

// New returns a store over bucket; Close closes the bucket.
func New(bucket *blob.Bucket) *Store {
	return &Store{bucket: bucket}
}

// Close closes the store's bucket.
func (s *Store) Close() error {
	return s.bucket.Close()
}

// digestDir validates digest ("sha256:<64 lower-case hex digits>") and returns its folder.
func digestDir(digest string) (string, error) {
	m := digestPattern.FindStringSubmatch(digest)
	if m == nil {
		return "", fmt.Errorf("invalid manifest digest %q: want sha256:<64 lower-case hex digits>", digest)
	}
	return "sha256=" + m[1], nil
}

func signatureKey(dir string, n int) string { return dir + "/signature-" + strconv.Itoa(n) }

// read reads key, returning an error wrapping ErrNotFound when it does not exist.
func (s *Store) read(ctx context.Context, key string) ([]byte, error) {
	r, err := s.bucket.NewReader(ctx, key, nil)
	if err != nil {
		if gcerrors.Code(err) == gcerrors.NotFound {
			return nil, fmt.Errorf("%s: %w", key, ErrNotFound)
		}
		return nil, fmt.Errorf("reading %s: %w", key, err)
	}
	defer r.Close()
	data, err := io.ReadAll(io.LimitReader(r, maxObjectBytes+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", key, err)
	}
	if len(data) > maxObjectBytes {
		return nil, fmt.Errorf("reading %s: over %d bytes", key, maxObjectBytes)
	}
	return data, nil
}

// Signatures returns the signatures of digest: signature-1, signature-2, … up to the first
// missing index. No signature is an empty list.
func (s *Store) Signatures(ctx context.Context, digest string) ([][]byte, error) {
	dir, err := digestDir(digest)
	if err != nil {
		return nil, err
	}
	var sigs [][]byte
	for n := 1; ; n++ {
		sig, err := s.read(ctx, signatureKey(dir, n))
		if errors.Is(err, ErrNotFound) {
			return sigs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("signature store: %w", err)
		}
		sigs = append(sigs, sig)
	}
}

// Signature returns signature-n of digest; an error wrapping ErrNotFound when it does not
// exist.
func (s *Store) Signature(ctx context.Context, digest string, n int) ([]byte, error) {
	dir, err := digestDir(digest)
	if err != nil {
		return nil, err
	}
	if n < 1 {
		return nil, fmt.Errorf("invalid signature index %d: signatures count from 1", n)
	}
	sig, err := s.read(ctx, signatureKey(dir, n))
	if err != nil {
		return nil, fmt.Errorf("signature store: %w", err)
	}
	return sig, nil
}

// AddSignature stores sig as the next free signature-<n> of digest and returns n. Each write
// is conditional (the object must not exist yet), so two writers never overwrite each other:
// the one that loses a race takes the next index.
func (s *Store) AddSignature(ctx context.Context, digest string, sig []byte) (n int, err error) {
	dir, err := digestDir(digest)
	if err != nil {
		return 0, err
	}
	if len(sig) == 0 {
		return 0, errors.New("signature store: refusing to add an empty signature")
	}
	s.adding.Lock()
	defer s.adding.Unlock()
	// Start after the signatures there are; the conditional write settles any race.
	n = 1
	for {
		exists, err := s.bucket.Exists(ctx, signatureKey(dir, n))
		if err != nil {
			return 0, fmt.Errorf("signature store: looking for %s: %w", signatureKey(dir, n), err)
		}
		if !exists {
			break
		}
		n++
	}
	for range maxAddAttempts {
		key := signatureKey(dir, n)
		err := s.bucket.WriteAll(ctx, key, sig, &blob.WriterOptions{
			ContentType: "application/octet-stream",
			IfNotExist:  true,
		})
		switch gcerrors.Code(err) {
		case gcerrors.OK:
			return n, nil
		case gcerrors.FailedPrecondition, gcerrors.AlreadyExists:
			n++ // another writer took this index
		default:
			return 0, fmt.Errorf("signature store: writing %s: %w", key, err)
		}
	}
	return 0, fmt.Errorf("signature store: no free signature index for %s after %d attempts", digest, maxAddAttempts)
}

// PutAudit writes (or replaces) the audit record of digest.
func (s *Store) PutAudit(ctx context.Context, digest string, record []byte) error {
	dir, err := digestDir(digest)
	if err != nil {
		return err
	}
	key := dir + "/audit.json"
	if err := s.bucket.WriteAll(ctx, key, record, &blob.WriterOptions{ContentType: "application/json"}); err != nil {
		return fmt.Errorf("signature store: writing %s: %w", key, err)
	}
	return nil
}

// Audit returns the audit record of digest; an error wrapping ErrNotFound when there is none.
func (s *Store) Audit(ctx context.Context, digest string) ([]byte, error) {
	dir, err := digestDir(digest)
	if err != nil {
		return nil, err
	}
	record, err := s.read(ctx, dir+"/audit.json")
	if err != nil {
		return nil, fmt.Errorf("signature store: audit record of %s: %w", digest, err)
	}
	return record, nil
}

// EnsureSigned is the idempotent signing step. When the store already holds a signature of
// claims.ManifestDigest for claims.DockerReference made by key, it returns that signature's
// index and created=false; otherwise it signs and adds a signature (created=true). So a
// signer that restarts at any point never adds a second signature for the same key, digest
// and reference. Signatures by other keys (rotated out) are left as they are. Two signers
// running at once may both sign; leader election keeps one.
func EnsureSigned(ctx context.Context, s *Store, key *signing.Key, claims signing.Claims) (n int, created bool, err error) {
	sigs, err := s.Signatures(ctx, claims.ManifestDigest)
	if err != nil {
		return 0, false, err
	}
	own := key.Keyring()
	for i, sig := range sigs {
		c, _, err := signing.Verify(own, sig)
		if err != nil {
			continue // another key's, or not ours to judge here
		}
		if c.ManifestDigest == claims.ManifestDigest && c.DockerReference == claims.DockerReference {
			return i + 1, false, nil
		}
	}
	sig, err := signing.Sign(key, claims)
	if err != nil {
		return 0, false, err
	}
	n, err = s.AddSignature(ctx, claims.ManifestDigest, sig)
	if err != nil {
		return 0, false, err
	}
	return n, true, nil
}
