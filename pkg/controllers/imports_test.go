package controllers_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestNoImportOfOperator keeps the arrow pointing one way: the operator
// builds the controllers and hands them plain settings; no package under
// pkg/controllers may depend on pkg/operator, directly or through another
// package.
func TestNoImportOfOperator(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("finding the go command: %v", err)
	}
	// The test runs in pkg/controllers: ./... is every controller package.
	out, err := exec.Command(goBin, "list", "-deps", "./...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps ./...: %v\n%s", err, out)
	}
	const operator = "github.com/joiner-dev/joiner/pkg/operator"
	for _, pkg := range strings.Fields(string(out)) {
		if pkg == operator || strings.HasPrefix(pkg, operator+"/") {
			t.Errorf("pkg/controllers depends on %s; pass what the controllers need through controllers.Options instead", pkg)
		}
	}
}
