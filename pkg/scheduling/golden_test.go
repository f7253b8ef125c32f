package scheduling_test

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/joiner-dev/joiner/pkg/scenario"
	"github.com/joiner-dev/joiner/pkg/scheduling"
)

var update = flag.Bool("update", false, "rewrite the golden plans under testdata/")

// TestGolden solves each testdata/*.yaml (Kubernetes manifests, with the
// built-in instance catalog) and compares the plan, reasons included, with
// testdata/*.golden. Regenerate with `go test ./pkg/scheduling -run
// TestGolden -update` and review the diff.
func TestGolden(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no testdata")
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".yaml")
		t.Run(name, func(t *testing.T) {
			m, err := scenario.ReadManifestFiles(f)
			if err != nil {
				t.Fatal(err)
			}
			snap, err := m.Snapshot(scenario.SnapshotOptions{})
			if err != nil {
				t.Fatal(err)
			}
			plan, err := scheduling.Solve(snap, scheduling.Options{MaxInstanceTypes: 8})
			if err != nil {
				t.Fatal(err)
			}
			checkPlan(t, snap, plan)
			got := planText(plan)
			golden := filepath.Join("testdata", name+".golden")
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if got != string(want) {
				t.Errorf("plan differs from %s (rerun with -update and review the diff):\n%s", golden, got)
			}
		})
	}
}
