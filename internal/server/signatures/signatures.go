// Package signatures serves the signature store read-only over HTTP: the signatures in
// OpenShift's layout and in containers/image's lookaside layout, and the public keys.
package signatures

import (
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"

	"github.com/release-controller/release-controller/internal/server"
	signstore "github.com/release-controller/release-controller/internal/signing/store"
)

// Cache headers: a signature-<n> is never rewritten, so clients may keep it; the public key
// changes when keys rotate and a missing signature may appear, so those are revalidated.
const (
	cacheImmutable  = "public, max-age=31536000, immutable"
	cacheRevalidate = "no-cache"
)

// repositoryPath is a docker repository path without its registry host (distribution's
// reference grammar): lower-case components separated by slashes.
var repositoryPath = regexp.MustCompile(`^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*$`)

var signatureName = regexp.MustCompile(`^signature-([1-9][0-9]{0,8})$`)

// digestPattern is a manifest digest as the store keeps them.
var digestPattern = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)

// Register serves the store read-only on srv:
//
//	GET /signatures/sha256=<hex>/signature-<n>               OpenShift's layout
//	GET /signatures/<repository>@sha256=<hex>/signature-<n>  containers/image's lookaside layout
//	GET /signatures/pubkey.asc                               the public keys, ASCII-armored
//	GET /signatures/cosign.pub                               the Sigstore public key, PEM
//
// <repository> is the image's repository path without the registry host; signatures are
// stored by digest only, so any well-formed repository path serves the digest's signatures.
// The public keys are read from the store on every request, so a rotated key is served at
// once; an unreadable store answers 503 (retry), not 404 (no key).
func Register(srv *server.Server, store *signstore.Store) {
	srv.Handle("GET /signatures/pubkey.asc", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		keys, err := store.PublicKeys(r.Context())
		w.Header().Set("Cache-Control", cacheRevalidate)
		switch {
		case errors.Is(err, signstore.ErrNotFound) || err == nil && len(keys) == 0:
			http.Error(w, "no signing key is configured: this server does not sign payloads", http.StatusNotFound)
			return
		case err != nil:
			http.Error(w, "reading the public keys from the signature store failed", http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/pgp-keys")
		_, _ = w.Write(keys)
	}))
	srv.Handle("GET /signatures/cosign.pub", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key, err := store.CosignPublicKey(r.Context())
		w.Header().Set("Cache-Control", cacheRevalidate)
		switch {
		case errors.Is(err, signstore.ErrNotFound) || err == nil && len(key) == 0:
			http.Error(w, "no Sigstore key is configured: this server attaches no Sigstore signatures", http.StatusNotFound)
			return
		case err != nil:
			http.Error(w, "reading the Sigstore public key from the signature store failed", http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/x-pem-file")
		_, _ = w.Write(key)
	}))
	srv.Handle("GET /signatures/{path...}", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		digest, n, err := parseSignaturePath(r.PathValue("path"))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		sig, err := store.Signature(r.Context(), digest, n)
		switch {
		case errors.Is(err, signstore.ErrNotFound):
			w.Header().Set("Cache-Control", cacheRevalidate)
			http.Error(w, fmt.Sprintf("signature-%d of %s does not exist", n, digest), http.StatusNotFound)
			return
		case err != nil:
			// The bucket failed; the client may retry.
			http.Error(w, "reading the signature store failed", http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("Cache-Control", cacheImmutable)
		w.Header().Set("Content-Length", strconv.Itoa(len(sig)))
		_, _ = w.Write(sig)
	}))
}

// parseSignaturePath reads "[<repository>@]sha256=<hex>/signature-<n>".
func parseSignaturePath(path string) (digest string, n int, err error) {
	dir, file, ok := cutLast(path, "/")
	if !ok {
		return "", 0, fmt.Errorf("%q is not a signature path: want [<repository>@]sha256=<hex>/signature-<n>", path)
	}
	m := signatureName.FindStringSubmatch(file)
	if m == nil {
		return "", 0, fmt.Errorf("%q is not a signature name: want signature-<n>, n from 1", file)
	}
	n, _ = strconv.Atoi(m[1]) // at most 9 digits: no overflow
	if repo, d, ok := cutLast(dir, "@"); ok {
		if !repositoryPath.MatchString(repo) {
			return "", 0, fmt.Errorf("%q is not a repository path", repo)
		}
		dir = d
	}
	algo, hex, ok := strings.Cut(dir, "=")
	digest = algo + ":" + hex
	if !ok || !digestPattern.MatchString(digest) {
		return "", 0, fmt.Errorf("%q is not a digest folder: want sha256=<64 lower-case hex digits>", dir)
	}
	return digest, n, nil
}

// cutLast is strings.Cut at the last sep.
func cutLast(s, sep string) (before, after string, found bool) {
	i := strings.LastIndex(s, sep)
	if i < 0 {
		return s, "", false
	}
	return s[:i], s[i+len(sep):], true
}
