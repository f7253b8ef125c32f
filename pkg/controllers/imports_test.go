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

// TestNoControllerBorrowsAnother: the live model and NodeClaim creation
// have packages of their own (pkg/livemodel, pkg/nodeclaims), so no
// controller package reaches into provisioning for them.
func TestNoControllerBorrowsAnother(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("finding the go command: %v", err)
	}
	const provisioning = "github.com/joiner-dev/joiner/pkg/controllers/provisioning"
	for _, pkg := range []string{"./disruption/...", "./nodeclaim/...", "./node/...", "./nodepool/...", "./observability/...", "./status/..."} {
		out, err := exec.Command(goBin, "list", "-deps", pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list -deps %s: %v\n%s", pkg, err, out)
		}
		for _, dep := range strings.Fields(string(out)) {
			if dep == provisioning {
				t.Errorf("%s depends on %s; use pkg/livemodel or pkg/nodeclaims instead", pkg, provisioning)
			}
		}
	}
}
