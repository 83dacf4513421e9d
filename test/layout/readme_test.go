package layout

import (
	"bufio"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"
)

// layoutLine is a line of README's Layout that names a folder.
type layoutLine struct {
	// Path is the folder, without a trailing slash.
	Path string
	// Group is the heading of the lines it stands among ("Controllers (…):").
	Group string
	// Line is its line number in README.md.
	Line int
}

var layoutHeading = regexp.MustCompile(`^#+\s+Layout\s*$`)

// readmeLayout reads the code block of README's Layout section: lines that start with a
// path (a first word holding a slash) name a folder; other lines head a group of them.
func readmeLayout(readme string) ([]layoutLine, error) {
	var lines []layoutLine
	sc := bufio.NewScanner(strings.NewReader(readme))
	state := "before" // before the Layout heading, "heading" after it, "block" inside its code block
	group := ""
	for n := 1; sc.Scan(); n++ {
		text := sc.Text()
		switch state {
		case "before":
			if layoutHeading.MatchString(text) {
				state = "heading"
			}
		case "heading":
			if strings.HasPrefix(text, "#") {
				return nil, fmt.Errorf("README.md:%d: the Layout section has no code block before the next heading", n)
			}
			if strings.HasPrefix(text, "```") {
				state = "block"
			}
		case "block":
			if strings.HasPrefix(text, "```") {
				return lines, nil
			}
			fields := strings.Fields(text)
			switch {
			case len(fields) == 0:
				group = ""
			case !strings.Contains(fields[0], "/"):
				group = strings.TrimSpace(text)
			default:
				lines = append(lines, layoutLine{Path: strings.TrimSuffix(fields[0], "/"), Group: group, Line: n})
			}
		}
	}
	if state == "before" {
		return nil, errors.New("README.md has no Layout section")
	}
	return nil, errors.New("README.md: the Layout section's code block does not end")
}

// generated reports whether every non-test file of a package says it is generated.
func generated(p pkg) (bool, error) {
	fset := token.NewFileSet()
	for _, file := range p.Files {
		f, err := parser.ParseFile(fset, file, nil, parser.PackageClauseOnly|parser.ParseComments)
		if err != nil {
			return false, err
		}
		if !ast.IsGenerated(f) {
			return false, nil
		}
	}
	return len(p.Files) > 0, nil
}

func readREADME(t *testing.T) (string, string) {
	t.Helper()
	dir := root(t)
	b, err := os.ReadFile(filepath.Join(dir, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	return dir, string(b)
}

// layoutOfREADME reads README's Layout: the module's folder, and the lines naming folders.
func layoutOfREADME(t *testing.T) (string, []layoutLine) {
	t.Helper()
	dir, readme := readREADME(t)
	lines, err := readmeLayout(readme)
	if err != nil {
		t.Fatal(err)
	}
	return dir, lines
}

// TestReadmeLayoutNamesEveryPackage: README's Layout names every package of the module (go
// list ./...) once, and no folder that does not exist. Generated packages may be named by a
// folder above them (internal/gen/).
func TestReadmeLayoutNamesEveryPackage(t *testing.T) {
	dir, lines := layoutOfREADME(t)
	pkgs := packages(t)
	isPkg := map[string]bool{}
	for _, p := range pkgs {
		isPkg[p.Path] = true
	}
	named := map[string]int{} // folder -> its line
	var folders []string      // named folders that are no package
	for _, l := range lines {
		if prev, ok := named[l.Path]; ok {
			t.Errorf("README.md:%d: %s is named again (first on line %d)", l.Line, l.Path, prev)
			continue
		}
		named[l.Path] = l.Line
		if isPkg[l.Path] {
			continue
		}
		if fi, err := os.Stat(filepath.Join(dir, filepath.FromSlash(l.Path))); err != nil || !fi.IsDir() || filepath.IsAbs(l.Path) || strings.Contains(l.Path, "..") {
			t.Errorf("README.md:%d: the Layout names %s/, which is no package or folder of the module: remove the line or fix its path", l.Line, l.Path)
			continue
		}
		folders = append(folders, l.Path)
	}
	for _, p := range pkgs {
		if _, ok := named[p.Path]; ok {
			continue
		}
		gen, err := generated(p)
		if err != nil {
			t.Fatalf("package %s: %v", p.Path, err)
		}
		if gen && slices.ContainsFunc(folders, func(f string) bool { return strings.HasPrefix(p.Path, f+"/") }) {
			continue
		}
		t.Errorf("README's Layout does not name the package %s/: add a line saying what it is", p.Path)
	}
}

// TestReadmeControllersAreTheControllers: the Layout's Controllers group lists exactly the
// packages that register a reconciler.
func TestReadmeControllersAreTheControllers(t *testing.T) {
	_, lines := layoutOfREADME(t)
	controllers := controllerSet(t)
	listed := map[string]bool{}
	for _, l := range lines {
		if !strings.HasPrefix(l.Group, "Controllers") {
			continue
		}
		listed[l.Path] = true
		if !controllers[l.Path] {
			t.Errorf("README.md:%d: %s is listed among the controllers but registers no reconciler (ctrl.NewControllerManagedBy, builder.ControllerManagedBy, or a method Reconcile(context.Context, ctrl.Request)): move it to the group it belongs to", l.Line, l.Path)
		}
	}
	if len(listed) == 0 {
		t.Fatal("README's Layout has no group whose heading starts with Controllers")
	}
	for c := range controllers {
		if !listed[c] {
			t.Errorf("%s registers a reconciler but README's Layout does not list it among the controllers", c)
		}
	}
}

// markdownLink is the target of an inline link or image: ](target).
var markdownLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// TestReadmeLinksStayInTheRepository: README links only to files of the repository, and to
// headings that exist (its own, and those of the Markdown files it links).
func TestReadmeLinksStayInTheRepository(t *testing.T) {
	dir, readme := readREADME(t)
	anchors := map[string]map[string]bool{"README.md": headingAnchors(readme)}
	for n, line := range strings.Split(withoutCode(readme), "\n") {
		for _, m := range markdownLink.FindAllStringSubmatch(line, -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				t.Errorf("README.md:%d: %s is outside the repository: link to a file of it", n+1, target)
				continue
			}
			file, anchor, _ := strings.Cut(target, "#")
			if file == "" {
				file = "README.md"
			}
			file = filepath.ToSlash(filepath.Clean(file))
			if _, err := os.Stat(filepath.Join(dir, filepath.FromSlash(file))); err != nil || strings.HasPrefix(file, "..") {
				t.Errorf("README.md:%d: the link %s names no file of the repository", n+1, target)
				continue
			}
			if anchor == "" || !strings.HasSuffix(file, ".md") {
				continue
			}
			if anchors[file] == nil {
				b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(file)))
				if err != nil {
					t.Fatal(err)
				}
				anchors[file] = headingAnchors(string(b))
			}
			if !anchors[file][anchor] {
				t.Errorf("README.md:%d: the link %s names no heading of %s", n+1, target, file)
			}
		}
	}
}

// withoutCode blanks the lines of fenced code blocks, keeping the line numbers.
func withoutCode(markdown string) string {
	lines := strings.Split(markdown, "\n")
	fenced := false
	for i, l := range lines {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			fenced = !fenced
			lines[i] = ""
			continue
		}
		if fenced {
			lines[i] = ""
		}
	}
	return strings.Join(lines, "\n")
}

// headingAnchors are the anchors GitHub gives a Markdown file's headings: lower case, spaces
// to hyphens, punctuation dropped, and -1, -2… after a repeated one.
func headingAnchors(markdown string) map[string]bool {
	anchors := map[string]bool{}
	seen := map[string]int{}
	for _, l := range strings.Split(withoutCode(markdown), "\n") {
		text, ok := strings.CutPrefix(l, "#")
		if !ok {
			continue
		}
		text = strings.TrimLeft(text, "#")
		if !strings.HasPrefix(text, " ") {
			continue
		}
		var b strings.Builder
		for _, r := range strings.ToLower(strings.TrimSpace(text)) {
			switch {
			case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
				b.WriteRune(r)
			case r == ' ':
				b.WriteRune('-')
			}
		}
		a := b.String()
		if n := seen[a]; n > 0 {
			anchors[fmt.Sprintf("%s-%d", a, n)] = true
		} else {
			anchors[a] = true
		}
		seen[a]++
	}
	return anchors
}

func TestReadmeLayout(t *testing.T) {
	lines, err := readmeLayout("# x\n\n## Layout\n\nSome words.\n\n```\nControllers (all):\ninternal/a/   what a is\ninternal/b   b\n\nOthers:\ncmd/x/ x\n```\n")
	if err != nil {
		t.Fatal(err)
	}
	want := []layoutLine{
		{Path: "internal/a", Group: "Controllers (all):", Line: 9},
		{Path: "internal/b", Group: "Controllers (all):", Line: 10},
		{Path: "cmd/x", Group: "Others:", Line: 13},
	}
	if !slices.Equal(lines, want) {
		t.Errorf("readmeLayout = %+v, want %+v", lines, want)
	}
	if _, err := readmeLayout("# x\n"); err == nil {
		t.Error("a README without a Layout section was read without an error")
	}
}
