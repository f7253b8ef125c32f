package controlplane

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestStartFailureShowsLog starts a control plane whose etcd fails at once
// and checks that the error says which component failed and why.
func TestStartFailureShowsLog(t *testing.T) {
	bin := fakeBinDir(t, binAPIServer)
	failing := "#!/bin/sh\necho 'etcd: cannot open data dir: disk on fire' >&2\nexit 3\n"
	if err := os.WriteFile(filepath.Join(bin, binEtcd), []byte(failing), 0o755); err != nil {
		t.Fatal(err)
	}
	runDir := filepath.Join(t.TempDir(), "run")
	cp, err := New(Options{BinDir: bin, RunDir: runDir, StartTimeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := cp.Stop(); err != nil {
			t.Errorf("Stop after a failed Start: %v", err)
		}
	}()

	err = cp.Start(context.Background())
	if err == nil {
		t.Fatal("Start succeeded with a failing etcd")
	}
	for _, want := range []string{"etcd exited", "exit status 3", "disk on fire", runDir} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Start error does not contain %q:\n%v", want, err)
		}
	}
	if err := cp.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(cp.LogPath(binEtcd)); err != nil {
		t.Errorf("the log of a failed start should be kept: %v", err)
	}
	if err := cp.Start(context.Background()); err == nil {
		t.Error("Start after Stop succeeded")
	}
}
