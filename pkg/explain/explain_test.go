package explain_test

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/joiner-dev/joiner/pkg/explain"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// now is the fixtures' clock.
var now = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

// TestGolden renders each kind of verdict from a YAML fixture and compares
// the text with testdata/<name>.golden (go test -update rewrites them).
func TestGolden(t *testing.T) {
	for _, tc := range []struct {
		name, fixture, kind, target string
	}{
		{"pod-fits-nowhere", "cluster.yaml", "pod", "shop/big"},
		{"pod-waits-for-registering-claim", "cluster.yaml", "pod", "shop/web-1"},
		{"pod-needs-new-node", "cluster.yaml", "pod", "shop/api-1"},
		{"pod-bound", "cluster.yaml", "pod", "shop/db-0"},
		{"node-not-initialized", "cluster.yaml", "node", "node-init"},
		{"nodeclaim-not-registered", "cluster.yaml", "nodeclaim", "default-reg"},
		{"node-disruption-blocked", "cluster.yaml", "node", "node-ready"},
		{"nodeclaim-being-replaced", "cluster.yaml", "nodeclaim", "default-dear"},
		{"node-unmanaged", "cluster.yaml", "node", "unmanaged"},
		{"nodepool-ready", "cluster.yaml", "nodepool", "default"},
		{"nodepool-missing-nodeclass", "cluster.yaml", "nodepool", "gpu"},
		{"nodeclaim-startup-taint-left", "initialising.yaml", "nodeclaim", "gpu-taint"},
		{"nodeclaim-extended-resource-missing", "initialising.yaml", "nodeclaim", "gpu-resource"},
		{"node-architecture-mismatch", "initialising.yaml", "node", "node-arch"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("testdata", tc.fixture))
			if err != nil {
				t.Fatal(err)
			}
			snap, err := explain.Read(tc.fixture, data, explain.SnapshotOptions{Now: now})
			if err != nil {
				t.Fatal(err)
			}
			got := render(t, snap, tc.kind, tc.target)
			golden := filepath.Join("testdata", tc.name+".golden")
			if *update {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s %s: output differs from %s (go test -update rewrites it):\n--- got\n%s\n--- want\n%s", tc.kind, tc.target, golden, got, want)
			}
		})
	}
}

func render(t *testing.T, snap *explain.Snapshot, kind, target string) []byte {
	t.Helper()
	k, err := explain.ParseKind(kind)
	if err != nil {
		t.Fatal(err)
	}
	verdict, err := explain.Verdict(snap, explain.Query{Kind: k, Name: target})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := explain.Write(&buf, verdict); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
