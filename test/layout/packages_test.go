package layout

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

const module = "github.com/release-controller/release-controller"

// pkg is a package of the module as go list sees it with the default build tags: its path
// without the module prefix ("" for the root), its folder, its files and the module's
// packages it depends on (test files left out).
type pkg struct {
	Path string
	Dir  string
	// Files are the non-test Go files, those the build tags leave out included.
	Files []string
	Deps  []string
}

// moduleRoot is the folder of the module's go.mod.
func moduleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == "/dev/null" {
		return "", errors.New("not inside the module: go env GOMOD names no go.mod")
	}
	return filepath.Dir(gomod), nil
}

var listed = sync.OnceValues(func() ([]pkg, error) {
	root, err := moduleRoot()
	if err != nil {
		return nil, err
	}
	// -e: a package another change has broken for a moment is still listed.
	cmd := exec.Command("go", "list", "-e", "-json=ImportPath,Dir,GoFiles,CgoFiles,IgnoredGoFiles,Deps", "./...")
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list: %w\n%s", err, stderr.String())
	}
	var pkgs []pkg
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p struct {
			ImportPath, Dir                   string
			GoFiles, CgoFiles, IgnoredGoFiles []string
			Deps                              []string
		}
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, err
		}
		path, ok := trimModule(p.ImportPath)
		if !ok {
			continue
		}
		q := pkg{Path: path, Dir: p.Dir}
		for _, f := range append(append(p.GoFiles, p.CgoFiles...), p.IgnoredGoFiles...) {
			if !strings.HasSuffix(f, "_test.go") {
				q.Files = append(q.Files, filepath.Join(p.Dir, f))
			}
		}
		for _, d := range p.Deps {
			if rest, ok := trimModule(d); ok {
				q.Deps = append(q.Deps, rest)
			}
		}
		pkgs = append(pkgs, q)
	}
	if len(pkgs) == 0 {
		return nil, errors.New("go list ./... found no package of " + module)
	}
	return pkgs, nil
})

// trimModule returns an import path of the module without the module's prefix.
func trimModule(importPath string) (string, bool) {
	if importPath == module {
		return "", true
	}
	rest, ok := strings.CutPrefix(importPath, module+"/")
	return rest, ok
}

// packages lists every package of the module (go list ./...).
func packages(t *testing.T) []pkg {
	t.Helper()
	pkgs, err := listed()
	if err != nil {
		t.Fatal(err)
	}
	return pkgs
}

// root is the module's folder.
func root(t *testing.T) string {
	t.Helper()
	dir, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	return dir
}
