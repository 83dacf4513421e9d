//go:build !unit

package demo

import (
	"archive/tar"
	"bytes"
	"context"
	"io"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/registryclient"
	"github.com/release-controller/release-controller/internal/releaseimage"
)

// snapshot is what Setup makes: the repositories' heads, the images and the objects' versions.
type snapshot struct {
	heads, images    map[string]string
	namespaceVersion string
	streamVersion    string
}

func take(t *testing.T, opts Options) snapshot {
	t.Helper()
	s := snapshot{heads: map[string]string{}, images: map[string]string{}}
	for _, c := range Components {
		s.heads[c] = head(t, opts, c).Hash.String()
		s.images[c] = latest(t, opts, c)
	}
	ns := &corev1.Namespace{}
	if err := env.Client.Get(context.Background(), client.ObjectKey{Name: opts.Namespace}, ns); err != nil {
		t.Fatal(err)
	}
	stream := &v1alpha1.ReleaseStream{}
	if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: opts.Namespace, Name: StreamName}, stream); err != nil {
		t.Fatal(err)
	}
	s.namespaceVersion, s.streamVersion = ns.ResourceVersion, stream.ResourceVersion
	return s
}

func TestSetupIsIdempotent(t *testing.T) {
	g := NewWithT(t)
	opts := setup(t)
	first := take(t, opts)
	for _, c := range Components {
		commit := head(t, opts, c)
		g.Expect(commit.NumParents()).To(Equal(0), "one initial commit in %s", c)
		g.Expect(commit.Author.Email).To(Equal(AuthorEmail))
		g.Expect(first.images[c]).NotTo(BeEmpty(), "%s:latest is pushed", c)
		labels := configOf(t, first.images[c]).Config.Labels
		g.Expect(labels).To(HaveKeyWithValue("org.opencontainers.image.revision", commit.Hash.String()))
	}

	stream := &v1alpha1.ReleaseStream{}
	g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: opts.Namespace, Name: StreamName}, stream)).To(Succeed())
	g.Expect(stream.Spec.TagPrefix).To(Equal(TagPrefix))
	g.Expect(stream.Spec.PayloadRepository).To(Equal(reg.Addr() + "/" + opts.Namespace + "/release"))
	g.Expect(stream.Spec.Components).To(HaveLen(4))
	g.Expect(stream.Spec.Components[0]).To(Equal(v1alpha1.ComponentSource{Name: "api", Image: reg.Addr() + "/" + opts.Namespace + "/api:latest"}))
	g.Expect(stream.Spec.PublishTags).To(Equal([]string{"latest", "1.0"}))
	g.Expect(stream.Spec.MaxUnreadyReleases).To(BeEquivalentTo(2))
	g.Expect(stream.Spec.MinCreationInterval.Duration).To(Equal(20 * time.Second))
	g.Expect(stream.Spec.Retention.KeepAccepted).To(BeEquivalentTo(10))
	g.Expect(stream.Spec.Retention.CompletedJobTTL.Duration).To(Equal(time.Hour))
	g.Expect(stream.Spec.Platforms).To(Equal([]string{"linux/amd64", "linux/arm64"}))
	kinds := map[string]string{}
	for _, v := range stream.Spec.Verification {
		spec := v.Job.Template.Spec
		g.Expect(*spec.BackoffLimit).To(BeEquivalentTo(0))
		g.Expect(spec.Template.Spec.RestartPolicy).To(Equal(corev1.RestartPolicyNever))
		g.Expect(spec.Template.Spec.Containers[0].Image).To(Equal(DefaultCheckImage))
		kinds[v.Name] = strings.Join(spec.Template.Spec.Containers[0].Command, " ")
	}
	g.Expect(kinds).To(Equal(map[string]string{
		"e2e":         "release-controller dev check e2e",
		"integration": "release-controller dev check flaky",
		"upgrade":     "release-controller dev check upgrade",
		"conformance": "release-controller dev check conformance",
	}))
	// dev names the image it pushed.
	pushed := reg.Addr() + "/release-controller/release-controller@sha256:" + strings.Repeat("a", 64)
	for _, v := range Stream(Options{Dir: opts.Dir, Registry: opts.Registry, CheckImage: pushed}).Spec.Verification {
		g.Expect(v.Job.Template.Spec.Template.Spec.Containers[0].Image).To(Equal(pushed))
	}

	// The update service's channels, and the sample risk, which the API server admitted.
	g.Expect(stream.Spec.UpdateService).To(Equal(UpdateService()))
	risk := &v1alpha1.UpgradeRisk{}
	g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: opts.Namespace, Name: SampleRiskName}, risk)).To(Succeed())
	g.Expect(risk.Spec).To(Equal(SampleRisk(opts).Spec))
	g.Expect(risk.Spec.URL).To(Equal(DefaultWebURL + "/namespaces/" + opts.Namespace + "/releasestream/" + StreamName + "/graph"))

	// A second Setup changes nothing.
	g.Expect(Setup(context.Background(), env.Client, opts)).To(Succeed())
	g.Expect(take(t, opts)).To(Equal(first))
	riskVersion := risk.ResourceVersion
	g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(risk), risk)).To(Succeed())
	g.Expect(risk.ResourceVersion).To(Equal(riskVersion))

	// A user's edit of the stream is kept.
	stream.Spec.MaxUnreadyReleases = 5
	g.Expect(env.Client.Update(context.Background(), stream)).To(Succeed())
	g.Expect(Setup(context.Background(), env.Client, opts)).To(Succeed())
	g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(stream), stream)).To(Succeed())
	g.Expect(stream.Spec.MaxUnreadyReleases).To(BeEquivalentTo(5))

	// A missing image is pushed again from the repository's newest commit: the same image.
	g.Expect(registryclient.New().Delete(context.Background(), first.images["web"])).To(Succeed())
	g.Expect(latest(t, opts, "web")).To(BeEmpty())
	g.Expect(Setup(context.Background(), env.Client, opts)).To(Succeed())
	g.Expect(latest(t, opts, "web")).To(Equal(first.images["web"]))
}

// versionFile reads /app/<component>/VERSION from the image.
// platformsOf lists the platforms of the image index ref.
func platformsOf(t *testing.T, ref string) []string {
	t.Helper()
	r, err := name.ParseReference(ref)
	if err != nil {
		t.Fatal(err)
	}
	desc, err := remote.Get(r)
	if err != nil {
		t.Fatal(err)
	}
	images, err := releaseimage.ImagesByPlatform(desc)
	if err != nil {
		t.Fatal(err)
	}
	return releaseimage.PlatformNames(images)
}

func versionFile(t *testing.T, ref, component string) string {
	t.Helper()
	r, err := name.ParseReference(ref)
	if err != nil {
		t.Fatal(err)
	}
	img, err := remote.Image(r)
	if err != nil {
		t.Fatal(err)
	}
	fs := mutate.Extract(img)
	defer fs.Close()
	tr := tar.NewReader(fs)
	for {
		hdr, err := tr.Next()
		if err != nil {
			t.Fatalf("no app/%s/VERSION in %s: %v", component, ref, err)
		}
		if hdr.Name == "app/"+component+"/VERSION" {
			data, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			return string(data)
		}
	}
}

func TestBump(t *testing.T) {
	g := NewWithT(t)
	opts := setup(t)
	before := head(t, opts, "api")
	oldImage := latest(t, opts, "api")

	b, err := Bump(context.Background(), opts, "api", NoBreakage)
	g.Expect(err).NotTo(HaveOccurred())
	commit := head(t, opts, "api")
	g.Expect(b.Component).To(Equal("api"))
	g.Expect(b.Commit).To(Equal(commit.Hash.String()))
	g.Expect(commit.ParentHashes).To(Equal([]plumbing.Hash{before.Hash}))
	g.Expect(commit.Author.Name).To(Equal("Demo Build System"))
	g.Expect(commit.Author.Email).To(Equal("builds@demo.local"))
	g.Expect(commit.Message).To(HavePrefix(b.Message + "\n"))
	g.Expect(b.Message).NotTo(ContainSubstring(MarkerBreaksE2E))
	stats, err := commit.Stats()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(stats).NotTo(BeEmpty(), "the commit changes files")

	g.Expect(b.Image).To(HavePrefix(opts.ComponentRepository("api") + "@sha256:"))
	g.Expect(b.Image).NotTo(Equal(oldImage))
	g.Expect(latest(t, opts, "api")).To(Equal(b.Image))
	config := configOf(t, b.Image)
	g.Expect(config.OS + "/" + config.Architecture).To(Equal("linux/amd64"))
	g.Expect(config.Config.Labels).To(Equal(map[string]string{
		"org.opencontainers.image.source":     "file://" + opts.GitDir("api"),
		"org.opencontainers.image.revision":   b.Commit,
		"org.opencontainers.image.title":      "api",
		"demo.release-controller.dev/message": b.Message,
	}))
	g.Expect(versionFile(t, b.Image, "api")).To(ContainSubstring(b.Commit))

	broken, err := Bump(context.Background(), opts, "api", BreakE2E)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(broken.Message).To(HaveSuffix(MarkerBreaksE2E))
	g.Expect(configOf(t, broken.Image).Config.Labels).To(HaveKeyWithValue(LabelMessage, broken.Message))

	// Every build is an index of the demo's platforms; a MissingPlatform build lacks one.
	g.Expect(platformsOf(t, b.Image)).To(Equal(Platforms))
	wrong, err := Bump(context.Background(), opts, "worker", MissingPlatform)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(platformsOf(t, wrong.Image)).To(Equal([]string{"linux/amd64"}))
	// The next ordinary build repairs it.
	repaired, err := Bump(context.Background(), opts, "worker", NoBreakage)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(platformsOf(t, repaired.Image)).To(Equal(Platforms))

	smoke, err := Bump(context.Background(), opts, "operator", BreakSmoke)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(smoke.Message).To(HaveSuffix(MarkerBreaksSmoke))
	g.Expect(smoke.Message).NotTo(ContainSubstring(MarkerBreaksE2E))

	_, err = Bump(context.Background(), opts, "database", NoBreakage)
	g.Expect(err).To(MatchError(ContainSubstring(`unknown demo component "database"`)))
	_, err = Bump(context.Background(), opts, "api", Breakage("Slow"))
	g.Expect(err).To(MatchError(ContainSubstring(`unknown breakage "Slow"`)))
}

// TestConcurrentBumps bumps one component from two goroutines: the lock keeps the history linear.
func TestConcurrentBumps(t *testing.T) {
	g := NewWithT(t)
	opts := setup(t)
	initial := head(t, opts, "web")
	var wg sync.WaitGroup
	builds := make([]Build, 2)
	errs := make([]error, 2)
	for i := range builds {
		wg.Go(func() { builds[i], errs[i] = Bump(context.Background(), opts, "web", NoBreakage) })
	}
	wg.Wait()
	g.Expect(errs).To(HaveEach(Not(HaveOccurred())))
	g.Expect(builds[0].Commit).NotTo(Equal(builds[1].Commit))

	// Whichever build took the lock second sits on top of the other, and its image is :latest.
	if head(t, opts, "web").Hash.String() != builds[1].Commit {
		builds[0], builds[1] = builds[1], builds[0]
	}
	top := head(t, opts, "web")
	g.Expect(top.Hash.String()).To(Equal(builds[1].Commit))
	middle, err := top.Parent(0)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(middle.Hash.String()).To(Equal(builds[0].Commit))
	g.Expect(middle.ParentHashes).To(Equal([]plumbing.Hash{initial.Hash}))
	g.Expect(latest(t, opts, "web")).To(Equal(builds[1].Image))
}

func TestPickBuild(t *testing.T) {
	// A fixed seed makes the draw, and so the counts, the same on every run.
	rng := rand.New(rand.NewPCG(1, 2))
	counts := map[Breakage]int{}
	components := map[string]int{}
	for range 1000 {
		c, b := pickBuild(rng, "")
		counts[b]++
		components[c]++
	}
	g := NewWithT(t)
	// A component built without a platform, or breaking smoke, is built again next, whole.
	for range 100 {
		c, b := pickBuild(rng, "web")
		g.Expect(c).To(Equal("web"))
		g.Expect(b).To(Equal(NoBreakage))
	}
	g.Expect(components).To(HaveLen(len(Components)))
	g.Expect(counts[BreakE2E]).To(BeNumerically("~", 200, 40))
	g.Expect(counts[MissingPlatform]).To(BeNumerically("~", 100, 30))
	g.Expect(counts[BreakSmoke]).To(BeNumerically("~", 100, 30))
	g.Expect(counts[NoBreakage]).To(BeNumerically("~", 600, 50))
}

// syncBuffer is a log written by the build system's goroutine and read by the test.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func TestRunBuildSystem(t *testing.T) {
	opts := setup(t)
	before := map[string]string{}
	for _, c := range Components {
		before[c] = head(t, opts, c).Hash.String()
	}
	ctx, cancel := context.WithCancel(context.Background())
	var log syncBuffer
	done := make(chan struct{})
	go func() {
		defer close(done)
		RunBuildSystem(ctx, opts, 10*time.Millisecond, &log)
	}()
	NewWithT(t).Eventually(func() int { return strings.Count(log.String(), "\n") }).
		WithTimeout(60 * time.Second).Should(BeNumerically(">=", 2))
	cancel()
	<-done

	g := NewWithT(t)
	lines := strings.Split(strings.TrimSpace(log.String()), "\n")
	changed := 0
	for _, c := range Components {
		if head(t, opts, c).Hash.String() != before[c] {
			changed++
		}
	}
	g.Expect(changed).To(BeNumerically(">=", 1))
	for _, line := range lines {
		g.Expect(line).To(MatchRegexp(`^demo build system: (api|web|worker|operator) [0-9a-f]{7} ".+" .*-> .+@sha256:[0-9a-f]{64}$`))
	}
}
