package main

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"io"
	"log"
	"math/big"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// args are the arguments of an index of two stand-in binaries and one CA certificate.
func args(t *testing.T) []string {
	t.Helper()
	dir := t.TempDir()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test root"}, NotBefore: time.Unix(0, 0), NotAfter: time.Unix(1<<32, 0), IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	ca := filepath.Join(dir, "bundle.der")
	if err := os.WriteFile(ca, der, 0o644); err != nil {
		t.Fatal(err)
	}
	a := []string{"--ca-der", ca, "--version", "v1.2.3", "--revision", "abc", "--source-date-epoch", "1700000000"}
	for _, arch := range []string{"amd64", "arm64"} {
		path := filepath.Join(dir, arch)
		if err := os.WriteFile(path, []byte(arch), 0o755); err != nil {
			t.Fatal(err)
		}
		a = append(a, "--binary", "linux/"+arch+"="+path)
	}
	return a
}

var indexDigest = regexp.MustCompile(`(?:index |@)(sha256:[0-9a-f]{64})`)

func runImage(t *testing.T, a ...string) string {
	t.Helper()
	var out bytes.Buffer
	if err := run(context.Background(), a, &out); err != nil {
		t.Fatalf("image %s: %v\n%s", strings.Join(a, " "), err, out.String())
	}
	m := indexDigest.FindStringSubmatch(out.String())
	if m == nil {
		t.Fatalf("no index digest in the output:\n%s", out.String())
	}
	return m[1]
}

// The layout written and the index pushed are the same image, with the digest printed.
func TestLayoutAndPush(t *testing.T) {
	a := args(t)
	dir := filepath.Join(t.TempDir(), "image")
	written := runImage(t, append(a, "--layout", dir)...)
	top, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	m, err := top.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Manifests) != 1 || m.Manifests[0].Digest.String() != written {
		t.Fatalf("the layout holds %v, want the index %s", m.Manifests, written)
	}

	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	ref := strings.TrimPrefix(srv.URL, "http://") + "/release-controller:v1.2.3"
	pushed := runImage(t, append(a, "--push", ref)...)
	if pushed != written {
		t.Errorf("pushed %s, wrote %s: the same build differs", pushed, written)
	}
	tag, err := name.ParseReference(ref)
	if err != nil {
		t.Fatal(err)
	}
	desc, err := remote.Head(tag)
	if err != nil {
		t.Fatal(err)
	}
	if desc.Digest.String() != pushed {
		t.Errorf("the registry holds %s, printed %s", desc.Digest, pushed)
	}
}

func TestRefusesBadArguments(t *testing.T) {
	a := args(t)
	for name, bad := range map[string][]string{
		"neither push nor layout":  a,
		"both":                     append(append([]string{}, a...), "--push", "r/x:y", "--layout", t.TempDir()),
		"no binaries":              {"--ca-der", a[1], "--layout", t.TempDir()},
		"no CA certificates":       append(append([]string{}, a[2:]...), "--layout", t.TempDir()),
		"bad platform":             append(append([]string{}, a...), "--binary", "linux=x", "--layout", t.TempDir()),
		"bad epoch":                append(append([]string{}, a...), "--source-date-epoch", "yesterday", "--layout", t.TempDir()),
		"archive of two platforms": append(append([]string{}, a...), "--archive", filepath.Join(t.TempDir(), "x.tar")),
		"archive and layout":       append(append([]string{}, a[:len(a)-2]...), "--archive", filepath.Join(t.TempDir(), "x.tar"), "--layout", t.TempDir()),
	} {
		if err := run(context.Background(), bad, &bytes.Buffer{}); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// An archive holds the one platform's image, named, in docker save's format.
func TestArchive(t *testing.T) {
	a := args(t)
	a = a[:len(a)-2] // linux/amd64 only
	path := filepath.Join(t.TempDir(), "release-controller.tar")
	var out bytes.Buffer
	if err := run(context.Background(), append(a, "--archive", path, "--archive-tag", "release-controller:dev"), &out); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	tag, err := name.NewTag("release-controller:dev")
	if err != nil {
		t.Fatal(err)
	}
	img, err := tarball.ImageFromPath(path, &tag)
	if err != nil {
		t.Fatal(err)
	}
	config, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if config.Architecture != "amd64" || config.Config.Labels["org.opencontainers.image.version"] != "v1.2.3" {
		t.Errorf("the archive's image is %s with labels %v", config.Architecture, config.Config.Labels)
	}
	if !strings.Contains(out.String(), "kind load image-archive "+path) {
		t.Errorf("the output does not say how to load it:\n%s", out.String())
	}
}
