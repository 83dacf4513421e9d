//go:build !unit

package demo

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/release-controller/release-controller/internal/devenv/registry"
	"github.com/release-controller/release-controller/internal/registryclient"
	"github.com/release-controller/release-controller/internal/testenv"
)

var (
	// env is the API server the tests share; each test sets its demo up in its own namespace.
	env *testenv.Env
	// reg is the registry the tests share; a demo's images live under its namespace.
	reg *registry.Server
)

func TestMain(m *testing.M) {
	// Checks run without their pause, so tests do not wait for nothing.
	CheckPause = 0
	testenv.Main(m, &env, func(*testenv.Env) (func(), error) {
		dir, err := os.MkdirTemp("", "demo-registry-")
		if err != nil {
			return nil, err
		}
		if reg, err = registry.Start(context.Background(), registry.Options{Dir: dir}); err != nil {
			return nil, err
		}
		return func() {
			_ = reg.Close()
			_ = os.RemoveAll(dir)
		}, nil
	})
}

// options is a demo of its own for the test: its own directory and namespace. The namespace
// gets a random suffix because it also names the registry folder, which outlives a test when
// tests run more than once (-count).
func options(t *testing.T) Options {
	t.Helper()
	ns := fmt.Sprintf("demo-%s-%05x", strings.ToLower(strings.ReplaceAll(t.Name(), "/", "-")), rand.IntN(1<<20))
	return Options{Dir: t.TempDir(), Registry: reg.Addr(), Namespace: ns}
}

// setup sets the test's demo up.
func setup(t *testing.T) Options {
	t.Helper()
	opts := options(t)
	if err := Setup(context.Background(), env.Client, opts); err != nil {
		t.Fatalf("Setup: %v", err)
	}
	return opts
}

// resolve returns ref by digest, or "" when it does not exist.
func resolve(t *testing.T, ref string) string {
	t.Helper()
	digest, err := registryclient.New().Resolve(context.Background(), ref)
	if registryclient.IsNotFound(err) {
		return ""
	}
	if err != nil {
		t.Fatal(err)
	}
	return digest
}

// latest returns the component's :latest by digest.
func latest(t *testing.T, opts Options, component string) string {
	t.Helper()
	return resolve(t, opts.ComponentRepository(component)+":latest")
}

// configOf reads the configuration of an image.
func configOf(t *testing.T, ref string) *v1.ConfigFile {
	t.Helper()
	r, err := name.ParseReference(ref)
	if err != nil {
		t.Fatal(err)
	}
	img, err := remote.Image(r)
	if err != nil {
		t.Fatal(err)
	}
	config, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	return config
}

// head returns the newest commit of the component's repository.
func head(t *testing.T, opts Options, component string) *object.Commit {
	t.Helper()
	repo, err := git.PlainOpen(opts.GitDir(component))
	if err != nil {
		t.Fatal(err)
	}
	ref, err := repo.Head()
	if err != nil {
		t.Fatal(err)
	}
	commit, err := repo.CommitObject(ref.Hash())
	if err != nil {
		t.Fatal(err)
	}
	return commit
}
