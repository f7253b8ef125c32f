package scenario

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// DirEnv names the environment variable that overrides where the shared
// scenarios are read from.
const DirEnv = "JOINER_SCENARIOS"

// Dir is the directory holding the shared scenario files: $JOINER_SCENARIOS
// when set, else ../shared/scenarios relative to the repository root (the
// nearest directory above the working directory with a go.mod), which is
// where CI and every checkout keep them. The error says where it looked, so
// a test that cannot find them fails with a message naming the fix instead
// of skipping.
func Dir() (string, error) {
	if d := os.Getenv(DirEnv); d != "" {
		if _, err := os.Stat(d); err != nil {
			return "", fmt.Errorf("shared scenarios: %s=%s: %w", DirEnv, d, err)
		}
		return d, nil
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("shared scenarios: %w", err)
	}
	root, err := repositoryRoot(wd)
	if err != nil {
		return "", fmt.Errorf("shared scenarios: %w; set %s to their directory", err, DirEnv)
	}
	d := filepath.Join(root, "..", "shared", "scenarios")
	if _, err := os.Stat(d); err != nil {
		return "", fmt.Errorf("shared scenarios: looked in %s (../shared/scenarios from the repository root %s): %w; put them there or set %s", filepath.Clean(d), root, err, DirEnv)
	}
	return filepath.Clean(d), nil
}

// repositoryRoot is the nearest directory at or above dir holding a go.mod.
func repositoryRoot(dir string) (string, error) {
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", errors.New("no go.mod at or above " + dir)
		}
	}
}
