// Package layout checks that the arrows between the packages mean what the layout says
// (README, Layout): the controllers import no HTTP package, and the read side (the HTTP
// server and everything under internal/server) imports no controller. Libraries both use —
// the release log's writer, the job contract, the upgrade graph's format, conditions — sit
// apart from either.
package layout

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/release-controller/release-controller/internal/testenv"
)

const module = "github.com/release-controller/release-controller/"

// controllers are the packages that reconcile objects.
var controllers = []string{
	"internal/stream",
	"internal/payload",
	"internal/verify",
	"internal/jobcache",
	"internal/audit",
	"internal/jira",
	"internal/pipeline",
	"internal/releaselog/logcontroller",
	"internal/manager",
}

// isHTTP reports whether a package is the HTTP side.
func isHTTP(path string) bool {
	return path == "internal/server" || strings.HasPrefix(path, "internal/server/")
}

type pkg struct {
	ImportPath string
	Deps       []string
}

// list runs go list -deps over patterns and returns each package of this module (without the
// module prefix) with the module's packages it depends on, test files left out.
func list(t *testing.T, patterns ...string) map[string][]string {
	t.Helper()
	root, err := testenv.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", append([]string{"list", "-json=ImportPath,Deps"}, patterns...)...)
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	pkgs := map[string][]string{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p pkg
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		var deps []string
		for _, d := range p.Deps {
			if rest, ok := strings.CutPrefix(d, module); ok {
				deps = append(deps, rest)
			}
		}
		pkgs[strings.TrimPrefix(p.ImportPath, module)] = deps
	}
	return pkgs
}

func TestControllersImportNoHTTPPackage(t *testing.T) {
	pkgs := list(t, "./internal/...")
	for _, c := range controllers {
		deps, ok := pkgs[c]
		if !ok {
			t.Errorf("no package %s: update the list of controllers", c)
			continue
		}
		for _, d := range deps {
			if isHTTP(d) {
				t.Errorf("the controller package %s imports the HTTP package %s", c, d)
			}
		}
	}
}

func TestReadSideImportsNoController(t *testing.T) {
	pkgs := list(t, "./internal/...")
	found := 0
	for p, deps := range pkgs {
		if !isHTTP(p) {
			continue
		}
		found++
		for _, d := range deps {
			if slices.Contains(controllers, d) {
				t.Errorf("the read-side package %s imports the controller package %s", p, d)
			}
		}
	}
	if found == 0 {
		t.Fatal("no package under internal/server")
	}
}
