package scenario

import (
	"path/filepath"
	"testing"
)

// sharedScenario is the path of one of the shared scenario files (see Dir);
// the test fails, saying where it looked, when the directory is missing.
func sharedScenario(tb testing.TB, name string) string {
	tb.Helper()
	dir, err := Dir()
	if err != nil {
		tb.Fatal(err)
	}
	return filepath.Join(dir, name+".json")
}
