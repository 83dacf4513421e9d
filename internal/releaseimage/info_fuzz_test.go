package releaseimage

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
)

// fuzzRepo is where the fuzzed images are said to come from.
var fuzzRepo = name.MustParseReference("registry.example.com/product/release:1.0.0").Context()

func validFiles(t testing.TB) (refs ImageReferences, meta ReleaseMetadata) {
	refs = ImageReferences{Kind: KindImageReferences, APIVersion: APIVersion, Tag: "4.15.0-0.nightly-2026-11-22-093000", Components: []ComponentReference{
		{Name: "api", Image: "registry.example.com/product/api@sha256:" + strings.Repeat("a", 64), Source: "https://github.com/example/api", Revision: "3f2c"},
	}}
	meta = ReleaseMetadata{Kind: KindReleaseMetadata, APIVersion: APIVersion, Version: refs.Tag, Stream: "nightly",
		Previous: []string{"4.15.0-0.nightly-2026-11-21-093000"}, Metadata: map[string]string{"url": "https://example.com"},
		Created: time.Date(2026, 11, 22, 9, 30, 0, 0, time.UTC)}
	return refs, meta
}

// rawLayer is a tar holding files under their names, as given.
func rawLayer(t testing.TB, files map[string][]byte) []byte {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, path := range []string{ImageReferencesPath, ReleaseMetadataPath} {
		data, ok := files[path]
		if !ok {
			continue
		}
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: path, Mode: 0o644, Size: int64(len(data))}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(data); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// inspectLayer builds a payload-shaped image around layer, labelled release, and inspects it.
func inspectLayer(t *testing.T, layer []byte, release string) (*PayloadInfo, error) {
	img, err := SingleLayerImage(layer, SingleLayerConfig{OS: "linux", Architecture: "amd64", Labels: map[string]string{LabelRelease: release}})
	if err != nil {
		t.Fatal(err)
	}
	return Inspect(img, "registry.example.com/product/release:fuzz", fuzzRepo)
}

// checkInfo checks what inspect says of an image it accepted: the two files' kinds, the
// label, the image by digest; and that the files, written again by the payload build,
// read back the same (their meaning round-trips).
func checkInfo(t *testing.T, info *PayloadInfo, err error) {
	t.Helper()
	if err != nil {
		if info != nil {
			t.Fatalf("inspect failed (%v) with a result %+v", err, info)
		}
		if !strings.Contains(err.Error(), "registry.example.com/product/release:fuzz") {
			t.Errorf("the error %q does not name the image", err)
		}
		return
	}
	if info.References.Kind != KindImageReferences || info.Metadata.Kind != KindReleaseMetadata || info.Labels[LabelRelease] == "" {
		t.Fatalf("inspect accepted %+v", info)
	}
	if _, err := name.NewDigest(info.Image); err != nil || !strings.HasPrefix(info.Image, fuzzRepo.String()+"@sha256:") {
		t.Errorf("the image %q is not the repository by digest: %v", info.Image, err)
	}
	img, err := payloadImage(info.References, info.Metadata, nil)
	if err != nil {
		// Only what JSON cannot write again: a time beyond year 9999.
		if !strings.Contains(err.Error(), "year") {
			t.Fatalf("the accepted files cannot be written again: %v", err)
		}
		return
	}
	again, err := Inspect(img, "registry.example.com/product/release:fuzz", fuzzRepo)
	if err != nil {
		t.Fatalf("the accepted files, written again, are refused: %v", err)
	}
	first, _ := json.Marshal([]any{info.References, info.Metadata})
	second, _ := json.Marshal([]any{again.References, again.Metadata})
	if !bytes.Equal(first, second) {
		t.Errorf("the files read\n%s\nand written again read\n%s", first, second)
	}
}

// A payload image is pulled from registries anyone may push to: whatever its layer holds,
// inspecting it gives a checked result or an error naming the image, never a panic.
func FuzzInspectLayer(f *testing.F) {
	refs, meta := validFiles(f)
	valid, err := layerTar(refs, meta)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(valid, "4.15.0")
	f.Add(valid[:len(valid)/2], "4.15.0")
	f.Add(valid, "")
	f.Add([]byte{}, "4.15.0")
	f.Add([]byte("not a tar"), "x")
	f.Add(rawLayer(f, map[string][]byte{ImageReferencesPath: []byte(`{"kind":"ImageReferences"}`)}), "x")
	f.Fuzz(func(t *testing.T, layer []byte, release string) {
		info, err := inspectLayer(t, layer, release)
		checkInfo(t, info, err)
	})
}

// The two files' JSON, fuzzed inside a well-formed layer.
func FuzzInspectFiles(f *testing.F) {
	refs, meta := validFiles(f)
	refsJSON, _ := json.Marshal(refs)
	metaJSON, _ := json.Marshal(meta)
	f.Add(refsJSON, metaJSON)
	f.Add([]byte(`{"kind":"ImageReferences","components":null}`), []byte(`{"kind":"ReleaseMetadata","created":"2026-11-22T09:30:00+01:00","metadata":{}}`))
	f.Add([]byte(`{"kind":"ImageReferences"}`), []byte(`{"kind":"ReleaseMetadata","created":"0001-01-01T00:00:00Z"}`))
	f.Add([]byte(`{"kind":"Other"}`), metaJSON)
	f.Add(refsJSON, []byte(`[]`))
	f.Add([]byte(`{"kind":"ImageReferences","kind":"x"}`), []byte(`null`))
	f.Fuzz(func(t *testing.T, refsJSON, metaJSON []byte) {
		layer := rawLayer(t, map[string][]byte{ImageReferencesPath: refsJSON, ReleaseMetadataPath: metaJSON})
		info, err := inspectLayer(t, layer, "4.15.0")
		checkInfo(t, info, err)
	})
}

// The admission rules of image references (api/v1alpha1): keep them in step with the
// markers there.
var (
	// PinnedComponent.Image. (It once was ^[^@]+@sha256:..., which admitted repositories in
	// capitals, with spaces or bad ports, which payload build then refused.)
	componentImageRule = regexp.MustCompile(`^[a-z0-9]+([._-][a-z0-9]+)*((:[0-9]+)?(/[a-z0-9]+([._-][a-z0-9]+)*)+)?@sha256:[a-f0-9]{64}$`)
	// Component.Image of a stream.
	streamImageRule = regexp.MustCompile(`^[a-z0-9]+([._-][a-z0-9]+)*((:[0-9]+)?(/[a-z0-9]+([._-][a-z0-9]+)*)+)?(:[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}|@sha256:[a-f0-9]{64})$`)
	// ReleaseStreamSpec.PayloadRepository and MirrorRepository. (A port once was allowed
	// without a path after it: 0:0 is a registry, no repository. The three rules share the
	// repository part.)
	repositoryRule = regexp.MustCompile(`^[a-z0-9]+([._-][a-z0-9]+)*((:[0-9]+)?(/[a-z0-9]+([._-][a-z0-9]+)*)+)?$`)
)

// Image references come from the specs of streams and payloads, which the API server
// admitted: every one it admits must be one the controllers and payload build can use (a
// pull spec by digest, a pull spec, a repository) and read back unchanged.
func FuzzAdmittedImageReferences(f *testing.F) {
	digest := "@sha256:" + strings.Repeat("0", 64)
	for _, repo := range []string{"registry.example.com/product/api", "localhost:5000/a", "a_b:5000/c", "UPPER/case", "a b/c",
		"registry.example.com:x/a", "-a/b", "a//b", "a/b:tag", "a:0/b", "a:99999999999/b", "a.b", "",
		"0:0", "registry.example.com:5000"} { // found by fuzzing: a port with no path after it
		f.Add(repo + digest)
		f.Add(repo + ":latest")
		f.Add(repo)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if len(s) <= 512 && componentImageRule.MatchString(s) {
			ref, err := name.NewDigest(s)
			if err != nil {
				t.Fatalf("the admitted component image %q is no pull spec by digest: %v", s, err)
			}
			if ref.String() != s {
				t.Errorf("the admitted component image %q reads back as %q", s, ref.String())
			}
		}
		if len(s) <= 512 && streamImageRule.MatchString(s) {
			ref, err := name.ParseReference(s)
			if err != nil {
				t.Fatalf("the admitted stream image %q is no pull spec: %v", s, err)
			}
			if ref.String() != s {
				t.Errorf("the admitted stream image %q reads back as %q", s, ref.String())
			}
		}
		if len(s) <= 255 && repositoryRule.MatchString(s) {
			repo, err := name.NewRepository(s)
			if err != nil {
				t.Fatalf("the admitted repository %q is no repository: %v", s, err)
			}
			// A short name is Docker Hub's (a.b is index.docker.io/library/a.b): it reads back
			// as the same repository.
			if again, err := name.NewRepository(repo.String()); err != nil || again.Name() != repo.Name() {
				t.Errorf("the admitted repository %q reads back as %q, which is %v (%v)", s, repo.String(), again, err)
			}
		}
	})
}
