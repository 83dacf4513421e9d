package releaseimage_test

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/release-controller/release-controller/internal/releaseimage"
	"github.com/release-controller/release-controller/internal/releaseimage/releaseimagetest"
)

// TestBuildForPlatforms builds a payload for linux/amd64 and linux/arm64 from index
// components: an OCI index of one payload image per platform, each pinning that platform's
// component images; a component lacking a platform is named.
func TestBuildForPlatforms(t *testing.T) {
	ctx := context.Background()
	apiIndex, apiDigests := releaseimagetest.Index(t, ocilabels("https://git.example.com/api", "1111"), "amd64", "arm64")
	webIndex, webDigests := releaseimagetest.Index(t, ocilabels("https://git.example.com/web", "2222"), "amd64", "arm64", "s390x")
	api := push(t, "multi/api", apiIndex)
	web := push(t, "multi/web", webIndex)
	cli := push(t, "multi/cli", releaseimagetest.Image(t, "amd64", nil))
	repo := reg.Addr() + "/multi/release"
	tag := "1.0.0-0.nightly-2026-11-26-100000"
	platforms := []string{"linux/amd64", "linux/arm64"}

	_, err := releaseimage.Build(ctx, releaseimage.BuildOptions{Tag: tag, Stream: "multi", Repository: repo, Platforms: platforms, Created: created,
		Components: []releaseimage.Component{{Name: "api", Image: api}, {Name: "cli", Image: cli}}})
	want := "components miss platforms of the payload: cli lacks linux/arm64 (it has linux/amd64)"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("error = %v, want one containing %q", err, want)
	}

	res, err := releaseimage.Build(ctx, releaseimage.BuildOptions{Tag: tag, Stream: "multi", Repository: repo, Platforms: platforms, Created: created,
		Components: []releaseimage.Component{{Name: "web", Image: web}, {Name: "api", Image: api}}})
	if err != nil {
		t.Fatal(err)
	}
	// The pushed tag is an index of the two platforms' images.
	tagRef, err := name.ParseReference(repo + ":" + tag)
	if err != nil {
		t.Fatal(err)
	}
	desc, err := remote.Get(tagRef)
	if err != nil {
		t.Fatal(err)
	}
	if !desc.MediaType.IsIndex() || res.Image != repo+"@"+desc.Digest.String() {
		t.Fatalf("pushed %s (%s), build said %s", desc.Digest, desc.MediaType, res.Image)
	}
	images, err := releaseimage.ImagesByPlatform(desc)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(releaseimage.PlatformNames(images), ","); got != "linux/amd64,linux/arm64" {
		t.Fatalf("index platforms %s", got)
	}
	for i, platform := range platforms {
		if res.Platforms[i].Platform != platform || res.Platforms[i].Digest != images[i].Digest {
			t.Errorf("result platform %d = %+v, index has %+v", i, res.Platforms[i], images[i])
		}
		info, err := releaseimage.PlatformInfo(ctx, repo+":"+tag, platform)
		if err != nil {
			t.Fatal(err)
		}
		if info.Image != repo+"@"+images[i].Digest.String() || info.Index != res.Image || info.Metadata.Platform != platform {
			t.Errorf("%s: image %s index %s metadata platform %q", platform, info.Image, info.Index, info.Metadata.Platform)
		}
		wantRefs := map[string]string{
			"api": reg.Addr() + "/multi/api@" + apiDigests[platform],
			"web": reg.Addr() + "/multi/web@" + webDigests[platform],
		}
		for _, c := range info.References.Components {
			if c.Image != wantRefs[c.Name] {
				t.Errorf("%s: component %s pinned as %s, want %s", platform, c.Name, c.Image, wantRefs[c.Name])
			}
			if c.Source == "" || c.Revision == "" {
				t.Errorf("%s: component %s lost its source labels", platform, c.Name)
			}
		}
		imageRef, err := name.ParseReference(info.Image)
		if err != nil {
			t.Fatal(err)
		}
		img, err := remote.Image(imageRef)
		if err != nil {
			t.Fatal(err)
		}
		config, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		if got := config.OS + "/" + config.Architecture; got != platform {
			t.Errorf("the %s image's configuration is for %s", platform, got)
		}
	}
	if _, err := releaseimage.PlatformInfo(ctx, res.Image, "linux/s390x"); err == nil || !strings.Contains(err.Error(), "has no image of linux/s390x (it has linux/amd64, linux/arm64)") {
		t.Errorf("a platform the payload lacks: %v", err)
	}
	// Without a platform, Info reads the first and lists them all.
	info, err := releaseimage.Info(ctx, res.Image)
	if err != nil {
		t.Fatal(err)
	}
	if info.Metadata.Platform != "linux/amd64" || strings.Join(info.Platforms, ",") != "linux/amd64,linux/arm64" {
		t.Errorf("Info: platform %q, platforms %v", info.Metadata.Platform, info.Platforms)
	}
}

func TestPickPlatform(t *testing.T) {
	images := []releaseimage.PlatformImage{{Platform: "linux/amd64"}, {Platform: "linux/arm64/v8"}, {Platform: "linux/arm/v6"}, {Platform: "linux/arm/v7"}}
	tests := []struct {
		platform, want string
		ok             bool
	}{
		{"linux/amd64", "linux/amd64", true},
		{"linux/arm64", "linux/arm64/v8", true}, // no variant asked: the only one of its arch
		{"linux/arm64/v8", "linux/arm64/v8", true},
		{"linux/arm", "", false}, // two variants: which one is not for us to guess
		{"linux/arm/v7", "linux/arm/v7", true},
		{"linux/s390x", "", false},
		{"windows/amd64", "", false},
	}
	for _, tt := range tests {
		got, ok := releaseimage.PickPlatform(images, tt.platform)
		if ok != tt.ok || got.Platform != tt.want {
			t.Errorf("PickPlatform(%s) = %q, %v; want %q, %v", tt.platform, got.Platform, ok, tt.want, tt.ok)
		}
	}
	if got := releaseimage.MissingPlatforms(images, []string{"linux/amd64", "linux/s390x", "linux/arm"}); strings.Join(got, ",") != "linux/s390x,linux/arm" {
		t.Errorf("MissingPlatforms = %v", got)
	}
}
