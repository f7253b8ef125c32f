package main

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// podmanConfig is what `podman image inspect` says of a loaded image.
type podmanConfig struct {
	Architecture string
	Os           string
	Config       struct {
		User       string
		Entrypoint []string
		Cmd        []string
	}
}

// podmanLoad loads the tarball at path with `podman load -i`, as a user
// would, into a private store (vfs driver, no daemon, nothing shared with
// the machine's containers), and returns how podman sees the image ref.
// A missing podman fails the test with how to get it.
func podmanLoad(t *testing.T, path, ref string) podmanConfig {
	t.Helper()
	bin, err := exec.LookPath("podman")
	if err != nil {
		t.Fatalf("podman is missing: run `bash hack/apt-install.sh podman` (apt-get install -y podman; `make test` does it first): %v", err)
	}
	store := t.TempDir()
	podman := func(args ...string) []byte {
		t.Helper()
		args = append([]string{"--storage-driver=vfs", "--root", filepath.Join(store, "root"), "--runroot", filepath.Join(store, "run"),
			"--tmpdir", filepath.Join(store, "tmp"), "--events-backend=none", "--cgroup-manager=cgroupfs"}, args...)
		cmd := exec.Command(bin, args...)
		cmd.Env = append(cmd.Environ(), "XDG_CONFIG_HOME="+filepath.Join(store, "config"), "CONTAINERS_REGISTRIES_CONF=/dev/null")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("podman %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return out
	}
	t.Cleanup(func() {
		// vfs leaves read-only layer copies behind for t.TempDir to trip on.
		cmd := exec.Command(bin, "--storage-driver=vfs", "--root", filepath.Join(store, "root"), "--runroot", filepath.Join(store, "run"), "system", "reset", "--force")
		_ = cmd.Run()
	})
	out := podman("load", "-i", path)
	t.Logf("podman load -i %s: %s", filepath.Base(path), strings.TrimSpace(string(out)))
	if !strings.Contains(string(out), ref) {
		t.Errorf("podman load named no %s:\n%s", ref, out)
	}
	var inspected []podmanConfig
	if err := json.Unmarshal(podman("image", "inspect", ref), &inspected); err != nil || len(inspected) != 1 {
		t.Fatalf("podman image inspect %s: %v (%d images)", ref, err, len(inspected))
	}
	return inspected[0]
}
