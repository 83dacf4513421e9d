// Package layout checks that the map matches the territory. The arrows between the packages
// mean what README's Layout says: the controllers import no HTTP package, nor does a package
// that runs them unless it puts both sides together through internal/server/assemble (the
// binary, dev); the read side (the HTTP server and everything under internal/server) imports no
// controller. Libraries both use — the release log's writer, the job contract, the upgrade
// graph's format, conditions — sit apart from either.
//
// A controller is found by rule, not by a list: a package whose non-test files register a
// reconciler with a manager (controllers_test.go). README's Layout names every package of the module
// and no other, and its Controllers group is exactly the packages the rule finds (readme_test.go).
package layout

import (
	"slices"
	"strings"
	"testing"
)

// isHTTP reports whether a package is the HTTP side.
func isHTTP(path string) bool {
	return path == "internal/server" || strings.HasPrefix(path, "internal/server/")
}

// assemble is where the HTTP side is put together: a package that imports it may hold both
// sides (the binary's commands, dev).
const assemble = "internal/server/assemble"

func TestControllersAreFound(t *testing.T) {
	controllers := controllerSet(t)
	// The rule must keep finding the controllers everyone knows are there.
	for _, want := range []string{"internal/stream", "internal/payload"} {
		if !controllers[want] {
			t.Errorf("the rule does not find the controller %s: it registers no reconciler any more, or the rule broke", want)
		}
	}
}

func TestControllersImportNoHTTPPackage(t *testing.T) {
	pkgs := packages(t)
	controllers := controllerSet(t)
	for _, p := range pkgs {
		if !controllers[p.Path] {
			continue
		}
		for _, d := range p.Deps {
			if isHTTP(d) {
				t.Errorf("the controller package %s imports the HTTP package %s", p.Path, d)
			}
		}
	}
}

// TestWhatRunsControllersImportsNoHTTPPackage: a package that imports a controller (the
// manager) stays on the controllers' side, unless it puts both sides together through
// internal/server/assemble.
func TestWhatRunsControllersImportsNoHTTPPackage(t *testing.T) {
	pkgs := packages(t)
	controllers := controllerSet(t)
	for _, p := range pkgs {
		if controllers[p.Path] || isHTTP(p.Path) || slices.Contains(p.Deps, assemble) {
			continue
		}
		runs := slices.IndexFunc(p.Deps, func(d string) bool { return controllers[d] })
		if runs < 0 {
			continue
		}
		for _, d := range p.Deps {
			if isHTTP(d) {
				t.Errorf("%s imports the controller %s and the HTTP package %s without %s: the two sides meet only where the server is assembled",
					p.Path, p.Deps[runs], d, assemble)
			}
		}
	}
}

func TestReadSideImportsNoController(t *testing.T) {
	pkgs := packages(t)
	controllers := controllerSet(t)
	found := 0
	for _, p := range pkgs {
		if !isHTTP(p.Path) {
			continue
		}
		found++
		for _, d := range p.Deps {
			if controllers[d] {
				t.Errorf("the read-side package %s imports the controller package %s", p.Path, d)
			}
		}
	}
	if found == 0 {
		t.Fatal("no package under internal/server")
	}
}
