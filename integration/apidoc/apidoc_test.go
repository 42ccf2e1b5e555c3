// Package apidoc_test holds the public Go API (every package of the module outside
// internal/ that is not a command) to golang.org/x/time/rate's standard: each package
// has a doc comment that starts "Package <name>" and an Example, and each exported name
// a doc comment that starts with that name (a type's may open with "A", "An" or "The").
// The package holds tests only.
package apidoc_test

import (
	"errors"
	"fmt"
	"go/ast"
	"go/build"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// root is the repository's root, from this package's directory.
const root = "../.."

// Every public package has a package doc comment and an Example, and every exported
// name a doc comment that starts with it: types, functions, methods of exported types
// (an exported interface's too), constants and variables (a name in a parenthesized
// group of several may rely on the group's comment instead, as go doc shows the group
// whole), and fields of exported struct types. The failure lists every offender, by
// file and line.
func TestPublicNamesDocumented(t *testing.T) {
	pkgs, err := publicPackages(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(pkgs) == 0 || pkgs[0].Dir != root {
		t.Fatalf("found %d public packages; want the module's root first", len(pkgs))
	}
	var offenders []string
	for _, pkg := range pkgs {
		found, err := checkPackage(pkg)
		if err != nil {
			t.Fatal(err)
		}
		offenders = append(offenders, found...)
	}
	if len(offenders) > 0 {
		t.Errorf("%d exported names or packages short of their documentation:\n%s",
			len(offenders), strings.Join(offenders, "\n"))
	}
}

// The check finds an offender of every kind, and passes what is documented.
func TestUndocumentedFindsEveryKind(t *testing.T) {
	const src = `// Package p is documented.
package p

// T is documented.
type T struct {
	// A is documented.
	A int
	B int
	// C and D are documented together.
	C, D int
	// E is documented alone.
	E, F int
	unexported int
	// Embedded is documented.
	Embedded
	U
}

type Undocumented int

// Wrong says nothing of Method.
func (T) Method() {}

func (*T) PointerMethod() {}

func (t) Hidden() {}

// A Embedded is a type that opens with an article.
type Embedded struct{}

// This comment names another.
type U interface {
	// Do is documented.
	Do()
	Undo()
}

// The group documents its names.
const (
	GroupedA = 1
	GroupedB = 2
)

var (
	// Loose is documented.
	Loose = 1
	Lost  = 2
)

// Alone is documented.
var Alone = 1

var Bare = 1

// Linked see https://example.com.
func Linked() {}

// F is documented.
func F() {}

// Colon: a label, not a sentence.
func Colon() {}

func G() {}
`
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "p.go", src, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, o := range checkFile(fset, f) {
		got = append(got, strings.Split(o, ": ")[1]) // file:line:col: what Name: why
	}
	want := []string{"field T.B", "field T.E", "field T.U", "type Undocumented", "method T.Method",
		"method T.PointerMethod", "type U", "method U.Undo", "var Lost", "var Bare", "func Linked", "func Colon",
		"func G"}
	if strings.Join(got, ", ") != strings.Join(want, ", ") {
		t.Errorf("offenders %q\nwant %q:\n%s", got, want, strings.Join(checkFile(fset, f), "\n"))
	}
	if offenders := checkPackageDoc(fset, "p", []*ast.File{f}); offenders != nil {
		t.Errorf("a documented package: %q", offenders)
	}
	f.Doc = nil
	if offenders := checkPackageDoc(fset, "p", []*ast.File{f}); len(offenders) != 1 {
		t.Errorf("an undocumented package: %q, want one offender", offenders)
	}
}

// publicPackages returns the module's public packages under root, root's first: every
// one that is not a command, outside internal/ and testdata/ and other modules.
func publicPackages(root string) ([]*build.Package, error) {
	var pkgs []*build.Package
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		name := d.Name()
		if path != root {
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil ||
				name == "internal" || name == "testdata" || name == "node_modules" ||
				strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") {
				return filepath.SkipDir
			}
		}
		pkg, err := build.ImportDir(path, 0)
		var none *build.NoGoError
		switch {
		case errors.As(err, &none):
			return nil
		case err != nil:
			return err
		case pkg.Name != "main" && len(pkg.GoFiles) > 0:
			pkgs = append(pkgs, pkg)
		}
		return nil
	})
	return pkgs, err
}

// checkPackage returns the offenders of pkg: its package doc comment, every exported
// name of its files (tests excluded), and a package without an Example.
func checkPackage(pkg *build.Package) ([]string, error) {
	fset := token.NewFileSet()
	var files []*ast.File
	var offenders []string
	for _, name := range pkg.GoFiles {
		path := filepath.Join(pkg.Dir, name)
		src, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		rel, err := filepath.Rel(root, path) // messages name files from the repository's root
		if err != nil {
			return nil, err
		}
		f, err := parser.ParseFile(fset, rel, src, parser.ParseComments)
		if err != nil {
			return nil, err
		}
		files = append(files, f)
		offenders = append(offenders, checkFile(fset, f)...)
	}
	offenders = append(checkPackageDoc(fset, pkg.Name, files), offenders...)
	has, err := hasExample(pkg)
	if err != nil {
		return nil, err
	}
	if !has {
		dir, _ := filepath.Rel(root, pkg.Dir)
		offenders = append(offenders, fmt.Sprintf("%s: package %s: no Example in its tests", dir, pkg.Name))
	}
	return offenders, nil
}

// hasExample reports whether a test file of pkg declares an Example function, which go
// doc shows (and go test runs when it has an Output comment).
func hasExample(pkg *build.Package) (bool, error) {
	for _, name := range append(pkg.TestGoFiles, pkg.XTestGoFiles...) {
		f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(pkg.Dir, name), nil, parser.SkipObjectResolution)
		if err != nil {
			return false, err
		}
		for _, d := range f.Decls {
			if fn, ok := d.(*ast.FuncDecl); ok && fn.Recv == nil && strings.HasPrefix(fn.Name.Name, "Example") {
				return true, nil
			}
		}
	}
	return false, nil
}

// checkPackageDoc returns the offender of a package whose files have no doc comment
// that starts "Package <name> ", or one that links out of the repository.
func checkPackageDoc(fset *token.FileSet, name string, files []*ast.File) []string {
	for _, f := range files {
		if f.Doc != nil && strings.HasPrefix(f.Doc.Text(), "Package "+name+" ") {
			if strings.Contains(f.Doc.Text(), "://") {
				return []string{fmt.Sprintf("%s: package %s: its doc comment links out of the repository", fset.Position(f.Doc.Pos()), name)}
			}
			return nil
		}
	}
	if len(files) == 0 {
		return []string{"package " + name + ": no files"}
	}
	return []string{fmt.Sprintf("%s: package %s: no doc comment that starts \"Package %s \"", fset.Position(files[0].Package), name, name)}
}

// checkFile returns the offenders among the exported names that f declares, each as
// "file:line: what Name: why".
func checkFile(fset *token.FileSet, f *ast.File) []string {
	var offenders []string
	check := func(pos token.Pos, label string, doc *ast.CommentGroup, article bool, names ...string) {
		if why := badDoc(doc, article, names); why != "" {
			offenders = append(offenders, fmt.Sprintf("%s: %s: %s", fset.Position(pos), label, why))
		}
	}
	for _, decl := range f.Decls {
		switch d := decl.(type) {
		case *ast.FuncDecl:
			switch {
			case !d.Name.IsExported():
			case d.Recv == nil:
				check(d.Name.Pos(), "func "+d.Name.Name, d.Doc, false, d.Name.Name)
			case ast.IsExported(typeName(d.Recv.List[0].Type)):
				check(d.Name.Pos(), "method "+typeName(d.Recv.List[0].Type)+"."+d.Name.Name, d.Doc, false, d.Name.Name)
			}
		case *ast.GenDecl:
			for _, spec := range d.Specs {
				checkSpec(d, spec, check)
			}
		}
	}
	return offenders
}

// checkSpec checks one spec of d with check: an exported type, its fields or methods
// when it is a struct or an interface, or exported constants or variables.
func checkSpec(d *ast.GenDecl, spec ast.Spec, check func(pos token.Pos, label string, doc *ast.CommentGroup, article bool, names ...string)) {
	switch s := spec.(type) {
	case *ast.TypeSpec:
		if !s.Name.IsExported() {
			return
		}
		doc := s.Doc
		if doc == nil && len(d.Specs) == 1 {
			doc = d.Doc
		}
		check(s.Name.Pos(), "type "+s.Name.Name, doc, true, s.Name.Name)
		var fields *ast.FieldList
		what := "field " + s.Name.Name + "."
		switch t := s.Type.(type) {
		case *ast.StructType:
			fields = t.Fields
		case *ast.InterfaceType:
			fields, what = t.Methods, "method "+s.Name.Name+"."
		default:
			return
		}
		for _, field := range fields.List {
			names := exported(field.Names)
			if len(field.Names) == 0 { // embedded
				if name := typeName(field.Type); ast.IsExported(name) {
					names = []string{name}
				}
			}
			if len(names) > 0 {
				check(field.Pos(), what+names[0], field.Doc, false, names...)
			}
		}
	case *ast.ValueSpec:
		names := exported(s.Names)
		if len(names) == 0 {
			return
		}
		doc := s.Doc
		if doc == nil && len(d.Specs) == 1 {
			doc = d.Doc
		}
		if doc == nil && d.Doc != nil { // the group's comment documents it
			return
		}
		check(s.Pos(), d.Tok.String()+" "+names[0], doc, false, names...)
	}
}

// badDoc says what is wrong with doc as the comment of names (declared together): none
// at all, one that does not start with the first name and a space (after "A", "An" or
// "The" when article), as a sentence whose subject is the name does, one that leaves
// out another of the names, or one that links out of the repository. It returns "" for
// a good one.
func badDoc(doc *ast.CommentGroup, article bool, names []string) string {
	if doc == nil {
		return "no doc comment"
	}
	text := doc.Text()
	if article {
		for _, a := range []string{"A ", "An ", "The "} {
			text = strings.TrimPrefix(text, a)
		}
	}
	if !strings.HasPrefix(text, names[0]+" ") {
		return fmt.Sprintf("doc comment starts %q, not with the name", firstWords(doc.Text()))
	}
	for _, n := range names[1:] {
		if !regexp.MustCompile(`\b` + n + `\b`).MatchString(text) {
			return "doc comment does not name " + n
		}
	}
	if strings.Contains(text, "://") {
		return "doc comment links out of the repository"
	}
	return ""
}

// firstWords returns the first three words of text, for a message.
func firstWords(text string) string {
	words := strings.Fields(text)
	return strings.Join(words[:min(3, len(words))], " ")
}

// exported returns the exported names among ids.
func exported(ids []*ast.Ident) []string {
	var names []string
	for _, id := range ids {
		if id.IsExported() {
			names = append(names, id.Name)
		}
	}
	return names
}

// typeName returns the name of the type that expr (a receiver or an embedded field)
// names: T of T, *T, T[P], pkg.T; "" for any other expression.
func typeName(expr ast.Expr) string {
	switch e := expr.(type) {
	case *ast.Ident:
		return e.Name
	case *ast.StarExpr:
		return typeName(e.X)
	case *ast.IndexExpr:
		return typeName(e.X)
	case *ast.IndexListExpr:
		return typeName(e.X)
	case *ast.SelectorExpr:
		return e.Sel.Name
	}
	return ""
}

// No Example of a public package defers a call and then ends by log.Fatal or os.Exit,
// which run no deferred call: a program copied from it would never make that call (a
// Limiter's Close, which writes the metrics that wait).
func TestExamplesRunTheirDeferredCalls(t *testing.T) {
	pkgs, err := publicPackages(root)
	if err != nil {
		t.Fatal(err)
	}
	var offenders []string
	for _, pkg := range pkgs {
		for _, name := range append(pkg.TestGoFiles, pkg.XTestGoFiles...) {
			path := filepath.Join(pkg.Dir, name)
			rel, err := filepath.Rel(root, path)
			if err != nil {
				t.Fatal(err)
			}
			src, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			fset := token.NewFileSet()
			f, err := parser.ParseFile(fset, rel, src, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			offenders = append(offenders, skippedDefers(fset, f)...)
		}
	}
	if len(offenders) > 0 {
		t.Errorf("%d Examples end where their deferred calls never run:\n%s", len(offenders), strings.Join(offenders, "\n"))
	}
}

// The check finds a log.Fatal or os.Exit after a defer, and passes one before it.
func TestSkippedDefersFound(t *testing.T) {
	const src = `package p_test

func Example_fatalFirst() {
	if err != nil {
		log.Fatal(err)
	}
	defer l.Close()
}

func Example_fatalAfter() {
	defer l.Close()
	log.Fatal(serve())
}

func Example_exitAfter() {
	defer l.Close()
	go func() { os.Exit(1) }()
}

func helper() {
	defer l.Close()
	log.Fatalf("not an Example")
}
`
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "p_test.go", src, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	got := skippedDefers(fset, f)
	if len(got) != 2 || !strings.Contains(got[0], "Example_fatalAfter") || !strings.Contains(got[1], "Example_exitAfter") {
		t.Errorf("offenders %q, want Example_fatalAfter and Example_exitAfter", got)
	}
}

// skippedDefers returns, as "file:line: ExampleName: why", each Example of f that calls
// log.Fatal (Fatalf, Fatalln) or os.Exit after a defer statement.
func skippedDefers(fset *token.FileSet, f *ast.File) []string {
	var offenders []string
	for _, d := range f.Decls {
		fn, ok := d.(*ast.FuncDecl)
		if !ok || fn.Recv != nil || !strings.HasPrefix(fn.Name.Name, "Example") || fn.Body == nil {
			continue
		}
		deferred := token.NoPos
		ast.Inspect(fn.Body, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.DeferStmt:
				if !deferred.IsValid() {
					deferred = n.Pos()
				}
			case *ast.CallExpr:
				sel, ok := n.Fun.(*ast.SelectorExpr)
				if !ok || !deferred.IsValid() {
					break
				}
				if pkg, ok := sel.X.(*ast.Ident); ok && (pkg.Name == "log" && strings.HasPrefix(sel.Sel.Name, "Fatal") || pkg.Name == "os" && sel.Sel.Name == "Exit") {
					offenders = append(offenders, fmt.Sprintf("%s: %s: %s.%s after the defer of line %d, which it skips",
						fset.Position(n.Pos()), fn.Name.Name, pkg.Name, sel.Sel.Name, fset.Position(deferred).Line))
				}
			}
			return true
		})
	}
	return offenders
}
