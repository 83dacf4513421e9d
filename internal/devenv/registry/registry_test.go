package registry_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"

	"github.com/release-controller/release-controller/internal/devenv/registry"
)

func start(t *testing.T, ctx context.Context, dir string) *registry.Server {
	t.Helper()
	s, err := registry.Start(ctx, registry.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("closing the registry: %v", err)
		}
	})
	return s
}

// TestPushPullPersistDelete pushes an image, reads it back, finds it again after a restart on
// the same directory, and deletes it.
func TestPushPullPersistDelete(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	first := start(t, ctx, dir)

	img, err := random.Image(512, 2)
	if err != nil {
		t.Fatal(err)
	}
	want, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	ref, err := name.ParseReference(first.Addr() + "/demo/x:tag")
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(ref, img, remote.WithContext(ctx)); err != nil {
		t.Fatalf("pushing: %v", err)
	}
	pulled, err := remote.Image(ref, remote.WithContext(ctx))
	if err != nil {
		t.Fatalf("pulling: %v", err)
	}
	if got, _ := pulled.Digest(); got != want {
		t.Fatalf("pulled digest %s, pushed %s", got, want)
	}
	// Reading every layer checks the blobs, not only the manifest.
	layers, err := pulled.Layers()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range layers {
		rc, err := l.Compressed()
		if err != nil {
			t.Fatalf("reading a layer: %v", err)
		}
		_ = rc.Close()
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}

	// A new server on the same directory still has the image, on another port.
	second := start(t, ctx, dir)
	ref, err = name.ParseReference(second.Addr() + "/demo/x:tag")
	if err != nil {
		t.Fatal(err)
	}
	desc, err := remote.Head(ref, remote.WithContext(ctx))
	if err != nil {
		t.Fatalf("the image is gone after a restart: %v", err)
	}
	if desc.Digest != want {
		t.Fatalf("after a restart the tag points at %s, want %s", desc.Digest, want)
	}

	byDigest := ref.Context().Digest(want.String())
	if err := remote.Delete(byDigest, remote.WithContext(ctx)); err != nil {
		t.Fatalf("deleting: %v", err)
	}
	for _, r := range []name.Reference{byDigest, ref} {
		_, err := remote.Head(r, remote.WithContext(ctx))
		var terr *transport.Error
		if !errors.As(err, &terr) || terr.StatusCode != http.StatusNotFound {
			t.Errorf("%s after the delete: error %v, want 404", r, err)
		}
	}
}

// TestStopsWithContext checks that cancelling the start context stops the server.
func TestStopsWithContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	s := start(t, ctx, t.TempDir())
	if _, err := http.Get("http://" + s.Addr() + "/v2/"); err != nil {
		t.Fatalf("the registry does not answer: %v", err)
	}
	cancel()
	// Close waits for the shutdown the cancellation started.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := http.Get("http://" + s.Addr() + "/v2/"); err == nil {
		t.Error("the registry still answers after its context was cancelled")
	}
}

func TestRequiresDir(t *testing.T) {
	if _, err := registry.Start(context.Background(), registry.Options{}); err == nil {
		t.Error("Start without a directory succeeded")
	}
}

// TestBlobReads reads blobs the way clients do — whole, by range, HEAD — and checks that a
// blob is served only from a repository that holds it.
func TestBlobReads(t *testing.T) {
	ctx := context.Background()
	s := start(t, ctx, t.TempDir())
	img, err := random.Image(1024, 1)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := name.ParseReference(s.Addr() + "/product/api:1")
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(ref, img, remote.WithContext(ctx)); err != nil {
		t.Fatalf("pushing: %v", err)
	}
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	digest, err := layers[0].Digest()
	if err != nil {
		t.Fatal(err)
	}
	compressed, err := layers[0].Compressed()
	if err != nil {
		t.Fatal(err)
	}
	want, err := io.ReadAll(compressed)
	if err != nil {
		t.Fatal(err)
	}
	url := func(repo string) string { return "http://" + s.Addr() + "/v2/" + repo + "/blobs/" + digest.String() }

	resp, err := http.Get(url("product/api"))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !bytes.Equal(body, want) || resp.Header.Get("Docker-Content-Digest") != digest.String() {
		t.Fatalf("GET: %s, %d bytes (want %d), digest header %q", resp.Status, len(body), len(want), resp.Header.Get("Docker-Content-Digest"))
	}

	req, _ := http.NewRequest(http.MethodGet, url("product/api"), nil)
	req.Header.Set("Range", "bytes=10-19")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusPartialContent || !bytes.Equal(body, want[10:20]) {
		t.Fatalf("range GET: %s, %q, want %q", resp.Status, body, want[10:20])
	}

	resp, err = http.Head(url("product/api"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.ContentLength != int64(len(want)) {
		t.Fatalf("HEAD: %s, length %d, want %d", resp.Status, resp.ContentLength, len(want))
	}

	// Another repository does not hold the blob: distribution's own answer.
	resp, err = http.Get(url("product/other"))
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound || !strings.Contains(string(body), "BLOB_UNKNOWN") {
		t.Fatalf("GET from a repository without the blob: %s %s, want 404 BLOB_UNKNOWN", resp.Status, body)
	}
}
