package changelog

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/devenv/registry"
	"github.com/release-controller/release-controller/internal/registryclient"
	"github.com/release-controller/release-controller/internal/releaseimage"
)

// payloadEnv is an embedded registry to build payload images in, and a registry client that
// counts the manifests it reads.
type payloadEnv struct {
	t         *testing.T
	reg       *registry.Server
	client    *registryclient.Client
	mu        sync.Mutex
	manifests map[string]int // GETs by manifest reference
}

func newPayloadEnv(t *testing.T) *payloadEnv {
	t.Helper()
	reg, err := registry.Start(context.Background(), registry.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = reg.Close() })
	e := &payloadEnv{t: t, reg: reg, manifests: map[string]int{}}
	e.client = registryclient.New(remote.WithTransport(roundTripper(func(req *http.Request) (*http.Response, error) {
		if _, ref, ok := strings.Cut(req.URL.Path, "/manifests/"); ok && req.Method == http.MethodGet {
			e.mu.Lock()
			e.manifests[ref]++
			e.mu.Unlock()
		}
		return remote.DefaultTransport.RoundTrip(req)
	})))
	return e
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// reads returns how many times the manifest of a pull spec by digest was read.
func (e *payloadEnv) reads(pullSpec string) int {
	_, digest, _ := strings.Cut(pullSpec, "@")
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.manifests[digest]
}

// component pushes a small image labelled with a source and revision and returns its pull
// spec by digest.
func (e *payloadEnv) component(name_, source string, revision plumbing.Hash) releaseimage.Component {
	e.t.Helper()
	img, err := random.Image(128, 1)
	if err != nil {
		e.t.Fatal(err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		e.t.Fatal(err)
	}
	cfg = cfg.DeepCopy()
	cfg.Config.Labels = map[string]string{releaseimage.LabelSource: source, releaseimage.LabelRevision: revision.String()}
	if img, err = mutate.ConfigFile(img, cfg); err != nil {
		e.t.Fatal(err)
	}
	ref, err := name.NewTag(e.reg.Addr() + "/product/" + name_ + ":latest")
	if err != nil {
		e.t.Fatal(err)
	}
	if err := remote.Write(ref, img); err != nil {
		e.t.Fatal(err)
	}
	digest, err := img.Digest()
	if err != nil {
		e.t.Fatal(err)
	}
	return releaseimage.Component{Name: name_, Image: ref.Context().Digest(digest.String()).String()}
}

// payload builds a payload image of the components with releaseimage.Build and returns a
// ReleasePayload whose status records it.
func (e *payloadEnv) payload(tag string, components ...releaseimage.Component) *v1alpha1.ReleasePayload {
	e.t.Helper()
	res, err := releaseimage.Build(context.Background(), releaseimage.BuildOptions{
		Tag: tag, Stream: "nightly", Repository: e.reg.Addr() + "/product/release", Components: components,
		Created: time.Date(2026, 11, 22, 9, 30, 0, 0, time.UTC),
	})
	if err != nil {
		e.t.Fatal(err)
	}
	return &v1alpha1.ReleasePayload{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: tag},
		Status:     v1alpha1.ReleasePayloadStatus{PayloadImage: res.Image},
	}
}

func (e *payloadEnv) changeLogs(opts GeneratorOptions) *Payloads {
	e.t.Helper()
	return NewPayloadChangeLogs(NewGenerator(newCache(e.t, RepoCacheOptions{}), opts), e.client, PayloadsOptions{})
}

func shas(ic ImageChange) []string {
	var out []string
	for _, c := range ic.Commits {
		out = append(out, c.SHA)
	}
	return out
}

func TestPayloadChangeLogs(t *testing.T) {
	e := newPayloadEnv(t)
	api := newAPIRepo(t)
	web := newTestRepo(t)
	w1 := web.commit("web one")
	w2 := web.commit("web two (#5)", w1)
	web.setBranch("main", w2)

	shared := e.component("shared", api.url(), api.c2)
	p1 := e.payload("1.0.0", e.component("api", api.url(), api.c1), e.component("web", web.url(), w1), shared)
	p2 := e.payload("1.0.1", e.component("api", api.url(), api.c3), e.component("web", web.url(), w2), shared,
		e.component("new", api.url(), api.c3))

	var computations atomic.Int32
	cls := e.changeLogs(GeneratorOptions{OnCompute: func(Release, Release) { computations.Add(1) }})
	if _, ok := cls.Cached(p1, p2); ok {
		t.Fatal("cached before any computation")
	}
	cl, err := cls.ChangeLog(context.Background(), p1, p2)
	if err != nil {
		t.Fatal(err)
	}
	if cl.From.Name != "1.0.0" || cl.To.Name != "1.0.1" || cl.To.Digest != imageDigest(p2.Status.PayloadImage) ||
		!cl.To.Created.Equal(time.Date(2026, 11, 22, 9, 30, 0, 0, time.UTC)) {
		t.Errorf("releases: from %+v, to %+v", cl.From, cl.To)
	}
	if got := names(cl.NewImages); !slices.Equal(got, []string{"new"}) {
		t.Errorf("new images = %v", got)
	}
	if got := names(cl.UpdatedImages); !slices.Equal(got, []string{"api", "web"}) {
		t.Errorf("updated images = %v", got)
	}
	a := findImage(t, cl.UpdatedImages, "api")
	if want := []string{api.c3.String(), api.m1.String(), api.c2.String()}; a.Error != "" || !slices.Equal(shas(a), want) {
		t.Errorf("api: commits %v, want %v; %+v", shas(a), want, a)
	}
	if a.Commits[1].PullRequest != 12 || a.Commits[1].Title != "Add the feature" {
		t.Errorf("merge commit = %+v", a.Commits[1])
	}
	w := findImage(t, cl.UpdatedImages, "web")
	if !slices.Equal(shas(w), []string{w2.String()}) || w.Commits[0].PullRequest != 5 {
		t.Errorf("web = %+v", w)
	}
	if md := cl.Markdown(); !strings.Contains(md, "# 1.0.1") || !strings.Contains(md, "## Changes from 1.0.0") {
		t.Errorf("markdown:\n%s", md)
	}

	// Cached answers from memory; computing again neither computes nor reads an image.
	cached, ok := cls.Cached(p1, p2)
	if !ok || cached != cl {
		t.Fatalf("Cached = %v, %v; want the computed changelog", cached, ok)
	}
	if again, err := cls.ChangeLog(context.Background(), p1, p2); err != nil || again != cl {
		t.Fatalf("again: %v", err)
	}
	// Another pair with p1 reads only the new image.
	p3 := e.payload("1.0.2", e.component("api", api.url(), api.c3))
	if _, err := cls.ChangeLog(context.Background(), p1, p3); err != nil {
		t.Fatal(err)
	}
	for _, p := range []*v1alpha1.ReleasePayload{p1, p2, p3} {
		if n := e.reads(p.Status.PayloadImage); n != 1 {
			t.Errorf("the image of %s was read %d times, want once", p.Name, n)
		}
	}
	if got := computations.Load(); got != 2 {
		t.Errorf("%d computations for two pairs", got)
	}

	// A payload not built yet.
	pending := &v1alpha1.ReleasePayload{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "1.0.3"}}
	if _, err := cls.ChangeLog(context.Background(), p2, pending); err == nil || err.Error() != "payload 1.0.3 has no image yet" {
		t.Errorf("pending payload: %v", err)
	}
	if _, ok := cls.Cached(p2, pending); ok {
		t.Error("Cached answered for a payload without an image")
	}
	// An image that is gone.
	gone := &v1alpha1.ReleasePayload{ObjectMeta: metav1.ObjectMeta{Name: "1.0.4"},
		Status: v1alpha1.ReleasePayloadStatus{PayloadImage: e.reg.Addr() + "/product/release@sha256:" + strings.Repeat("ab", 32)}}
	if _, err := cls.ChangeLog(context.Background(), p1, gone); err == nil ||
		!strings.Contains(err.Error(), "reading the image of payload 1.0.4") || !strings.Contains(err.Error(), "the image does not exist") {
		t.Errorf("missing image: %v", err)
	}
}

// A history rewritten between two payloads is a note on the component, and an unreachable
// repository an error on its component only; neither fails the changelog.
func TestPayloadChangeLogsForcePushAndUnreachable(t *testing.T) {
	e := newPayloadEnv(t)
	r := newTestRepo(t)
	a1 := r.commit("one")
	a2 := r.commit("two (#1)", a1)
	a3 := r.commit("three (#2)", a2)
	r.setBranch("master", a3)
	missing := "file://" + t.TempDir() + "/does-not-exist"

	p1 := e.payload("1.0.0", e.component("op", r.url(), a2), e.component("lost", missing, a1))
	p2 := e.payload("1.0.1", e.component("op", r.url(), a3), e.component("lost", missing, a2))
	cls := e.changeLogs(GeneratorOptions{})
	cl, err := cls.ChangeLog(context.Background(), p1, p2)
	if err != nil {
		t.Fatal(err)
	}
	if op := findImage(t, cl.UpdatedImages, "op"); !slices.Equal(shas(op), []string{a3.String()}) || op.ForcePushed {
		t.Fatalf("before the force push: %+v", op)
	}
	lost := findImage(t, cl.UpdatedImages, "lost")
	if lost.Error != "the repository could not be fetched (repository not found)" || len(lost.Commits) != 0 {
		t.Errorf("unreachable repository: %+v", lost)
	}
	if md := cl.Markdown(); !strings.Contains(md, "### lost\n\n* Error: the repository could not be fetched (repository not found)") {
		t.Errorf("markdown lacks the repository error:\n%s", md)
	}
	if _, ok := cls.Cached(p1, p2); ok {
		t.Error("a changelog with an unreachable repository was cached; it may work later")
	}

	// Force push: master is now a2 <- b3 <- b4, and a3 (in p2) is on no branch.
	b3 := r.commit("rewritten three (#3)", a2)
	b4 := r.commit("four (#4)", b3)
	r.setBranch("master", b4)
	p3 := e.payload("1.0.2", e.component("op", r.url(), b4))
	cl, err = cls.ChangeLog(context.Background(), p2, p3)
	if err != nil {
		t.Fatal(err)
	}
	op := findImage(t, cl.UpdatedImages, "op")
	if op.Error != "" || !op.ForcePushed || !strings.Contains(op.Note, "history rewritten (force push)") ||
		!slices.Equal(shas(op), []string{b4.String(), b3.String()}) {
		t.Fatalf("force push: %+v", op)
	}
	if md := cl.Markdown(); !strings.Contains(md, "Note: history rewritten (force push)") {
		t.Errorf("markdown lacks the note:\n%s", md)
	}
	if _, ok := cls.Cached(p2, p3); !ok {
		t.Error("a force push is no transient error; the changelog should be cached")
	}
}

func TestPayloadChangeLogsComputeOncePerPair(t *testing.T) {
	e := newPayloadEnv(t)
	api := newAPIRepo(t)
	p1 := e.payload("1.0.0", e.component("api", api.url(), api.c1))
	p2 := e.payload("1.0.1", e.component("api", api.url(), api.c3))

	var computations atomic.Int32
	started, gate := make(chan struct{}, 10), make(chan struct{})
	cls := e.changeLogs(GeneratorOptions{OnCompute: func(Release, Release) {
		computations.Add(1)
		started <- struct{}{}
		<-gate
	}})
	const n = 2
	results := make([]*ChangeLog, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errs[i] = cls.ChangeLog(context.Background(), p1, p2)
		}()
	}
	<-started
	time.Sleep(50 * time.Millisecond) // let the other call reach the computation under way
	close(gate)
	wg.Wait()
	for i := range n {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
	}
	if got := computations.Load(); got != 1 {
		t.Fatalf("%d computations for one pair, want 1", got)
	}
	if results[0] != results[1] || len(findImage(t, results[0].UpdatedImages, "api").Commits) != 3 {
		t.Fatalf("results = %+v, %+v", results[0], results[1])
	}
	for _, p := range []*v1alpha1.ReleasePayload{p1, p2} {
		if got := e.reads(p.Status.PayloadImage); got != 1 {
			t.Errorf("the image of %s was read %d times, want once", p.Name, got)
		}
	}
}

func TestReadCredentials(t *testing.T) {
	if creds, err := ReadCredentials(context.Background(), nil, "", nil); err != nil || creds != nil {
		t.Fatalf("no secret: %v %v", creds, err)
	}
	for _, bad := range []string{"name-only", "/name", "ns/", "ns/a/b"} {
		if _, err := ReadCredentials(context.Background(), nil, bad, []string{"github.com"}); err == nil ||
			!strings.Contains(err.Error(), "must be NAMESPACE/NAME") {
			t.Errorf("%q: %v", bad, err)
		}
	}
	reader := fake.NewClientBuilder().WithObjects(
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "git"}, Data: map[string][]byte{SecretKeyToken: []byte("s3cret\n")}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "empty"}},
	).Build()
	creds, err := ReadCredentials(context.Background(), reader, "ns/git", []string{"github.com", "https://git.example.com/org/"})
	if err != nil {
		t.Fatal(err)
	}
	for url, want := range map[string]bool{
		"https://github.com/org/repo": true, "git@github.com:org/repo.git": true, "https://git.example.com/org/x": true,
		"https://git.example.com/other/x": false, "https://evil.example.com/org/repo": false, "file:///tmp/repo": false,
	} {
		c, ok := creds.For(url)
		if ok != want || (ok && c.Token != "s3cret") {
			t.Errorf("credential for %s: %+v %v, want %v", url, c, ok, want)
		}
	}
	for secret, want := range map[string]string{
		"ns/missing": `reading the git credentials secret ns/missing: secrets "missing" not found`,
		"ns/empty":   `git credentials secret ns/empty: secret has neither "token" nor "ssh-privatekey"`,
	} {
		if _, err := ReadCredentials(context.Background(), reader, secret, []string{"github.com"}); err == nil || err.Error() != want {
			t.Errorf("%s: %v, want %s", secret, err, want)
		}
	}
}

// Setup refuses a folder holding anything but its own clones: a RepoCache deletes the other
// folders of its directory.
func TestSetupClaimsOnlyItsOwnFolder(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cache")
	for range 2 { // new, then marked as a cache
		if _, err := Setup(context.Background(), nil, Config{CacheDir: dir}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, CacheMarker)); err != nil {
		t.Fatalf("no marker: %v", err)
	}
	empty := t.TempDir()
	if _, err := Setup(context.Background(), nil, Config{CacheDir: empty}); err != nil {
		t.Fatalf("an empty folder: %v", err)
	}
	busy := t.TempDir()
	if err := os.Mkdir(filepath.Join(busy, "etcd"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := Setup(context.Background(), nil, Config{CacheDir: busy}); err == nil || !strings.Contains(err.Error(), "the folder holds other files") {
		t.Fatalf("a busy folder: %v", err)
	}
	if _, err := os.Stat(filepath.Join(busy, "etcd")); err != nil {
		t.Fatalf("the busy folder lost its content: %v", err)
	}
	if _, err := Setup(context.Background(), nil, Config{}); err == nil {
		t.Fatal("no folder accepted")
	}
	if _, err := Setup(context.Background(), nil, Config{CacheDir: dir, CredentialsSecret: "ns/git", CredentialsHosts: []string{"github.com"}}); err == nil ||
		!strings.Contains(err.Error(), "no cluster to read it from") {
		t.Fatalf("a secret without a cluster: %v", err)
	}
}

// A component's source label cannot make the server read its own disk or reach a host of its
// network: Setup's default list (https only) refuses file:// and http:// before anything is
// fetched, and the changelog says why; a folder the list names is read.
func TestSetupFetchesOnlyAllowedSources(t *testing.T) {
	e := newPayloadEnv(t)
	var requests atomic.Int32
	internal := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		requests.Add(1)
		http.NotFound(w, nil)
	}))
	defer internal.Close()
	allowed := newTestRepo(t)
	a1 := allowed.commit("one")
	a2 := allowed.commit("two", a1)
	allowed.setBranch("main", a2)
	r1, r2 := plumbing.NewHash(strings.Repeat("1", 40)), plumbing.NewHash(strings.Repeat("2", 40))
	hostile := map[string]string{
		"etc":      "file:///etc",
		"path":     "/etc",
		"internal": internal.URL + "/org/repo.git",
		"scp":      strings.TrimPrefix(internal.URL, "http://") + ":org/repo.git",
	}
	var from, to []releaseimage.Component
	for name, source := range hostile {
		from = append(from, e.component(name, source, r1))
		to = append(to, e.component(name, source, r2))
	}
	p1 := e.payload("1.0.0", append(from, e.component("allowed", allowed.url(), a1))...)
	p2 := e.payload("1.0.1", append(to, e.component("allowed", allowed.url(), a2))...)

	for _, tc := range []struct {
		name  string
		allow []string
	}{{"default", nil}, {"the repository's folder", []string{"https://", "file://" + allowed.dir}}} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "cache")
			cls, err := Setup(context.Background(), nil, Config{CacheDir: dir, Registry: e.client, SourceAllow: tc.allow})
			if err != nil {
				t.Fatal(err)
			}
			cl, err := cls.ChangeLog(context.Background(), p1, p2)
			if err != nil {
				t.Fatal(err)
			}
			list := "https://"
			if tc.allow != nil {
				list = strings.Join(tc.allow, ",")
			}
			for name, source := range hostile {
				ic := findImage(t, cl.UpdatedImages, name)
				want := "not fetched: " + source + " is not an allowed git source (--git-source-allow: " + list + ")"
				if ic.Error != want || len(ic.Commits) != 0 {
					t.Errorf("%s: error %q, %d commits; want %q", name, ic.Error, len(ic.Commits), want)
				}
				if md := cl.Markdown(); !strings.Contains(md, want) {
					t.Errorf("the markdown does not say why %s has no commits:\n%s", name, md)
				}
			}
			ic := findImage(t, cl.UpdatedImages, "allowed")
			if tc.allow == nil && !strings.HasPrefix(ic.Error, "not fetched: file://") {
				t.Errorf("allowed repository under the default list: %+v", ic)
			}
			if tc.allow != nil && (ic.Error != "" || !slices.Equal(shas(ic), []string{a2.String()})) {
				t.Errorf("allowed repository: %+v", ic)
			}
			clones, err := os.ReadDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, c := range clones {
				if c.Name() != CacheMarker {
					names = append(names, c.Name())
				}
			}
			if wantClones := map[bool]int{true: 0, false: 1}[tc.allow == nil]; len(names) != wantClones {
				t.Errorf("clones %v, want %d", names, wantClones)
			}
		})
	}
	if n := requests.Load(); n != 0 {
		t.Errorf("the internal server got %d requests", n)
	}
	// A list that names http:// lets the source through, yet the server, on 127.0.0.1, is
	// not dialed: loopback is refused unless AllowCIDRs names it.
	cls, err := Setup(context.Background(), nil, Config{CacheDir: t.TempDir(), Registry: e.client, SourceAllow: []string{"http://"}})
	if err != nil {
		t.Fatal(err)
	}
	cl, err := cls.ChangeLog(context.Background(), p1, p2)
	if err != nil {
		t.Fatal(err)
	}
	if ic := findImage(t, cl.UpdatedImages, "internal"); ic.Error != "the repository could not be fetched (refused: address is loopback)" {
		t.Errorf("an http source on 127.0.0.1: %+v", ic)
	}
	if n := requests.Load(); n != 0 {
		t.Errorf("the internal server got %d requests", n)
	}
	// The count means something: with the opt-in the server is reached.
	cls, err = Setup(context.Background(), nil, Config{CacheDir: t.TempDir(), Registry: e.client, SourceAllow: []string{"http://"}, AllowCIDRs: []string{"127.0.0.1/32"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cls.ChangeLog(context.Background(), p1, p2); err != nil {
		t.Fatal(err)
	}
	if requests.Load() == 0 {
		t.Error("http:// and 127.0.0.1 allowed, yet the server got no request")
	}
	if _, err := Setup(context.Background(), nil, Config{CacheDir: t.TempDir(), SourceAllow: []string{"github.com/org"}}); err == nil ||
		!strings.Contains(err.Error(), `git source "github.com/org"`) {
		t.Errorf("a bad entry: %v", err)
	}
}

// The payload images' contents are kept by digest, CacheSize at most, the least recently used
// going first; a release without a digest is not kept.
func TestPayloadsKeepTheRecentImages(t *testing.T) {
	p := NewPayloadChangeLogs(nil, nil, PayloadsOptions{CacheSize: 2})
	p.add(Release{Name: "a", Digest: "sha256:a"})
	p.add(Release{Name: "b", Digest: "sha256:b"})
	p.add(Release{Name: "no digest"})
	if r, ok := p.cached("sha256:a"); !ok || r.Name != "a" { // a is now the most recent
		t.Fatalf("a: %+v, %v", r, ok)
	}
	p.add(Release{Name: "c", Digest: "sha256:c"})
	for digest, want := range map[string]bool{"sha256:a": true, "sha256:b": false, "sha256:c": true, "": false} {
		if _, ok := p.cached(digest); ok != want {
			t.Errorf("%q kept: %v, want %v", digest, ok, want)
		}
	}
}
