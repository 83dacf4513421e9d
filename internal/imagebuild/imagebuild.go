// Package imagebuild makes the release-controller container image without Docker: from
// scratch, out of the static binaries of each platform, as one OCI image index. The same image
// runs the controller, the API server and the payload creation Jobs (`payload build`).
//
// Each platform's image has two layers:
//
//   - a base layer, the same for every platform: /etc/passwd and /etc/group with the non-root
//     user nonroot (65532:65532), /etc/nsswitch.conf, the CA certificates at
//     /etc/ssl/certs/ca-certificates.crt (where Go looks for them), /home/nonroot (owned by
//     nonroot) and /tmp (1777);
//   - the binary at /usr/local/bin/release-controller, the entrypoint.
//
// The configuration runs as 65532:65532 with HOME=/home/nonroot and
// XDG_CACHE_HOME=/home/nonroot/.cache (the default changelog clone cache is
// $XDG_CACHE_HOME/release-controller/git), and carries the OCI labels source, revision,
// version and created. A pod with a read-only root filesystem mounts volumes at /tmp and
// /home/nonroot/.cache (or points --changelog-cache-dir at one).
//
// The build is reproducible: the layers' tar entries, the configurations and the history are
// stamped with Metadata.Created (SOURCE_DATE_EPOCH in the Makefile: the commit's time), tar
// entries are sorted with fixed owners and modes and no owner names, and the same inputs give
// the same index digest.
package imagebuild

import (
	"archive/tar"
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Paths and identities inside the image.
const (
	// BinaryPath is the binary and the entrypoint.
	BinaryPath = "/usr/local/bin/release-controller"
	// CACertificatesPath holds the CA certificates, PEM; Go reads it on Linux by default.
	CACertificatesPath = "/etc/ssl/certs/ca-certificates.crt"
	// UID and GID of the user nonroot, which the image runs as.
	UID = 65532
	GID = 65532
	// User is the configuration's user: numeric, so runAsNonRoot can check it.
	User = "65532:65532"
	// Home is nonroot's home folder, HOME in the image.
	Home = "/home/nonroot"
	// CacheHome is XDG_CACHE_HOME in the image: the default changelog clone cache lives
	// below it, in release-controller/git.
	CacheHome = Home + "/.cache"
	// Path is PATH in the image: the creation Jobs run the command release-controller.
	Path = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
)

// OCI labels (and index annotations) the image carries.
const (
	LabelSource   = "org.opencontainers.image.source"
	LabelRevision = "org.opencontainers.image.revision"
	LabelVersion  = "org.opencontainers.image.version"
	LabelCreated  = "org.opencontainers.image.created"
	LabelTitle    = "org.opencontainers.image.title"
)

// Binary is the static release-controller binary of one platform.
type Binary struct {
	// Platform is the binary's OS and architecture (and variant, if any).
	Platform v1.Platform
	// Path is the binary's file; it is read each time the layer is (so it must not change
	// while the image is in use).
	Path string
}

// Metadata describes the build.
type Metadata struct {
	// Version is the release-controller version (the label org.opencontainers.image.version).
	Version string
	// Revision is the source's commit.
	Revision string
	// Source is the source repository's URL.
	Source string
	// Created stamps the configurations, the history and every file; the zero time stands
	// for the Unix epoch. Only whole seconds are kept.
	Created time.Time
}

// Options describe an image.
type Options struct {
	Metadata
	// CACertificates is the PEM bundle written to CACertificatesPath; empty leaves the file
	// out (the binary then has no roots to verify TLS servers with).
	CACertificates []byte
}

// Index is the image index of one image per binary, in the order given.
func Index(binaries []Binary, opts Options) (v1.ImageIndex, error) {
	if len(binaries) == 0 {
		return nil, errors.New("no binaries: at least one platform is needed")
	}
	base, err := BaseLayer(opts)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var adds []mutate.IndexAddendum
	for _, b := range binaries {
		key := b.Platform.String()
		if seen[key] {
			return nil, fmt.Errorf("two binaries for platform %s", key)
		}
		seen[key] = true
		img, err := image(base, b, opts)
		if err != nil {
			return nil, fmt.Errorf("image of %s: %w", key, err)
		}
		platform := b.Platform
		adds = append(adds, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &platform}})
	}
	idx := mutate.AppendManifests(mutate.IndexMediaType(empty.Index, types.OCIImageIndex), adds...)
	return mutate.Annotations(idx, annotations(opts.Metadata)).(v1.ImageIndex), nil
}

// Image is the image of one binary.
func Image(b Binary, opts Options) (v1.Image, error) {
	base, err := BaseLayer(opts)
	if err != nil {
		return nil, err
	}
	return image(base, b, opts)
}

func image(base v1.Layer, b Binary, opts Options) (v1.Image, error) {
	if b.Platform.OS == "" || b.Platform.Architecture == "" {
		return nil, fmt.Errorf("binary %s: platform %q lacks an OS or an architecture", b.Path, b.Platform.String())
	}
	bin, err := BinaryLayer(b.Path, opts.Created)
	if err != nil {
		return nil, err
	}
	created := v1.Time{Time: epoch(opts.Created)}
	img, err := mutate.Append(mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON),
		mutate.Addendum{Layer: base, MediaType: types.OCILayer, History: v1.History{
			Created: created, CreatedBy: "release-controller imagebuild: base", Comment: "nonroot user, CA certificates, /home/nonroot, /tmp",
		}},
		mutate.Addendum{Layer: bin, MediaType: types.OCILayer, History: v1.History{
			Created: created, CreatedBy: "release-controller imagebuild: binary", Comment: BinaryPath,
		}},
	)
	if err != nil {
		return nil, err
	}
	config, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	config = config.DeepCopy()
	config.Created = created
	config.OS, config.Architecture, config.Variant, config.OSVersion = b.Platform.OS, b.Platform.Architecture, b.Platform.Variant, b.Platform.OSVersion
	config.Config = v1.Config{
		User:       User,
		Entrypoint: []string{BinaryPath},
		Env:        []string{"PATH=" + Path, "HOME=" + Home, "XDG_CACHE_HOME=" + CacheHome},
		WorkingDir: Home,
		Labels:     annotations(opts.Metadata),
	}
	return mutate.ConfigFile(img, config)
}

// annotations are the OCI labels of the configurations and the annotations of the index.
func annotations(m Metadata) map[string]string {
	labels := map[string]string{
		LabelTitle:   "release-controller",
		LabelCreated: epoch(m.Created).Format(time.RFC3339),
	}
	for key, value := range map[string]string{LabelSource: m.Source, LabelRevision: m.Revision, LabelVersion: m.Version} {
		if value != "" {
			labels[key] = value
		}
	}
	return labels
}

// epoch is t in UTC to the second, the Unix epoch for the zero time.
func epoch(t time.Time) time.Time {
	if t.IsZero() {
		return time.Unix(0, 0).UTC()
	}
	return t.UTC().Truncate(time.Second)
}

// BinaryLayer is the layer holding path at BinaryPath, stamped with created. Its compressed
// form is computed once and kept in memory.
func BinaryLayer(path string, created time.Time) (v1.Layer, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !info.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	size := info.Size()
	entries := dirEntries(BinaryPath, created)
	file := entry{Header: header(strings.TrimPrefix(BinaryPath, "/"), tar.TypeReg, 0o755, 0, 0, created)}
	file.Size = size
	opener := func() (io.ReadCloser, error) {
		f, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		pr, pw := io.Pipe()
		go func() {
			defer f.Close()
			tw := tar.NewWriter(pw)
			err := writeEntries(tw, entries)
			if err == nil {
				err = tw.WriteHeader(file.Header)
			}
			if err == nil {
				var n int64
				n, err = io.Copy(tw, f)
				if err == nil && n != size {
					err = fmt.Errorf("%s changed while read: %d bytes, expected %d", path, n, size)
				}
			}
			if err == nil {
				err = tw.Close()
			}
			pw.CloseWithError(err)
		}()
		return pr, nil
	}
	return tarball.LayerFromOpener(opener, tarball.WithMediaType(types.OCILayer), tarball.WithCompressedCaching)
}

// BaseLayer is the layer every platform shares: users, CA certificates, home and /tmp.
func BaseLayer(opts Options) (v1.Layer, error) {
	data, err := BaseLayerTar(opts)
	if err != nil {
		return nil, err
	}
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(data)), nil
	}, tarball.WithMediaType(types.OCILayer))
}

// BaseLayerTar is the uncompressed tar of BaseLayer.
func BaseLayerTar(opts Options) ([]byte, error) {
	created := opts.Created
	files := map[string]string{
		"/etc/passwd":        "root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:" + Home + ":/sbin/nologin\n",
		"/etc/group":         "root:x:0:\nnonroot:x:65532:\n",
		"/etc/nsswitch.conf": "hosts: files dns\n",
	}
	if len(opts.CACertificates) > 0 {
		if err := checkPEM(opts.CACertificates); err != nil {
			return nil, fmt.Errorf("CA certificates: %w", err)
		}
		files[CACertificatesPath] = string(opts.CACertificates)
	}
	var entries []entry
	for path, content := range files {
		entries = append(entries, dirEntries(path, created)...)
		e := entry{Header: header(strings.TrimPrefix(path, "/"), tar.TypeReg, 0o644, 0, 0, created), data: []byte(content)}
		e.Size = int64(len(content))
		entries = append(entries, e)
	}
	entries = append(entries, dirEntries(Home+"/", created)...)
	entries = append(entries,
		entry{Header: header(strings.TrimPrefix(Home, "/")+"/", tar.TypeDir, 0o700, UID, GID, created)},
		entry{Header: header("tmp/", tar.TypeDir, 0o1777, 0, 0, created)},
	)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	if err := writeEntries(tw, entries); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// entry is one tar entry with its content.
type entry struct {
	*tar.Header
	data []byte
}

// writeEntries writes entries sorted by name, each name once (the later of two equal ones
// is dropped: the parent folders several files share).
func writeEntries(tw *tar.Writer, entries []entry) error {
	entries = slices.Clone(entries) // the caller's may be written again
	slices.SortStableFunc(entries, func(a, b entry) int { return strings.Compare(a.Name, b.Name) })
	entries = slices.CompactFunc(entries, func(a, b entry) bool { return a.Name == b.Name })
	for _, e := range entries {
		if err := tw.WriteHeader(e.Header); err != nil {
			return err
		}
		if len(e.data) > 0 {
			if _, err := tw.Write(e.data); err != nil {
				return err
			}
		}
	}
	return nil
}

// dirEntries are the parent folders of path ("/a/b/c" → "a/", "a/b/"), owned by root, 0755.
func dirEntries(path string, created time.Time) []entry {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	var entries []entry
	for i := 1; i < len(parts); i++ {
		entries = append(entries, entry{Header: header(strings.Join(parts[:i], "/")+"/", tar.TypeDir, 0o755, 0, 0, created)})
	}
	return entries
}

// header is a USTAR header with fixed owner names and the build's time; nothing of the build
// machine (its users, its clock) gets in.
func header(name string, typ byte, mode int64, uid, gid int, created time.Time) *tar.Header {
	return &tar.Header{
		Typeflag: typ,
		Name:     name,
		Mode:     mode,
		Uid:      uid,
		Gid:      gid,
		ModTime:  epoch(created),
		Format:   tar.FormatUSTAR,
	}
}

// checkPEM accepts a bundle of one or more PEM certificates (text between them, such as
// comments, is allowed).
func checkPEM(data []byte) error {
	n := 0
	for rest := data; ; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			return fmt.Errorf("a PEM block of type %q, want CERTIFICATE", block.Type)
		}
		if _, err := x509.ParseCertificate(block.Bytes); err != nil {
			return err
		}
		n++
	}
	if n == 0 {
		return errors.New("no certificates")
	}
	return nil
}

// CertificatesPEM turns concatenated DER certificates — as in the bundle.der of
// golang.org/x/crypto/x509roots/fallback/bundle — into a PEM bundle, in the same order.
func CertificatesPEM(der []byte) ([]byte, error) {
	certs, err := x509.ParseCertificates(der)
	if err != nil {
		return nil, err
	}
	if len(certs) == 0 {
		return nil, errors.New("no certificates")
	}
	var buf bytes.Buffer
	for _, c := range certs {
		if err := pem.Encode(&buf, &pem.Block{Type: "CERTIFICATE", Bytes: c.Raw}); err != nil {
			return nil, err
		}
	}
	return buf.Bytes(), nil
}
