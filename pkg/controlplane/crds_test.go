package controlplane

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestReadCRDs(t *testing.T) {
	gadget := []byte(`
# comments and empty documents are fine
---
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gadgets.test.joiner.sh
spec:
  group: test.joiner.sh
  scope: Cluster
  names: {kind: Gadget, plural: gadgets}
  versions:
  - {name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object}}}
`)
	tests := []struct {
		name      string
		dirs      []string
		docs      [][]byte
		wantNames []string
		wantErr   string
	}{
		{name: "directory", dirs: []string{"testdata/crds"}, wantNames: []string{"widgets.test.joiner.sh"}},
		{name: "bytes", docs: [][]byte{gadget}, wantNames: []string{"gadgets.test.joiner.sh"}},
		{name: "both", dirs: []string{"testdata/crds"}, docs: [][]byte{gadget},
			wantNames: []string{"widgets.test.joiner.sh", "gadgets.test.joiner.sh"}},
		{name: "not a crd", docs: [][]byte{[]byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n")},
			wantErr: "want apiextensions.k8s.io/v1 CustomResourceDefinition, got v1 ConfigMap"},
		{name: "unknown field", docs: [][]byte{[]byte("apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nspec: {grup: x}\n")},
			wantErr: "unknown field"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			crds, err := readCRDs(tt.dirs, tt.docs)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("readCRDs: got error %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("readCRDs: %v", err)
			}
			var names []string
			for _, crd := range crds {
				names = append(names, crd.Name)
			}
			if strings.Join(names, ",") != strings.Join(tt.wantNames, ",") {
				t.Fatalf("readCRDs names = %v, want %v", names, tt.wantNames)
			}
		})
	}
}

func TestWritePKI(t *testing.T) {
	dir := t.TempDir()
	p, err := writePKI(dir, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{p.caCert, p.caKey, p.servingCert, p.servingKey, p.adminCert, p.adminKey, p.proxyCert, p.proxyKey, p.saKey, p.saPub} {
		if info, err := os.Stat(path); err != nil || info.Size() == 0 {
			t.Errorf("%s: %v", filepath.Base(path), err)
		}
	}
}
