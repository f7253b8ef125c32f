package scenario

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// EnvDir names the environment variable that overrides where the shared
// scenarios are read from.
const EnvDir = "JOINER_SCENARIOS"

// Dir returns the directory of the shared benchmark scenarios: $JOINER_SCENARIOS
// when set, else ../shared/scenarios beside the repository root (the nearest
// directory above the working directory holding a go.mod), where CI and
// every checkout of the project have it. It never guesses a machine's
// layout: when the directory is missing the error says where it looked, so
// a test fails with a way to fix it instead of skipping.
func Dir() (string, error) {
	if d := os.Getenv(EnvDir); d != "" {
		if err := isDir(d); err != nil {
			return "", fmt.Errorf("shared scenarios: %s=%s: %w", EnvDir, d, err)
		}
		return d, nil
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("shared scenarios: %w", err)
	}
	root := wd
	for {
		if _, err := os.Stat(filepath.Join(root, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(root)
		if parent == root {
			return "", fmt.Errorf("shared scenarios: no go.mod above %s to find the repository root from; set %s", wd, EnvDir)
		}
		root = parent
	}
	d := filepath.Join(filepath.Dir(root), "shared", "scenarios")
	if err := isDir(d); err != nil {
		return "", fmt.Errorf("shared scenarios: looked in %s (../shared/scenarios from the repository root %s): %w; check it out there or set %s", d, root, err, EnvDir)
	}
	return d, nil
}

func isDir(d string) error {
	fi, err := os.Stat(d)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return errors.New("not a directory")
	}
	return nil
}
