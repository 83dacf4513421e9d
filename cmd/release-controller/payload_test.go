//go:build !unit

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/changelog"
	"github.com/release-controller/release-controller/internal/devenv/registry"
	"github.com/release-controller/release-controller/internal/releaseimage"
	"github.com/release-controller/release-controller/internal/releaseimage/releaseimagetest"
	"github.com/release-controller/release-controller/internal/verdict/verdicttest"
)

// startRegistry runs an embedded registry for one test.
func startRegistry(t *testing.T) *registry.Server {
	t.Helper()
	reg, err := registry.Start(context.Background(), registry.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = reg.Close() })
	return reg
}

// pushComponent pushes a small image with OCI source and revision labels to
// <registry>/product/<name> and returns its pull spec by digest.
func pushComponent(t *testing.T, reg *registry.Server, component, revision string) string {
	t.Helper()
	return pushLabelled(t, reg, component, "https://git.example.com/"+component, revision)
}

// pushLabelled is pushComponent with a given source repository.
func pushLabelled(t *testing.T, reg *registry.Server, component, source, revision string) string {
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
	config.Config.Labels = map[string]string{
		releaseimage.LabelSource:   source,
		releaseimage.LabelRevision: revision,
	}
	if img, err = mutate.ConfigFile(img, config); err != nil {
		t.Fatal(err)
	}
	ref, err := name.NewTag(reg.Addr() + "/product/" + component + ":latest")
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(ref, img); err != nil {
		t.Fatalf("pushing %s: %v", ref, err)
	}
	digest, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return ref.Context().Digest(digest.String()).String()
}

// createPayload creates a ReleasePayload and, when phase is set, gives it that phase as the
// payload controller would.
func createPayload(t *testing.T, ns, stream, tag, repository string, phase v1alpha1.PayloadPhase, components ...v1alpha1.PinnedComponent) {
	t.Helper()
	ctx := context.Background()
	p := &v1alpha1.ReleasePayload{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: tag},
		Spec: v1alpha1.ReleasePayloadSpec{
			PayloadCoordinates:    v1alpha1.PayloadCoordinates{Stream: stream, Tag: tag},
			Components:            components,
			PayloadCreationConfig: v1alpha1.PayloadCreationConfig{Repository: repository},
		},
	}
	if err := env.Client.Create(ctx, p); err != nil {
		t.Fatalf("creating payload %s: %v", tag, err)
	}
	if phase == "" {
		return
	}
	verdicttest.Earn(p, phase)
	if err := env.Client.Status().Update(ctx, p); err != nil {
		t.Fatalf("setting the phase of payload %s: %v", tag, err)
	}
}

// run executes the root command with args and returns what it printed.
func run(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	cmd := newRootCommand()
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(context.Background())
	return out.String(), err
}

func writeKubeconfig(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := env.WriteKubeconfig(path); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestPayloadBuildAndInfo builds a payload from a ReleasePayload as the creation job does, then
// reads it with `payload info` in both formats.
func TestPayloadBuildAndInfo(t *testing.T) {
	reg := startRegistry(t)
	ns := env.Namespace(t)
	kubeconfig := writeKubeconfig(t)
	api := pushComponent(t, reg, "api", "1111")
	web := pushComponent(t, reg, "web", "2222")
	cli := pushComponent(t, reg, "cli", "3333")
	repo := reg.Addr() + "/product/release"
	first := v1alpha1.PinnedComponent{Name: "api", Image: api}

	// Earlier payloads: only accepted ones of the same stream with a lower tag count.
	createPayload(t, ns, "nightly", "4.15.0-0.nightly-2026-11-20-093000", repo, v1alpha1.PhaseAccepted, first)
	createPayload(t, ns, "nightly", "4.15.0-0.nightly-2026-11-21-093000", repo, v1alpha1.PhaseAccepted, first)
	createPayload(t, ns, "nightly", "4.15.0-0.nightly-2026-11-21-120000", repo, v1alpha1.PhaseRejected, first)
	createPayload(t, ns, "ci", "4.15.0-0.ci-2026-11-21-093000", repo, v1alpha1.PhaseAccepted, first)
	createPayload(t, ns, "nightly", "4.15.0-0.nightly-2026-11-23-093000", repo, v1alpha1.PhaseAccepted, first)

	tag := "4.15.0-0.nightly-2026-11-22-093000"
	createPayload(t, ns, "nightly", tag, repo, "",
		v1alpha1.PinnedComponent{Name: "web", Image: web}, first, v1alpha1.PinnedComponent{Name: "cli", Image: cli})

	out, err := run(t, "payload", "build", "--payload", ns+"/"+tag, "--kubeconfig", kubeconfig)
	if err != nil {
		t.Fatalf("payload build: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	pullSpec := lines[len(lines)-1]
	if !strings.HasPrefix(pullSpec, repo+"@sha256:") {
		t.Fatalf("the last line is %q, want the payload's pull spec by digest; output:\n%s", pullSpec, out)
	}
	previous := "4.15.0-0.nightly-2026-11-21-093000, 4.15.0-0.nightly-2026-11-20-093000"
	for _, want := range []string{
		"building " + tag + " of stream nightly: 3 components, previous releases: " + previous,
		"read 3/3 component images",
		"pushed " + repo + ":" + tag + " (3 components)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("build output lacks %q:\n%s", want, out)
		}
	}

	text, err := run(t, "payload", "info", pullSpec)
	if err != nil {
		t.Fatalf("payload info: %v\n%s", err, text)
	}
	for _, want := range []string{
		"Image:     " + pullSpec,
		"Tag:       " + tag,
		"Stream:    nightly",
		"Previous:  " + previous,
		"Components (3):",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("info output lacks %q:\n%s", want, text)
		}
	}
	// The table, sorted by name.
	rows := componentTable(t, text)
	wantRows := [][]string{
		{"NAME", "IMAGE", "SOURCE", "REVISION"},
		{"api", api, "https://git.example.com/api", "1111"},
		{"cli", cli, "https://git.example.com/cli", "3333"},
		{"web", web, "https://git.example.com/web", "2222"},
	}
	if !reflect.DeepEqual(rows, wantRows) {
		t.Errorf("component table:\n%v\nwant:\n%v", rows, wantRows)
	}

	js, err := run(t, "payload", "info", "-o", "json", repo+":"+tag)
	if err != nil {
		t.Fatalf("payload info -o json: %v\n%s", err, js)
	}
	var info releaseimage.PayloadInfo
	if err := json.Unmarshal([]byte(js), &info); err != nil {
		t.Fatalf("payload info -o json printed no JSON: %v\n%s", err, js)
	}
	if info.Image != pullSpec || info.Metadata.Version != tag || info.Metadata.Stream != "nightly" ||
		info.Labels[releaseimage.LabelRelease] != tag {
		t.Errorf("JSON info: %+v", info)
	}
	if got, want := strings.Join(info.Metadata.Previous, ", "), previous; got != want {
		t.Errorf("JSON previous = %q, want %q", got, want)
	}
	if got := len(info.References.Components); got != 3 || info.References.Components[2].Revision != "2222" {
		t.Errorf("JSON components: %+v", info.References.Components)
	}

	// The job may run again: the same payload gives the same image.
	again, err := run(t, "payload", "build", "--payload", ns+"/"+tag, "--kubeconfig", kubeconfig)
	if err != nil {
		t.Fatalf("payload build again: %v\n%s", err, again)
	}
	if !strings.HasSuffix(strings.TrimSpace(again), "\n"+pullSpec) {
		t.Errorf("building again printed:\n%s\nwant the same pull spec %s", again, pullSpec)
	}
}

// TestPayloadBuildErrors checks the errors the creation job reports. The kubeconfig comes from
// $KUBECONFIG here, as in the local environment.
// TestPayloadBuildWaitsForTheRegistry: the registry is down when the build starts; the build
// says so and tries again, and once the registry is back (same address and data) it pushes.
func TestPayloadBuildWaitsForTheRegistry(t *testing.T) {
	dir := t.TempDir()
	reg, err := registry.Start(context.Background(), registry.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	addr := reg.Addr()
	ns := env.Namespace(t)
	t.Setenv("KUBECONFIG", writeKubeconfig(t))
	api := pushComponent(t, reg, "api", "1111")
	tag := "1.0.0-2026-11-26-093000"
	createPayload(t, ns, "nightly", tag, addr+"/product/release", "", v1alpha1.PinnedComponent{Name: "api", Image: api})
	if err := reg.Close(); err != nil {
		t.Fatal(err)
	}

	read, write := io.Pipe()
	cmd := newRootCommand()
	cmd.SetOut(write)
	cmd.SetErr(write)
	cmd.SetArgs([]string{"payload", "build", "--payload", ns + "/" + tag})
	done := make(chan error, 1)
	go func() {
		err := cmd.ExecuteContext(context.Background())
		_ = write.CloseWithError(err)
		done <- err
	}()
	lines := bufio.NewScanner(read)
	var out []string
	for lines.Scan() {
		out = append(out, lines.Text())
		if strings.HasPrefix(lines.Text(), "the registry cannot answer: ") {
			break
		}
	}
	if len(out) == 0 || !strings.Contains(out[len(out)-1], "registry "+addr+" is unreachable") || !strings.Contains(out[len(out)-1], "building again in 1s") {
		t.Fatalf("the build did not say it waits for the registry:\n%s", strings.Join(out, "\n"))
	}
	back, err := registry.Start(context.Background(), registry.Options{Dir: dir, Addr: addr})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = back.Close() })
	for lines.Scan() {
		out = append(out, lines.Text())
	}
	if err := <-done; err != nil {
		t.Fatalf("payload build: %v\n%s", err, strings.Join(out, "\n"))
	}
	if last := out[len(out)-1]; !strings.HasPrefix(last, addr+"/product/release@sha256:") {
		t.Fatalf("the last line is %q, want the payload's pull spec:\n%s", last, strings.Join(out, "\n"))
	}
}

func TestPayloadBuildErrors(t *testing.T) {
	reg := startRegistry(t)
	ns := env.Namespace(t)
	t.Setenv("KUBECONFIG", writeKubeconfig(t))
	repo := reg.Addr() + "/product/release"
	api := pushComponent(t, reg, "api", "1111")

	// A registry that was running and is no more.
	gone := startRegistry(t)
	goneAddr := gone.Addr()
	if err := gone.Close(); err != nil {
		t.Fatal(err)
	}
	missingDigest := "@sha256:" + strings.Repeat("ab", 32)

	createPayload(t, ns, "nightly", "1.0.0-2026-11-22-093000", repo, "",
		v1alpha1.PinnedComponent{Name: "api", Image: api},
		v1alpha1.PinnedComponent{Name: "ghost", Image: reg.Addr() + "/product/ghost" + missingDigest})
	createPayload(t, ns, "nightly", "1.0.0-2026-11-22-100000", repo, "",
		v1alpha1.PinnedComponent{Name: "far", Image: goneAddr + "/product/far" + missingDigest})
	createPayload(t, ns, "nightly", "1.0.0-2026-11-22-110000", goneAddr+"/product/release", "",
		v1alpha1.PinnedComponent{Name: "api", Image: api})

	for _, tc := range []struct {
		payload string
		want    []string
	}{
		{"not-a-key", []string{"--payload must be NAMESPACE/NAME"}},
		{ns + "/1.0.0-2026-11-22-000000", []string{fmt.Sprintf("release payload %s/1.0.0-2026-11-22-000000 not found", ns)}},
		{ns + "/1.0.0-2026-11-22-093000", []string{`component "ghost"`, "the image does not exist"}},
		{ns + "/1.0.0-2026-11-22-100000", []string{`component "far"`, "registry " + goneAddr + " is unreachable"}},
		{ns + "/1.0.0-2026-11-22-110000", []string{"pushing the payload image", "registry " + goneAddr + " is unreachable"}},
	} {
		t.Run(tc.payload, func(t *testing.T) {
			// --registry-wait 0: an unreachable registry fails at once (TestPayloadBuildWaitsForTheRegistry waits).
			out, err := run(t, "payload", "build", "--payload", tc.payload, "--registry-wait", "0")
			if err == nil {
				t.Fatalf("payload build succeeded:\n%s", out)
			}
			for _, want := range tc.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q lacks %q", err, want)
				}
			}
		})
	}
}

// newGitRepo creates a git repository with a working tree; commit adds a commit to its
// main branch and returns the commit's hash.
func newGitRepo(t *testing.T) (url string, commit func(message string) string) {
	t.Helper()
	dir := t.TempDir()
	repo, err := git.PlainInitWithOptions(dir, &git.PlainInitOptions{InitOptions: git.InitOptions{DefaultBranch: plumbing.Main}})
	if err != nil {
		t.Fatal(err)
	}
	wt, err := repo.Worktree()
	if err != nil {
		t.Fatal(err)
	}
	when := time.Date(2026, 11, 20, 9, 0, 0, 0, time.UTC)
	n := 0
	return "file://" + dir, func(message string) string {
		t.Helper()
		n++
		if err := os.WriteFile(filepath.Join(dir, "VERSION"), []byte(fmt.Sprintf("%d\n", n)), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := wt.Add("VERSION"); err != nil {
			t.Fatal(err)
		}
		sig := &object.Signature{Name: "Jane Dev", Email: "jane@example.com", When: when.Add(time.Duration(n) * time.Hour)}
		h, err := wt.Commit(message, &git.CommitOptions{Author: sig, Committer: sig})
		if err != nil {
			t.Fatal(err)
		}
		return h.String()
	}
}

// buildPayloadImage builds a payload image of components (name → image) as <reg>/product/release:<tag>.
func buildPayloadImage(t *testing.T, reg *registry.Server, tag string, components ...releaseimage.Component) string {
	t.Helper()
	res, err := releaseimage.Build(context.Background(), releaseimage.BuildOptions{
		Tag: tag, Stream: "nightly", Repository: reg.Addr() + "/product/release", Components: components,
	})
	if err != nil {
		t.Fatal(err)
	}
	return res.Image
}

// componentTable is the component table `payload info` printed in text, a row of fields per
// line, its header first.
func componentTable(t *testing.T, text string) [][]string {
	t.Helper()
	tableStart := strings.Index(text, "NAME")
	if tableStart < 0 {
		t.Fatalf("info output has no component table:\n%s", text)
	}
	var rows [][]string
	for _, line := range strings.Split(strings.TrimSpace(text[tableStart:]), "\n") {
		rows = append(rows, strings.Fields(line))
	}
	return rows
}

// pushPlatformComponent pushes an image index of a small image per architecture (linux), with
// OCI source and revision labels, to <registry>/product/<name>. It returns the index by digest
// and each platform's image by digest ("linux/<arch>" → pull spec).
func pushPlatformComponent(t *testing.T, reg *registry.Server, component, revision string, archs ...string) (string, map[string]string) {
	t.Helper()
	index, digests := releaseimagetest.Index(t, map[string]string{
		releaseimage.LabelSource:   "https://git.example.com/" + component,
		releaseimage.LabelRevision: revision,
	}, archs...)
	ref, err := name.NewTag(reg.Addr() + "/product/" + component + ":latest")
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.WriteIndex(ref, index); err != nil {
		t.Fatalf("pushing %s: %v", ref, err)
	}
	digest, err := index.Digest()
	if err != nil {
		t.Fatal(err)
	}
	images := map[string]string{}
	for platform, d := range digests {
		images[platform] = ref.Context().Digest(d).String()
	}
	return ref.Context().Digest(digest.String()).String(), images
}

// buildPlatformPayload builds a payload for platforms of components (image indexes) as
// <reg>/product/release:<tag>: an image index of one payload image per platform.
func buildPlatformPayload(t *testing.T, reg *registry.Server, tag string, platforms []string, components ...releaseimage.Component) releaseimage.BuildResult {
	t.Helper()
	res, err := releaseimage.Build(context.Background(), releaseimage.BuildOptions{
		Tag: tag, Stream: "nightly", Repository: reg.Addr() + "/product/release", Components: components, Platforms: platforms,
	})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestPayloadInfoPlatform reads a payload built for two platforms with `payload info`: each
// platform's payload image pins that platform's image of every component.
func TestPayloadInfoPlatform(t *testing.T) {
	reg := startRegistry(t)
	api, apiImages := pushPlatformComponent(t, reg, "api", "1111", "amd64", "arm64")
	web, webImages := pushPlatformComponent(t, reg, "web", "2222", "amd64", "arm64")
	res := buildPlatformPayload(t, reg, "1.0.0", []string{"linux/amd64", "linux/arm64"},
		releaseimage.Component{Name: "web", Image: web}, releaseimage.Component{Name: "api", Image: api})
	repo := reg.Addr() + "/product/release"
	byPlatform := map[string]string{}
	for _, pi := range res.Platforms {
		byPlatform[pi.Platform] = repo + "@" + pi.Digest.String()
	}

	for _, tc := range []struct {
		name, platform, want string
	}{
		{"arm64", "linux/arm64", "linux/arm64"},
		{"amd64", "linux/amd64", "linux/amd64"},
		// Without --platform, the index's first platform.
		{"no platform", "", "linux/amd64"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := []string{"payload", "info", repo + ":1.0.0"}
			if tc.platform != "" {
				args = append(args, "--platform", tc.platform)
			}
			text, err := run(t, args...)
			if err != nil {
				t.Fatalf("payload info: %v\n%s", err, text)
			}
			for _, want := range []string{
				"Image:     " + byPlatform[tc.want] + "\n",
				"Platform:  " + tc.want + "\n",
				"Index:     " + res.Image + " (platforms linux/amd64, linux/arm64)\n",
				"Tag:       1.0.0\n",
				"Components (2):",
			} {
				if !strings.Contains(text, want) {
					t.Errorf("info output lacks %q:\n%s", want, text)
				}
			}
			wantRows := [][]string{
				{"NAME", "IMAGE", "SOURCE", "REVISION"},
				{"api", apiImages[tc.want], "https://git.example.com/api", "1111"},
				{"web", webImages[tc.want], "https://git.example.com/web", "2222"},
			}
			if rows := componentTable(t, text); !reflect.DeepEqual(rows, wantRows) {
				t.Errorf("component table:\n%v\nwant:\n%v", rows, wantRows)
			}
		})
	}

	js, err := run(t, "payload", "info", "-o", "json", res.Image, "--platform", "linux/arm64")
	if err != nil {
		t.Fatalf("payload info -o json: %v\n%s", err, js)
	}
	var info releaseimage.PayloadInfo
	if err := json.Unmarshal([]byte(js), &info); err != nil {
		t.Fatalf("payload info -o json printed no JSON: %v\n%s", err, js)
	}
	if info.Image != byPlatform["linux/arm64"] || info.Index != res.Image || info.Metadata.Platform != "linux/arm64" ||
		strings.Join(info.Platforms, ", ") != "linux/amd64, linux/arm64" {
		t.Errorf("JSON info: image %s index %s platform %q platforms %v", info.Image, info.Index, info.Metadata.Platform, info.Platforms)
	}
	var images []string
	for _, c := range info.References.Components {
		images = append(images, c.Image)
	}
	if want := []string{apiImages["linux/arm64"], webImages["linux/arm64"]}; !reflect.DeepEqual(images, want) {
		t.Errorf("JSON component images %v, want the arm64 images %v", images, want)
	}

	for _, tc := range []struct {
		name, platform, want string
	}{
		{"missing platform", "linux/s390x", repo + ":1.0.0 has no image of linux/s390x (it has linux/amd64, linux/arm64)"},
		{"not a platform", "arm64", `--platform: platform "arm64" is not os/arch or os/arch/variant`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := run(t, "payload", "info", repo+":1.0.0", "--platform", tc.platform)
			if err == nil {
				t.Fatalf("payload info --platform %s succeeded:\n%s", tc.platform, out)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q lacks %q", err, tc.want)
			}
		})
	}
}

// runSplit executes the root command with args and returns its stdout and stderr apart.
func runSplit(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var out, errOut bytes.Buffer
	cmd := newRootCommand()
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SetArgs(args)
	err = cmd.ExecuteContext(context.Background())
	return out.String(), errOut.String(), err
}

// TestPayloadChangeLog reads two payload images from a registry, clones the repository their
// components come from and prints the commits between them, in both formats.
func TestPayloadChangeLog(t *testing.T) {
	reg := startRegistry(t)
	apiURL, apiCommit := newGitRepo(t)
	c1 := apiCommit("Initial commit")
	c2 := apiCommit("Add the thing (#34)")
	c3 := apiCommit("ABC-12: fix the thing (#35)")
	webURL, webCommit := newGitRepo(t)
	w1 := webCommit("Web page")

	from := buildPayloadImage(t, reg, "1.0.0",
		releaseimage.Component{Name: "api", Image: pushLabelled(t, reg, "api", apiURL, c1)})
	buildPayloadImage(t, reg, "1.0.1",
		releaseimage.Component{Name: "api", Image: pushLabelled(t, reg, "api", apiURL, c3)},
		releaseimage.Component{Name: "web", Image: pushLabelled(t, reg, "web", webURL, w1)})
	to := reg.Addr() + "/product/release:1.0.1" // by tag
	cache := filepath.Join(t.TempDir(), "cache")

	// By default only https:// repositories are read: the file:// one is named, not cloned.
	md, progress, err := runSplit(t, "payload", "changelog", from, to, "--changelog-cache-dir", cache)
	if err != nil {
		t.Fatalf("payload changelog: %v\n%s", err, progress)
	}
	if want := "not fetched: " + apiURL + " is not an allowed git source (--git-source-allow: https://)"; progress != "" || !strings.Contains(md, want) {
		t.Errorf("stderr %q; markdown lacks %q:\n%s", progress, want, md)
	}
	allow := "--git-source-allow=https://,file://" + filepath.Dir(strings.TrimPrefix(apiURL, "file://"))

	md, progress, err = runSplit(t, "payload", "changelog", from, to, "--changelog-cache-dir", cache, allow)
	if err != nil {
		t.Fatalf("payload changelog: %v\n%s", err, progress)
	}
	if want := "cloning " + apiURL + "\n"; progress != want {
		t.Errorf("stderr = %q, want %q", progress, want)
	}
	for _, want := range []string{"# 1.0.1\n", "## Changes from 1.0.0\n", "### New images\n", "* web", "### api\n",
		"ABC-12: fix the thing (#35)", "Add the thing (#34)"} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
	if strings.Contains(md, "Initial commit") {
		t.Errorf("markdown lists the commit of the old payload:\n%s", md)
	}

	// JSON; the clone is reused: nothing to clone or fetch.
	js, progress, err := runSplit(t, "payload", "changelog", "-o", "json", from, to, "--changelog-cache-dir", cache, allow)
	if err != nil {
		t.Fatalf("payload changelog -o json: %v\n%s", err, progress)
	}
	if progress != "" {
		t.Errorf("a cached clone was fetched again: %q", progress)
	}
	var doc changelog.JSONChangeLog
	if err := json.Unmarshal([]byte(js), &doc); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, js)
	}
	if doc.From.Name != "1.0.0" || doc.To.Name != "1.0.1" || len(doc.NewImages) != 1 || len(doc.UpdatedImages) != 1 {
		t.Fatalf("changelog = %s", js)
	}
	api := doc.UpdatedImages[0]
	if api.Commit != c3 || api.FromCommit != c1 || len(api.Commits) != 2 || api.Commits[0].SHA != c3 || api.Commits[1].SHA != c2 ||
		api.Commits[0].PullID != 35 || api.Commits[0].Issues == nil {
		t.Errorf("api = %+v", api)
	}

	// A new commit: the clone is fetched, not cloned again.
	c4 := apiCommit("Later (#36)")
	next := buildPayloadImage(t, reg, "1.0.2", releaseimage.Component{Name: "api", Image: pushLabelled(t, reg, "api", apiURL, c4)})
	md, progress, err = runSplit(t, "payload", "changelog", to, next, "--changelog-cache-dir", cache, allow)
	if err != nil {
		t.Fatalf("payload changelog: %v\n%s", err, progress)
	}
	if want := "fetching " + apiURL + "\n"; progress != want {
		t.Errorf("stderr = %q, want %q", progress, want)
	}
	if !strings.Contains(md, "Later (#36)") || strings.Contains(md, "(#35)") || !strings.Contains(md, "### Removed images\n") {
		t.Errorf("markdown:\n%s", md)
	}
}

func TestPayloadChangeLogErrors(t *testing.T) {
	reg := startRegistry(t)
	url, commit := newGitRepo(t)
	payload := buildPayloadImage(t, reg, "1.0.0", releaseimage.Component{Name: "api", Image: pushLabelled(t, reg, "api", url, commit("one"))})
	gone := startRegistry(t)
	goneAddr := gone.Addr()
	if err := gone.Close(); err != nil {
		t.Fatal(err)
	}
	cache := filepath.Join(t.TempDir(), "cache")
	busy := t.TempDir()
	if err := os.Mkdir(filepath.Join(busy, "precious"), 0o755); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"one argument", []string{payload}, []string{"accepts 2 arg(s), received 1"}},
		{"bad output", []string{payload, payload, "-o", "html"}, []string{`--output must be markdown or json, got "html"`}},
		{"bad pull spec", []string{"not a pull spec", payload}, []string{`parsing image reference "not a pull spec"`}},
		{"unknown tag", []string{payload, reg.Addr() + "/product/release:9.9.9"}, []string{"reading " + reg.Addr() + "/product/release:9.9.9", "the image does not exist"}},
		{"unreachable registry", []string{goneAddr + "/product/release:1.0.0", payload}, []string{"registry " + goneAddr + " is unreachable"}},
		{"not a payload", []string{payload, pushComponent(t, reg, "plain", "1111")}, []string{"is not a release payload image"}},
		{"a folder that is no cache", []string{payload, payload, "--changelog-cache-dir", busy}, []string{"changelog cache " + busy + ": the folder holds other files"}},
		{"bad cache size", []string{payload, payload, "--changelog-cache-size", "lots"}, []string{`invalid argument "lots" for "--changelog-cache-size"`}},
		{"bad git source", []string{payload, payload, "--git-source-allow", "github.com/org"}, []string{`git source "github.com/org": want a scheme`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"payload", "changelog", "--changelog-cache-dir", cache}, tc.args...)
			out, _, err := runSplit(t, args...)
			if err == nil {
				t.Fatalf("payload changelog succeeded:\n%s", out)
			}
			for _, want := range tc.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q lacks %q", err, want)
				}
			}
		})
	}
	if _, err := os.Stat(filepath.Join(busy, "precious")); err != nil {
		t.Errorf("the folder that is no cache lost its content: %v", err)
	}
}
