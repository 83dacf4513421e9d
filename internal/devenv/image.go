package devenv

import (
	"context"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/release-controller/release-controller/internal/imagebuild"
	"github.com/release-controller/release-controller/internal/version"
)

// BuildImageRepository is the embedded registry's repository of the release-controller image
// that the environment's creation Jobs name.
const BuildImageRepository = "release-controller/release-controller"

// fallbackBuildImage is the creation Jobs' image when the binary cannot be packaged (not a
// Linux binary). The local job runner does not pull images, so the Jobs run all the same.
const fallbackBuildImage = "release-controller:dev"

// buildImageFile records the last image pushed, so a restart with the same binary does not
// package and push it again.
const buildImageFile = "build-image.json"

type buildImageRecord struct {
	// Key is a digest of everything the image is made of.
	Key string `json:"key"`
	// Image is the pushed image, by digest.
	Image string `json:"image"`
}

// buildImageFormat changes when the image made of the same inputs changes.
const buildImageFormat = "imagebuild/1"

// systemCAFiles are the CA bundles Go reads on Linux, the first found goes into the image.
var systemCAFiles = []string{
	"/etc/ssl/certs/ca-certificates.crt",
	"/etc/pki/tls/certs/ca-bundle.crt",
	"/etc/ssl/ca-bundle.pem",
	"/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem",
	"/etc/ssl/cert.pem",
}

// pushBuildImage packages executable (with this machine's CA certificates) into the
// release-controller image of this machine's platform, as `make image` does for a release,
// pushes it to the registry as <registry>/release-controller/release-controller:<version> and
// returns it by digest. An unchanged binary is not pushed again. say reports what happened.
func pushBuildImage(ctx context.Context, dataDir, registry, executable string, say func(format string, args ...any)) (string, error) {
	if runtime.GOOS != "linux" {
		say("creation Jobs name the image %s: a %s binary makes no Linux image", fallbackBuildImage, runtime.GOOS)
		return fallbackBuildImage, nil
	}
	start := time.Now()
	if executable == "" {
		var err error
		if executable, err = os.Executable(); err != nil {
			return "", err
		}
	}
	static, err := isStatic(executable)
	if err != nil {
		return "", err
	}
	var caCerts []byte
	for _, path := range systemCAFiles {
		if data, err := os.ReadFile(path); err == nil {
			caCerts = data
			break
		}
	}
	platform := v1.Platform{OS: "linux", Architecture: runtime.GOARCH}
	opts := imagebuild.Options{Metadata: imagebuild.Metadata{Version: version.Version, Revision: revision(), Source: "https://github.com/release-controller/release-controller"}, CACertificates: caCerts}
	key, err := buildImageKey(executable, platform, opts)
	if err != nil {
		return "", err
	}
	tag, err := name.NewTag(registry + "/" + BuildImageRepository + ":" + imagebuild.Tag(version.Version))
	if err != nil {
		return "", err
	}
	remoteOpts := []remote.Option{remote.WithContext(ctx)}
	recordPath := filepath.Join(dataDir, buildImageFile)
	var record buildImageRecord
	if data, err := os.ReadFile(recordPath); err == nil && json.Unmarshal(data, &record) == nil && record.Key == key {
		if ref, err := name.NewDigest(record.Image); err == nil && ref.Context() == tag.Context() {
			if _, err := remote.Head(ref, remoteOpts...); err == nil {
				say("creation Jobs run the image %s (this binary's, pushed before; checked in %s)", record.Image, time.Since(start).Round(10*time.Millisecond))
				return record.Image, nil
			}
		}
	}
	img, err := imagebuild.Image(imagebuild.Binary{Platform: platform, Path: executable}, opts)
	if err != nil {
		return "", err
	}
	if err := remote.Write(tag, img, remoteOpts...); err != nil {
		return "", fmt.Errorf("pushing %s: %w", tag, err)
	}
	digest, err := img.Digest()
	if err != nil {
		return "", err
	}
	ref := tag.Context().Digest(digest.String()).String()
	data, err := json.MarshalIndent(buildImageRecord{Key: key, Image: ref}, "", "  ")
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(recordPath, data, 0o600); err != nil {
		return "", err
	}
	say("pushed this binary as the image %s for the creation Jobs (%s)", ref, time.Since(start).Round(10*time.Millisecond))
	if !static {
		say("note: %s is linked dynamically (built with cgo): its image would not start in a container; `make build` builds it static (CGO_ENABLED=0)", executable)
	}
	return ref, nil
}

// buildImageKey is a digest of everything the image is made of.
func buildImageKey(executable string, platform v1.Platform, opts imagebuild.Options) (string, error) {
	h := sha256.New()
	f, err := os.Open(executable)
	if err != nil {
		return "", err
	}
	defer f.Close()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	meta, err := json.Marshal(struct {
		Format   string
		Platform string
		Metadata imagebuild.Metadata
		CA       [32]byte
	}{buildImageFormat, platform.String(), opts.Metadata, sha256.Sum256(opts.CACertificates)})
	if err != nil {
		return "", err
	}
	h.Write(meta)
	return hex.EncodeToString(h.Sum(nil)), nil
}

// isStatic reports whether the ELF binary at path needs no dynamic loader.
func isStatic(path string) (bool, error) {
	f, err := elf.Open(path)
	if err != nil {
		return false, fmt.Errorf("reading %s: %w", path, err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return false, nil
		}
	}
	return true, nil
}

// revision is the commit this binary was built from, when Go recorded it.
func revision() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	for _, s := range info.Settings {
		if s.Key == "vcs.revision" {
			return s.Value
		}
	}
	return ""
}
