package operator_test

import (
	"bytes"
	"encoding/json"
	"runtime"
	"runtime/debug"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/logging"
	"github.com/joiner-dev/joiner/pkg/operator"
)

// TestLoggerWritesAddedValues: values added with WithValues, level upon
// level, reach the line in order, whether the logger writes at once or
// after more values are added; a debug line at info level writes nothing.
func TestLoggerWritesAddedValues(t *testing.T) {
	var out bytes.Buffer
	root, err := operator.NewLogger("info", &out)
	if err != nil {
		t.Fatal(err)
	}
	controller := root.WithName("lifecycle").WithValues("controller", "nodeclaim.lifecycle")
	reconcile := controller.WithValues("NodeClaim", "default-abc").WithValues("reconcileID", "r-1")
	reconcile.V(1).Info("not at info level")
	reconcile.Info("launched", "provider-id", "sim:///a/i-1")
	controller.Info("idle")

	var lines []map[string]any
	dec := json.NewDecoder(&out)
	for dec.More() {
		var l map[string]any
		if err := dec.Decode(&l); err != nil {
			t.Fatal(err)
		}
		lines = append(lines, l)
	}
	for i, want := range []map[string]any{
		{"message": "launched", "logger": "lifecycle", "controller": "nodeclaim.lifecycle", "NodeClaim": "default-abc", "reconcileID": "r-1", "provider-id": "sim:///a/i-1"},
		{"message": "idle", "logger": "lifecycle", "controller": "nodeclaim.lifecycle"},
	} {
		if i >= len(lines) {
			t.Fatalf("%d lines written, want 2: %v", len(lines), lines)
		}
		for k, v := range want {
			if lines[i][k] != v {
				t.Errorf("line %d: %s = %v, want %v (line %v)", i, k, lines[i][k], v, lines[i])
			}
		}
		if _, ok := lines[i]["reconcileID"]; ok && i == 1 {
			t.Errorf("line %d carries values added to another logger: %v", i, lines[i])
		}
	}
	if len(lines) != 2 {
		t.Errorf("%d lines written, want 2", len(lines))
	}
}

// TestLoggerValuesCostLittleUntilWritten: adding values to a logger that
// writes nothing (most reconciles' loggers) does not encode them: zap's
// eager encoding cost about 1.5 KiB per WithValues (a buffer of its own),
// the lazy core about a third of that (the logger and its fields).
func TestLoggerValuesCostLittleUntilWritten(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	root, err := operator.NewLogger("info", &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	controller := root.WithValues("controller", "nodeclaim.lifecycle")
	const reconciles = 1000
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range reconciles {
		l := controller.WithValues("NodeClaim", "default-abc", "namespace", "", "name", "default-abc").WithValues("reconcileID", "r-1")
		l.V(1).Info("not at info level")
	}
	runtime.ReadMemStats(&after)
	if perWith := (after.TotalAlloc - before.TotalAlloc) / reconciles / 2; perWith > 1024 {
		t.Errorf("WithValues allocated %d bytes, want at most 1024 when nothing is written (zap encoding them at once costs more)", perWith)
	}
}

// TestLoggerWritesObjectsAsKarpenter: an object logged under its Kind with
// a klog reference is written as Karpenter's lines write it, so a query
// such as .NodeClaim.name finds it; a cluster-scoped object has no
// namespace.
func TestLoggerWritesObjectsAsKarpenter(t *testing.T) {
	var out bytes.Buffer
	root, err := operator.NewLogger("info", &out)
	if err != nil {
		t.Fatal(err)
	}
	nc := &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "default-x7k2p"}}
	root.Info("launched nodeclaim", logging.NodeClaim, klog.KObj(nc), logging.Pod, klog.KRef("team-a", "web-0"))
	var line map[string]any
	if err := json.Unmarshal(out.Bytes(), &line); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	for key, want := range map[string]map[string]any{
		"NodeClaim": {"name": "default-x7k2p"},
		"Pod":       {"name": "web-0", "namespace": "team-a"},
	} {
		got, _ := line[key].(map[string]any)
		if len(got) != len(want) {
			t.Errorf("%s = %v, want %v (line %s)", key, line[key], want, out.String())
		}
		for k, v := range want {
			if got[k] != v {
				t.Errorf("%s.%s = %v, want %v (line %s)", key, k, got[k], v, out.String())
			}
		}
	}
}
