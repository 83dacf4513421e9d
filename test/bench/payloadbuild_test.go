//go:build !unit

package bench

import (
	"archive/tar"
	"bytes"
	"cmp"
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/devenv/registry"
	"github.com/release-controller/release-controller/internal/releaseimage"
	"github.com/release-controller/release-controller/internal/testbinary"
)

const (
	// buildComponents is the size of the payload built: the most a ReleasePayload holds.
	buildComponents = 1000
	// buildNamespace holds the payload that is built.
	buildNamespace = "build"
	buildTag       = "1.0.0-0.bench-2026-11-22-093000"
)

// BenchmarkPayloadBuild runs the built binary's `payload build --kubeconfig FILE --payload
// NS/NAME`, as a creation job does, for a ReleasePayload of 1,000 components whose images
// (single-layer OCI images labelled with their source and revision) are in the embedded
// registry, and reports the wall time of the command: the median of BENCH_BUILD_RUNS runs
// (default 5).
//
//	BENCH payload-build components=1000 ms=… min_ms=… max_ms=… runs=… start_ms=… read_ms=… push_ms=… exit_ms=…
func BenchmarkPayloadBuild(b *testing.B) {
	benchPayloadBuild(b, "payload-build", nil)
}

// BenchmarkPayloadBuildTwoPlatforms is BenchmarkPayloadBuild for a payload built for
// linux/amd64 and linux/arm64 from components that are two-platform image indexes: the
// build reads every index and one configuration per component, and pushes one payload image
// per platform and their index.
//
//	BENCH payload-build-platforms components=1000 platforms=2 ms=… …
func BenchmarkPayloadBuildTwoPlatforms(b *testing.B) {
	benchPayloadBuild(b, "payload-build-platforms", []string{"linux/amd64", "linux/arm64"})
}

func benchPayloadBuild(b *testing.B, benchName string, platforms []string) {
	runs := envInt(b, "BENCH_BUILD_RUNS", 5)
	binary := releaseControllerBinary(b)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dir := runDir(b)

	reg, err := registry.Start(ctx, registry.Options{Dir: filepath.Join(dir, "registry")})
	if err != nil {
		b.Fatal(err)
	}
	defer reg.Close()
	env, kubeconfig := startAPIServer(b, dir)
	defer stopAPIServer(env)
	createNamespace(b, env, buildNamespace)

	start := time.Now()
	components := pushComponents(b, reg.Addr(), buildComponents, platforms)
	progressf("pushed %d component images to %s in %s", len(components), reg.Addr(), time.Since(start).Round(time.Millisecond))
	p := &v1alpha1.ReleasePayload{
		ObjectMeta: metav1.ObjectMeta{Namespace: buildNamespace, Name: buildTag},
		Spec: v1alpha1.ReleasePayloadSpec{
			PayloadCoordinates:    v1alpha1.PayloadCoordinates{Stream: "bench", Tag: buildTag},
			Components:            components,
			PayloadCreationConfig: v1alpha1.PayloadCreationConfig{Repository: reg.Addr() + "/bench/release", Platforms: platforms},
		},
	}
	if err := env.Client.Create(ctx, p); err != nil {
		b.Fatalf("creating the payload: %v", err)
	}

	var builds []buildTimes
	for b.Loop() {
		builds = builds[:0]
		for range runs {
			builds = append(builds, runBuild(b, binary, kubeconfig, reg.Addr()+"/bench/release@sha256:"))
		}
	}
	slices.SortFunc(builds, func(x, y buildTimes) int { return cmp.Compare(x.total, y.total) })
	median := builds[len(builds)/2]
	b.ReportMetric(float64(median.total.Microseconds())/1000, "ms/build")
	// The phases of the median run, from the lines the command prints: start (process start,
	// reading the payload and listing the namespace's payloads), reading the components'
	// images, pushing the payload image, and exiting.
	benchLine(benchName, "components", buildComponents, "platforms", max(1, len(platforms)), "ms", median.total.Milliseconds(),
		"min_ms", builds[0].total.Milliseconds(), "max_ms", builds[len(builds)-1].total.Milliseconds(), "runs", len(builds),
		"start_ms", median.start.Milliseconds(), "read_ms", (median.read - median.start).Milliseconds(),
		"push_ms", (median.pushed - median.read).Milliseconds(), "exit_ms", (median.total - median.pushed).Milliseconds())
}

// buildTimes are the times since start of one `payload build`: when it printed its first line
// ("building …"), the line saying every component was read, the line saying the image was
// pushed, and when it exited.
type buildTimes struct {
	start, read, pushed, total time.Duration
}

// runBuild runs `payload build` once and times it.
func runBuild(b *testing.B, binary, kubeconfig, imagePrefix string) buildTimes {
	b.Helper()
	cmd := testbinary.Command(binary, "payload", "build", "--kubeconfig", kubeconfig, "--payload", buildNamespace+"/"+buildTag)
	out := &lineClock{}
	cmd.Stdout, cmd.Stderr = out, out
	out.began = time.Now()
	err := cmd.Run()
	total := time.Since(out.began)
	if err != nil {
		b.Fatalf("release-controller payload build: %v\n%s", err, out.text())
	}
	t := buildTimes{start: -1, read: -1, pushed: -1, total: total}
	for i, line := range out.lines {
		switch {
		case strings.HasPrefix(line, "building ") && t.start < 0:
			t.start = out.at[i]
		case line == fmt.Sprintf("read %d/%d component images", buildComponents, buildComponents):
			t.read = out.at[i]
		case strings.HasPrefix(line, "pushed "):
			t.pushed = out.at[i]
		}
	}
	if n := len(out.lines); n == 0 || !strings.HasPrefix(out.lines[n-1], imagePrefix) || t.start < 0 || t.read < 0 || t.pushed < 0 {
		b.Fatalf("release-controller payload build did not print what it should (building, read %d/%d, pushed, the image):\n%s",
			buildComponents, buildComponents, out.text())
	}
	return t
}

// lineClock keeps the lines written to it and when each was complete.
type lineClock struct {
	mu      sync.Mutex
	began   time.Time
	partial []byte
	lines   []string
	at      []time.Duration
}

func (c *lineClock) Write(p []byte) (int, error) {
	now := time.Since(c.began)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.partial = append(c.partial, p...)
	for {
		i := bytes.IndexByte(c.partial, '\n')
		if i < 0 {
			return len(p), nil
		}
		c.lines = append(c.lines, string(c.partial[:i]))
		c.at = append(c.at, now)
		c.partial = c.partial[i+1:]
	}
}

func (c *lineClock) text() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return strings.Join(c.lines, "\n") + "\n" + string(c.partial)
}

// pushComponents pushes n single-layer images (of the same layer) labelled with their source and revision, as a
// CI system would, and returns them pinned by digest.
func pushComponents(b *testing.B, registryAddr string, n int, platforms []string) []v1alpha1.PinnedComponent {
	b.Helper()
	components := make([]v1alpha1.PinnedComponent, n)
	// One layer for all: the build reads manifests and configurations only, and the registry
	// then stores (and the setup uploads) the layer once. The labels make every image distinct.
	layer, err := versionLayer("component", "bench\n")
	if err != nil {
		b.Fatal(err)
	}
	parallelPlain(b, n, 16, func(i int) error {
		comp := fmt.Sprintf("component-%04d", i)
		image := func(arch string) (v1.Image, error) {
			return releaseimage.SingleLayerImage(layer, releaseimage.SingleLayerConfig{
				Created: time.Date(2026, 11, 22, 9, 30, 0, 0, time.UTC), CreatedBy: "bench", OS: "linux", Architecture: arch,
				Labels: map[string]string{
					releaseimage.LabelSource:   "https://git.example.com/" + comp,
					releaseimage.LabelRevision: fmt.Sprintf("%040x", i+1),
				},
			})
		}
		ref, err := name.NewTag(registryAddr + "/bench/" + comp + ":latest")
		if err != nil {
			return err
		}
		var digest v1.Hash
		if len(platforms) == 0 {
			img, err := image("amd64")
			if err != nil {
				return err
			}
			if err := remote.Write(ref, img); err != nil {
				return fmt.Errorf("pushing %s: %w", ref, err)
			}
			if digest, err = img.Digest(); err != nil {
				return err
			}
		} else {
			var entries []releaseimage.IndexEntry
			for _, platform := range platforms {
				pl, err := releaseimage.ParsePlatform(platform)
				if err != nil {
					return err
				}
				img, err := image(pl.Architecture)
				if err != nil {
					return err
				}
				entries = append(entries, releaseimage.IndexEntry{Platform: pl, Image: img})
			}
			index := releaseimage.NewPlatformIndex(entries...)
			if err := remote.WriteIndex(ref, index); err != nil {
				return fmt.Errorf("pushing %s: %w", ref, err)
			}
			if digest, err = index.Digest(); err != nil {
				return err
			}
		}
		components[i] = v1alpha1.PinnedComponent{Name: comp, Image: ref.Context().Digest(digest.String()).String()}
		return nil
	})
	return components
}

// versionLayer is the tar of app/<component>/VERSION.
func versionLayer(component, content string) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	epoch := time.Unix(0, 0).UTC()
	for _, h := range []*tar.Header{
		{Typeflag: tar.TypeDir, Name: "app/", Mode: 0o755, ModTime: epoch},
		{Typeflag: tar.TypeDir, Name: "app/" + component + "/", Mode: 0o755, ModTime: epoch},
		{Typeflag: tar.TypeReg, Name: "app/" + component + "/VERSION", Mode: 0o644, Size: int64(len(content)), ModTime: epoch},
	} {
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
	}
	if _, err := tw.Write([]byte(content)); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
