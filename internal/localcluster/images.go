package localcluster

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// PauseUser is the user the pause image runs as: nobody's numeric id, so that pods under the
// restricted Pod Security Standard (runAsNonRoot) may run it.
const PauseUser = "65535:65535"

// BinaryImage is a linux/amd64 OCI image holding the static binary at path as /pause, its
// entrypoint, run as PauseUser, with labels on its configuration. The sandbox image is one; the
// tests make their smallest workloads and components the same way.
func BinaryImage(path string, labels map[string]string) (v1.Image, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	if err := tw.WriteHeader(&tar.Header{Name: "pause", Mode: 0o755, Size: int64(len(data)), Typeflag: tar.TypeReg}); err != nil {
		return nil, err
	}
	if _, err := tw.Write(data); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(buf.Bytes())), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, err
	}
	img, err := mutate.AppendLayers(mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON), layer)
	if err != nil {
		return nil, err
	}
	config, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	config = config.DeepCopy()
	config.OS, config.Architecture = "linux", "amd64"
	config.Config = v1.Config{Entrypoint: []string{"/pause"}, User: PauseUser, Labels: labels}
	return mutate.ConfigFile(img, config)
}

// importSandboxImage builds the pause image from the binary at pause and imports it into
// containerd's CRI namespace as SandboxImage, so no sandbox image is ever pulled.
func importSandboxImage(p Paths, pause string) error {
	img, err := BinaryImage(pause, nil)
	if err != nil {
		return fmt.Errorf("pause image: %w", err)
	}
	ref, err := name.NewTag(SandboxImage)
	if err != nil {
		return err
	}
	archive := filepath.Join(p.Dir, "pause.tar")
	if err := tarball.WriteToFile(archive, ref, img); err != nil {
		return fmt.Errorf("pause image: %w", err)
	}
	defer os.Remove(archive)
	return run("ctr", "--address", p.ContainerdSocket(), "--namespace", ContainerdNamespace, "images", "import", archive)
}
