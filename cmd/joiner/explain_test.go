package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"
)

// TestExplainFromDump runs the command on the explain package's fixture
// (a dump, -f) in each output format, and checks bad arguments are named.
func TestExplainFromDump(t *testing.T) {
	defer func(f func() time.Time) { explainNow = f }(explainNow)
	explainNow = func() time.Time { return time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC) }
	fixture := "../../pkg/explain/testdata/cluster.yaml"
	for _, tc := range []struct {
		name, kind, target, output, namespace string
		check                                 func(t *testing.T, out string)
		wantErr                               string
	}{
		{name: "text, namespace from the flag", kind: "pod", target: "big", namespace: "shop", output: "text", check: func(t *testing.T, out string) {
			if !strings.HasPrefix(out, "Pod shop/big cannot be scheduled") {
				t.Errorf("got %s", out)
			}
		}},
		{name: "json", kind: "nodeclaim", target: "default-reg", output: "json", check: func(t *testing.T, out string) {
			var v map[string]any
			if err := json.Unmarshal([]byte(out), &v); err != nil || v["phase"] != "Registering" {
				t.Errorf("phase %v, err %v in %s", v["phase"], err, out)
			}
		}},
		{name: "yaml", kind: "nodepool", target: "default", output: "yaml", check: func(t *testing.T, out string) {
			var v map[string]any
			if err := yaml.Unmarshal([]byte(out), &v); err != nil || v["nodePool"] != "default" {
				t.Errorf("nodePool %v, err %v in %s", v["nodePool"], err, out)
			}
		}},
		{name: "unknown kind", kind: "deployment", target: "x", output: "text", wantErr: "want pod, node, nodeclaim, nodepool or capacitybuffer"},
		{name: "unknown output", kind: "pod", target: "x", output: "wide", wantErr: "--output"},
		{name: "missing object", kind: "node", target: "nope", output: "text", wantErr: `node "nope" not found`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := &explainOptions{files: []string{fixture}, output: tc.output, namespace: tc.namespace}
			var out bytes.Buffer
			err := runExplain(context.Background(), o, tc.kind, tc.target, nil, &out)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, out.String())
		})
	}
}
