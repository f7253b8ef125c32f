package logging_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// eachCall calls visit for every call of the form x.Name(args) in f.
func eachCall(f *ast.File, visit func(sel *ast.SelectorExpr, args []ast.Expr)) {
	ast.Inspect(f, func(n ast.Node) bool {
		if call, ok := n.(*ast.CallExpr); ok {
			if sel, ok := call.Fun.(*ast.SelectorExpr); ok {
				visit(sel, call.Args)
			}
		}
		return true
	})
}

// literalKeys reports the string literals written as keys in logr calls of
// one file: Info(msg, k, v, ...), Error(err, msg, k, v, ...) and
// WithValues(k, v, ...). It reads syntax, not types: a call of another
// type's method of the same name with a string literal where a key would
// be is reported too, and is best renamed.
func literalKeys(fset *token.FileSet, f *ast.File) []string {
	var found []string
	first := map[string]int{"Info": 1, "Error": 2, "WithValues": 0}
	eachCall(f, func(sel *ast.SelectorExpr, args []ast.Expr) {
		start, ok := first[sel.Sel.Name]
		if !ok {
			return
		}
		for i := start; i+1 < len(args); i += 2 {
			if lit, ok := args[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
				key, _ := strconv.Unquote(lit.Value)
				found = append(found, fset.Position(lit.Pos()).String()+": key "+strconv.Quote(key))
			}
		}
	})
	return found
}

// variableMessages reports the logr calls of one file whose message is not
// a string literal: Info(msg, ...) and Error(err, msg, ...). A message is
// constant so that one query finds every line of one kind; what varies
// (names, counts, causes) goes under keys. Like literalKeys it reads
// syntax: http.Error, the one other Error the tree calls, is skipped.
func variableMessages(fset *token.FileSet, f *ast.File) []string {
	var found []string
	at := map[string]int{"Info": 0, "Error": 1}
	eachCall(f, func(sel *ast.SelectorExpr, args []ast.Expr) {
		if pkg, ok := sel.X.(*ast.Ident); ok && pkg.Name == "http" {
			return
		}
		i, ok := at[sel.Sel.Name]
		if !ok || i >= len(args) {
			return
		}
		if lit, ok := args[i].(*ast.BasicLit); !ok || lit.Kind != token.STRING {
			found = append(found, fset.Position(args[i].Pos()).String()+": message is not a string literal")
		}
	})
	return found
}

// TestLiteralKeysFound: the check finds a literal key in each kind of log
// call, and passes keys named by constants.
func TestLiteralKeysFound(t *testing.T) {
	for _, tc := range []struct {
		name string
		call string
		want int
	}{
		{name: "info", call: `l.Info("launched", "nodeclaim", n)`, want: 1},
		{name: "debug info", call: `l.V(1).Info("launched", logging.NodeClaim, n, "provider-id", p)`, want: 1},
		{name: "error", call: `l.Error(err, "launching", "nodeclaim", n, "node", m)`, want: 2},
		{name: "with values", call: `l.WithValues("nodePool", p)`, want: 1},
		{name: "constants", call: `l.WithValues(logging.NodePool, p).Error(err, "launching", logging.Node, m)`, want: 0},
		{name: "message only", call: `l.Error(err, "launching")`, want: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fset := token.NewFileSet()
			f, err := parser.ParseFile(fset, "x.go", "package x\nfunc f() { "+tc.call+" }\n", 0)
			if err != nil {
				t.Fatal(err)
			}
			if got := literalKeys(fset, f); len(got) != tc.want {
				t.Errorf("found %v, want %d literal keys", got, tc.want)
			}
		})
	}
}

// TestVariableMessagesFound: the check finds a message built at run time
// in each kind of log call, and passes constant ones.
func TestVariableMessagesFound(t *testing.T) {
	for _, tc := range []struct {
		name string
		call string
		want int
	}{
		{name: "constant info", call: `l.Info("launched", logging.NodeClaim, n)`, want: 0},
		{name: "constant error", call: `l.Error(err, "launching", logging.NodeClaim, n)`, want: 0},
		{name: "sprintf info", call: `l.Info(fmt.Sprintf("launched %s", n))`, want: 1},
		{name: "concatenated debug info", call: `l.V(1).Info("launched " + n)`, want: 1},
		{name: "variable error", call: `l.Error(err, msg)`, want: 1},
		{name: "http error", call: `http.Error(w, "bad "+q, 400)`, want: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fset := token.NewFileSet()
			f, err := parser.ParseFile(fset, "x.go", "package x\nfunc f() { "+tc.call+" }\n", 0)
			if err != nil {
				t.Fatal(err)
			}
			if got := variableMessages(fset, f); len(got) != tc.want {
				t.Errorf("found %v, want %d variable messages", got, tc.want)
			}
		})
	}
}

// TestKeysHaveOneHome: no log call outside tests writes a key as a
// string literal or a message that is not constant; keys.go is the one
// spelling of each key (tests build their own loggers and may use any key
// and message).
func TestKeysHaveOneHome(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("repository root not found from the package directory: %v", err)
	}
	fset := token.NewFileSet()
	files := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "vendor" || name == "bin") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		files++
		for _, k := range literalKeys(fset, f) {
			rel, _ := filepath.Rel(root, k)
			t.Errorf("%s: name the key with a constant of pkg/logging (keys.go)", rel)
		}
		for _, m := range variableMessages(fset, f) {
			rel, _ := filepath.Rel(root, m)
			t.Errorf("%s: log a constant message and put what varies under keys of pkg/logging", rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 100 {
		t.Errorf("read %d Go files under %s, want the whole tree", files, root)
	}
}
