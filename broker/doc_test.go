package broker_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"strings"
	"testing"
)

// undocumented lists the exported identifiers of the package in dir that
// go doc would show without a word: types, functions, methods, exported
// fields of exported struct types, and constants and variables whose spec
// and group both lack a comment.
func undocumented(t *testing.T, dir string) []string {
	t.Helper()
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, dir, func(fi fs.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") },
		parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	var missing []string
	at := func(p token.Pos, name string) {
		missing = append(missing, fset.Position(p).String()+": "+name)
	}
	for _, pkg := range pkgs {
		for _, f := range pkg.Files {
			for _, d := range f.Decls {
				switch d := d.(type) {
				case *ast.FuncDecl:
					if !d.Name.IsExported() || d.Doc != nil {
						continue
					}
					if d.Recv != nil {
						recv := d.Recv.List[0].Type
						if st, ok := recv.(*ast.StarExpr); ok {
							recv = st.X
						}
						if id, ok := recv.(*ast.Ident); ok && !id.IsExported() {
							continue // a method of an unexported type is not shown
						}
						if d.Name.Name == "Error" || d.Name.Name == "String" || d.Name.Name == "Unwrap" {
							continue // the interface it satisfies documents it
						}
					}
					at(d.Pos(), d.Name.Name)
				case *ast.GenDecl:
					for _, s := range d.Specs {
						switch s := s.(type) {
						case *ast.TypeSpec:
							if !s.Name.IsExported() {
								continue
							}
							if s.Doc == nil && d.Doc == nil {
								at(s.Pos(), s.Name.Name)
							}
							fields(s, at)
						case *ast.ValueSpec:
							for _, n := range s.Names {
								if n.IsExported() && s.Doc == nil && s.Comment == nil && d.Doc == nil {
									at(n.Pos(), n.Name)
								}
							}
						}
					}
				}
			}
		}
	}
	return missing
}

// fields reports the exported fields of the struct type s, and of the
// structs nested in it, that have neither a comment above nor one at the
// end of their line: go doc shows a struct's fields, and a field without
// a word says nothing of its unit, default or limits.
func fields(s *ast.TypeSpec, at func(token.Pos, string)) {
	ast.Inspect(s.Type, func(n ast.Node) bool {
		st, ok := n.(*ast.StructType)
		if !ok {
			return true
		}
		for _, f := range st.Fields.List {
			if f.Doc != nil || f.Comment != nil {
				continue
			}
			names := f.Names
			if len(names) == 0 { // embedded: named by its type
				if id := embeddedName(f.Type); id != nil {
					names = []*ast.Ident{id}
				}
			}
			for _, n := range names {
				if n.IsExported() {
					at(n.Pos(), s.Name.Name+"."+n.Name)
				}
			}
		}
		return true
	})
}

// embeddedName is the identifier an embedded field is known by.
func embeddedName(e ast.Expr) *ast.Ident {
	switch e := e.(type) {
	case *ast.StarExpr:
		return embeddedName(e.X)
	case *ast.SelectorExpr:
		return e.Sel
	case *ast.Ident:
		return e
	}
	return nil
}

// TestEveryExportedIdentifierIsDocumented keeps go doc of broker, and of
// combtype, its vocabulary, complete: an embedder reads the API there.
func TestEveryExportedIdentifierIsDocumented(t *testing.T) {
	for _, dir := range []string{".", "../combtype"} {
		for _, m := range undocumented(t, dir) {
			t.Errorf("undocumented: %s", m)
		}
	}
}

// TestNoAliases keeps the vocabulary declared once: broker defines or
// imports its types, it does not rename another package's.
func TestNoAliases(t *testing.T) {
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, ".", func(fi fs.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, pkg := range pkgs {
		for _, f := range pkg.Files {
			ast.Inspect(f, func(n ast.Node) bool {
				if s, ok := n.(*ast.TypeSpec); ok && s.Assign != 0 && s.Name.IsExported() {
					t.Errorf("%s: %s is an alias", fset.Position(s.Pos()), s.Name.Name)
				}
				return true
			})
		}
	}
}
