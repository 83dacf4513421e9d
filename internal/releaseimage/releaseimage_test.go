package releaseimage_test

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/release-controller/release-controller/internal/devenv/registry"
	"github.com/release-controller/release-controller/internal/releaseimage"
	"github.com/release-controller/release-controller/internal/releaseimage/releaseimagetest"
)

// reg is the embedded registry shared by the package's tests and benchmarks.
var reg *registry.Server

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "releaseimage-registry-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	reg, err = registry.Start(context.Background(), registry.Options{Dir: dir})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	if err := reg.Close(); err != nil {
		fmt.Fprintln(os.Stderr, "closing the registry:", err)
	}
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// labelled returns a small random image (of no platform) whose configuration has the given labels.
func labelled(t testing.TB, labels map[string]string) v1.Image {
	t.Helper()
	return releaseimagetest.Image(t, "", labels)
}

// push writes img to the registry as repo:latest and returns its pull spec by digest.
func push(t testing.TB, repo string, img remote.Taggable) string {
	t.Helper()
	ref, err := name.NewTag(reg.Addr() + "/" + repo + ":latest")
	if err != nil {
		t.Fatal(err)
	}
	var digest v1.Hash
	switch v := img.(type) {
	case v1.Image:
		err = remote.Write(ref, v)
		if err == nil {
			digest, err = v.Digest()
		}
	case v1.ImageIndex:
		err = remote.WriteIndex(ref, v)
		if err == nil {
			digest, err = v.Digest()
		}
	}
	if err != nil {
		t.Fatalf("pushing %s: %v", ref, err)
	}
	return ref.Context().Digest(digest.String()).String()
}

func ocilabels(source, revision string) map[string]string {
	return map[string]string{releaseimage.LabelSource: source, releaseimage.LabelRevision: revision, "other": "ignored"}
}

var created = time.Date(2026, 11, 22, 9, 30, 0, 0, time.UTC)

// TestBuildAndInfo builds a payload of three components — one without labels, one an index —
// and reads it back.
func TestBuildAndInfo(t *testing.T) {
	ctx := context.Background()
	api := push(t, "product/api", labelled(t, ocilabels("https://git.example.com/api", "1111")))
	web := push(t, "product/web", mutate.AppendManifests(empty.Index,
		mutate.IndexAddendum{Add: labelled(t, ocilabels("https://git.example.com/web", "2222"))}))
	cli := push(t, "product/cli", labelled(t, nil))

	repo := reg.Addr() + "/product/release"
	tag := "4.15.0-0.nightly-2026-11-22-093000"
	var progress bytes.Buffer
	res, err := releaseimage.Build(ctx, releaseimage.BuildOptions{
		Tag: tag, Stream: "nightly", Repository: repo,
		Components: []releaseimage.Component{{Name: "web", Image: web}, {Name: "api", Image: api}, {Name: "cli", Image: cli}},
		Previous:   []string{"4.15.0-0.nightly-2026-11-21-093000", "4.15.0-0.nightly-2026-11-20-093000"},
		Metadata:   map[string]string{"url": "https://example.com/notes"},
		Created:    created,
		Progress:   &progress,
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := repo + "@" + res.Digest; res.Image != want {
		t.Errorf("Image = %q, want %q", res.Image, want)
	}
	wantProgress := "read 3/3 component images\npushed " + repo + ":" + tag + " (3 components)\n"
	if progress.String() != wantProgress {
		t.Errorf("progress:\n%s\nwant:\n%s", progress.String(), wantProgress)
	}

	wantRefs := releaseimage.ImageReferences{
		Kind: releaseimage.KindImageReferences, APIVersion: releaseimage.APIVersion, Tag: tag,
		Components: []releaseimage.ComponentReference{
			{Name: "api", Image: api, Source: "https://git.example.com/api", Revision: "1111"},
			{Name: "cli", Image: cli},
			{Name: "web", Image: web, Source: "https://git.example.com/web", Revision: "2222"},
		},
	}
	wantMeta := releaseimage.ReleaseMetadata{
		Kind: releaseimage.KindReleaseMetadata, APIVersion: releaseimage.APIVersion, Version: tag, Stream: "nightly",
		Previous: []string{"4.15.0-0.nightly-2026-11-21-093000", "4.15.0-0.nightly-2026-11-20-093000"},
		Metadata: map[string]string{"url": "https://example.com/notes"},
		Created:  created,
	}
	wantLabels := map[string]string{releaseimage.LabelRelease: tag, releaseimage.LabelStream: "nightly"}
	// By digest and by tag.
	for _, ref := range []string{res.Image, repo + ":" + tag} {
		info, err := releaseimage.Info(ctx, ref)
		if err != nil {
			t.Fatalf("Info(%s): %v", ref, err)
		}
		if info.Image != res.Image {
			t.Errorf("Info(%s).Image = %q, want %q", ref, info.Image, res.Image)
		}
		if !reflect.DeepEqual(info.References, wantRefs) {
			t.Errorf("image references:\n%+v\nwant:\n%+v", info.References, wantRefs)
		}
		if !reflect.DeepEqual(info.Metadata, wantMeta) {
			t.Errorf("release metadata:\n%+v\nwant:\n%+v", info.Metadata, wantMeta)
		}
		if !reflect.DeepEqual(info.Labels, wantLabels) {
			t.Errorf("labels = %v, want %v", info.Labels, wantLabels)
		}
	}
	checkLayer(t, res.Image)
}

// checkLayer checks that the payload has one layer with the folder and two files, owned by
// root, with fixed modes and times.
func checkLayer(t *testing.T, pullSpec string) {
	t.Helper()
	ref, err := name.ParseReference(pullSpec)
	if err != nil {
		t.Fatal(err)
	}
	img, err := remote.Image(ref)
	if err != nil {
		t.Fatal(err)
	}
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	if len(layers) != 1 {
		t.Fatalf("the payload has %d layers, want 1", len(layers))
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	var got []string
	tr := tar.NewReader(rc)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, fmt.Sprintf("%s %o %d:%d %d", hdr.Name, hdr.Mode, hdr.Uid, hdr.Gid, hdr.ModTime.Unix()))
	}
	want := []string{
		"release-manifests/ 755 0:0 0",
		"release-manifests/image-references 644 0:0 0",
		"release-manifests/release-metadata 644 0:0 0",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("layer entries:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestBuildIsDeterministic builds the same payload twice, the components listed in another
// order the second time, and expects the same digest.
func TestBuildIsDeterministic(t *testing.T) {
	ctx := context.Background()
	a := push(t, "det/a", labelled(t, ocilabels("https://git.example.com/a", "aaaa")))
	b := push(t, "det/b", labelled(t, ocilabels("https://git.example.com/b", "bbbb")))
	opts := releaseimage.BuildOptions{
		Tag: "1.0.0-2026-11-22-093000", Stream: "s", Repository: reg.Addr() + "/det/release",
		Components: []releaseimage.Component{{Name: "a", Image: a}, {Name: "b", Image: b}},
		Metadata:   map[string]string{"x": "1", "y": "2"},
		Created:    created,
	}
	first, err := releaseimage.Build(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	opts.Components = []releaseimage.Component{{Name: "b", Image: b}, {Name: "a", Image: a}}
	second, err := releaseimage.Build(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	if first.Digest != second.Digest {
		t.Errorf("the same inputs gave %s then %s", first.Digest, second.Digest)
	}
}

func TestBuildFailsOnMissingComponent(t *testing.T) {
	ctx := context.Background()
	present := push(t, "missing/present", labelled(t, nil))
	absent := reg.Addr() + "/missing/absent@sha256:" + strings.Repeat("ab", 32)
	_, err := releaseimage.Build(ctx, releaseimage.BuildOptions{
		Tag: "1.0.0-2026-11-22-093000", Stream: "s", Repository: reg.Addr() + "/missing/release",
		Components: []releaseimage.Component{{Name: "present", Image: present}, {Name: "gone", Image: absent}},
	})
	if err == nil || !strings.Contains(err.Error(), `component "gone"`) || !strings.Contains(err.Error(), "the image does not exist") {
		t.Fatalf("error = %v, want one saying that component \"gone\" does not exist", err)
	}
	// Nothing was pushed.
	if _, err := releaseimage.Info(ctx, reg.Addr()+"/missing/release:1.0.0-2026-11-22-093000"); err == nil {
		t.Error("a payload was pushed although a component is missing")
	}
}

func TestBuildValidatesOptions(t *testing.T) {
	digest := reg.Addr() + "/v/a@sha256:" + strings.Repeat("cd", 32)
	valid := func() releaseimage.BuildOptions {
		return releaseimage.BuildOptions{Tag: "1.0.0", Repository: reg.Addr() + "/v/release",
			Components: []releaseimage.Component{{Name: "a", Image: digest}}}
	}
	for _, tc := range []struct {
		name   string
		change func(*releaseimage.BuildOptions)
		want   string
	}{
		{"no tag", func(o *releaseimage.BuildOptions) { o.Tag = "" }, "needs a tag"},
		{"repository with a tag", func(o *releaseimage.BuildOptions) { o.Repository += ":latest" }, "without a tag"},
		{"no components", func(o *releaseimage.BuildOptions) { o.Components = nil }, "at least one component"},
		{"component by tag", func(o *releaseimage.BuildOptions) { o.Components[0].Image = reg.Addr() + "/v/a:latest" }, "not a pull spec by digest"},
		{"duplicate component", func(o *releaseimage.BuildOptions) { o.Components = append(o.Components, o.Components[0]) }, "listed twice"},
		{"base not a component", func(o *releaseimage.BuildOptions) { o.BaseComponent = "cvo" }, `base component "cvo" is not a component`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := valid()
			tc.change(&opts)
			_, err := releaseimage.Build(context.Background(), opts)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error = %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// TestBuildOnBaseComponent builds a payload on a component's image: the base's layers come
// first, its entrypoint and user stay, its labels are kept beside the payload's, and payload
// info still reads the release manifests.
func TestBuildOnBaseComponent(t *testing.T) {
	ctx := context.Background()
	baseImg := labelled(t, ocilabels("https://git.example.com/cvo", "4444"))
	config, err := baseImg.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	config = config.DeepCopy()
	config.Config.Entrypoint = []string{"/usr/bin/cvo"}
	config.Config.User = "65532"
	if baseImg, err = mutate.ConfigFile(baseImg, config); err != nil {
		t.Fatal(err)
	}
	cvo := push(t, "base/cvo", baseImg)
	api := push(t, "base/api", labelled(t, nil))
	repo := reg.Addr() + "/base/release"
	tag := "1.0.0-2026-11-22-093000"
	res, err := releaseimage.Build(ctx, releaseimage.BuildOptions{
		Tag: tag, Stream: "s", Repository: repo, Created: created, BaseComponent: "cvo",
		Components: []releaseimage.Component{{Name: "api", Image: api}, {Name: "cvo", Image: cvo}},
	})
	if err != nil {
		t.Fatal(err)
	}
	img, err := remote.Image(mustDigest(t, res.Image))
	if err != nil {
		t.Fatal(err)
	}
	baseLayers, err := baseImg.Layers()
	if err != nil {
		t.Fatal(err)
	}
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	if len(layers) != len(baseLayers)+1 {
		t.Fatalf("%d layers, want the base's %d and the manifests", len(layers), len(baseLayers))
	}
	for i, l := range baseLayers {
		want, _ := l.Digest()
		got, _ := layers[i].Digest()
		if want != got {
			t.Errorf("layer %d = %s, want the base's %s", i, got, want)
		}
	}
	got, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if ep := got.Config.Entrypoint; len(ep) != 1 || ep[0] != "/usr/bin/cvo" || got.Config.User != "65532" {
		t.Errorf("entrypoint %v, user %q: want the base's", ep, got.Config.User)
	}
	if got.Config.Labels[releaseimage.LabelRelease] != tag || got.Config.Labels[releaseimage.LabelSource] != "https://git.example.com/cvo" {
		t.Errorf("labels %v: want the payload's and the base's", got.Config.Labels)
	}
	info, err := releaseimage.Info(ctx, res.Image)
	if err != nil {
		t.Fatal(err)
	}
	if len(info.References.Components) != 2 || info.Metadata.Version != tag {
		t.Errorf("payload info = %+v", info)
	}
}

func mustDigest(t *testing.T, s string) name.Digest {
	t.Helper()
	d, err := name.NewDigest(s)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestInfoRejectsOtherImages(t *testing.T) {
	plain := push(t, "other/plain", labelled(t, ocilabels("https://git.example.com/plain", "3333")))
	_, err := releaseimage.Info(context.Background(), plain)
	if err == nil || !strings.Contains(err.Error(), "not a release payload image") {
		t.Errorf("error = %v, want one saying it is not a payload image", err)
	}
	_, err = releaseimage.Info(context.Background(), reg.Addr()+"/other/none:1.0.0")
	if err == nil || !strings.Contains(err.Error(), "the image does not exist") {
		t.Errorf("error = %v, want one saying the image does not exist", err)
	}
	// The right label without the files is no payload either.
	fake := push(t, "other/fake", labelled(t, map[string]string{releaseimage.LabelRelease: "1.0.0"}))
	_, err = releaseimage.Info(context.Background(), fake)
	if err == nil || !strings.Contains(err.Error(), "it has no "+releaseimage.ImageReferencesPath) {
		t.Errorf("error = %v, want one naming the missing file", err)
	}
}

func TestBuildRefusesMixedPlatforms(t *testing.T) {
	ctx := context.Background()
	amd := push(t, "platforms/api", releaseimagetest.Image(t, "amd64", nil))
	arm := push(t, "platforms/web", releaseimagetest.Image(t, "arm64", nil))
	_, err := releaseimage.Build(ctx, releaseimage.BuildOptions{
		Tag: "1.0.0-2026-11-22-093000", Stream: "s", Repository: reg.Addr() + "/platforms/release",
		Components: []releaseimage.Component{{Name: "api", Image: amd}, {Name: "web", Image: arm}},
	})
	want := "the components mix platforms (linux/amd64: api; linux/arm64: web)"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("error = %v, want one containing %q", err, want)
	}
}
