package scenario

import (
	"maps"
	"slices"
	"testing"
)

// TestManifestsNamespaces checks that Namespace objects reach the
// snapshot with their labels, that namespaces the pods use but the input
// does not define get their name label, and that an input without
// namespaces leaves them unknown (nil).
func TestManifestsNamespaces(t *testing.T) {
	const pods = `
apiVersion: v1
kind: Pod
metadata: {name: web, namespace: shop}
spec: {containers: [{name: c, image: i, resources: {requests: {cpu: "1"}}}]}
`
	const namespace = `
---
apiVersion: v1
kind: Namespace
metadata: {name: data, labels: {team: storage}}
`
	tests := []struct {
		name string
		yaml string
		want map[string]map[string]string // nil: Namespaces nil
	}{
		{name: "no namespaces in the input", yaml: pods},
		{name: "namespaces and the ones pods use", yaml: pods + namespace, want: map[string]map[string]string{
			"data": {"team": "storage"},
			"shop": {"kubernetes.io/metadata.name": "shop"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := &Manifests{}
			if err := m.Read("test.yaml", []byte(tt.yaml)); err != nil {
				t.Fatal(err)
			}
			s, err := m.Snapshot(SnapshotOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if tt.want == nil {
				if s.Namespaces != nil {
					t.Fatalf("namespaces %v, want nil", s.Namespaces)
				}
				return
			}
			got := map[string]map[string]string{}
			for _, ns := range s.Namespaces {
				got[ns.Name] = ns.Labels
			}
			if !maps.EqualFunc(got, tt.want, maps.Equal) {
				t.Errorf("namespaces %v, want %v", got, tt.want)
			}
			if names := slices.Sorted(maps.Keys(got)); len(names) != len(s.Namespaces) {
				t.Errorf("duplicate namespaces: %v", s.Namespaces)
			}
		})
	}
	m := &Manifests{}
	if err := m.Read("test.yaml", []byte(pods+namespace+namespace)); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Snapshot(SnapshotOptions{}); err == nil {
		t.Error("a Namespace defined twice is not an error")
	}
}
