package layout

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"strconv"
	"sync"
	"testing"
)

// The controller-runtime packages a reconciler is registered through, with their package
// names (what a file calls them when it imports them without a name of its own).
const (
	ctrlRuntime  = "sigs.k8s.io/controller-runtime"
	ctrlBuilder  = "sigs.k8s.io/controller-runtime/pkg/builder"
	ctrlRequests = "sigs.k8s.io/controller-runtime/pkg/reconcile"
)

var defaultNames = map[string]string{
	"context":    "context",
	ctrlRuntime:  "controllerruntime",
	ctrlBuilder:  "builder",
	ctrlRequests: "reconcile",
}

// registrations are the functions that start a controller's registration with a manager.
var registrations = map[string][]string{
	ctrlRuntime: {"NewControllerManagedBy"},
	ctrlBuilder: {"ControllerManagedBy", "TypedControllerManagedBy"},
}

// registersReconciler reports whether a Go file registers a reconciler: it calls
// ctrl.NewControllerManagedBy (or builder.ControllerManagedBy), or it defines a method
// Reconcile(context.Context, ctrl.Request), the reconcile.Reconciler interface.
// src is the file's text; nil reads it from path.
func registersReconciler(fset *token.FileSet, path string, src any) (bool, error) {
	f, err := parser.ParseFile(fset, path, src, parser.SkipObjectResolution)
	if err != nil {
		return false, err
	}
	imports := map[string]string{} // name in the file -> import path
	for _, spec := range f.Imports {
		p, err := strconv.Unquote(spec.Path.Value)
		if err != nil {
			return false, err
		}
		name, known := defaultNames[p]
		if spec.Name != nil {
			name, known = spec.Name.Name, true
		}
		if known {
			imports[name] = p
		}
	}
	// qualified reports the import path and name of a selector pkg.Name on an imported package.
	qualified := func(e ast.Expr) (string, string, bool) {
		for {
			switch x := e.(type) {
			case *ast.IndexExpr: // a generic function or type given its type arguments
				e = x.X
				continue
			case *ast.IndexListExpr:
				e = x.X
				continue
			case *ast.StarExpr:
				e = x.X
				continue
			}
			break
		}
		sel, ok := e.(*ast.SelectorExpr)
		if !ok {
			return "", "", false
		}
		id, ok := sel.X.(*ast.Ident)
		if !ok {
			return "", "", false
		}
		p, ok := imports[id.Name]
		return p, sel.Sel.Name, ok
	}
	found := false
	ast.Inspect(f, func(n ast.Node) bool {
		if found {
			return false
		}
		switch n := n.(type) {
		case *ast.CallExpr:
			if p, name, ok := qualified(n.Fun); ok {
				for _, r := range registrations[p] {
					found = found || name == r
				}
			}
		case *ast.FuncDecl:
			found = n.Recv != nil && n.Name.Name == "Reconcile" && reconcileParams(n.Type.Params, qualified)
		}
		return !found
	})
	return found, nil
}

// reconcileParams reports whether params are (context.Context, ctrl.Request).
func reconcileParams(params *ast.FieldList, qualified func(ast.Expr) (string, string, bool)) bool {
	var types []ast.Expr
	for _, field := range params.List {
		n := max(len(field.Names), 1)
		for range n {
			types = append(types, field.Type)
		}
	}
	if len(types) != 2 {
		return false
	}
	if p, name, ok := qualified(types[0]); !ok || p != "context" || name != "Context" {
		return false
	}
	p, name, ok := qualified(types[1])
	return ok && (p == ctrlRuntime || p == ctrlRequests) && name == "Request"
}

var controllersFound = sync.OnceValues(func() (map[string]bool, error) {
	pkgs, err := listed()
	if err != nil {
		return nil, err
	}
	fset := token.NewFileSet()
	controllers := map[string]bool{}
	for _, p := range pkgs {
		for _, file := range p.Files {
			ok, err := registersReconciler(fset, file, nil)
			if err != nil {
				return nil, fmt.Errorf("package %s: %w", p.Path, err)
			}
			if ok {
				controllers[p.Path] = true
				break
			}
		}
	}
	return controllers, nil
})

// controllerSet is every controller package of the module: those whose non-test files
// register a reconciler.
func controllerSet(t *testing.T) map[string]bool {
	t.Helper()
	controllers, err := controllersFound()
	if err != nil {
		t.Fatal(err)
	}
	return controllers
}

func TestRegistersReconciler(t *testing.T) {
	for _, tc := range []struct {
		name, src string
		want      bool
	}{
		{"ctrl.NewControllerManagedBy", `package p
import ctrl "sigs.k8s.io/controller-runtime"
func setup(m ctrl.Manager) error { return ctrl.NewControllerManagedBy(m).Complete(nil) }`, true},
		{"controller-runtime under its own name", `package p
import "sigs.k8s.io/controller-runtime"
func setup(m controllerruntime.Manager) error { return controllerruntime.NewControllerManagedBy(m).Complete(nil) }`, true},
		{"builder.ControllerManagedBy", `package p
import "sigs.k8s.io/controller-runtime/pkg/builder"
var b = builder.ControllerManagedBy(nil)`, true},
		{"builder.TypedControllerManagedBy", `package p
import b "sigs.k8s.io/controller-runtime/pkg/builder"
var x = b.TypedControllerManagedBy[string](nil)`, true},
		{"a Reconcile method", `package p
import (
	"context"
	ctrl "sigs.k8s.io/controller-runtime"
)
type R struct{}
func (r *R) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) { return ctrl.Result{}, nil }`, true},
		{"a Reconcile method with reconcile.Request", `package p
import (
	"context"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)
type R struct{}
func (R) Reconcile(_ context.Context, _ reconcile.Request) (reconcile.Result, error) { return reconcile.Result{}, nil }`, true},
		{"a Reconcile function, not a method", `package p
import (
	"context"
	ctrl "sigs.k8s.io/controller-runtime"
)
func Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) { return ctrl.Result{}, nil }`, false},
		{"a Reconcile method of other parameters", `package p
import "context"
type R struct{}
func (R) Reconcile(ctx context.Context, name string) error { return nil }`, false},
		{"a method of the same name on another package", `package p
import ctrl "example.com/other"
var b = ctrl.NewControllerManagedBy(nil)`, false},
		{"the name in a string or a comment", `package p
// NewControllerManagedBy is not called here.
var s = "ctrl.NewControllerManagedBy(mgr)"`, false},
		{"a manager that runs controllers", `package p
import ctrl "sigs.k8s.io/controller-runtime"
func New() (ctrl.Manager, error) { return ctrl.NewManager(nil, ctrl.Options{}) }`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := registersReconciler(token.NewFileSet(), "p.go", tc.src)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("registersReconciler = %v, want %v", got, tc.want)
			}
		})
	}
}
