package layout

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// devStandIns are the controllers dev runs in place of Kubernetes' own (the job runner, the
// demo's rollout writer): they are conveniences of `make run`, outside the controller's
// failure path, and never run by `release-controller controller`.
const devStandIns = "internal/devenv/"

// TestEveryControllerWalksItsFailurePoints: every controller package reports its failures through
// the one failure path (a call of eventlog's Finish) and has a test, TestFailurePoints, that
// makes each of its steps fail in turn.
func TestEveryControllerWalksItsFailurePoints(t *testing.T) {
	fset := token.NewFileSet()
	for path := range controllerSet(t) {
		if strings.HasPrefix(path, devStandIns) {
			continue
		}
		dir := filepath.Join(root(t), path)
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		var finishes, walks bool
		for _, e := range entries {
			name := e.Name()
			if !strings.HasSuffix(name, ".go") {
				continue
			}
			f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			if strings.HasSuffix(name, "_test.go") {
				walks = walks || definesFunc(f, "TestFailurePoints")
			} else {
				finishes = finishes || callsMethod(f, "Finish")
			}
		}
		if !finishes {
			t.Errorf("the controller %s reports no failure through eventlog's Finish (the one failure path)", path)
		}
		if !walks {
			t.Errorf("the controller %s has no TestFailurePoints walking its failure points", path)
		}
	}
}

func definesFunc(f *ast.File, name string) bool {
	for _, d := range f.Decls {
		if fn, ok := d.(*ast.FuncDecl); ok && fn.Recv == nil && fn.Name.Name == name {
			return true
		}
	}
	return false
}

// callsMethod reports whether f calls x.name(…) for some x.
func callsMethod(f *ast.File, name string) bool {
	found := false
	ast.Inspect(f, func(n ast.Node) bool {
		if call, ok := n.(*ast.CallExpr); ok {
			if sel, ok := call.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == name {
				found = true
			}
		}
		return !found
	})
	return found
}
