package controlplane

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// EnvBinDir names the environment variable that points at the directory
// holding the control-plane binaries.
const EnvBinDir = "JOINER_K8S_BIN"

// Binary names, as hack/controlplane.sh builds them.
const (
	binEtcd              = "etcd"
	binAPIServer         = "kube-apiserver"
	binScheduler         = "kube-scheduler"
	binControllerManager = "kube-controller-manager"
	binKwok              = "kwok"
)

// FindBinDir returns the directory that holds the control-plane binaries:
// $JOINER_K8S_BIN when set, otherwise bin/k8s in the nearest directory above
// the working directory that contains a go.mod.
func FindBinDir() (string, error) {
	if dir := os.Getenv(EnvBinDir); dir != "" {
		return filepath.Abs(dir)
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("finding control-plane binaries: %w", err)
	}
	for dir := wd; ; {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return filepath.Join(dir, "bin", "k8s"), nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("control-plane binaries not found: no go.mod above %s and %s is not set: run `make controlplane`", wd, EnvBinDir)
		}
		dir = parent
	}
}

// checkBinaries returns an error naming dir and every missing binary.
func checkBinaries(dir string, names []string) error {
	var missing []string
	for _, name := range names {
		info, err := os.Stat(filepath.Join(dir, name))
		if err != nil || info.IsDir() || info.Mode()&0o111 == 0 {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("control-plane binaries not found in %s (missing %v): run `make controlplane`", dir, missing)
	}
	return nil
}

// errStopped is returned by Start on a control plane that was stopped.
var errStopped = errors.New("control plane was stopped")
