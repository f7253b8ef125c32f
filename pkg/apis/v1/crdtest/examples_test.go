package crdtest

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/joiner-dev/joiner/pkg/test"
)

// TestExamplesApply creates every NodePool under examples/nodepools and
// checks it also passes runtime validation, so the examples stay valid.
func TestExamplesApply(t *testing.T) {
	files, err := filepath.Glob(test.RepoPath("examples/nodepools/*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 5 {
		t.Fatalf("found %d examples, want at least 5", len(files))
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			u := object(t, string(b), "")
			u.SetName(test.Name(t, u.GetName()))
			test.Env(t).Create(t, u)
			if errs := typedNodePool(t, u).RuntimeValidate(); len(errs) > 0 {
				t.Fatalf("runtime validation: %v", errs.ToAggregate())
			}
		})
	}
}
