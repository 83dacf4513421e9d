// Package releaseimagetest makes component images for tests: random images of a platform,
// and image indexes of several, pushed to a registry.
package releaseimagetest

import (
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/release-controller/release-controller/internal/releaseimage"
)

// Image is a new random image of linux/arch (of no platform when arch is empty) whose
// configuration has labels.
func Image(t testing.TB, arch string, labels map[string]string) v1.Image {
	t.Helper()
	img, err := random.Image(256, 1)
	if err != nil {
		t.Fatal(err)
	}
	config, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	config = config.DeepCopy()
	config.Config.Labels = labels
	if arch != "" {
		config.OS, config.Architecture = "linux", arch
	}
	if img, err = mutate.ConfigFile(img, config); err != nil {
		t.Fatal(err)
	}
	return img
}

// Index is an OCI image index of a new random image per architecture (linux), labelled, and
// each image's digest by platform ("linux/<arch>").
func Index(t testing.TB, labels map[string]string, archs ...string) (v1.ImageIndex, map[string]string) {
	t.Helper()
	digests := map[string]string{}
	entries := make([]releaseimage.IndexEntry, 0, len(archs))
	for _, arch := range archs {
		img := Image(t, arch, labels)
		d, err := img.Digest()
		if err != nil {
			t.Fatal(err)
		}
		digests["linux/"+arch] = d.String()
		entries = append(entries, releaseimage.IndexEntry{Platform: v1.Platform{OS: "linux", Architecture: arch}, Image: img})
	}
	return releaseimage.NewPlatformIndex(entries...), digests
}

// PushIndex pushes Index(labels, archs...) to ref (a tag) and returns it by digest.
func PushIndex(t testing.TB, ref string, labels map[string]string, archs ...string) string {
	t.Helper()
	index, _ := Index(t, labels, archs...)
	tag, err := name.NewTag(ref)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.WriteIndex(tag, index); err != nil {
		t.Fatalf("pushing %s: %v", ref, err)
	}
	d, err := index.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return tag.Context().Digest(d.String()).String()
}
