package store

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/release-controller/release-controller/internal/signing"
)

// Source is a read-only signature store: a Store, or a signatures server.
type Source interface {
	signing.SignatureSource
	Close() error
}

// OpenSource opens where signatures are read from: an http:// or https:// base URL of a
// signatures server (such as http://127.0.0.1:8080/signatures, read in the
// sha256=<hex>/signature-<n> layout up to the first 404), or any URL Open accepts.
func OpenSource(ctx context.Context, urlstr string) (Source, error) {
	u, err := url.Parse(urlstr)
	if err != nil {
		return nil, fmt.Errorf("signature store URL %q: %w", urlstr, err)
	}
	if u.Scheme == "http" || u.Scheme == "https" {
		if u.Host == "" {
			return nil, fmt.Errorf("signature store URL %q has no host", urlstr)
		}
		u.Path = strings.TrimSuffix(u.Path, "/")
		return &httpSource{base: u, client: &http.Client{Timeout: httpTimeout}}, nil
	}
	return Open(ctx, urlstr)
}

// httpTimeout bounds one request to a signatures server.
const httpTimeout = time.Minute

type httpSource struct {
	base   *url.URL
	client *http.Client
}

func (h *httpSource) Close() error {
	h.client.CloseIdleConnections()
	return nil
}

// Signatures reads signature-1, signature-2, … up to the first 404.
func (h *httpSource) Signatures(ctx context.Context, digest string) ([][]byte, error) {
	dir, err := digestDir(digest)
	if err != nil {
		return nil, err
	}
	var sigs [][]byte
	for n := 1; ; n++ {
		u := *h.base
		u.Path += "/" + signatureKey(dir, n)
		sig, found, err := h.get(ctx, u.String())
		if err != nil {
			return nil, err
		}
		if !found {
			return sigs, nil
		}
		sigs = append(sigs, sig)
	}
}

func (h *httpSource) get(ctx context.Context, u string) (body []byte, found bool, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, false, err
	}
	resp, err := h.client.Do(req)
	if err != nil {
		return nil, false, fmt.Errorf("reading %s: %w", u, err)
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusNotFound:
		return nil, false, nil
	default:
		return nil, false, fmt.Errorf("reading %s: %s", u, resp.Status)
	}
	body, err = io.ReadAll(io.LimitReader(resp.Body, maxObjectBytes+1))
	if err != nil {
		return nil, false, fmt.Errorf("reading %s: %w", u, err)
	}
	if len(body) > maxObjectBytes {
		return nil, false, fmt.Errorf("reading %s: over %d bytes", u, maxObjectBytes)
	}
	return body, true, nil
}
