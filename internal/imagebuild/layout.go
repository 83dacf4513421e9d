package imagebuild

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
)

// RefNameAnnotation names an image of an OCI layout (`oci:DIR:NAME` for skopeo).
const RefNameAnnotation = "org.opencontainers.image.ref.name"

// WriteLayout writes idx as the only image of an OCI image layout in dir, named name (a tag),
// replacing the layout dir held before. A dir that exists and is not an OCI layout is left
// alone unless it is empty.
func WriteLayout(dir string, idx v1.ImageIndex, name string) error {
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return err
	case len(entries) == 0:
	default:
		if _, err := os.Stat(filepath.Join(dir, "oci-layout")); err != nil {
			return fmt.Errorf("%s exists and is not an OCI image layout: not replacing it", dir)
		}
		if err := os.RemoveAll(dir); err != nil {
			return err
		}
	}
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return err
	}
	var opts []layout.Option
	if name != "" {
		opts = append(opts, layout.WithAnnotations(map[string]string{RefNameAnnotation: name}))
	}
	return p.AppendIndex(idx, opts...)
}

var notInTag = regexp.MustCompile(`[^A-Za-z0-9_.-]`)

// Tag turns a version into an image tag: characters a tag cannot hold (the + of semver build
// metadata, say) become -, and it is cut to 128 characters. An empty version is "dev".
func Tag(version string) string {
	tag := notInTag.ReplaceAllString(version, "-")
	tag = strings.TrimLeft(tag, ".-")
	if tag == "" {
		return "dev"
	}
	if len(tag) > 128 {
		tag = tag[:128]
	}
	return tag
}
