//go:build !unit

package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/changelog"
	"github.com/release-controller/release-controller/internal/releaseimage"
	"github.com/release-controller/release-controller/internal/server/web"
)

// The changelog the api serves in BenchmarkShippedAPI: two accepted payloads of one stream
// whose images, built with releaseimage.Build into the embedded registry, carry components
// labelled with a local git repository (file://) at two revisions.

// builtPayload is a payload with a payload image: its components and the image, by digest.
type builtPayload struct {
	repository string
	components []v1alpha1.PinnedComponent
	image      string
}

// changeLogPair picks the payloads of a stream (indexes into its perStream payloads, oldest
// first) to build images for: the newest one whose previous payload is accepted, and that
// one, so that both are accepted and the newer one's changelog is against the older one.
// createReadPayload rejects every payload whose index is 3 modulo 7.
func changeLogPair(b *testing.B, perStream int) (older, newer int) {
	b.Helper()
	accepted := func(i int) bool { return i%7 != 3 }
	for newer = perStream - 1; newer >= 1; newer-- {
		if accepted(newer) && accepted(newer-1) {
			return newer - 1, newer
		}
	}
	b.Fatalf("a changelog needs two accepted payloads in a stream; there are %d payloads per stream", perStream)
	return 0, 0
}

// sourceRepo is a bare git repository written with go-git's object API, which the api reads
// through file://.
type sourceRepo struct {
	b     *testing.B
	r     *git.Repository
	dir   string
	clock time.Time
}

func newSourceRepo(b *testing.B, dir string) *sourceRepo {
	b.Helper()
	r, err := git.PlainInit(dir, true)
	if err != nil {
		b.Fatal(err)
	}
	return &sourceRepo{b: b, r: r, dir: dir, clock: time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC)}
}

func (s *sourceRepo) url() string { return "file://" + s.dir }

// commit writes a commit of one file holding msg, an hour after the previous one.
func (s *sourceRepo) commit(msg string, parents ...plumbing.Hash) plumbing.Hash {
	s.b.Helper()
	put := func(o interface {
		Encode(plumbing.EncodedObject) error
	}) plumbing.Hash {
		obj := s.r.Storer.NewEncodedObject()
		if err := o.Encode(obj); err != nil {
			s.b.Fatal(err)
		}
		h, err := s.r.Storer.SetEncodedObject(obj)
		if err != nil {
			s.b.Fatal(err)
		}
		return h
	}
	blob := s.r.Storer.NewEncodedObject()
	blob.SetType(plumbing.BlobObject)
	w, err := blob.Writer()
	if err != nil {
		s.b.Fatal(err)
	}
	_, _ = io.WriteString(w, msg)
	_ = w.Close()
	blobHash, err := s.r.Storer.SetEncodedObject(blob)
	if err != nil {
		s.b.Fatal(err)
	}
	tree := put(&object.Tree{Entries: []object.TreeEntry{{Name: "CHANGES", Mode: filemode.Regular, Hash: blobHash}}})
	s.clock = s.clock.Add(time.Hour)
	sig := object.Signature{Name: "Jane Dev", Email: "jane@example.com", When: s.clock}
	return put(&object.Commit{Author: sig, Committer: sig, Message: msg, TreeHash: tree, ParentHashes: parents})
}

func (s *sourceRepo) setBranch(branch string, h plumbing.Hash) {
	s.b.Helper()
	if err := s.r.Storer.SetReference(plumbing.NewHashReference(plumbing.NewBranchReferenceName(branch), h)); err != nil {
		s.b.Fatal(err)
	}
}

// changeLogFixture is what the changelog of the benchmark is computed from, and what it
// must list.
type changeLogFixture struct {
	older, newer builtPayload
	// apiCommits are the commits of the component "api" between the two payloads, newest
	// first: a direct fix, a merged pull request and a squashed one.
	apiCommits []string
}

// sourceRepoDir is the folder of buildChangeLogPayloads' repository in its dir.
const sourceRepoDir = "source.git"

// buildChangeLogPayloads writes a repository with a few commits in dir, pushes component
// images labelled with it to the registry at registryAddr, and builds the payload images of
// the tags olderTag and newerTag of the stream with releaseimage.Build: "api" moves over
// three commits, "web" over two, "tests" is the same image in both.
func buildChangeLogPayloads(b *testing.B, registryAddr, dir, streamName, olderTag, newerTag string) changeLogFixture {
	b.Helper()
	repo := newSourceRepo(b, filepath.Join(dir, sourceRepoDir))
	c1 := repo.commit("Initial commit\n")
	c2 := repo.commit("Add the payload page (#12)\n\nFixes OCPBUGS-1234.\n", c1)
	f1 := repo.commit("Render the changelog\n", c2)
	repo.setBranch("changelog", f1)
	m1 := repo.commit("Merge pull request #34 from dev/changelog\n\nAdd the changelog to the payload page\n\nImplements OCPBUGS-5678\n", c2, f1)
	c3 := repo.commit("OCPBUGS-910: fix the stream page\n", m1)
	repo.setBranch("master", c3)

	push := func(component string, revision plumbing.Hash) v1alpha1.PinnedComponent {
		b.Helper()
		image, err := pushSourceImage(registryAddr, component, repo.url(), revision.String())
		if err != nil {
			b.Fatal(err)
		}
		return v1alpha1.PinnedComponent{Name: component, Image: image}
	}
	tests := push("tests", c2)
	repository := registryAddr + "/bench/release"
	build := func(tag string, created time.Time, previous []string, components ...v1alpha1.PinnedComponent) builtPayload {
		b.Helper()
		opts := releaseimage.BuildOptions{Tag: tag, Stream: streamName, Repository: repository, Previous: previous, Created: created}
		for _, c := range components {
			opts.Components = append(opts.Components, releaseimage.Component{Name: c.Name, Image: c.Image})
		}
		res, err := releaseimage.Build(context.Background(), opts)
		if err != nil {
			b.Fatalf("building the payload image of %s: %v", tag, err)
		}
		return builtPayload{repository: repository, components: components, image: res.Image}
	}
	created := time.Date(2026, 11, 22, 9, 30, 0, 0, time.UTC)
	return changeLogFixture{
		older:      build(olderTag, created, nil, push("api", c1), push("web", c2), tests),
		newer:      build(newerTag, created.Add(time.Hour), []string{olderTag}, push("api", c3), push("web", c3), tests),
		apiCommits: []string{c3.String(), m1.String(), c2.String()},
	}
}

// pushSourceImage pushes a single-layer image of component labelled with its source and
// revision, as a CI system would, and returns it pinned by digest.
func pushSourceImage(registryAddr, component, source, revision string) (string, error) {
	layer, err := versionLayer(component, revision+"\n")
	if err != nil {
		return "", err
	}
	img, err := releaseimage.SingleLayerImage(layer, releaseimage.SingleLayerConfig{
		Created: time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC), CreatedBy: "bench", OS: "linux", Architecture: "amd64",
		Labels: map[string]string{releaseimage.LabelSource: source, releaseimage.LabelRevision: revision},
	})
	if err != nil {
		return "", err
	}
	ref, err := name.NewTag(registryAddr + "/bench/" + component + ":" + revision[:12])
	if err != nil {
		return "", err
	}
	if err := remote.Write(ref, img); err != nil {
		return "", fmt.Errorf("pushing %s: %w", ref, err)
	}
	digest, err := img.Digest()
	if err != nil {
		return "", err
	}
	return ref.Context().Digest(digest.String()).String(), nil
}

// warmChangeLog asks the api for release info of the newer payload until it carries the
// changelog (the first answer may come without it, when computing took longer than the
// server waits), checks what the changelog lists, and returns how long that took.
func warmChangeLog(b *testing.B, p *process, client *http.Client, base, streamName, newerTag string, f changeLogFixture) time.Duration {
	b.Helper()
	path := base + "/api/v1/releasestream/" + url.PathEscape(streamName) + "/release/" + url.PathEscape(newerTag)
	start := time.Now()
	limit := start.Add(5 * time.Minute)
	if d := deadline(); d.Before(limit) {
		limit = d
	}
	for {
		p.checkAlive(b)
		var info struct {
			ChangeLog     []byte                  `json:"changeLog"`
			ChangeLogJSON changelog.JSONChangeLog `json:"changeLogJson"`
		}
		status, err := getJSON(client, path, &info)
		if err != nil || status != http.StatusOK {
			b.Fatalf("GET %s: %d %v; the end of the api log:\n%s", path, status, err, p.Tail(20))
		}
		if len(info.ChangeLog) > 0 {
			took := time.Since(start)
			checkChangeLog(b, p, info.ChangeLogJSON, f)
			return took
		}
		if time.Now().After(limit) {
			b.Fatalf("release info of %s carried no changelog within %s; the end of the api log:\n%s", newerTag, limit.Sub(start).Round(time.Second), p.Tail(40))
		}
		// The server waits for the computation before it answers without the changelog,
		// so asking again at once does not spin while it runs; after a failure (the
		// changelog is then not cached) it is computed again.
		time.Sleep(100 * time.Millisecond)
	}
}

// checkChangeLog fails b unless the changelog lists what the fixture changed.
func checkChangeLog(b *testing.B, p *process, cl changelog.JSONChangeLog, f changeLogFixture) {
	b.Helper()
	var api *changelog.JSONImage
	var updated []string
	for i, img := range cl.UpdatedImages {
		updated = append(updated, img.Name)
		if img.Error != "" {
			b.Fatalf("the changelog of %s could not read %s: %s; the end of the api log:\n%s", cl.To.Name, img.Name, img.Error, p.Tail(20))
		}
		if img.Name == "api" {
			api = &cl.UpdatedImages[i]
		}
	}
	if !slices.Equal(updated, []string{"api", "web"}) || api == nil {
		b.Fatalf("the changelog lists the updated images %v, want api and web", updated)
	}
	var shas []string
	for _, c := range api.Commits {
		shas = append(shas, c.SHA)
	}
	if !slices.Equal(shas, f.apiCommits) {
		b.Fatalf("the changelog lists the commits %v of api, want %v", shas, f.apiCommits)
	}
}

// checkChangeLogPage fails b unless the payload page at path renders the changelog at once.
func checkChangeLogPage(b *testing.B, client *http.Client, path string) {
	b.Helper()
	resp, err := client.Get(path)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		b.Fatalf("GET %s: %s %v", path, resp.Status, err)
	}
	page := string(body)
	if strings.Contains(page, web.LoadingChangeLog) || !strings.Contains(page, "Add the changelog to the payload page") {
		b.Fatalf("the page %s does not show the changelog at once:\n%.4000s", path, page)
	}
}

// getJSON GETs url and decodes the answer into v when it is 200.
func getJSON(client *http.Client, url string, v any) (int, error) {
	resp, err := client.Get(url)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, err = io.Copy(io.Discard, resp.Body)
		return resp.StatusCode, err
	}
	return resp.StatusCode, json.NewDecoder(resp.Body).Decode(v)
}
