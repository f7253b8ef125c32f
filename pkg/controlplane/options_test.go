package controlplane

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeBinDir returns a directory holding empty executables named like the
// control-plane binaries.
func fakeBinDir(t *testing.T, names ...string) string {
	t.Helper()
	dir := t.TempDir()
	for _, name := range names {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestNewValidatesOptions(t *testing.T) {
	all := fakeBinDir(t, binEtcd, binAPIServer, binScheduler, binControllerManager, binKwok)
	serversOnly := fakeBinDir(t, binEtcd, binAPIServer)
	empty := t.TempDir()
	file := filepath.Join(empty, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name    string
		opts    Options
		wantErr string // substring; empty means success
	}{
		{name: "servers only", opts: Options{BinDir: serversOnly}},
		{name: "everything", opts: Options{BinDir: all, Scheduler: true, ControllerManager: true, Kwok: true,
			KwokNodeSelector: "joiner.sh/fake=true", Controllers: []string{"*", "-nodeipam"}}},
		{name: "no binaries", opts: Options{BinDir: empty},
			wantErr: "control-plane binaries not found in " + empty + " (missing [etcd kube-apiserver]): run `make controlplane`"},
		{name: "missing kwok", opts: Options{BinDir: serversOnly, Kwok: true}, wantErr: "missing [kwok]"},
		{name: "negative timeout", opts: Options{BinDir: all, StartTimeout: -1}, wantErr: "StartTimeout must not be negative"},
		{name: "controllers without manager", opts: Options{BinDir: all, Controllers: []string{"*"}}, wantErr: "Controllers needs ControllerManager"},
		{name: "selector without kwok", opts: Options{BinDir: all, KwokNodeSelector: "a=b"}, wantErr: "KwokNodeSelector needs Kwok"},
		{name: "bad selector", opts: Options{BinDir: all, Kwok: true, KwokNodeSelector: "a in b"}, wantErr: "KwokNodeSelector:"},
		{name: "missing crd dir", opts: Options{BinDir: all, CRDDirectories: []string{filepath.Join(empty, "nope")}}, wantErr: "CRDDirectories:"},
		{name: "crd dir is a file", opts: Options{BinDir: all, CRDDirectories: []string{file}}, wantErr: "is not a directory"},
		{name: "unknown component", opts: Options{BinDir: all, ExtraArgs: map[string][]string{"kubelet": {"-v=4"}}}, wantErr: `unknown component "kubelet"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cp, err := New(tt.opts)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("New: %v", err)
				}
				if cp.opts.StartTimeout != DefaultStartTimeout {
					t.Errorf("StartTimeout = %s, want the default %s", cp.opts.StartTimeout, DefaultStartTimeout)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("New: got error %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestFindBinDir(t *testing.T) {
	t.Run("from the environment", func(t *testing.T) {
		dir := t.TempDir()
		t.Setenv(EnvBinDir, dir)
		got, err := FindBinDir()
		if err != nil || got != dir {
			t.Fatalf("FindBinDir() = %q, %v; want %q", got, err, dir)
		}
	})
	t.Run("beside go.mod", func(t *testing.T) {
		t.Setenv(EnvBinDir, "")
		root := t.TempDir()
		if err := os.WriteFile(filepath.Join(root, "go.mod"), []byte("module x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		sub := filepath.Join(root, "a", "b")
		if err := os.MkdirAll(sub, 0o755); err != nil {
			t.Fatal(err)
		}
		t.Chdir(sub)
		got, err := FindBinDir()
		if want := filepath.Join(root, "bin", "k8s"); err != nil || got != want {
			t.Fatalf("FindBinDir() = %q, %v; want %q", got, err, want)
		}
	})
}
