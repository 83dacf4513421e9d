package imagebuild_test

import (
	"archive/tar"
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"debug/elf"
	"encoding/pem"
	"errors"
	"io"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/google/go-containerregistry/pkg/v1/validate"

	"github.com/release-controller/release-controller/internal/imagebuild"
)

var (
	amd64 = v1.Platform{OS: "linux", Architecture: "amd64"}
	arm64 = v1.Platform{OS: "linux", Architecture: "arm64"}
	// created is a SOURCE_DATE_EPOCH.
	created = time.Date(2026, 5, 4, 3, 2, 1, 0, time.UTC)
)

func testMetadata() imagebuild.Metadata {
	return imagebuild.Metadata{Version: "v1.2.3", Revision: "0123456789abcdef", Source: "https://github.com/release-controller/release-controller", Created: created}
}

// fakeBinaries writes a small stand-in binary per platform into dir.
func fakeBinaries(t *testing.T, dir string) []imagebuild.Binary {
	t.Helper()
	var bins []imagebuild.Binary
	for _, p := range []v1.Platform{amd64, arm64} {
		path := filepath.Join(dir, p.Architecture, "release-controller")
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte("binary of "+p.Architecture+"\n"), 0o700); err != nil {
			t.Fatal(err)
		}
		bins = append(bins, imagebuild.Binary{Platform: p, Path: path})
	}
	return bins
}

func testOptions(t *testing.T) imagebuild.Options {
	return imagebuild.Options{Metadata: testMetadata(), CACertificates: testCAs(t, 2)}
}

// testCAs is a PEM bundle of n self-signed certificates.
func testCAs(t *testing.T, n int) []byte {
	t.Helper()
	var buf bytes.Buffer
	for _, der := range testCADERs(t, n) {
		if err := pem.Encode(&buf, &pem.Block{Type: "CERTIFICATE", Bytes: der}); err != nil {
			t.Fatal(err)
		}
	}
	return buf.Bytes()
}

func testCADERs(t *testing.T, n int) [][]byte {
	t.Helper()
	var ders [][]byte
	for i := range n {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(int64(i + 1)), Subject: pkix.Name{CommonName: "test root " + string(rune('A'+i))},
			NotBefore: created, NotAfter: created.AddDate(10, 0, 0), IsCA: true, BasicConstraintsValid: true,
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
		if err != nil {
			t.Fatal(err)
		}
		ders = append(ders, der)
	}
	return ders
}

func digest(t *testing.T, idx v1.ImageIndex) v1.Hash {
	t.Helper()
	d, err := idx.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// Two builds of the same inputs — binaries copied elsewhere, with other modes and times —
// give the same index digest; another SOURCE_DATE_EPOCH, binary or CA bundle gives another.
func TestIndexIsReproducible(t *testing.T) {
	opts := testOptions(t)
	first, err := imagebuild.Index(fakeBinaries(t, t.TempDir()), opts)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(1100 * time.Millisecond) // the second copy's files get other mtimes
	otherDir := t.TempDir()
	second := fakeBinaries(t, otherDir)
	for _, b := range second {
		if err := os.Chmod(b.Path, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	again, err := imagebuild.Index(second, opts)
	if err != nil {
		t.Fatal(err)
	}
	if a, b := digest(t, first), digest(t, again); a != b {
		t.Fatalf("two builds of the same inputs: %s and %s", a, b)
	}
	// The manifests and layers are byte for byte the same, not only the index.
	m1, _ := first.RawManifest()
	m2, _ := again.RawManifest()
	if !bytes.Equal(m1, m2) {
		t.Errorf("index manifests differ:\n%s\n%s", m1, m2)
	}

	later := opts
	later.Created = created.Add(time.Second)
	changed := map[string]imagebuild.Options{"created": later}
	otherCA := opts
	otherCA.CACertificates = testCAs(t, 1)
	changed["CA certificates"] = otherCA
	for what, o := range changed {
		idx, err := imagebuild.Index(second, o)
		if err != nil {
			t.Fatal(err)
		}
		if digest(t, idx) == digest(t, first) {
			t.Errorf("another %s gives the same digest", what)
		}
	}
	if err := os.WriteFile(second[1].Path, []byte("another arm64 build\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	idx, err := imagebuild.Index(second, opts)
	if err != nil {
		t.Fatal(err)
	}
	if digest(t, idx) == digest(t, first) {
		t.Error("another binary gives the same digest")
	}
}

func TestIndexAndConfig(t *testing.T) {
	idx, err := imagebuild.Index(fakeBinaries(t, t.TempDir()), testOptions(t))
	if err != nil {
		t.Fatal(err)
	}
	manifest, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if manifest.MediaType != types.OCIImageIndex {
		t.Errorf("index media type %s", manifest.MediaType)
	}
	wantLabels := map[string]string{
		"org.opencontainers.image.source":   "https://github.com/release-controller/release-controller",
		"org.opencontainers.image.revision": "0123456789abcdef",
		"org.opencontainers.image.version":  "v1.2.3",
		"org.opencontainers.image.created":  "2026-05-04T03:02:01Z",
		"org.opencontainers.image.title":    "release-controller",
	}
	if diff := cmp.Diff(wantLabels, manifest.Annotations); diff != "" {
		t.Errorf("index annotations (-want +got):\n%s", diff)
	}
	if len(manifest.Manifests) != 2 {
		t.Fatalf("%d manifests, want 2", len(manifest.Manifests))
	}
	var baseDigests []v1.Hash
	for i, want := range []v1.Platform{amd64, arm64} {
		desc := manifest.Manifests[i]
		if desc.Platform == nil || !desc.Platform.Equals(want) {
			t.Errorf("manifest %d: platform %v, want %v", i, desc.Platform, want)
		}
		if desc.MediaType != types.OCIManifestSchema1 {
			t.Errorf("manifest %d: media type %s", i, desc.MediaType)
		}
		img, err := idx.Image(desc.Digest)
		if err != nil {
			t.Fatal(err)
		}
		m, err := img.Manifest()
		if err != nil {
			t.Fatal(err)
		}
		if m.Config.MediaType != types.OCIConfigJSON {
			t.Errorf("%s: config media type %s", want.Architecture, m.Config.MediaType)
		}
		if len(m.Layers) != 2 {
			t.Fatalf("%s: %d layers, want 2", want.Architecture, len(m.Layers))
		}
		for _, l := range m.Layers {
			if l.MediaType != types.OCILayer {
				t.Errorf("%s: layer media type %s", want.Architecture, l.MediaType)
			}
		}
		baseDigests = append(baseDigests, m.Layers[0].Digest)
		config, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		if config.OS != "linux" || config.Architecture != want.Architecture {
			t.Errorf("config platform %s/%s, want linux/%s", config.OS, config.Architecture, want.Architecture)
		}
		if !config.Created.Time.Equal(created) {
			t.Errorf("config created %s, want %s", config.Created.Time, created)
		}
		wantConfig := v1.Config{
			User:       "65532:65532",
			Entrypoint: []string{"/usr/local/bin/release-controller"},
			Env: []string{
				"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
				"HOME=/home/nonroot",
				"XDG_CACHE_HOME=/home/nonroot/.cache",
			},
			WorkingDir: "/home/nonroot",
			Labels:     wantLabels,
		}
		if diff := cmp.Diff(wantConfig, config.Config); diff != "" {
			t.Errorf("%s: config (-want +got):\n%s", want.Architecture, diff)
		}
		if len(config.History) != 2 {
			t.Fatalf("%s: %d history entries, want 2", want.Architecture, len(config.History))
		}
		for _, h := range config.History {
			if !h.Created.Time.Equal(created) {
				t.Errorf("history created %s, want %s", h.Created.Time, created)
			}
		}
	}
	if baseDigests[0] != baseDigests[1] {
		t.Errorf("the platforms' base layers differ: %s and %s", baseDigests[0], baseDigests[1])
	}
}

type tarEntry struct {
	Name     string
	Type     byte
	Mode     int64
	UID, GID int
	Content  string
}

// layerEntries lists the layer's tar entries, checking the stamp of each.
func layerEntries(t *testing.T, l v1.Layer) []tarEntry {
	t.Helper()
	rc, err := l.Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	var entries []tarEntry
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if !hdr.ModTime.Equal(created) {
			t.Errorf("%s: mtime %s, want %s", hdr.Name, hdr.ModTime, created)
		}
		if hdr.Uname != "" || hdr.Gname != "" {
			t.Errorf("%s: owner names %q:%q, want none", hdr.Name, hdr.Uname, hdr.Gname)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		content := string(data)
		if hdr.Name == "etc/ssl/certs/ca-certificates.crt" {
			content = "<CA bundle>"
		}
		entries = append(entries, tarEntry{hdr.Name, hdr.Typeflag, hdr.Mode, hdr.Uid, hdr.Gid, content})
	}
	return entries
}

func TestLayerContents(t *testing.T) {
	opts := testOptions(t)
	bins := fakeBinaries(t, t.TempDir())
	img, err := imagebuild.Image(bins[1], opts)
	if err != nil {
		t.Fatal(err)
	}
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	dir := func(name string, mode int64, uid int) tarEntry {
		return tarEntry{Name: name, Type: tar.TypeDir, Mode: mode, UID: uid, GID: uid}
	}
	file := func(name string, mode int64, content string) tarEntry {
		return tarEntry{Name: name, Type: tar.TypeReg, Mode: mode, Content: content}
	}
	wantBase := []tarEntry{
		dir("etc/", 0o755, 0),
		file("etc/group", 0o644, "root:x:0:\nnonroot:x:65532:\n"),
		file("etc/nsswitch.conf", 0o644, "hosts: files dns\n"),
		file("etc/passwd", 0o644, "root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n"),
		dir("etc/ssl/", 0o755, 0),
		dir("etc/ssl/certs/", 0o755, 0),
		file("etc/ssl/certs/ca-certificates.crt", 0o644, "<CA bundle>"),
		dir("home/", 0o755, 0),
		dir("home/nonroot/", 0o700, 65532),
		dir("tmp/", 0o1777, 0),
	}
	if diff := cmp.Diff(wantBase, layerEntries(t, layers[0])); diff != "" {
		t.Errorf("base layer (-want +got):\n%s", diff)
	}
	wantBinary := []tarEntry{
		dir("usr/", 0o755, 0),
		dir("usr/local/", 0o755, 0),
		dir("usr/local/bin/", 0o755, 0),
		file("usr/local/bin/release-controller", 0o755, "binary of arm64\n"),
	}
	if diff := cmp.Diff(wantBinary, layerEntries(t, layers[1])); diff != "" {
		t.Errorf("binary layer (-want +got):\n%s", diff)
	}

	// The CA bundle is written as given.
	fs := extract(t, img)
	got, err := os.ReadFile(filepath.Join(fs, "etc/ssl/certs/ca-certificates.crt"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, opts.CACertificates) {
		t.Error("the image's CA bundle is not the one given")
	}

	// Without CA certificates the file is left out; a bundle that is not PEM certificates is
	// refused.
	opts.CACertificates = nil
	base, err := imagebuild.BaseLayerTar(opts)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(base, []byte("ca-certificates.crt")) {
		t.Error("a CA bundle without CA certificates")
	}
	for _, bad := range []string{"not PEM", "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n", "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"} {
		opts.CACertificates = []byte(bad)
		if _, err := imagebuild.Index(bins, opts); err == nil {
			t.Errorf("CA certificates %q accepted", bad)
		}
	}
}

func TestIndexRefusesBadBinaries(t *testing.T) {
	bins := fakeBinaries(t, t.TempDir())
	opts := testOptions(t)
	for name, bad := range map[string][]imagebuild.Binary{
		"none":            nil,
		"missing file":    {{Platform: amd64, Path: filepath.Join(t.TempDir(), "nothing")}},
		"a folder":        {{Platform: amd64, Path: t.TempDir()}},
		"no architecture": {{Platform: v1.Platform{OS: "linux"}, Path: bins[0].Path}},
		"platform twice":  {bins[0], {Platform: amd64, Path: bins[1].Path}},
	} {
		if _, err := imagebuild.Index(bad, opts); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestCertificatesPEM(t *testing.T) {
	ders := testCADERs(t, 3)
	pemData, err := imagebuild.CertificatesPEM(bytes.Join(ders, nil))
	if err != nil {
		t.Fatal(err)
	}
	var got [][]byte
	for rest := pemData; ; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		got = append(got, block.Bytes)
	}
	if diff := cmp.Diff(ders, got); diff != "" {
		t.Errorf("certificates (-want +got):\n%s", diff)
	}
	for _, bad := range [][]byte{nil, []byte("garbage")} {
		if _, err := imagebuild.CertificatesPEM(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func TestWriteLayout(t *testing.T) {
	idx, err := imagebuild.Index(fakeBinaries(t, t.TempDir()), testOptions(t))
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "image")
	for range 2 { // the second write replaces the first
		if err := imagebuild.WriteLayout(dir, idx, "v1.2.3"); err != nil {
			t.Fatal(err)
		}
	}
	top, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	m, err := top.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Manifests) != 1 {
		t.Fatalf("the layout holds %d manifests, want 1", len(m.Manifests))
	}
	desc := m.Manifests[0]
	if desc.Digest != digest(t, idx) || desc.MediaType != types.OCIImageIndex {
		t.Errorf("the layout holds %s %s, want the index %s", desc.MediaType, desc.Digest, digest(t, idx))
	}
	if got := desc.Annotations[imagebuild.RefNameAnnotation]; got != "v1.2.3" {
		t.Errorf("ref name %q, want v1.2.3", got)
	}
	inner, err := top.ImageIndex(desc.Digest)
	if err != nil {
		t.Fatal(err)
	}
	if digest(t, inner) != digest(t, idx) {
		t.Error("the layout's index differs")
	}
	// Every blob written agrees with the digests, sizes and diff IDs naming it.
	if err := validate.Index(inner); err != nil {
		t.Error(err)
	}

	other := t.TempDir()
	if err := os.WriteFile(filepath.Join(other, "keep"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := imagebuild.WriteLayout(other, idx, ""); err == nil {
		t.Error("a folder that is not a layout was replaced")
	}
}

func TestTag(t *testing.T) {
	for version, want := range map[string]string{
		"v1.2.3":                 "v1.2.3",
		"f6fe916-dirty":          "f6fe916-dirty",
		"v1.2.3+build.5":         "v1.2.3-build.5",
		"":                       "dev",
		"-x":                     "x",
		strings.Repeat("a", 200): strings.Repeat("a", 128),
	} {
		if got := imagebuild.Tag(version); got != want {
			t.Errorf("Tag(%q) = %q, want %q", version, got, want)
		}
	}
}

// extract writes the image's filesystem into a new folder.
func extract(t *testing.T, img v1.Image) string {
	t.Helper()
	dir := t.TempDir()
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return dir
		}
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, filepath.FromSlash(hdr.Name))
		switch hdr.Typeflag {
		case tar.TypeDir:
			// Owner-only folders are kept readable for the test's user.
			if err := os.MkdirAll(path, 0o755); err != nil {
				t.Fatal(err)
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			data, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, data, os.FileMode(hdr.Mode).Perm()); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// buildReleaseController builds the release-controller binary as `make image` does, into dir.
func buildReleaseController(t *testing.T, dir, version string) string {
	t.Helper()
	binary := filepath.Join(dir, "release-controller")
	// The flags of `make image`, so the build cache of one serves the other.
	build := exec.Command("go", "build", "-trimpath", "-ldflags",
		"-s -w -buildid= -X github.com/release-controller/release-controller/internal/version.Version="+version,
		"-o", binary, "github.com/release-controller/release-controller/cmd/release-controller")
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+runtime.GOARCH)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return binary
}

// Two builds of one commit — the binary compiled twice, into different folders — give the
// same image digest, and the image runs: its binary, extracted from the layer, prints the
// version it was built with and needs no dynamic loader (a from-scratch image has none).
func TestImageOfRealBinaryIsReproducibleAndRuns(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("runs the linux binary of the image")
	}
	if testing.Short() {
		t.Skip("builds release-controller twice")
	}
	const version = "imagebuild-test"
	platform := v1.Platform{OS: "linux", Architecture: runtime.GOARCH}
	opts := testOptions(t)
	var indexes []v1.ImageIndex
	for range 2 {
		binary := buildReleaseController(t, t.TempDir(), version)
		idx, err := imagebuild.Index([]imagebuild.Binary{{Platform: platform, Path: binary}}, opts)
		if err != nil {
			t.Fatal(err)
		}
		indexes = append(indexes, idx)
	}
	if a, b := digest(t, indexes[0]), digest(t, indexes[1]); a != b {
		t.Errorf("two builds: %s and %s", a, b)
	}
	idx := indexes[1]
	m, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	img, err := idx.Image(m.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	config, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	fs := extract(t, img)
	exe := filepath.Join(fs, filepath.FromSlash(config.Config.Entrypoint[0]))
	f, err := elf.Open(exe)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Error("the binary asks for a dynamic loader: it would not start in the image")
		}
	}
	f.Close()
	cmd := exec.Command(exe, "version")
	cmd.Env = config.Config.Env // the image's environment, nothing of the test's
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s version: %v\n%s", exe, err, out)
	}
	if got := strings.TrimSpace(string(out)); got != version {
		t.Errorf("version %q, want %q", got, version)
	}
}
